// Over 400 lines on purpose: the journal's format is written and read here, line for line, and
// keeping the writer next to the reader is what keeps the two in step.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The state of one output, so that a run can go on after a crash (`--resume`) and send only the
/// failed rows again (`--retry-failed`). It never holds a revealed, header or payload value: only
/// what identifies the run, checkpoints (how far the output is written) and where failed rows are.
///
/// Rows are written in order, so a checkpoint is enough to go on: the last work item in the
/// output, the byte offset after it, the counts of rows by status and a hash of the bytes. A
/// checkpoint is written only once the output's bytes up to it are on disk, and synced itself.
/// On resume the `.partial` file is cut back to the last checkpoint and the run goes on from the
/// next work item; a torn last line is dropped.
///
/// Lines, each a JSON object: the identity (`showbatch_journal`), then `failed` records
/// (`[ordinal, start, end]`) and `checkpoint`s, and last `end` (size and hash of the finished
/// output) when the run finished. The journal is removed when no row failed.
final class Journal {
    /// What a journal is valid for: the same rows in the same order and format.
    struct Identity: Equatable {
        /// A hash of what in the manifest shapes the rows (not its timing settings, and no header value).
        var manifest: String
        /// A hash of the data files' content.
        var data: String
        /// `I/N`, or empty.
        var shard: String
        var output: String
        var format: String
        var columns: [String]
    }

    /// How far an output is written.
    struct Checkpoint: Equatable {
        /// The last work item in the output; -1 for none.
        var ordinal: Int
        /// The output's size after that row.
        var offset: Int
        /// Rows of each status in the output.
        var counts: RowCounts
        /// FNV-1a of the output's bytes.
        var hash: UInt64
        /// The size and hash of the output's rejects file (`output.rejects`), if it has one.
        var rejects: (offset: Int, hash: UInt64, rows: Int)? = nil
        /// With a rejects file: the rows in the output itself (the counts hold both files').
        var ownRows: Int? = nil

        static func == (lhs: Checkpoint, rhs: Checkpoint) -> Bool {
            lhs.ordinal == rhs.ordinal && lhs.offset == rhs.offset && lhs.counts == rhs.counts && lhs.hash == rhs.hash
                && lhs.rejects?.offset == rhs.rejects?.offset && lhs.rejects?.hash == rhs.rejects?.hash
                && lhs.rejects?.rows == rhs.rejects?.rows && lhs.ownRows == rhs.ownRows
        }
    }

    /// Where a failed row's bytes are in the output (a JSON row without its separator).
    struct FailedRow: Equatable {
        var ordinal: Int
        var start: Int
        var end: Int
    }

    /// Tries at taking a journal's lock, 20 ms apart.
    static let lockTries = 250

    let path: String
    let output: String
    private let identity: Identity
    private var fd: Int32
    private var buffer: [UInt8] = []
    private var closed = false
    /// The last checkpoint read back (resume and retry).
    private(set) var lastCheckpoint: Checkpoint?
    /// The failed rows up to the last checkpoint read back.
    private(set) var failedRows: [FailedRow] = []
    /// Size and hash of the output, when the run that wrote it finished.
    private(set) var ended: (size: Int, hash: UInt64)?
    /// Failed rows of a rewrite, held until `rewrite` (retry runs write no checkpoints).
    private var pendingFailed: [FailedRow] = []
    /// Rows that failed again in the rewrite `prepareRewrite` wrote.
    private var rewriteFailed = 0
    private let mode: RunMode

    /// Opens and locks the journal of `output`. The lock keeps a second run off the same output
    /// (an overlapping cron job) for as long as this one runs.
    init(output: String, identity: Identity, mode: RunMode, waiting: () -> Void = {}) throws(RunError) {
        self.output = output
        self.identity = identity
        self.mode = mode
        path = SideFile.journal.of(output)
        var opened = try PrivateFile.openExisting(path, for: output)
        if opened == nil {
            guard mode != .retryFailed else {
                throw RunError.usage("\(output) has no journal, so no failed rows to send again: its run left none, or never finished (then use --resume)")
            }
            opened = try PrivateFile.create(path, for: output)
        }
        fd = opened!
        // A process being started elsewhere in this program holds a copy of the descriptor (and
        // so the lock) between its fork and its exec, and a run finishing holds it while it
        // renames its outputs: wait that out (up to 5 s, 20 ms at a time) before calling the
        // journal another run's.
        var locked = flock(fd, LOCK_EX | LOCK_NB) == 0
        if !locked && errno == EWOULDBLOCK { waiting() }
        var tries = 0
        // An interrupt ends the wait at once (the run then ends as interrupted).
        while !locked && errno == EWOULDBLOCK && tries < Journal.lockTries && !Task.isCancelled {
            tries += 1
            usleep(20_000)
            locked = flock(fd, LOCK_EX | LOCK_NB) == 0
        }
        guard locked else {
            Glibc.close(fd)
            throw RunError.runtime("another showbatch run is writing \(output) (its journal \(path) is locked)")
        }
        do {
            switch mode {
            case .fresh: try start()
            case .resume: try read(keepTail: false)
            case .retryFailed: try read(keepTail: true)
            }
        } catch {
            Glibc.close(fd)
            throw error
        }
    }

