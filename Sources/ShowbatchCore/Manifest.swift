import Foundation
import ShowbatchYAML

/// A validated manifest: everything a run needs, with defaults applied and environment
/// references resolved.
public struct Manifest: Sendable {
    /// The manifest's path as the user gave it.
    public var file: String
    /// The folder that relative paths in the manifest are resolved against.
    public var directory: String
    /// The manifest format version (1).
    public var version = 1
    /// The vault id.
    public var vault = ""
    /// The environment, such as `sandbox` or `live-eu-1`.
    public var environment = "sandbox"
    /// The data region, when given separately.
    public var dataRegion: String?
    /// The route id (Android SDK `routeId`).
    public var routeID: String?
    /// The normalised custom hostname.
    public var hostname: String?
    /// Whether the custom hostname's activation is checked before use.
    public var hostnameCheck = true
    /// Local satellite port: requests go to `http://localhost:PORT`.
    public var satellitePort: Int?
    /// Headers sent with every request.
    public var headers: [HeaderField] = []
    /// Requests in flight at once.
    public var concurrency = 8
    /// Requests started per interval across the run.
    public var rateLimit: Rate?
    /// Per-attempt timeout.
    public var timeout: Duration = .seconds(60)
    /// The HTTP client.
    public var transport: TransportKind = .curl
    /// Retry policy.
    public var retry = RetryPolicy()
    /// Where rows go when neither `--output` nor the request says.
    public var output: OutputSpec?
    /// Aliases for `run --emulate`.
    public var emulator: EmulatorSpec?
    /// The requests, in order.
    public var requests: [RequestSpec] = []
    /// A hash of the manifest's bytes, for telling journals apart.
    public var contentHash: UInt64 = 0

    /// The identity of a run's input for its journals: the manifest's bytes and every data file's
    /// content, so that a journal is never replayed over a data file that changed since.
    public func inputHash() throws(RunError) -> UInt64 {
        var hash = contentHash
        for spec in requests {
            guard let each = spec.each else { continue }
            guard let handle = FileHandle(forReadingAtPath: each.path) else {
                throw RunError.runtime("cannot read the data file \(each.name)")
            }
            defer { try? handle.close() }
            do {
                while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
                    hash = chunk.withUnsafeBytes { fnv1a($0, seed: hash) }
                }
            } catch {
                throw RunError.runtime("cannot read the data file \(each.name)")
            }
        }
        return hash
    }

    /// The vault URL of SPEC 2.1 (or the satellite URL).
    public var vaultURL: String {
        if let satellitePort { return "http://localhost:\(satellitePort)" }
        return Endpoint.vaultURL(vault: vault, environment: environment, dataRegion: dataRegion, routeID: routeID)
    }
}

/// One header with a value template (environment references already resolved).
public struct HeaderField: Sendable {
    /// The header name.
    public var name: String
    /// The value; may still hold `${row.…}` references in data-driven requests.
    public var value: Template
}

/// HTTP methods a request may use.
public enum HTTPMethod: String, Sendable, CaseIterable {
    case get = "GET", post = "POST", put = "PUT", patch = "PATCH", delete = "DELETE"
}

/// Output file formats.
public enum OutputFormat: String, Sendable, CaseIterable {
    case csv, json, jsonl

    /// The format an output path's extension implies, if any.
    public static func fromExtension(_ path: String) -> OutputFormat? {
        switch (path as NSString).pathExtension.lowercased() {
        case "csv": return .csv
        case "json": return .json
        case "jsonl", "ndjson": return .jsonl
        default: return nil
        }
    }
}

/// Where and how rows are written.
public struct OutputSpec: Sendable, Equatable {
    /// The path, resolved against the manifest's folder; may hold `{shard}`.
    public var path: String
    /// The format, when given explicitly.
    public var format: OutputFormat?
    /// Prefix CSV cells that start with `= + - @` with `'`.
    public var escapeFormulas = false

    /// Creates an output spec.
    public init(path: String, format: OutputFormat? = nil, escapeFormulas: Bool = false) {
        self.path = path
        self.format = format
        self.escapeFormulas = escapeFormulas
    }

    /// The format: explicit, else from the extension, else CSV.
    public var resolvedFormat: OutputFormat { format ?? OutputFormat.fromExtension(path) ?? .csv }
}

/// What failures are retried.
public struct RetryPolicy: Sendable, Equatable {
    /// Total attempts per request.
    public var attempts = 3
    /// Base of the capped exponential backoff.
    public var backoff: Duration = .milliseconds(200)
    /// Cap of the backoff.
    public var maxBackoff: Duration = .seconds(10)
    /// HTTP statuses that are retried.
    public var statuses: Set<Int> = [429, 502, 503, 504]
    /// Whether network failures are retried.
    public var network = true
    /// Whether timeouts are retried.
    public var timeout = true

    /// The default policy.
    public init() {}
}

/// Faults the emulator injects, each drawn from one seeded sequence so a run can be replayed.
public struct EmulatorFaults: Sendable, Equatable {
    /// Delay of every answer.
    public var latency: Duration = .zero
    /// Plus or minus this much on the latency.
    public var jitter: Duration = .zero
    /// Fraction of requests answered with `failStatus`.
    public var failRate = 0.0
    /// Status of injected failures.
    public var failStatus = 500
    /// Requests per interval before 429 with Retry-After.
    public var throttle: Rate?
    /// Fraction of requests whose connection is closed without an answer.
    public var dropRate = 0.0
    /// Fraction of requests answered 200 with a body that is not JSON.
    public var malformedRate = 0.0
    /// Seed of the fault choices.
    public var seed: UInt64 = 1

