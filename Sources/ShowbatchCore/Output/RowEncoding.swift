/// Encodes result rows as CSV cells or JSON objects (SPEC section 3).
package enum RowEncoding {
    /// The fixed columns that precede the labels.
    package static var fixedColumns: [String] { ResultColumn.names }

    /// The CSV header line.
    package static func csvHeader(labels: [String], escapeFormulas: Bool) -> [UInt8] {
        var out: [UInt8] = []
        appendCSVLine(fixedColumns + labels, escapeFormulas: escapeFormulas, to: &out)
        return out
    }

    /// One CSV line for `row`, with a cell for each of `labels` (empty when the row lacks it).
    package static func csvLine(_ row: ResultRow, labels: [String], escapeFormulas: Bool, to out: inout [UInt8]) {
        appendCSVCell(row.request, escapeFormulas: escapeFormulas, to: &out)
        out.append(UInt8(ascii: ","))
        out.append(contentsOf: row.status.rawValue.utf8)
        out.append(UInt8(ascii: ","))
        if let status = row.httpStatus { out.append(contentsOf: String(status).utf8) }
        out.append(UInt8(ascii: ","))
        out.append(contentsOf: String(row.attempts).utf8)
        out.append(UInt8(ascii: ","))
        if !row.errors.isEmpty {
            appendCSVCell(row.errors.map(\.text).joined(separator: "; "), escapeFormulas: escapeFormulas, to: &out)
        }
        for label in labels {
            out.append(UInt8(ascii: ","))
            if let value = row.value(of: label) { appendCSVCell(value, escapeFormulas: escapeFormulas, to: &out) }
        }
        out.append(0x0A)
    }

    static func appendCSVLine(_ cells: [String], escapeFormulas: Bool, to out: inout [UInt8]) {
        for (index, cell) in cells.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            appendCSVCell(cell, escapeFormulas: escapeFormulas, to: &out)
        }
        out.append(0x0A)
    }

    /// Appends one cell: quoted when it holds a comma, quote or line break; with
    /// `escapeFormulas`, prefixed with `'` when a spreadsheet would take it for a formula.
    static func appendCSVCell(_ cell: String, escapeFormulas: Bool, to out: inout [UInt8]) {
        withUTF8(of: cell) { bytes in
            let formula = escapeFormulas && bytes.first.map { $0 == UInt8(ascii: "=") || $0 == UInt8(ascii: "+")
                || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "@") } == true
            let needsQuotes = bytes.contains { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "\"") || $0 == 0x0A || $0 == 0x0D }
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
