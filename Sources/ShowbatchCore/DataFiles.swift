import Foundation

/// Reads a file forward in chunks so that memory stays bounded whatever its size.
struct ChunkedReader {
    private let handle: FileHandle
    private var buffer: [UInt8] = []
    private var position = 0
    private var finished = false
    private let chunkSize: Int

    init(path: String, chunkSize: Int = 1 << 16) throws {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw DataFileError(file: path, line: nil, message: "cannot be opened for reading")
        }
        self.handle = handle
        self.chunkSize = chunkSize
    }

    func close() { try? handle.close() }

    /// The next byte, or nil at the end of the file.
    mutating func next() throws -> UInt8? {
        if position == buffer.count {
            if finished { return nil }
            guard let data = try handle.read(upToCount: chunkSize), !data.isEmpty else {
                finished = true
                return nil
            }
            buffer = Array(data)
            position = 0
        }
        let byte = buffer[position]
        position += 1
        return byte
    }

    /// The next byte without consuming it.
    mutating func peek() throws -> UInt8? {
        guard let byte = try next() else { return nil }
        position -= 1
        return byte
    }
}

/// A problem in an `each` data file, named by file and line; never quotes a field's value.
public struct DataFileError: Error, Sendable, CustomStringConvertible {
    /// The data file's path as the manifest names it.
    public let file: String
    /// The 1-based line, when the problem is in one row.
    public let line: Int?
    /// What is wrong.
    public let message: String

    public var description: String {
        if let line { return "\(file):\(line): \(message)" }
        return "\(file): \(message)"
    }
}

/// Streams RFC 4180 records: quoted fields, doubled quotes, embedded newlines, CRLF, a BOM.
public struct CSVRecordReader {
    private var reader: ChunkedReader
    private let name: String
    private var line = 1
    private var started = false

    /// Opens `path`; `name` is how errors refer to the file.
    public init(path: String, name: String) throws {
        reader = try ChunkedReader(path: path)
        self.name = name
    }

    /// Closes the file.
    public func close() { reader.close() }

    /// The next record with the line it starts on, or nil at the end of the file.
    /// A malformed record throws; the reader then continues at the next line.
    public mutating func next() throws -> (line: Int, fields: [String])? {
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
        func finish(_ field: inout [UInt8]) throws -> String {
            guard let text = String(validating: field, as: UTF8.self) else {
                throw DataFileError(file: name, line: startLine, message: "is not valid UTF-8")
            }
            field.removeAll(keepingCapacity: true)
            return text
        }
        while let byte = try reader.next() {
            sawAny = true
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

/// Streams the rows of an `each` file (CSV with a header, or JSON Lines of objects).
public struct DataRowReader {
    /// The kind of data file.
    public enum Kind: Sendable, Equatable {
        case csv, jsonl
    }

    private var csv: CSVRecordReader?
    private var lines: ChunkedReader?
    private let name: String
    private var header: [String] = []
    private var nextIndex = 0
    private var line = 0

    /// The CSV header (empty for JSON Lines).
    public var columns: [String] { header }

    /// Opens a data file; a CSV file's header is read at once.
    public init(kind: Kind, path: String, name: String) throws {
        self.name = name
        switch kind {
        case .csv:
            var reader = try CSVRecordReader(path: path, name: name)
            guard let first = try reader.next() else {
                throw DataFileError(file: name, line: nil, message: "is empty; expected a header line")
            }
            header = first.fields
            csv = reader
        case .jsonl:
            lines = try ChunkedReader(path: path)
        }
    }

    /// Closes the file.
    public func close() {
        csv?.close()
        lines?.close()
    }

    /// The next row: a parsed row or the error that makes it a failed row; nil at the end.
    public mutating func next() -> Result<DataRow, DataRowFailure>? {
        do {
            if csv != nil { return try nextCSV() }
            return try nextJSONLine()
        } catch let error as DataRowFailure {
            return .failure(error)
        } catch {
            // The file itself failed (unreadable): the rest of it cannot be read.
            let index = nextIndex
            nextIndex += 1
            csv = nil
            lines = nil
            return .failure(DataRowFailure(index: index, line: nil, message: "\(name): \(error)"))
        }
    }

    private mutating func nextCSV() throws -> Result<DataRow, DataRowFailure>? {
        let index = nextIndex
        let record: (line: Int, fields: [String])?
        do {
            record = try csv!.next()
        } catch let error as DataFileError {
            nextIndex += 1
            return .failure(DataRowFailure(index: index, line: error.line, message: error.description))
        }
        guard let record else { return nil }
        nextIndex += 1
        guard record.fields.count == header.count else {
            return .failure(DataRowFailure(index: index, line: record.line,
                message: "\(name):\(record.line): has \(record.fields.count) fields; the header has \(header.count)"))
        }
        // Sized once: growing a dictionary rehashes what it holds.
        var values = [String: JSONValue](minimumCapacity: header.count)
        for (column, value) in zip(header, record.fields) { values[column] = .string(value) }
        return .success(DataRow(index: index, line: record.line, values: values))
    }

    private mutating func nextJSONLine() throws -> Result<DataRow, DataRowFailure>? {
        while true {
            var bytes: [UInt8] = []
            var sawAny = false
            while let byte = try lines!.next() {
                sawAny = true
                if byte == UInt8(ascii: "\n") { break }
                bytes.append(byte)
            }
            guard sawAny else { return nil }
            line += 1
            if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
            if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            let index = nextIndex
            nextIndex += 1
            guard case .object(let members) = try? JSONParser.parse(bytes) else {
                return .failure(DataRowFailure(index: index, line: line, message: "\(name):\(line): is not a JSON object"))
            }
            var values = [String: JSONValue](minimumCapacity: members.count)
            for member in members where values[member.key] == nil { values[member.key] = member.value }
            return .success(DataRow(index: index, line: line, values: values))
        }
    }
}

/// A data row that cannot be sent; it becomes a failed result row.
public struct DataRowFailure: Error, Sendable {
    /// The 0-based row index.
    public let index: Int
    /// The 1-based line, when known.
    public let line: Int?
    /// What is wrong, naming the file and line.
    public let message: String
}