    /// Empties the journal and writes the identity line.
    private func start() throws(RunError) {
        guard ftruncate(fd, 0) == 0, lseek(fd, 0, SEEK_SET) == 0 else { throw failure(errno) }
        lastCheckpoint = nil
        failedRows = []
        ended = nil
        appendIdentity()
        try writeBuffer(sync: true)
    }

    private func appendIdentity() {
        JSONWriter.append(to: &buffer) { writer in
            writer.object { writer in
                writer.key("showbatch_journal")
                writer.integer(2)
                writer.key("manifest")
                writer.string(identity.manifest)
                writer.key("data")
                writer.string(identity.data)
                writer.key("shard")
                writer.string(identity.shard)
                writer.key("output")
                writer.string(identity.output)
                writer.key("format")
                writer.string(identity.format)
                writer.key("columns")
                writer.array { writer in for column in identity.columns { writer.string(column) } }
            }
        }
        buffer.append(0x0A)
    }

    /// Reads an existing journal: checks its identity, and keeps its failed rows, last checkpoint
    /// and end. A journal torn while its identity line was written starts over.
    private func read(keepTail: Bool) throws(RunError) {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 { throw RunError.runtime("cannot read the journal \(path): \(describeErrno(errno))") }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
        }
        var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
        // The last piece has no line break: it is empty or torn.
        lines.removeLast()
        guard let first = lines.first else {
            if keepTail { throw RunError.usage("the journal \(path) is empty: there are no failed rows to send again") }
            try start()
            return
        }
        if let difference = Journal.difference(Array(first), from: identity) {
            throw RunError.usage("the journal \(path) does not match this run: \(difference); remove it to start over, or run without \(keepTail ? "--retry-failed" : "--resume")")
        }
        // Lines up to the first one that does not parse (a torn tail); failed rows count once a
        // checkpoint after them is there.
        var pending: [FailedRow] = []
        var cut = first.count + 1
        var offset = cut
        for line in lines.dropFirst() {
            offset += line.count + 1
            guard let value = try? JSONParser.parse(Array(line)), case .object = value else { break }
            if case .array(let items)? = value["failed"], let numbers = Journal.integers(items), numbers.count == 3 {
                pending.append(FailedRow(ordinal: numbers[0], start: numbers[1], end: numbers[2]))
            } else if let checkpoint = value["checkpoint"].flatMap(Journal.checkpoint) {
                failedRows += pending
                pending = []
                lastCheckpoint = checkpoint
                cut = offset
            } else if let size = Journal.integer(value["end"]?["size"]), case .string(let hash)? = value["end"]?["hash"],
                      let hashValue = UInt64(hash, radix: 16) {
                ended = (size, hashValue)
                cut = offset
                break
            } else {
                break
            }
        }
        if keepTail {
            guard ended != nil else {
                throw RunError.usage("the journal \(path) is of a run that did not finish; finish it with --resume first")
            }
        } else {
            // What follows the last checkpoint (a torn line, rows failed past it) is dropped:
            // the resumed run writes those rows again.
            guard ftruncate(fd, off_t(cut)) == 0, lseek(fd, off_t(cut), SEEK_SET) >= 0 else { throw failure(errno) }
        }
    }

    /// What differs between an identity line and the identity of this run, in words; nil when
    /// they are the same.
    static func difference(_ line: [UInt8], from identity: Identity) -> String? {
        guard let value = try? JSONParser.parse(line), case .number(let version)? = value["showbatch_journal"] else {
            return "it is not a showbatch journal"
        }
        guard version == "2" else { return "it was written by another version of showbatch (journal format \(version))" }
        func text(_ key: String) -> String? { if case .string(let text)? = value[key] { return text } else { return nil } }
        if text("output") != identity.output { return "it is the journal of another output (\(text("output") ?? "?"))" }
        if text("format") != identity.format { return "it was written as \(text("format") ?? "?"), and this run writes \(identity.format)" }
        if text("shard") != identity.shard {
            let was = text("shard").map { $0.isEmpty ? "no shard" : "shard \($0)" } ?? "?"
            return "it was written for \(was), and this run is \(identity.shard.isEmpty ? "not sharded" : "shard \(identity.shard)")"
        }
        if text("manifest") != identity.manifest {
            return "the manifest changed since (its endpoint, requests, labels, outputs or retry rules)"
        }
        if text("data") != identity.data { return "the content of a data file changed since" }
        guard case .array(let columns)? = value["columns"] else { return "it is not a showbatch journal" }
        let names = columns.compactMap { if case .string(let name) = $0 { return name } else { return nil } }
        if names != identity.columns {
            return "its output columns were \(names.joined(separator: ", ")), and this run's are \(identity.columns.joined(separator: ", "))"
        }
        return nil
    }

    private static func integer(_ value: JSONValue?) -> Int? {
        if case .number(let text)? = value { return Int(text) } else { return nil }
    }

    private static func integers(_ values: [JSONValue]) -> [Int]? {
        let numbers = values.compactMap { integer($0) }
        return numbers.count == values.count ? numbers : nil
    }

    private static func checkpoint(_ value: JSONValue) -> Checkpoint? {
        guard let ordinal = integer(value["ordinal"]), let offset = integer(value["offset"]), let rows = integer(value["rows"]),
              let ok = integer(value["ok"]), let partial = integer(value["partial"]), let failed = integer(value["failed"]),
              case .string(let hash)? = value["hash"], let hashValue = UInt64(hash, radix: 16) else { return nil }
        var checkpoint = Checkpoint(ordinal: ordinal, offset: offset, counts: RowCounts(rows: rows, ok: ok, partial: partial, failed: failed),
                                    hash: hashValue)
        if let rejectsOffset = integer(value["rejects_offset"]), case .string(let text)? = value["rejects_hash"], let rejectsHash = UInt64(text, radix: 16),
           let rejectsRows = integer(value["rejects_rows"]), let ownRows = integer(value["own_rows"]) {
            checkpoint.rejects = (rejectsOffset, rejectsHash, rejectsRows)
            checkpoint.ownRows = ownRows
        }
        return checkpoint
    }

    /// Notes a failed row; written with the next checkpoint.
    func recordFailed(_ row: FailedRow) {
        guard mode != .retryFailed else {
            pendingFailed.append(row)
            return
        }
        appendLine { writer in
            writer.object { writer in
                writer.key("failed")
                writer.array { writer in
                    writer.integer(row.ordinal)
                    writer.integer(row.start)
                    writer.integer(row.end)
                }
            }
        }
    }

    /// Records that the output is written (and on disk) up to `checkpoint`, and syncs.
    func checkpoint(_ checkpoint: Checkpoint) throws(RunError) {
        guard mode != .retryFailed else { return }
        appendCheckpoint(checkpoint)
        try writeBuffer(sync: true)
    }

    /// Records that the output is complete: a last checkpoint and its size and hash.
    func end(_ checkpoint: Checkpoint) throws(RunError) {
        guard mode != .retryFailed else { return }
        appendCheckpoint(checkpoint)
        appendEnd(checkpoint)
        try writeBuffer(sync: true)
    }

    /// Before a `--retry-failed` rewrite is renamed into place: the journal of the new output,
    /// written whole and synced as `<journal>.next`. Renaming the output and then this file over
    /// the journal (`adoptRewrite`) is the commit; a run cut short between the two is finished by
    /// `finishInterruptedRewrite`, so a journal never describes an output it was not written for.
    func prepareRewrite(_ checkpoint: Checkpoint) throws(RunError) {
        let next = SideFile.journalNext.of(output)
        let nextFD = try PrivateFile.create(next, for: output)
        buffer.removeAll(keepingCapacity: true)
        appendIdentity()
        for row in pendingFailed {
            appendLine { writer in
                writer.object { writer in
                    writer.key("failed")
                    writer.array { writer in
                        writer.integer(row.ordinal)
                        writer.integer(row.start)
                        writer.integer(row.end)
                    }
                }
            }
        }
        appendCheckpoint(checkpoint)
        appendEnd(checkpoint)
        let code = buffer.withUnsafeBytes { PrivateFile.writeAll(nextFD, $0) } ?? (fdatasync(nextFD) == 0 ? nil : errno)
        buffer.removeAll(keepingCapacity: true)
        Glibc.close(nextFD)
        if let code {
            unlink(next)
            throw RunError.runtime("cannot write the journal \(next): \(describeErrno(code))")
        }
        rewriteFailed = checkpoint.counts.failed
    }

    /// Once the rewritten output is in place: its journal replaces this one, or both go when no
    /// row failed again.
    func adoptRewrite() throws(RunError) {
        close()
        try Journal.adopt(SideFile.journalNext.of(output), as: path, keep: rewriteFailed > 0)
    }

    private static func adopt(_ next: String, as path: String, keep: Bool) throws(RunError) {
        if keep {
            guard rename(next, path) == 0 else {
                throw RunError.runtime("cannot rename \(next) to \(path): \(describeErrno(errno))")
            }
        } else {
            unlink(path)
            unlink(next)
        }
    }

    /// Finishes the commit of a `--retry-failed` run cut short after writing `<journal>.next`:
    /// if the output is the one it describes (the output was renamed), it becomes the journal;
    /// if not, it goes, and the journal still describes the output. Done under the journal's lock;
    /// when another run holds it, that run's files are left alone.
    static func finishInterruptedRewrite(output: String) throws(RunError) {
        let path = SideFile.journal.of(output)
        let next = SideFile.journalNext.of(output)
        guard case .regular = PrivateFile.inspect(next) else { return }
        guard let fd = try PrivateFile.openExisting(path, for: output) else {
            unlink(next)
            return
        }
        defer { Glibc.close(fd) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return }
        guard let nextFD = PrivateFile.openForReading(next) else { return }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(nextFD, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
        }
        Glibc.close(nextFD)
        var failed = 0
        var ended: (size: Int, hash: UInt64)?
        for line in bytes.split(separator: 0x0A) {
            guard let value = try? JSONParser.parse(Array(line)) else { break }
            if value["failed"] != nil { failed += 1 }
            if let size = integer(value["end"]?["size"]), case .string(let hash)? = value["end"]?["hash"], let hashValue = UInt64(hash, radix: 16) {
                ended = (size, hashValue)
            }
        }
        if let ended, outputMatches(output, size: ended.size, hash: ended.hash) {
            try adopt(next, as: path, keep: failed > 0)
        } else {
            unlink(next)
        }
    }

    /// Whether `path` is a regular file of `size` bytes whose FNV-1a hash is `hash`.
    static func outputMatches(_ path: String, size: Int, hash: UInt64) -> Bool {
        guard let file = try? FileDescriptor.openOwn(path) else { return false }
        var total = 0
        var value = fnvOffsetBasis
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            guard let count = try? file.read(into: &chunk) else { return false }
            if count == 0 { break }
            value = fnv1a(chunk[0..<count], seed: value)
            total += count
        }
        return total == size && value == hash
    }

    private func appendCheckpoint(_ checkpoint: Checkpoint) {
        appendLine { writer in
            writer.object { writer in
                writer.key("checkpoint")
                writer.object { writer in
                    writer.key("ordinal")
                    writer.integer(checkpoint.ordinal)
                    writer.key("offset")
                    writer.integer(checkpoint.offset)
                    writer.key("rows")
                    writer.integer(checkpoint.counts.rows)
                    writer.key("ok")
                    writer.integer(checkpoint.counts.ok)
                    writer.key("partial")
                    writer.integer(checkpoint.counts.partial)
                    writer.key("failed")
                    writer.integer(checkpoint.counts.failed)
                    writer.key("hash")
                    writer.string(String(checkpoint.hash, radix: 16))
                    if let rejects = checkpoint.rejects {
                        writer.key("rejects_offset")
                        writer.integer(rejects.offset)
                        writer.key("rejects_hash")
                        writer.string(String(rejects.hash, radix: 16))
                        writer.key("rejects_rows")
                        writer.integer(rejects.rows)
                        writer.key("own_rows")
                        writer.integer(checkpoint.ownRows ?? 0)
                    }
                }
            }
        }
    }

    private func appendEnd(_ checkpoint: Checkpoint) {
        appendLine { writer in
            writer.object { writer in
                writer.key("end")
                writer.object { writer in
                    writer.key("size")
                    writer.integer(checkpoint.offset)
                    writer.key("hash")
                    writer.string(String(checkpoint.hash, radix: 16))
                }
            }
        }
    }

    private func appendLine(_ body: (inout JSONWriter) -> Void) {
        JSONWriter.append(to: &buffer, body)
        buffer.append(0x0A)
    }

    private func writeBuffer(sync: Bool) throws(RunError) {
        guard !closed else { return }
        if !buffer.isEmpty {
            if let code = buffer.withUnsafeBytes({ PrivateFile.writeAll(fd, $0) }) { throw failure(code) }
            buffer.removeAll(keepingCapacity: true)
        }
        if sync && fdatasync(fd) != 0 { throw failure(errno) }
    }

    private func failure(_ code: Int32) -> RunError {
        .runtime("cannot write the journal \(path): \(describeErrno(code))")
    }

    /// Closes the journal, keeping it.
    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
    }

    /// Closes and deletes the journal.
    func remove() {
        close()
        unlink(path)
    }
}
