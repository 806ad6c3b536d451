import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Append-only record of the rows an output has finished, so that `--resume` skips them.
///
/// The first line identifies the run (manifest hash, shard, format, columns); each further
/// line is one row in write order. A torn last line (a crash mid-write) is dropped on resume.
final class Journal {
    let path: String
    private let handle: FileHandle
    private var buffer: [UInt8] = []
    private var unsynced = 0
    private var lastSync = coarseMilliseconds()
    /// The next journaled row not yet replayed (read ahead by one).
    private var upcoming: ResultRow?
    private var reader: ChunkedReader?

    /// The journal's identity line.
    static func header(manifestHash: UInt64, shard: Shard?, output: String, format: OutputFormat, labels: [String]) -> String {
        let value: JSONValue = .object([
            JSONMember("showbatch_journal", .number("1")),
            JSONMember("manifest", .string(String(manifestHash, radix: 16))),
            JSONMember("shard", .string(shard.map { "\($0.index)/\($0.count)" } ?? "")),
            JSONMember("output", .string(output)),
            JSONMember("format", .string(format.rawValue)),
            JSONMember("labels", .array(labels.map(JSONValue.string))),
        ])
        return value.compactText
    }

    /// Opens the journal of `output`: with `resume`, keeps the rows an earlier run recorded
    /// (refusing a journal of another manifest); without it, starts a fresh one.
    ///
    /// The journal is locked for the run: a second run writing the same output (an overlapping
    /// cron job) is refused instead of interleaving its rows.
    init(output: String, header: String, resume: Bool) throws(RunError) {
        path = output + ".journal"
        handle = try createPrivateFile(path, for: output, truncate: false)
        guard flock(handle.fileDescriptor, LOCK_EX | LOCK_NB) == 0 else {
            throw RunError.runtime("another showbatch run is writing \(output) (its journal \(path) is locked)")
        }
        let size = (try? handle.seekToEnd()).map(Int.init) ?? 0
        var keptBytes = 0
        if resume && size > 0 {
            keptBytes = try Journal.validPrefix(path: path, header: header)
            do {
                var reader = try ChunkedReader(path: path)
                // Skip the identity line.
                while let byte = try reader.next(), byte != 0x0A {}
                self.reader = reader
            } catch {
                throw RunError.runtime("cannot read the journal \(path)")
            }
        }
        if keptBytes == 0 {
            // A new journal, or one torn before its identity line was complete.
            reader?.close()
            reader = nil
            buffer = Array((header + "\n").utf8)
        }
        guard ftruncate(handle.fileDescriptor, off_t(keptBytes)) == 0 else {
            throw RunError.runtime("cannot write the journal \(path): \(String(cString: strerror(errno)))")
        }
        do { try handle.seek(toOffset: UInt64(keptBytes)) } catch { throw RunError.runtime("cannot write the journal \(path)") }
    }

    /// The byte length of the journal's complete lines, after checking its identity line.
    private static func validPrefix(path: String, header: String) throws(RunError) -> Int {
        do {
            var reader = try ChunkedReader(path: path)
            defer { reader.close() }
            var line: [UInt8] = []
            var offset = 0
            var kept = 0
            var first = true
            while let byte = try reader.next() {
                offset += 1
                if byte != 0x0A {
                    line.append(byte)
                    continue
                }
                if first {
                    guard String(decoding: line, as: UTF8.self) == header else {
                        throw RunError.usage("the journal \(path) belongs to a different manifest, data file, shard or output; remove it to start over, or run without --resume")
                    }
                    first = false
                } else if (try? JSONParser.parse(line)) == nil {
                    break
                }
                kept = offset
                line.removeAll(keepingCapacity: true)
            }
            if first {
                // No complete line: a journal torn while its identity line was written starts over.
                guard header.utf8.starts(with: line) else {
                    throw RunError.usage("the journal \(path) is not a showbatch journal; remove it to start over")
                }
                return 0
            }
            return kept
        } catch let error as RunError {
            throw error
        } catch {
            throw RunError.runtime("cannot read the journal \(path)")
        }
    }

