import ShowbatchBasics
/// Streams the rows of an `each` file (CSV with a header, or JSON Lines of objects).
package struct DataRowReader {
    /// The kind of data file.
    package enum Kind: Sendable, Equatable {
        case csv, jsonl
    }

    private var csv: CSVRecordReader?
    private var lines: ChunkedReader?
    private let name: String
    private var header: [String] = []
    private var nextIndex = 0
    private var line = 0
    /// False while counting: JSON lines are then found but not parsed.
    private var parsing = true

    /// The CSV header (empty for JSON Lines).
    package var columns: [String] { header }
    /// The rows read so far, failed ones included.
    package var rowsRead: Int { nextIndex }

    /// Opens a data file; a CSV file's header is read at once.
    package init(kind: Kind, path: String, name: String) throws {
        self.name = name
        switch kind {
        case .csv:
            var reader = try CSVRecordReader(path: path, name: name)
            guard let first = try reader.next() else {
                throw DataFileError(file: name, line: nil, message: "is empty; expected a header line")
            }
            var seen: [String: Int] = [:]
            for (position, column) in first.fields.enumerated() {
                if let earlier = seen[column] {
                    throw DataFileError(file: name, line: first.line,
                                        message: "has the column \"\(column)\" twice in its header (columns \(earlier + 1) and \(position + 1)); rename one")
                }
                seen[column] = position
            }
            header = first.fields
            csv = reader
        case .jsonl:
            lines = try ChunkedReader(path: path)
        }
    }

    /// Closes the file.
    package func close() {
        csv?.close()
        lines?.close()
    }

    /// Reads the rest of the file without making rows and returns how many rows it holds, the
    /// failed ones too: as many as `next` would give. What would end the reading of the file (a
    /// record that cannot end, a read error) throws instead.
    package mutating func countRest() throws -> Int {
        var count = 0
        if csv != nil {
            while true {
                do {
                    guard try csv!.skip() != nil else { break }
                } catch let error as DataFileError where !error.endsFile && error.line != nil {
                    // A record that fails alone is a row all the same.
                }
                count += 1
            }
        } else if lines != nil {
            parsing = false
            defer { parsing = true }
            while try nextJSONLine() != nil { count += 1 }
        }
        return count
    }

    /// The next row: a parsed row or the error that makes it a failed row; nil at the end.
    package mutating func next() -> Result<DataRow, DataRowFailure>? {
        // Nothing more once the file could not be read on.
        guard csv != nil || lines != nil else { return nil }
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
            if error.endsFile { csv = nil }
            return .failure(DataRowFailure(index: index, line: error.line, message: error.description,
                                           row: error.fields.map { partialRow(index: index, line: error.line ?? 0, fields: $0) }))
        }
        guard let record else { return nil }
        nextIndex += 1
        guard record.fields.count == header.count else {
            return .failure(DataRowFailure(index: index, line: record.line,
                message: "\(name):\(record.line): has \(record.fields.count) fields; the header has \(header.count)",
                row: partialRow(index: index, line: record.line, fields: record.fields)))
        }
        // Sized once: growing a dictionary rehashes what it holds.
        var values = [String: JSONValue](minimumCapacity: header.count)
        for (column, value) in zip(header, record.fields) { values[column] = .string(value) }
        return .success(DataRow(index: index, line: record.line, values: values))
    }

    /// The fields a failed record has, under the header's columns in order (a field past the
    /// last column has none), so that its rejects row shows which record it was.
    private func partialRow(index: Int, line: Int, fields: [String]) -> DataRow {
        var values = [String: JSONValue](minimumCapacity: header.count)
        for (column, value) in zip(header, fields) { values[column] = .string(value) }
        return DataRow(index: index, line: line, values: values)
    }

    private mutating func nextJSONLine() throws -> Result<DataRow, DataRowFailure>? {
        while true {
            var bytes: [UInt8] = []
            var sawAny = false
            while let byte = try lines!.next() {
                sawAny = true
                if byte == UInt8(ascii: "\n") { break }
                bytes.append(byte)
                if bytes.count > Limits.dataRecord {
                    // Its end is the next line break: the line fails alone and the next one is read.
                    while let byte = try lines!.next(), byte != UInt8(ascii: "\n") {}
                    line += 1
                    let index = nextIndex
                    nextIndex += 1
                    return .failure(DataRowFailure(index: index, line: line,
                        message: "\(name):\(line): has a line longer than \(Limits.dataRecord >> 20) MiB"))
                }
            }
            guard sawAny else { return nil }
            line += 1
            if line == 1, bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }  // a byte-order mark, as CSV files may have
            if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
            if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            let index = nextIndex
            nextIndex += 1
            guard parsing else { return .success(DataRow(index: index, line: line, values: [:])) }
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
package struct DataRowFailure: Error, Sendable {
    /// The 0-based row index.
    package let index: Int
    /// The 1-based line, when known.
    package let line: Int?
    /// What is wrong, naming the file and line.
    package let message: String
    /// The fields the record has, under their columns, when it could be read to its end.
    package var row: DataRow?

    /// A failed row; `row` holds what of it could be read.
    package init(index: Int, line: Int?, message: String, row: DataRow? = nil) {
        self.index = index
        self.line = line
        self.message = message
        self.row = row
    }
}
