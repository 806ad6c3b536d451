import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// Builds the requests of a manifest's work items against one base URL. What is the same for every
/// row of a request (its headers, and its URL when the path has no row reference) is worked out
/// once, not per row.
package struct RequestPreparer: Sendable {
    // A class: a row then retains one object, where copying the request's spec out of the
    // manifest retained each of its many fields.
    private final class Fixed: Sendable {
        let spec: RequestSpec
        let sendHeaders: [HeaderField]
        /// The headers when none comes from the row.
        let headers: [(name: String, value: String)]?
        /// The URL when the path has no row reference (and forms a valid URL).
        let url: String?
        /// True when a label is written to a file, whose path is expanded for each item.
        let labelFiles: Bool

        init(spec: RequestSpec, sendHeaders: [HeaderField], headers: [(name: String, value: String)]?, url: String?) {
            self.spec = spec
            self.sendHeaders = sendHeaders
            self.headers = headers
            self.url = url
            labelFiles = spec.labels.contains { $0.file != nil }
        }
    }

    private let baseURL: String
    private let fixed: [Fixed]
    /// Per request, the column templates whose text each row carries to the writer.
    private let extras: [[[ColumnPart]]]

    /// A preparer for `manifest`'s requests against `baseURL`; `extras` (per request) are the
    /// output's template columns, made from each data row.
    package init(manifest: Manifest, baseURL: String, extras: [[[ColumnPart]]] = []) {
        self.baseURL = baseURL
        self.extras = extras
        fixed = manifest.requests.map { spec in
            let sendHeaders = manifest.sendHeaders(for: spec)
            let headers = sendHeaders.contains { $0.value.needsRow } ? nil : sendHeaders.map { ($0.name, $0.value.expand(row: nil)) }
            let url = spec.path.needsRow ? nil : RequestPreparer.url(base: baseURL, path: spec.path.expand(row: nil))
            return Fixed(spec: spec, sendHeaders: sendHeaders, headers: headers, url: url)
        }
    }

    /// The URL of `path` under `base`, nil when none can be formed. Characters a URL cannot hold
    /// (spaces, quotes, non-ASCII from a data row) are percent-encoded, the same way for every
    /// transport; plain URLs skip Foundation's parser.
    private static func url(base: String, path: String) -> String? {
        let url = Endpoint.requestURL(base: base, path: path)
        return Endpoint.isPlainURL(url) ? url : URL(string: url)?.absoluteString
    }

    /// Builds the request for a work item, or the failure it becomes.
    package func prepare(_ item: WorkItem) -> Result<PreparedRequest, PreparationFailure> {
        let fixed = self.fixed[item.requestIndex]
        var row: DataRow?
        switch item.row {
        case .failure(let failure)?:
            let name = fixed.spec.name.needsRow ? "\(fixed.spec.each?.name ?? "data"):row \(failure.index)" : fixed.spec.name.expand(row: nil)
            // What of the record could be read goes with it: its rejects row shows which it was.
            let extras = item.requestIndex < self.extras.count ? RequestPreparer.text(of: self.extras[item.requestIndex], row: failure.row, name: name) : []
            return .failure(PreparationFailure(name: name, error: RowError(code: .invalidRow, label: nil, message: failure.message), extras: extras))
        case .success(let value)?: row = value
        case nil: row = nil
        }
        let name = fixed.spec.name.expand(row: row)
        let extras = item.requestIndex < self.extras.count ? RequestPreparer.text(of: self.extras[item.requestIndex], row: row, name: name) : []
        if let row {
            for column in fixed.spec.rowColumns where row.values[column] == nil {
                return .failure(PreparationFailure(name: name, error: RowError(code: .invalidRow, label: nil,
                    message: "\(fixed.spec.each?.name ?? "data"):\(row.line): row has no \"\(column)\" column"), extras: extras))
            }
        }
        guard let url = fixed.url ?? RequestPreparer.url(base: baseURL, path: fixed.spec.path.expandPath(row: row)) else {
            return .failure(PreparationFailure(name: name, error: RowError(code: .invalidConfigurationURL, label: nil,
                message: "the request path does not form a valid URL"), extras: extras))
        }
        var headers: [(name: String, value: String)]
        if let fixedHeaders = fixed.headers {
            headers = fixedHeaders
        } else {
            headers = []
            headers.reserveCapacity(fixed.sendHeaders.count)
            for field in fixed.sendHeaders {
                let value = field.value.expand(row: row)
                // Literal values were checked when the manifest was read; row values are checked here.
                if field.value.needsRow, let bad = HeaderField.problem(in: value) {
                    return .failure(PreparationFailure(name: name, error: RowError(code: .invalidRow, label: nil,
                        message: "header \(field.name) value from the data row contains \(bad)"), extras: extras))
                }
                headers.append((field.name, value))
            }
        }
        if fixed.headers == nil || fixed.url == nil {
            // What a data row put in the path or a header can make a request curl cannot send.
            let head = url.utf8.count + headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 }
            if head > Limits.requestHead {
                return .failure(PreparationFailure(name: name, error: RowError(code: .invalidRow, label: nil,
                    message: "the request's URL and headers come to \(head) bytes, more than the \(Limits.requestHead) a request can have before its body: a value from the data row in its path or headers is that long"), extras: extras))
            }
        }
        var body: [UInt8]?
        if let payload = fixed.spec.payload {
            var bytes: [UInt8] = []
            // Room for a typical reveal payload at once, instead of growing it several times.
            bytes.reserveCapacity(256)
            payload.write(row: row, to: &bytes)
            body = bytes
        }
        var prepared = PreparedRequest(name: name, method: fixed.spec.method, url: url, headers: headers, body: body,
                                       fixedHeaders: fixed.headers != nil, extras: extras)
        if fixed.labelFiles {
            prepared.labelFiles = fixed.spec.labels.map { $0.file?.template.expand(row: row, request: name) }
        }
        if let reveal = fixed.spec.reveal {
            var aliases: [String] = []
            aliases.reserveCapacity(reveal.count)
            for entry in reveal {
                let alias = entry.alias.expand(row: row)
                if let problem = RevealAlias.problem(in: alias) {
                    return .failure(PreparationFailure(name: name, error: RowError(code: .invalidRow, label: entry.label,
                        message: "label \(entry.label): the alias from the data row \(problem)"), extras: extras))
                }
                aliases.append(alias)
            }
            prepared.aliases = aliases
            prepared.aliasLabels = reveal.map(\.label)
        }
        return .success(prepared)
    }

    /// The text of column templates for one row.
    static func text(of templates: [[ColumnPart]], row: DataRow?, name: String) -> [String] {
        templates.map { parts in
            var text = ""
            for part in parts {
                switch part {
                case .literal(let literal): text += literal
                case .row(let column): text += row?.text(column) ?? ""
                case .index: text += row.map { String($0.index) } ?? ""
                case .request: text += name
                }
            }
            return text
        }
    }
}

/// A work item that cannot be sent, with the result error it becomes.
package struct PreparationFailure: Error, Sendable {
    /// The request name, as far as it could be expanded.
    package let name: String
    /// The row error.
    package let error: RowError
    /// The output's template-column text, as far as the row allows.
    package var extras: [String] = []
}