    /// The journaled row for `ordinal`, if the earlier run finished it.
    func replayed(_ ordinal: Int) -> ResultRow? {
        while true {
            if upcoming == nil { upcoming = reader == nil ? nil : readEntry() }
            guard let row = upcoming, row.ordinal <= ordinal else { return nil }
            upcoming = nil
            if row.ordinal == ordinal { return row }
        }
    }

    private func readEntry() -> ResultRow? {
        var line: [UInt8] = []
        do {
            while let byte = try reader!.next() {
                if byte == 0x0A { return Journal.decode(line) }
                line.append(byte)
            }
        } catch {}
        reader?.close()
        reader = nil
        return nil
    }

    /// Records a finished row; synced to disk in batches.
    func append(_ row: ResultRow) throws(RunError) {
        Journal.encode(row, to: &buffer)
        buffer.append(0x0A)
        unsynced += 1
        if unsynced >= 512 || coarseMilliseconds() - lastSync > 1000 { try sync() }
    }

    /// Writes and fsyncs what is buffered.
    func sync() throws(RunError) {
        do {
            if !buffer.isEmpty { try handle.write(contentsOf: buffer) }
            try handle.synchronize()
        } catch {
            throw RunError.runtime("cannot write the journal \(path)")
        }
        buffer.removeAll(keepingCapacity: true)
        unsynced = 0
        lastSync = coarseMilliseconds()
    }

    /// Closes the journal, keeping it (interrupted or failed runs).
    func close() {
        try? sync()
        try? handle.close()
        reader?.close()
    }

    /// Closes and deletes the journal (the run finished).
    func remove() {
        close()
        unlink(path)
    }

    /// Appends the row's journal line (without its line break): compact JSON written straight
    /// into the buffer, every row, so no JSON tree is built for it.
    static func encode(_ row: ResultRow, to out: inout [UInt8]) {
        JSONWriter.append(to: &out) { writer in
            writer.object { writer in
                writer.key("o")
                writer.integer(row.ordinal)
                writer.key("r")
                writer.string(row.request)
                writer.key("s")
                writer.string(row.status.rawValue)
                writer.key("h")
                writer.integer(row.httpStatus)
                writer.key("a")
                writer.integer(row.attempts)
                writer.key("l")
                writer.array { writer in
                    for label in row.labels {
                        writer.array { writer in
                            writer.string(label.name)
                            writer.string(label.value)
                        }
                    }
                }
                writer.key("e")
                writer.array { writer in
                    for error in row.errors {
                        writer.array { writer in
                            writer.integer(error.code.rawValue)
                            writer.string(error.label)
                            writer.string(error.message)
                        }
                    }
                }
            }
        }
    }

    static func decode(_ line: [UInt8]) -> ResultRow? {
        guard let value = try? JSONParser.parse(line),
              case .number(let ordinalText)? = value["o"], let ordinal = Int(ordinalText),
              case .string(let request)? = value["r"],
              case .string(let statusText)? = value["s"], let status = RowStatus(rawValue: statusText),
              case .number(let attemptsText)? = value["a"], let attempts = Int(attemptsText),
              case .array(let labelItems)? = value["l"], case .array(let errorItems)? = value["e"] else { return nil }
        var httpStatus: Int?
        if case .number(let text)? = value["h"] { httpStatus = Int(text) }
        var labels: [(name: String, value: String?)] = []
        for item in labelItems {
            guard case .array(let pair) = item, pair.count == 2, case .string(let name) = pair[0] else { return nil }
            if case .string(let text) = pair[1] { labels.append((name, text)) } else { labels.append((name, nil)) }
        }
        var errors: [RowError] = []
        for item in errorItems {
            guard case .array(let parts) = item, parts.count == 3, case .number(let codeText) = parts[0],
                  let code = Int(codeText).flatMap(ErrorCode.init(rawValue:)), case .string(let message) = parts[2] else { return nil }
            var label: String?
            if case .string(let text) = parts[1] { label = text }
            errors.append(RowError(code: code, label: label, message: message))
        }
        return ResultRow(ordinal: ordinal, request: request, status: status, httpStatus: httpStatus,
                         attempts: attempts, labels: labels, errors: errors)
    }
}
