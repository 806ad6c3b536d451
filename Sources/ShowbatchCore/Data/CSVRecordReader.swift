/// Streams RFC 4180 records: quoted fields, doubled quotes, embedded newlines, CRLF, a BOM.
package struct CSVRecordReader {
    private var reader: ChunkedReader
    private let name: String
    private var line = 1
    private var started = false

    /// Opens `path`; `name` is how errors refer to the file.
    package init(path: String, name: String) throws {
        reader = try ChunkedReader(path: path)
        self.name = name
    }

    /// Closes the file.
    package func close() { reader.close() }

    /// The next record with the line it starts on, or nil at the end of the file.
    /// A malformed record throws; the reader then continues at the next line.
    package mutating func next() throws -> (line: Int, fields: [String])? {
        if !started {
            started = true
            if try reader.peek() == 0xEF {
                _ = try reader.next()
                if try reader.next() != 0xBB || reader.next() != 0xBF {
                    throw DataFileError(file: name, line: 1, message: "starts with a broken byte-order mark")
                }
            }
        }
        var startLine = line
        var fields: [String] = []
        var field: [UInt8] = []
        var quoted = false
        var afterQuote = false
        var sawAny = false
        var size = 0
        func finish(_ field: inout [UInt8]) throws -> String {
            guard let text = String(validating: field, as: UTF8.self) else {
                throw DataFileError(file: name, line: startLine, message: "is not valid UTF-8")
            }
            field.removeAll(keepingCapacity: true)
            return text
        }
        while let byte = try reader.next() {
            sawAny = true
            size += 1
            if size > Limits.dataRecord {
                throw DataFileError(file: name, line: startLine, message: "has a record longer than \(Limits.dataRecord >> 20) MiB (an unclosed quote?); the rest of the file is not read", endsFile: true)
            }
            if quoted {
                if byte == UInt8(ascii: "\"") {
                    if try reader.peek() == UInt8(ascii: "\"") {
                        _ = try reader.next()
                        field.append(byte)
                    } else {
                        quoted = false
                        afterQuote = true
                    }
                } else {
                    if byte == UInt8(ascii: "\n") { line += 1 }
                    field.append(byte)
                }
                continue
            }
            switch byte {
            case UInt8(ascii: ","):
                fields.append(try finish(&field))
                afterQuote = false
            case UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                if byte == UInt8(ascii: "\r"), try reader.peek() == UInt8(ascii: "\n") { _ = try reader.next() }
                line += 1
                if fields.isEmpty && field.isEmpty && !afterQuote {
                    // A blank line holds no record; the next one starts below it. (A loop, not a
                    // recursive call: a file of a million blank lines must not exhaust the stack.)
                    startLine = line
                    size = 0
                    continue
                }
                fields.append(try finish(&field))
                return (startLine, fields)
            case UInt8(ascii: "\""):
                if field.isEmpty && !afterQuote {
                    quoted = true
                } else {
                    try skipLine()
                    throw DataFileError(file: name, line: startLine, message: "has a quote inside an unquoted field")
                }
            default:
                if afterQuote {
                    try skipLine()
                    throw DataFileError(file: name, line: startLine, message: "has text after a closing quote")
                }
                field.append(byte)
            }
        }
        if quoted {
            throw DataFileError(file: name, line: startLine, message: "has a quoted field that is never closed")
        }
        guard sawAny, !(fields.isEmpty && field.isEmpty && !afterQuote) else { return nil }
        fields.append(try finish(&field))
        return (startLine, fields)
    }

    private mutating func skipLine() throws {
        while let byte = try reader.next() {
            if byte == UInt8(ascii: "\n") { line += 1; return }
        }
    }
}

/// A problem in an `each` data file, named by file and line; never quotes a field's value.
package struct DataFileError: Error, Sendable, CustomStringConvertible {
    /// The data file's path as the manifest names it.
    package let file: String
    /// The 1-based line, when the problem is in one row.
    package let line: Int?
    /// What is wrong.
    package let message: String
    /// True when the file cannot be read past this problem.
    package var endsFile = false

    /// A problem in `file` (at `line`, when in one row).
    package init(file: String, line: Int?, message: String, endsFile: Bool = false) {
        self.file = file
        self.line = line
        self.message = message
        self.endsFile = endsFile
    }

    /// `file:line: message`.
    package var description: String {
        if let line { return "\(file):\(line): \(message)" }
        return "\(file): \(message)"
    }
}
