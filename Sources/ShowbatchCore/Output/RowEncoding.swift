import ShowbatchBasics
import ShowbatchManifest

/// Encodes result rows as CSV cells or JSON objects, in the columns and formats the README gives.
package enum RowEncoding {
    /// The fixed columns that precede the labels.
    package static var fixedColumns: [String] { ResultColumn.names }

    /// The CSV header line; nothing when the dialect has no header.
    static func csvHeader(_ layout: OutputLayout) -> [UInt8] {
        var out: [UInt8] = []
        guard layout.csv.header else { return out }
        for (index, name) in layout.names.enumerated() {
            if index > 0 { out.append(layout.csv.delimiter) }
            appendCSVCell(name, layout.csv, to: &out)
        }
        appendLineEnd(layout.csv, to: &out)
        return out
    }

    /// One CSV record for `row`, a cell per column of `layout` (empty when the row lacks it).
    static func csvLine(_ row: ResultRow, _ layout: OutputLayout, to out: inout [UInt8]) {
        for (index, source) in layout.sources.enumerated() {
            if index > 0 { out.append(layout.csv.delimiter) }
            if let cell = text(of: source, in: row) { appendCSVCell(cell, layout.csv, to: &out) } else if layout.csv.quoteAll {
                out.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: "\"")])
            }
        }
        appendLineEnd(layout.csv, to: &out)
    }

    /// A column's text in `row`; nil when empty or missing.
    static func text(of source: OutputLayout.Source, in row: ResultRow) -> String? {
        switch source {
        case .fixed(.request): return row.request
        case .fixed(.status): return row.status.rawValue
        case .fixed(.httpStatus): return row.httpStatus.map(String.init)
        case .fixed(.attempts): return String(row.attempts)
        case .fixed(.error): return row.errors.isEmpty ? nil : row.errors.map(\.text).joined(separator: "; ")
        case .label(let name): return row.value(of: name)
        case .extra(let index): return index < row.extras.count ? row.extras[index] : nil
        }
    }

    private static func appendLineEnd(_ dialect: CSVDialect, to out: inout [UInt8]) {
        if dialect.crlf { out.append(0x0D) }
        out.append(0x0A)
    }

    /// Appends one cell: quoted when it holds the delimiter, a quote or a line break (or always,
    /// with `quote: all`); with `escapeFormulas`, prefixed with `'` when a spreadsheet would take
    /// it for a formula.
    static func appendCSVCell(_ cell: String, _ dialect: CSVDialect, to out: inout [UInt8]) {
        withUTF8(of: cell) { bytes in
            let formula = dialect.escapeFormulas && looksLikeFormula(bytes)
            let delimiter = dialect.delimiter
            let needsQuotes = dialect.quoteAll
                || bytes.contains { $0 == delimiter || $0 == UInt8(ascii: "\"") || $0 == 0x0A || $0 == 0x0D }
            guard needsQuotes else {
                if formula { out.append(UInt8(ascii: "'")) }
                out.append(contentsOf: bytes)
                return
            }
            out.append(UInt8(ascii: "\""))
            if formula { out.append(UInt8(ascii: "'")) }
            for byte in bytes {
                if byte == UInt8(ascii: "\"") { out.append(byte) }
                out.append(byte)
            }
            out.append(UInt8(ascii: "\""))
        }
    }

    /// Starts with `=` `+` `-` `@`, tab or CR (OWASP's list) and is not a plain number such as
    /// `-12.50`, `+5` or `1e3`, which spreadsheets read as numbers, not formulas.
    static func looksLikeFormula(_ bytes: some Collection<UInt8>) -> Bool {
        guard let first = bytes.first else { return false }
        switch first {
        case UInt8(ascii: "="), UInt8(ascii: "@"), 0x09, 0x0D: return true
        case UInt8(ascii: "+"), UInt8(ascii: "-"): return !isPlainNumber(bytes)
        default: return false
        }
    }

    /// `[+-]digits[.digits][e[+-]digits]` (or `.digits`), nothing else.
    static func isPlainNumber(_ bytes: some Collection<UInt8>) -> Bool {
        var index = bytes.startIndex
        func digits() -> Int {
            var count = 0
            while index != bytes.endIndex, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                count += 1
                index = bytes.index(after: index)
            }
            return count
        }
        func take(_ byte: UInt8) -> Bool {
            guard index != bytes.endIndex, bytes[index] == byte else { return false }
            index = bytes.index(after: index)
            return true
        }
        if !take(UInt8(ascii: "+")) { _ = take(UInt8(ascii: "-")) }
        var mantissa = digits()
        if take(UInt8(ascii: ".")) { mantissa += digits() }
        guard mantissa > 0 else { return false }
        if take(UInt8(ascii: "e")) || take(UInt8(ascii: "E")) {
            if !take(UInt8(ascii: "+")) { _ = take(UInt8(ascii: "-")) }
            guard digits() > 0 else { return false }
        }
        return index == bytes.endIndex
    }

    /// A row as a flat JSON object of the layout's columns (when `output.columns` is given):
    /// numbers for `http_status` and `attempts`, null for what is missing, strings otherwise.
    static func writeFlatJSON(_ row: ResultRow, _ layout: OutputLayout, to out: inout [UInt8]) {
        JSONWriter.append(to: &out) { writer in
            writer.object { writer in
                for (source, name) in zip(layout.sources, layout.names) {
                    writer.key(name)
                    switch source {
                    case .fixed(.httpStatus): writer.integer(row.httpStatus)
                    case .fixed(.attempts): writer.integer(row.attempts)
                    default:
                        if let text = text(of: source, in: row) { writer.string(text) } else { writer.null() }
                    }
                }
            }
        }
    }

    /// The JSON object of a row: request, status, http_status, attempts, labels, errors.
    package static func writeJSON(_ row: ResultRow, to out: inout [UInt8]) {
        JSONWriter.append(to: &out) { writer in
            writer.object { writer in
                writer.key(ResultColumn.request.rawValue)
                writer.string(row.request)
                writer.key(ResultColumn.status.rawValue)
                writer.string(row.status.rawValue)
                writer.key(ResultColumn.httpStatus.rawValue)
                writer.integer(row.httpStatus)
                writer.key(ResultColumn.attempts.rawValue)
                writer.integer(row.attempts)
                writer.key("labels")
                writer.object { writer in
                    for label in row.labels {
                        writer.key(label.name)
                        writer.string(label.value)
                    }
                }
                writer.key("errors")
                writer.array { writer in
                    for error in row.errors {
                        writer.object { writer in
                            writer.key("code")
                            writer.integer(error.code.rawValue)
                            writer.key("kind")
                            writer.string(error.code.kind)
                            if let label = error.label {
                                writer.key("label")
                                writer.string(label)
                            }
                            writer.key("message")
                            writer.string(error.message)
                        }
                    }
                }
            }
        }
    }
}