    /// No faults.
    public init() {}
}

/// The `emulator:` section: what `run --emulate` reveals and which faults it injects.
public struct EmulatorSpec: Sendable, Equatable {
    /// Where the aliases come from.
    public enum Aliases: Sendable, Equatable {
        case inline([String: String])
        case file(String)
    }

    /// The aliases; nil uses the built-in sample aliases.
    public var aliases: Aliases?
    /// The faults.
    public var faults = EmulatorFaults()

    /// No aliases, no faults.
    public init() {}
}

/// A label binding: where a value is in the response and how it is shaped.
public struct LabelBinding: Sendable {
    /// The label name (an output column).
    public var name: String
    /// Where the value is in the response.
    public var path: ContentPath
    /// Replacements applied in order.
    public var transforms: [RegexTransform]
    /// The mask applied after the transforms.
    public var mask: Mask?

    /// The value after transforms and mask.
    public func format(_ value: String) -> String {
        var result = value
        for transform in transforms { result = transform.apply(result) }
        if let mask { result = mask.apply(result) }
        return result
    }
}

/// A data file driving one request per row.
public struct DataSource: Sendable {
    /// CSV or JSON Lines.
    public var kind: DataRowReader.Kind
    /// The path resolved against the manifest's folder.
    public var path: String
    /// The path as the manifest writes it (used in messages).
    public var name: String
}

/// A payload value: JSON whose strings may be templates.
public indirect enum PayloadValue: Sendable {
    case null
    case bool(Bool)
    case number(String)
    case string(Template)
    case array([PayloadValue])
    case object([(key: String, value: PayloadValue)])

    /// Appends the compact JSON for one data row, without building it first. A string that is
    /// exactly `${row.COL}` keeps the row value's type.
    public func write(row: DataRow?, to out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let value): out.append(contentsOf: (value ? "true" : "false").utf8)
        case .number(let text): out.append(contentsOf: text.utf8)
        case .string(let template):
            if let column = template.wholeRowColumn, let value = row?.values[column] {
                value.write(to: &out)
                return
            }
            out.append(UInt8(ascii: "\""))
            template.forEachPiece(row: row) { JSONValue.writeStringContent($0, to: &out) }
            out.append(UInt8(ascii: "\""))
        case .array(let items): JSONValue.writeArray(items, to: &out) { item, out in item.write(row: row, to: &out) }
        case .object(let members): JSONValue.writeObject(members, key: \.key, to: &out) { member, out in member.value.write(row: row, to: &out) }
        }
    }

    /// Every template in the payload.
    var templates: [Template] {
        switch self {
        case .string(let template): return [template]
        case .array(let items): return items.flatMap(\.templates)
        case .object(let members): return members.flatMap(\.value.templates)
        default: return []
        }
    }
}

/// One entry of `requests:`.
public struct RequestSpec: Sendable {
    /// The name (a template for data-driven requests).
    public var name: Template
    /// The path, with an optional query string.
    public var path: Template
    /// The method.
    public var method: HTTPMethod = .post
    /// Request headers, merged over the manifest headers.
    public var headers: [HeaderField] = []
    /// The JSON payload.
    public var payload: PayloadValue?
    /// Label bindings, in order.
    public var labels: [LabelBinding] = []
    /// The data file for a data-driven request.
    public var each: DataSource?
    /// This request's own output.
    public var output: OutputSpec?
    /// Where the request is written in the manifest.
    public var mark: Mark

    /// Every data column the request's templates reference, checked on each row (set by the decoder).
    public var rowColumns: [String] = []

    /// Collects `rowColumns` from the templates.
    func referencedColumns() -> [String] {
        var columns: [String] = []
        for template in [name, path] + headers.map(\.value) + (payload?.templates ?? []) {
            for column in template.rowColumns where !columns.contains(column) { columns.append(column) }
        }
        return columns
    }
}

/// Errors found in a manifest; `validate` prints them all.
public struct ManifestError: Error, Sendable, CustomStringConvertible {
    /// Every problem, in the order found.
    public let diagnostics: [Diagnostic]

    /// Wraps problems.
    public init(_ diagnostics: [Diagnostic]) { self.diagnostics = diagnostics }

    public var description: String { diagnostics.map(\.description).joined(separator: "\n") }
}

/// Headers merged case-insensitively, later ones winning, in first-seen order.
public func mergeHeaders(_ layers: [HeaderField]...) -> [HeaderField] {
    var merged: [HeaderField] = []
    for layer in layers {
        for field in layer {
            if let index = merged.firstIndex(where: { $0.name.caseInsensitiveCompare(field.name) == .orderedSame }) {
                merged[index] = field
            } else {
                merged.append(field)
            }
        }
    }
    return merged
}

/// The closest candidate to `word` by edit distance, when it is close enough to be a typo.
public func closest(_ word: String, in candidates: [String]) -> String? {
    let target = Array(word.lowercased())
    var best: (String, Int)?
    for candidate in candidates {
        let other = Array(candidate.lowercased())
        var previous = Array(0...other.count)
        for (i, a) in target.enumerated() {
            var current = [i + 1] + Array(repeating: 0, count: other.count)
            for (j, b) in other.enumerated() {
                current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (a == b ? 0 : 1))
            }
            previous = current
        }
        let distance = previous[other.count]
        if distance <= max(2, other.count / 3), distance < (best?.1 ?? Int.max) { best = (candidate, distance) }
    }
    return best?.0
}

/// "a, b or c" for lists of choices in messages.
public func choices(_ items: [String]) -> String {
    guard items.count > 1 else { return items.first ?? "" }
    return items.dropLast().joined(separator: ", ") + " or " + items.last!
}
