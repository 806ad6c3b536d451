import Foundation
import ShowbatchBasics
import ShowbatchManifest

// What a journal is valid for. A resumed run must write the same bytes as an uninterrupted one,
// so the journal names what shapes the rows, and nothing else: a run that only changes its pace
// (concurrency, rate limit, timeout, backoff, transport) or its credentials goes on from it.
extension Manifest {
    /// A hash of what in the manifest shapes rows: where requests go, how they are built, how
    /// answers become rows and columns, and which failures are retried and how often. Not the
    /// run's timing, the transport, the emulator section, and no header or payload value: a
    /// renewed token changes no row, and a journal holds nothing of a secret, not even a hash
    /// that a short value could be guessed back from. (A payload value edited between a run and
    /// its resume is therefore not noticed; its keys and row references are.)
    ///
    /// Streamed into one hash, field by field: a manifest of 250,000 requests takes no time here.
    package var rowIdentity: UInt64 {
        var hasher = IdentityHasher()
        hasher.add(vault, environment, dataRegion ?? "", routeID ?? "", hostname ?? "", String(satellitePort ?? 0))
        for name in headers.map({ $0.name.lowercased() }).sorted() { hasher.add(name) }
        hasher.add(String(retry.attempts), retry.network ? "n" : "", retry.timeout ? "t" : "")
        for status in retry.statuses.sorted() { hasher.add(String(status)) }
        if let output { hasher.add(output) }
        for request in requests {
            hasher.add("request", request.method.rawValue)
            hasher.add(request.name)
            hasher.add(request.path)
            for name in request.headers.map({ $0.name.lowercased() }).sorted() { hasher.add(name) }
            if let payload = request.payload { hasher.addShape(payload) }
            for label in request.labels {
                hasher.add("label", label.name, label.path.text)
                for transform in label.transforms { hasher.add(transform.pattern, transform.template) }
                if let mask = label.mask {
                    hasher.add("mask", mask.symbol.map(String.init) ?? "")
                    for range in mask.ranges { hasher.add(String(range.start ?? -1), String(range.end ?? -1)) }
                }
                if let expect = label.expect {
                    hasher.add("expect", expect.pattern?.pattern ?? "", expect.luhn ? "luhn" : "")
                }
                if let file = label.file {
                    hasher.add("file", file.decode.rawValue, String(file.maxBytes ?? 0))
                    hasher.add(file.template.source)
                }
            }
            if let each = request.each { hasher.add(each.kind == .csv ? "csv" : "jsonl", each.name) }
            if let output = request.output { hasher.add(output) }
        }
        return hasher.value
    }

    /// A hash of every data file's content, so that a journal is never used with a data file
    /// that changed since.
    package func dataHash() throws(RunError) -> UInt64 {
        var hash = fnvOffsetBasis
        for spec in requests {
            guard let each = spec.each else { continue }
            do {
                let file = try FileDescriptor.openInput(each.path)
                var chunk = [UInt8](repeating: 0, count: 1 << 20)
                while true {
                    let count = try file.read(into: &chunk)
                    if count == 0 { break }
                    hash = fnv1a(chunk[0..<count], seed: hash)
                    // An interrupted run does not read on (the run checks and stops before opening anything).
                    if Task.isCancelled { return hash }
                }
            } catch {
                throw RunError.runtime(JournalError.dataFileUnreadable(name: each.name, reason: error.reason))
            }
        }
        return hash
    }
}

extension Manifest {
    /// What begins a multiset rows hash (`nightRowsHash`); an earlier showbatch's ordered hash
    /// has no prefix.
    static let rowsHashPrefix = "m1:"

