import Foundation
import ShowbatchBasics

/// A string with `${NAME}`, `${row.COLUMN}` and `${index}` references (`$${` is a literal `${`).
package struct Template: Sendable, Equatable {
    /// One piece of a template.
    package enum Part: Sendable, Equatable {
        case literal(String)
        case environment(String)
        /// `${NAME:-TEXT}`: the variable, or TEXT when it is unset or empty.
        case environmentOr(String, String)
        case row(String)
        case index
    }

    /// The pieces: most values of a manifest are one literal, kept without an array (an
    /// allocation for each of a large manifest's hundreds of thousands of values).
    private enum Storage: Sendable, Equatable {
        /// The whole text, no piece when it is empty.
        case literal(String)
        /// Two pieces or more, or one that is not a literal.
        case parts([Part])
    }

    private var storage: Storage

    /// The pieces in order.
    package var parts: [Part] {
        switch storage {
        case .literal(let text): return text.isEmpty ? [] : [.literal(text)]
        case .parts(let parts): return parts
        }
    }

    private init(parts: [Part]) { storage = Template.storage(parts) }

    private static func storage(_ parts: [Part]) -> Storage {
        if parts.isEmpty { return .literal("") }
        if parts.count == 1, case .literal(let text) = parts[0] { return .literal(text) }
        return .parts(parts)
    }

    /// A template with no references.
    package init(literal: String) { storage = .literal(literal) }

    /// Parses `text`; the error message says what is wrong, never quoting a value.
    package init(parsing text: String) throws(TemplateSyntaxError) {
        if !withUTF8(of: text, { $0.contains(UInt8(ascii: "$")) }) {
            storage = .literal(text)
            return
        }
        var parts: [Part] = []
        var literal = ""
        var rest = Substring(text)
        while let dollar = rest.firstIndex(of: "$") {
            literal += rest[..<dollar]
            let after = rest[dollar...]
            if after.hasPrefix("$${") {
                literal += "${"
                rest = after.dropFirst(3)
            } else if after.hasPrefix("${") {
                guard let close = after.firstIndex(of: "}") else {
                    throw TemplateSyntaxError(message: "\"${\" is not closed by \"}\" (write $${ for a literal ${)")
                }
                let reference = String(after[after.index(after.startIndex, offsetBy: 2)..<close])
                if !literal.isEmpty { parts.append(.literal(literal)); literal = "" }
                parts.append(try Template.part(reference))
                rest = after[after.index(after: close)...]
            } else {
                literal += "$"
                rest = after.dropFirst()
            }
        }
        literal += rest
        if !literal.isEmpty { parts.append(.literal(literal)) }
        storage = Template.storage(parts)
    }

    private static func part(_ reference: String) throws(TemplateSyntaxError) -> Part {
        if reference == "index" { return .index }
        if let colon = reference.range(of: ":-") {
            let name = String(reference[..<colon.lowerBound])
            guard case .environment = try part(name) else {
                throw TemplateSyntaxError(message: "${\(name):-…} is not valid; only an environment variable takes a default")
            }
            return .environmentOr(name, String(reference[colon.upperBound...]))
        }
        if reference.hasPrefix("run.") {
            throw TemplateSyntaxError(message: "${\(reference)} names the night a run writes: only output.path, output.rejects, output.header, output.trailer and output.deliver.done take it")
        }
        if reference.hasPrefix("row.") {
            let column = String(reference.dropFirst(4))
            guard !column.isEmpty else { throw TemplateSyntaxError(message: "${row.} names no column") }
            return .row(column)
        }
        // A secret from a file (a Kubernetes Secret's mount): resolved as a variable is.
        if reference.hasPrefix(fileReference) {
            guard reference.count > fileReference.count else { throw TemplateSyntaxError(message: "${file:} names no file; write ${file:PATH}") }
            return .environment(reference)
        }
        guard let first = reference.unicodeScalars.first,
              first == "_" || (first.isASCII && first.properties.isAlphabetic),
              reference.unicodeScalars.allSatisfy({ $0 == "_" || ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) }) else {
            throw TemplateSyntaxError(message: "${\(reference)} is not a valid reference; expected ${ENV_VAR}, ${file:PATH}, ${row.COLUMN} or ${index}")
        }
        return .environment(reference)
    }

    /// The text of a template that is one literal piece; nil for an empty one or one with references.
    package var literalText: String? {
        if case .literal(let text) = storage, !text.isEmpty { return text }
        return nil
    }

    /// Whether the template has no piece at all (an empty text).
    package var isEmpty: Bool {
        if case .literal(let text) = storage { return text.isEmpty }
        return false
    }

    /// Names of the environment variables referenced.
    package var environmentNames: [String] {
        guard case .parts(let parts) = storage else { return [] }
        return parts.compactMap {
            switch $0 {
            case .environment(let name), .environmentOr(let name, _): return name
            default: return nil
            }
        }
    }

    /// Names of the data columns referenced.
    package var rowColumns: [String] {
        guard case .parts(let parts) = storage else { return [] }
        return parts.compactMap { if case .row(let name) = $0 { return name } else { return nil } }
    }

    /// True when the template needs a data row (`${row.…}` or `${index}`).
    package var needsRow: Bool {
        guard case .parts(let parts) = storage else { return false }
        return parts.contains {
            switch $0 {
            case .literal, .environment, .environmentOr: return false
            case .row, .index: return true
            }
        }
    }

    /// The column when the whole template is one `${row.COLUMN}` (its value keeps its JSON type).
    package var wholeRowColumn: String? {
        if case .parts(let parts) = storage, parts.count == 1, case .row(let column) = parts[0] { return column }
        return nil
    }

    /// Replaces environment references with their values; returns the names that are unset or
    /// empty (an empty secret would be sent as no secret at all), but for `${NAME:-TEXT}`.
    package mutating func resolveEnvironment(_ environment: [String: String]) -> [String] {
        guard case .parts(let parts) = storage, !environmentNames.isEmpty else { return [] }
        var missing: [String] = []
        let resolved = parts.map { part in
            switch part {
            case .environment(let name):
                guard let value = environment[name], !value.isEmpty else {
                    missing.append(name)
                    return part
                }
                return .literal(value)
            case .environmentOr(let name, let fallback):
                return .literal(environment[name].flatMap { $0.isEmpty ? nil : $0 } ?? fallback)
            default:
                return part
            }
        }
        // Adjacent literals merge so that equal texts compare equal.
        var merged: [Part] = []
        for part in resolved {
            if case .literal(let text) = part, case .literal(let previous)? = merged.last {
                merged[merged.count - 1] = .literal(previous + text)
            } else {
                merged.append(part)
            }
        }
        self = Template(parts: merged)
        return missing
    }

    /// The text with row references filled from `row` (a missing column expands to nothing;
    /// runs check columns before expanding).
    package func expand(row: DataRow?) -> String {
        if case .literal(let text) = storage { return text }
        var out = ""
        forEachPiece(row: row) { out += $0 }
        return out
    }

    /// The text of a request path: literal text as written, and each `${row.…}` or `${index}`
    /// value as one path segment, percent-encoded: every byte outside RFC 3986's
    /// unreserved characters (`/`, `?`, `#` and `%` included) is encoded, and a value of dots only
    /// is encoded whole, so a data row can neither leave its segment, add a query or a fragment,
    /// nor walk up the path with `..`.
    package func expandPath(row: DataRow?) -> String {
        if case .literal(let text) = storage { return text }
        var out = ""
        for part in parts {
            switch part {
            case .literal(let text): out += text
            case .environment, .environmentOr: break
            case .row(let column): if let text = row?.text(column) { out += Template.pathSegment(text) }
            case .index: if let row { out += String(row.index) }
            }
        }
        return out
    }

    /// `value` percent-encoded as one path segment.
    package static func pathSegment(_ value: String) -> String {
        let onlyDots = !value.isEmpty && value.utf8.allSatisfy { $0 == UInt8(ascii: ".") }
        var out: [UInt8] = []
        out.reserveCapacity(value.utf8.count)
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in value.utf8 {
            let unreserved = (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
                || (byte == UInt8(ascii: ".") && !onlyDots)
            if unreserved {
                out.append(byte)
            } else {
                out.append(contentsOf: [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Calls `body` with each piece of the expanded text in order (the same pieces `expand`
    /// joins), for writers that escape as they go.
    func forEachPiece(row: DataRow?, _ body: (String) -> Void) {
        if case .literal(let text) = storage {
            if !text.isEmpty { body(text) }
            return
        }
        for part in parts {
            switch part {
            case .literal(let text): body(text)
            case .environment, .environmentOr: break
            case .row(let column): if let text = row?.text(column) { body(text) }
            case .index: if let row { body(String(row.index)) }
            }
        }
    }
}

/// A template that does not parse.
extension Template {
    /// The template with its references as written (`pdf/${row.id}.pdf`): what a message or a
    /// record may show, never a row's or the environment's value.
    package var asWritten: String {
        parts.map { part -> String in
            switch part {
            case .literal(let text): return text
            case .environment(let name), .environmentOr(let name, _): return "${\(name)}"
            case .row(let column): return "${row.\(column)}"
            case .index: return "${index}"
            }
        }.joined()
    }
}

/// What begins `${file:PATH}`: the content of the file at PATH (relative to the manifest's folder),
/// a secret, one trailing line break removed.
package let fileReference = "file:"

package struct TemplateSyntaxError: Error, Sendable {
    /// What is wrong.
    package let message: String
}
