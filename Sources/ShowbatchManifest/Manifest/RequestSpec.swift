import ShowbatchBasics
import ShowbatchYAML

/// One entry of `requests:`.
package struct RequestSpec: Sendable {
    /// The name (a template for data-driven requests).
    package var name: Template
    /// The path, with an optional query string.
    package var path: Template
    /// The method.
    package var method: HTTPMethod = .post
    /// Request headers, merged over the manifest headers.
    package var headers: [HeaderField] = []
    /// The JSON payload.
    package var payload: PayloadValue?
    /// Label bindings, in order.
    package var labels: [LabelBinding] = []
    /// The data file for a data-driven request.
    package var each: DataSource? {
        get { rare?.each }
        set { rare = Rare(each: newValue, output: output, reveal: reveal) }
    }
    /// This request's own output.
    package var output: OutputSpec? {
        get { rare?.output }
        set { rare = Rare(each: each, output: newValue, reveal: reveal) }
    }
    /// `reveal:`: the aliases the Vault API reveals for this request, one per label.
    package var reveal: [RevealAlias]? {
        get { rare?.reveal }
        set { rare = Rare(each: each, output: output, reveal: newValue) }
    }
    /// What few requests have, kept out of line: a manifest may hold fifty thousand requests,
    /// and these would take half of each one's size.
    private var rare: Rare?
    /// Where the request is written in the manifest.
    package var mark: Mark

    /// Every data column the request's templates reference, checked on each row (set by the decoder).
    package var rowColumns: [String] = []

    /// A request named `name` for `path`, written at `mark`; the decoder fills in the rest.
    init(name: Template, path: Template, mark: Mark) {
        self.name = name
        self.path = path
        self.mark = mark
    }

    /// Collects `rowColumns` from the templates, and `payloadColumns`, those of the payload's
    /// strings (found while decoding it: a payload that aliases repeat is not walked again).
    func referencedColumns(payloadColumns: [String]) -> [String] {
        var columns: [String] = []
        for template in [name, path] + headers.map(\.value) + labels.compactMap(\.file?.template.source) + (reveal ?? []).map(\.alias) {
            for column in template.rowColumns where !columns.contains(column) { columns.append(column) }
        }
        for column in payloadColumns where !columns.contains(column) { columns.append(column) }
        return columns
    }
}

/// A request's data file, output and aliases, which most requests have not.
private final class Rare: Sendable, CustomStringConvertible {
    let each: DataSource?
    let output: OutputSpec?
    let reveal: [RevealAlias]?

    init?(each: DataSource?, output: OutputSpec?, reveal: [RevealAlias]?) {
        guard each != nil || output != nil || reveal != nil else { return nil }
        self.each = each
        self.output = output
        self.reveal = reveal
    }

    /// The fields, as a struct's would print.
    var description: String {
        "Rare(each: \(String(describing: each)), output: \(String(describing: output)), reveal: \(String(describing: reveal)))"
    }
}

/// One header with a value template (environment references already resolved).
package struct HeaderField: Sendable {
    /// The header name.
    package var name: String
    /// The value; may still hold `${row.…}` references in data-driven requests.
    package var value: Template

    /// What makes `value` unfit for a header: a line break, or another control character (a
    /// byte below 0x20 other than tab, or DEL), which could end the header early or truncate
    /// it (NUL) on the way out; nil when it is fit. Described in words, without the value.
    package static func problem(in value: String) -> String? {
        withUTF8(of: value) { bytes -> String? in
            guard let bad = bytes.first(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) else { return nil }
            if bytes.contains(13) || bytes.contains(10) { return "a line break" }
            return "a control character (byte 0x\(String(bad, radix: 16, uppercase: true).leftPadded(to: 2)))"
        }
    }
}

/// HTTP methods a request may use.
package enum HTTPMethod: String, Sendable, CaseIterable {
    case get = "GET", post = "POST", put = "PUT", patch = "PATCH", delete = "DELETE"
}

/// Headers merged case-insensitively, later ones winning, in first-seen order.
package func mergeHeaders(_ layers: [HeaderField]...) -> [HeaderField] {
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

/// A data file driving one request per row.
package struct DataSource: Sendable {
    /// CSV or JSON Lines.
    package var kind: DataRowReader.Kind
    /// The path resolved against the manifest's folder.
    package var path: String
    /// The path as the manifest writes it (used in messages).
    package var name: String
    /// The rows the file held when the manifest was read (failed ones too); nil when it was not
    /// read through (a manifest made in code).
    package var rows: Int?
    /// The file's version when it was counted: a run checks it again at its end.
    package var stamp: FileStamp?
}