    /// The rows of the data files as a run reads them, as a multiset: what says a night's data is
    /// another night's again whatever the order of its rows, its line endings, blank lines,
    /// quoting or byte order mark (a re-export of yesterday's file, sorted otherwise, is
    /// yesterday's night). Each row is hashed on its own (its columns in name order) and the
    /// rows' hashes added up, so no order counts; a row that cannot be read counts by its fields.
    /// Nil when interrupted while reading.
    package func nightRowsHash() throws(RunError) -> String? {
        var sum: (UInt64, UInt64) = (0, 0)
        var count: UInt64 = 0
        for (index, spec) in requests.enumerated() {
            guard let each = spec.each else { continue }
            var reader: DataRowReader
            do {
                reader = try DataRowReader(kind: each.kind, path: each.path, name: each.name)
            } catch {
                throw RunError.runtime(JournalError.dataFileUnreadable(name: each.name, reason: "\(error)"))
            }
            while let next = reader.next() {
                var hasher = IdentityHasher()
                hasher.add("request", String(index))
                let row: DataRow?
                switch next {
                case .success(let read): row = read
                case .failure(let failure):
                    hasher.add("unreadable")
                    row = failure.row
                }
                for (column, value) in (row?.values ?? [:]).sorted(by: { $0.key < $1.key }) { hasher.add(column, value.compactText) }
                // Two mixes of the row's hash, added up: an order-free sum that two different
                // nights do not share by chance.
                sum.0 &+= mix(hasher.value)
                sum.1 &+= mix(hasher.value ^ 0x9E37_79B9_7F4A_7C15)
                count += 1
                if count & 1023 == 0 && Task.isCancelled { return nil }
            }
        }
        func hex(_ value: UInt64) -> String {
            let text = String(value, radix: 16)
            return String(repeating: "0", count: 16 - text.count) + text
        }
        return Manifest.rowsHashPrefix + hex(sum.0) + hex(sum.1) + hex(count)
    }
}

/// SplitMix64's finalizer: spreads a row's hash over every bit before it is added up.
private func mix(_ value: UInt64) -> UInt64 {
    var z = value &+ 0x9E37_79B9_7F4A_7C15
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
}

/// FNV-1a over a sequence of fields, each ended by a separator so that fields cannot run into
/// each other.
private struct IdentityHasher {
    private(set) var value = fnvOffsetBasis

    mutating func add(_ fields: String...) {
        for field in fields {
            value = withUTF8(of: field) { fnv1a($0, seed: value) }
            value = fnv1a(CollectionOfOne(0x1F), seed: value)
        }
    }

    mutating func add(_ template: Template) {
        for part in template.parts {
            switch part {
            case .literal(let text): add("l", text)
            case .environment(let name): add("e", name)
            case .environmentOr(let name, let fallback): add("e", name); add("d", fallback)
            case .row(let column): add("r", column)
            case .index: add("i")
            }
        }
        add("end")
    }

    mutating func add(_ output: OutputSpec) {
        add("output", output.path, output.format?.rawValue ?? "", output.escapeFormulas ? "escape" : "")
    }

    /// A payload's keys, value kinds and row references, without its literal values.
    mutating func addShape(_ payload: PayloadValue) {
        switch payload {
        case .null: add("null")
        case .bool: add("bool")
        case .number: add("number")
        case .string(let template):
            add("string")
            for part in template.parts {
                switch part {
                case .row(let column): add("r", column)
                case .index: add("i")
                case .literal, .environment, .environmentOr: add("v")
                }
            }
        case .array(let items):
            add("[")
            for item in items { addShape(item) }
            add("]")
        case .object(let members):
            add("{")
            for member in members {
                add(member.key)
                addShape(member.value)
            }
            add("}")
        }
    }
}

/// The one encoding of a journal identity's fields, shared by the journal's first line and a
/// shard's identity file (each adds its own version key and fields around them).
extension Journal.Identity {
    /// Writes the fields into the object `writer` is in.
    func writeFields(_ writer: inout JSONWriter) {
        writer.key("manifest")
        writer.string(manifest)
        writer.key("data")
        writer.string(data)
        writer.key("shard")
        writer.string(shard)
        writer.key("output")
        writer.string(output)
        writer.key("format")
        writer.string(format)
        writer.key("columns")
        writer.array { writer in for column in columns { writer.string(column) } }
    }

    /// The fields read back from `object`; nil when one is missing or not of its kind.
    init?(fields object: JSONValue) {
        func text(_ key: String) -> String? { if case .string(let text)? = object[key] { return text } else { return nil } }
        guard let manifest = text("manifest"), let data = text("data"), let shard = text("shard"), let output = text("output"),
              let format = text("format"), case .array(let items)? = object["columns"] else { return nil }
        let columns = items.compactMap { if case .string(let name) = $0 { return name } else { return nil } }
        guard columns.count == items.count else { return nil }
        self.init(manifest: manifest, data: data, shard: shard, output: output, format: format, columns: columns)
    }
}
