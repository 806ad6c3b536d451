import ShowbatchBasics
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
    /// A malformed record throws once the whole record has been read, so the reader then
    /// continues at the next record; an error with `endsFile` leaves nothing to read after it.
    package mutating func next() throws -> (line: Int, fields: [String])? {
        try record(keeping: true)
    }

    /// Reads over the next record without keeping its fields, returning the line it starts on:
    /// the same records and the same errors that end the file as `next`, for counting a file
    /// before it is sent. Fields are not checked for UTF-8 (that fails its record alone).
    package mutating func skip() throws -> Int? {
        try record(keeping: false)?.line
    }

    private mutating func record(keeping: Bool) throws -> (line: Int, fields: [String])? {
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
        var fieldCount = 0
        var field: [UInt8] = []
        // Bytes in the current field: whether it has begun, when its text is not kept.
        var fieldLength = 0
        var quoted = false
        var quoteLine = 0
        var afterQuote = false
        var sawAny = false
        var size = 0
        // A field that is not UTF-8 fails its record, once the record has been read to its end.
        var notUTF8 = false
        func finish() {
            fieldCount += 1
            defer { fieldLength = 0 }
            guard keeping else { return }
            if let text = String(validating: field, as: UTF8.self) {
                fields.append(text)
            } else {
                notUTF8 = true
                fields.append(String(decoding: field, as: UTF8.self))
            }
            field.removeAll(keepingCapacity: true)
        }
        while let byte = try reader.next() {
            sawAny = true
            size += 1
            if size > Limits.dataRecord {
                let open = quoted ? " (the quote opened on line \(quoteLine) is still open)" : ""
                throw DataFileError(file: name, line: startLine, message: "has a record longer than \(Limits.dataRecord >> 20) MiB\(open)", endsFile: true)
            }
            if quoted {
                if byte == UInt8(ascii: "\"") {
                    if try reader.peek() == UInt8(ascii: "\"") {
                        _ = try reader.next()
                        if keeping { field.append(byte) }
                        fieldLength += 1
                    } else {
                        quoted = false
                        afterQuote = true
                    }
                } else {
                    if byte == UInt8(ascii: "\n") {
                        line += 1
                        if line - quoteLine >= Limits.quotedFieldLines {
                            throw DataFileError(file: name, line: quoteLine,
                                                message: "quote opened here is not closed within \(Limits.quotedFieldLines) lines", endsFile: true)
                        }
                    }
                    if keeping { field.append(byte) }
                    fieldLength += 1
                }
                continue
            }
            switch byte {
            case UInt8(ascii: ","):
                finish()
                afterQuote = false
            case UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                if byte == UInt8(ascii: "\r"), try reader.peek() == UInt8(ascii: "\n") { _ = try reader.next() }
                line += 1
                if fieldCount == 0 && fieldLength == 0 && !afterQuote {
                    // A blank line holds no record; the next one starts below it. (A loop, not a
                    // recursive call: a file of a million blank lines must not exhaust the stack.)
                    startLine = line
                    size = 0
                    continue
                }
                finish()
                return try ended(startLine, fields, notUTF8: notUTF8)
            case UInt8(ascii: "\""):
                if fieldLength == 0 && !afterQuote {
                    quoted = true
                    quoteLine = line
                } else {
                    try skipLine()
                    throw DataFileError(file: name, line: startLine, message: "has a quote inside an unquoted field")
                }
            default:
                if afterQuote {
                    try skipLine()
                    throw DataFileError(file: name, line: startLine, message: "has text after a closing quote")
                }
                if keeping { field.append(byte) }
                fieldLength += 1
            }
        }
        if quoted {
            throw DataFileError(file: name, line: quoteLine, message: "quote opened here is never closed", endsFile: true)
        }
        guard sawAny, !(fieldCount == 0 && fieldLength == 0 && !afterQuote) else { return nil }
        finish()
        return try ended(startLine, fields, notUTF8: notUTF8)
    }

    /// A whole record, or the error it is when a field was not UTF-8 (with its fields, the bad
    /// bytes replaced, so that a rejects file can say which record it was).
    private func ended(_ line: Int, _ fields: [String], notUTF8: Bool) throws -> (line: Int, fields: [String]) {
        if notUTF8 { throw DataFileError(file: name, line: line, message: "is not valid UTF-8", fields: fields) }
        return (line, fields)
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
    /// The record's fields, when it was read to its end (for its rejects row).
    package var fields: [String]?

    /// A problem in `file` (at `line`, when in one row).
    package init(file: String, line: Int?, message: String, endsFile: Bool = false, fields: [String]? = nil) {
        self.file = file
        self.line = line
        self.message = message
        self.endsFile = endsFile
        self.fields = fields
    }

    /// `file:line: message`.
    package var description: String {
        if let line { return "\(file):\(line): \(message)" }
        return "\(file): \(message)"
    }
}
