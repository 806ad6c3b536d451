import Foundation
import ShowbatchBasics
import ShowbatchManifest
#if canImport(Glibc)
import Glibc
#endif

/// Reads the rows of one shard output, byte for byte, in the layout `OutputFile` writes: CSV (a
/// header record, then one record per row; a record ends at a line break outside quotes and keeps
/// its line ending), JSON (`[`, rows one per line separated by `,`, `]`) or JSON Lines.
///
/// One buffer per shard, whatever the file's size: a merge holds one row of each shard at a time.
final class ShardRows {
    /// Why the file cannot be read as a showbatch output, in words (no byte of it is quoted).
    struct Malformed: Error {
        /// What is wrong, such as "its last row has no line break (the file was cut short)".
        let reason: String
    }

    /// The largest row taken (a damaged file, such as an unclosed quote, is refused at this size
    /// instead of being read into memory whole). A row holds labels of one answer of at most
    /// 16 MiB, escaped.
    static let maxRow = 256 << 20

    /// The shard file.
    let path: String
    /// Its format, which says how rows are laid out.
    let format: OutputFormat
    private let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)
    private var start = 0
    private var end = 0
    private var atEnd = false
    /// JSON: whether the closing `]` has been read.
    private var closed = false
    /// JSON: whether another row follows the last one read (it ended with `,`).
    private var more = false
    /// Rows handed out so far.
    private(set) var rows = 0
    /// Where the last row handed out is, in the (plain) bytes of the file: for JSON without its
    /// separator, as the journal records a failed row's span.
    private(set) var lastSpan = (start: 0, end: 0)
    /// The plain-byte position of `buffer[0]`.
    private var base = 0
    /// The file is read up to a checkpoint: a JSON row there has no separator after it yet.
    private let cutAtCheckpoint: Bool

    /// The file's bytes (a sealed file's plaintext).
    private let stored: StoredBytes
    /// Decompresses a `.gz` shard.
    private let gunzip: GunzipReader?

    /// Opens `path` for reading, never through a link; nil when there is no regular file. With
    /// `key`, the file is sealed and its plaintext is read. With `gzip`, rows are read from the
    /// decompressed bytes. With `limit`, only the first `limit` bytes are read (before
    /// decompression), as written up to a checkpoint.
    init?(path: String, format: OutputFormat, gzip: Bool = false, key: DataKey? = nil, limit: Int? = nil) throws(Malformed) {
        let opened: Int32?
        do {
            opened = try PrivateFile.openForReading(path)
        } catch {
            throw Malformed(reason: error.description)
        }
        guard let fd = opened else { return nil }
        // Reads block: a regular file never makes them wait long.
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        self.fd = fd
        do {
            stored = try StoredBytes(fd: fd, path: path, key: key, limit: limit)
        } catch {
            close(fd)
            throw Malformed(reason: error.reason)
        }
        gunzip = gzip ? GunzipReader(source: stored) : nil
        cutAtCheckpoint = limit != nil
        self.path = path
        self.format = format
    }

    deinit {
        stored.wipe()
        buffer.withUnsafeMutableBytes { wipe($0) }
        close(fd)
    }

    /// Reads what comes before the first row: the CSV header record (returned, line ending
    /// included), or JSON's opening `[` (nothing returned); nothing for JSON Lines.
    func head() throws(Malformed) -> [UInt8] {
        switch format {
        case .csv:
            var header: [UInt8] = []
            guard try csvRecord(into: &header) else { throw Malformed(reason: "it is empty, so it has no header") }
            return header
        case .json:
            var line: [UInt8] = []
            guard try self.line(into: &line, lastMayBeCut: cutAtCheckpoint) else { throw Malformed(reason: "it is empty") }
            if line == Array("[]".utf8) {
                closed = true
            } else if line == Array("[".utf8) {
                more = true
            } else {
                throw Malformed(reason: "it does not start with a line holding [")
            }
            return []
        case .jsonl:
            return []
        }
    }

    /// Appends the next row's bytes to `row` (CSV and JSON Lines with their line ending, JSON
    /// without its separator) and returns true; false after the last row.
    func next(into row: inout [UInt8]) throws(Malformed) -> Bool {
        let found: Bool
        let rowStart = base + start
        switch format {
        case .csv:
            found = try csvRecord(into: &row)
            lastSpan = (rowStart, base + start)
        case .jsonl:
            found = try line(into: &row)
            if found { row.append(0x0A) }
            lastSpan = (rowStart, base + start)
        case .json:
            guard more else {
                found = false
                break
            }
            let before = row.count
            guard try line(into: &row, lastMayBeCut: cutAtCheckpoint) else {
                if cutAtCheckpoint { return false }
                throw Malformed(reason: "it ends before its closing ]")
            }
            if row.last == UInt8(ascii: ",") {
                row.removeLast()
            } else {
                more = false
            }
            lastSpan = (rowStart, rowStart + row.count - before)
            // A row is one JSON object: the line after the last row closes the array.
            guard row.count > before, row[before] == UInt8(ascii: "{") else {
                throw Malformed(reason: "its line \(rows + 2) is not a row (a JSON object)")
            }
            found = true
        }
        if found { rows += 1 }
        return found
    }

    /// Checks that nothing follows the last row but JSON's closing `]`.
    func finish() throws(Malformed) {
        guard format == .json else { return }
        if !closed {
            var line: [UInt8] = []
            guard try self.line(into: &line), line == Array("]".utf8) else {
                throw Malformed(reason: "it does not end with a line holding ]")
            }
            closed = true
        }
        var rest: [UInt8] = []
        if try self.line(into: &rest) || !rest.isEmpty { throw Malformed(reason: "something follows its closing ]") }
    }

    /// Counts the rows that are left (for a message about a shard with too many rows).
    func countRest() -> Int {
        var count = 0
        var row: [UInt8] = []
        while (try? next(into: &row)) == true {
            count += 1
            row.removeAll(keepingCapacity: true)
        }
        return count
    }

    // MARK: Bytes

    /// Makes bytes available; false at the end of the file (or of its first `limit` bytes).
    private func fill() throws(Malformed) -> Bool {
        if start < end { return true }
        if atEnd { return false }
        base += end
        // Decompressed when the file is gzip, unsealed when it is sealed: the reason of either's failure.
        let result: Result<Int, Malformed> = buffer.withUnsafeMutableBytes { bytes in
            if let gunzip {
                return Result { () throws(GunzipReader.Failure) -> Int in try gunzip.read(into: bytes) }.mapError { Malformed(reason: $0.reason) }
            }
            return Result { () throws(StoredBytes.Failure) -> Int in try stored.read(into: bytes) }.mapError { Malformed(reason: $0.reason) }
        }
        let count = try result.get()
        start = 0
        end = count
        if count == 0 { atEnd = true }
        return count > 0
    }

    /// One line without its `\n`; false at the end of the file. A last line without a line
    /// break is refused: showbatch ends every line, so the file was cut short (but at a
    /// checkpoint, with `lastMayBeCut`, where the last JSON row awaits its separator).
    private func line(into out: inout [UInt8], lastMayBeCut: Bool = false) throws(Malformed) -> Bool {
        let before = out.count
        var any = false
        while try fill() {
            any = true
            if let newline = buffer[start..<end].firstIndex(of: 0x0A) {
                out.append(contentsOf: buffer[start..<newline])
                start = newline + 1
                return true
            }
            out.append(contentsOf: buffer[start..<end])
            start = end
            if out.count - before > ShardRows.maxRow { throw tooLarge }
        }
        if any {
            if lastMayBeCut { return true }
            throw Malformed(reason: "its last line has no line break (the file was cut short)")
        }
        return false
    }

    /// One CSV record with its line ending: `"` toggles quoting, a `\n` outside quotes ends it.
    private func csvRecord(into out: inout [UInt8]) throws(Malformed) -> Bool {
        let before = out.count
        var quoted = false
        var any = false
        while try fill() {
            any = true
            var index = start
            while index < end {
                let byte = buffer[index]
                index += 1
                if byte == UInt8(ascii: "\"") {
                    quoted.toggle()
                } else if byte == 0x0A && !quoted {
                    out.append(contentsOf: buffer[start..<index])
                    start = index
                    return true
                }
            }
            out.append(contentsOf: buffer[start..<end])
            start = end
            if out.count - before > ShardRows.maxRow { throw tooLarge }
        }
        if any {
            throw Malformed(reason: quoted ? "a quoted cell in its last row is not closed (the file was cut short)"
                                           : "its last row has no line break (the file was cut short)")
        }
        return false
    }

    private var tooLarge: Malformed { Malformed(reason: "it holds a row over \(ShardRows.maxRow >> 20) MiB") }

    /// The bytes of cell `column` of a CSV record, as written (quotes and all): cells are split
    /// at `delimiter` outside quotes; the record's line ending is not part of its last cell.
    static func csvCell(_ record: ArraySlice<UInt8>, column: Int, delimiter: UInt8 = UInt8(ascii: ",")) -> ArraySlice<UInt8>? {
        var body = record
        if body.last == 0x0A { body = body.dropLast() }
        if body.last == 0x0D { body = body.dropLast() }
        var quoted = false
        var cell = 0
        var cellStart = body.startIndex
        for index in body.indices {
            let byte = body[index]
            if byte == UInt8(ascii: "\"") {
                quoted.toggle()
            } else if byte == delimiter && !quoted {
                if cell == column { return body[cellStart..<index] }
                cell += 1
                cellStart = index + 1
            }
        }
        return cell == column ? body[cellStart...] : nil
    }
}
