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

    /// Where the record in progress is; its text is in `KeptText`.
    private struct Partial {
        var startLine: Int
        var fieldCount = 0
        /// Bytes in the current field: whether it has begun, when its text is not kept.
        var fieldLength = 0
        var quoted = false
        var quoteLine = 0
        var afterQuote = false

        /// Whether nothing of the record has been read on its line: a line end here is a blank line.
        var isBlank: Bool { fieldCount == 0 && fieldLength == 0 && !afterQuote }

        /// Adds a byte to the current field.
        @inline(__always) mutating func append(_ byte: UInt8, to text: inout KeptText) {
            if text.keeping { text.field.append(byte) }
            fieldLength += 1
        }

        /// Ends the current field, keeping its text when asked.
        @inline(__always) mutating func finishField(_ text: inout KeptText) {
            fieldCount += 1
            fieldLength = 0
            if text.keeping { text.finishField() }
        }
    }

    /// The text of the record in progress, when it is kept (`next`, not `skip`).
    private struct KeptText {
        let keeping: Bool
        var fields: [String] = []
        var field: [UInt8] = []
        /// A field that is not UTF-8 fails its record, once the record has been read to its end.
        var notUTF8 = false

        /// Moves the current field's bytes into `fields` as text.
        mutating func finishField() {
            if let text = String(validating: field, as: UTF8.self) {
                fields.append(text)
            } else {
                notUTF8 = true
                fields.append(String(decoding: field, as: UTF8.self))
            }
            field.removeAll(keepingCapacity: true)
        }
    }

    /// Reads one record, keeping its fields' text when `keeping`.
    private mutating func record(keeping: Bool) throws -> (line: Int, fields: [String])? {
        if !started {
            started = true
            try skipByteOrderMark()
        }
        // The text and the size are kept apart from `Partial`: with them in it, the per-byte
        // counters lost their registers (callgrind: 8% more instructions a byte in `skip`).
        var record = Partial(startLine: line)
        var text = KeptText(keeping: keeping)
        var sawAny = false
        var size = 0
        while let byte = try reader.next() {
            sawAny = true
            size += 1
            if size > Limits.dataRecord { throw tooLong(from: record.startLine, openQuote: record.quoted ? record.quoteLine : nil) }
            if record.quoted {
                try quotedByte(byte, of: &record, &text)
                continue
            }
            switch byte {
            case UInt8(ascii: ","):
                record.finishField(&text)
                record.afterQuote = false
            case UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                try countLineEnd(byte)
                if record.isBlank {
                    // A blank line holds no record; the next one starts below it. (A loop, not a
                    // recursive call: a file of a million blank lines must not exhaust the stack.)
                    record.startLine = line
                    size = 0
                    continue
                }
                record.finishField(&text)
                return try ended(record.startLine, text.fields, notUTF8: text.notUTF8)
            case UInt8(ascii: "\""):
                try openQuote(of: &record)
            default:
                try unquotedByte(byte, of: &record, &text)
            }
        }
        if record.quoted {
            throw DataFileError(file: name, line: record.quoteLine, message: "quote opened here is never closed", endsFile: true)
        }
        guard sawAny, !record.isBlank else { return nil }
        record.finishField(&text)
        return try ended(record.startLine, text.fields, notUTF8: text.notUTF8)
    }

    /// Reads over a UTF-8 byte-order mark at the start of the file.
    private mutating func skipByteOrderMark() throws {
        guard try reader.peek() == 0xEF else { return }
        _ = try reader.next()
        if try reader.next() != 0xBB || reader.next() != 0xBF {
            throw DataFileError(file: name, line: 1, message: "starts with a broken byte-order mark")
        }
    }

    /// A byte inside quotes: a doubled quote is one, a single one closes them.
    @inline(__always) private mutating func quotedByte(_ byte: UInt8, of record: inout Partial, _ text: inout KeptText) throws {
        if byte == UInt8(ascii: "\"") {
            if try reader.peek() == UInt8(ascii: "\"") {
                _ = try reader.next()
                record.append(byte, to: &text)
            } else {
                record.quoted = false
                record.afterQuote = true
            }
            return
        }
        if byte == UInt8(ascii: "\n") {
            line += 1
            // A quote left open would otherwise read the rest of the file as one field.
            if line - record.quoteLine >= Limits.quotedFieldLines {
                throw DataFileError(file: name, line: record.quoteLine,
                                    message: "quote opened here is not closed within \(Limits.quotedFieldLines) lines", endsFile: true)
            }
        }
        record.append(byte, to: &text)
    }

    /// Counts a line end outside quotes, reading a CRLF as one.
    @inline(__always) private mutating func countLineEnd(_ byte: UInt8) throws {
        if byte == UInt8(ascii: "\r"), try reader.peek() == UInt8(ascii: "\n") { _ = try reader.next() }
        line += 1
    }

    /// A quote outside quotes: it opens a quoted field only where the field starts.
    @inline(__always) private mutating func openQuote(of record: inout Partial) throws {
        guard record.fieldLength == 0 && !record.afterQuote else {
            try skipLine()
            throw DataFileError(file: name, line: record.startLine, message: "has a quote inside an unquoted field")
        }
        record.quoted = true
        record.quoteLine = line
    }

    /// Any other byte outside quotes: field text, unless a closing quote came before it.
    @inline(__always) private mutating func unquotedByte(_ byte: UInt8, of record: inout Partial, _ text: inout KeptText) throws {
        if record.afterQuote {
            try skipLine()
            throw DataFileError(file: name, line: record.startLine, message: "has text after a closing quote")
        }
        record.append(byte, to: &text)
    }

    /// The error of a record past `Limits.dataRecord`, which ends the file.
    private func tooLong(from startLine: Int, openQuote quoteLine: Int?) -> DataFileError {
        let open = quoteLine.map { " (the quote opened on line \($0) is still open)" } ?? ""
        return DataFileError(file: name, line: startLine, message: "has a record longer than \(Limits.dataRecord >> 20) MiB\(open)", endsFile: true)
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
