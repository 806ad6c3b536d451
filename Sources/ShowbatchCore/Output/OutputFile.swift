import Foundation
import ShowbatchBasics
import Synchronization
import ShowbatchManifest
#if canImport(Glibc)
import Glibc
#endif

/// One output: rows streamed to `<path>.partial` and renamed into place when the run ends, or
/// streamed to standard output.
///
/// It knows where each row's bytes are (for the journal's record of failed rows), how many rows
/// of each status it holds, the last work item it holds, and a hash of every byte: what a
/// checkpoint needs to go on from here after a crash.
final class OutputFile {
    let path: String
    let layout: OutputLayout
    var format: OutputFormat { layout.format }
    private var fd: Int32
    /// Nil for standard output.
    private let partialPath: String?
    private var buffer: [UInt8] = []
    /// Bytes handed to the file so far: where `buffer` starts.
    private var flushed = 0
    /// FNV-1a of the flushed bytes.
    private(set) var hash = fnvOffsetBasis
    /// Rows of each status in the file, rows from an earlier run included.
    private(set) var counts = RowCounts()
    /// The ordinal of the last work item written; -1 before the first.
    private(set) var lastOrdinal = -1
    /// Rows in this very file (its rejected rows are in the rejects file): where JSON needs a comma.
    private(set) var ownRows = 0
    /// Where failed (with `rejectPartial`, also partial) rows go instead (`output.rejects`): a
    /// file of this output, written, checkpointed, committed and abandoned with it.
    private var rejects: OutputFile?
    private var rejectPartial = false
    /// A rejects file's output: whose journal keeps both (the rejects file has none of its own).
    private var owner: String?
    /// The journal that keeps this file, as messages name it.
    private var journalPath: String { SideFile.journal.of(owner ?? path) }
    /// This file was renamed into place by the last `publish` (plain, not sealed): what is undone
    /// when the output it belongs with could not be.
    private var renamedInPlace = false
    /// Standard output whose columns cannot show a failure: failed rows are not written.
    private var leavesOutFailed = false
    /// Standard output is a terminal: control bytes a data row or a message brought are escaped.
    private var toTerminal = false
    /// The compressor of a `.gz` output; the buffer holds plain bytes, the file gzip members.
    private let gzip: GzipMembers?
    private var compressed: [UInt8] = []
    private var closed = false
    /// Set from any thread when the run is interrupted: a write to standard output blocked by a
    /// reader that does not read is given up (the rows after it are not written), so a signal
    /// ends the run within moments.
    private let abandoned = Atomic<Bool>(false)
    /// Standard output is a pipe, socket or terminal (not a regular file): a write may wait for
    /// its reader, so it waits in steps that a signal can end.
    private var waitsForReader = false
    /// A write failed part way: the file may hold bytes past what is counted, so nothing more is
    /// written to it (and no checkpoint says otherwise); `--resume` cuts it back to the last one.
    private var writeFailed = false
    /// An encrypted output's: the `.partial` is sealed under its data key, and how the finished
    /// file is put in place.
    private let sealing: Sealing?
    private var sealer: SealedWriter?
    /// Its header and trailer, put around the rows as the file is put in place (never in the
    /// `.partial`, which holds the rows its journal counts).
    var envelope: FileEnvelope?

    /// How an encrypted output is kept while written and put in place when finished.
    struct Sealing {
        /// The output's data key (its journal keeps it, wrapped, or not at all).
        let key: DataKey
        /// Makes the OpenPGP message the output becomes; nil for a shard's file, which stays
        /// sealed for `merge`.
        let encryptor: OpenPGPEncryptor?
        /// Asked while the message is made: an interrupt leaves the sealed file for `--resume`.
        let isCancelled: () -> Bool
    }

    private init(path: String, layout: OutputLayout, fd: Int32, partialPath: String?, sealing: Sealing? = nil) {
        self.path = path
        self.layout = layout
        gzip = layout.gzip ? GzipMembers() : nil
        self.fd = fd
        self.partialPath = partialPath
        self.sealing = sealing
        buffer.reserveCapacity(1 << 16)
    }

    /// Rows to standard output (not atomic, not resumable).
    static func standardOutput(layout: OutputLayout, rejectPartial: Bool = false) -> OutputFile {
        let file = OutputFile(path: "-", layout: layout, fd: STDOUT_FILENO, partialPath: nil)
        // Columns that show no status or error would print a failed row as a row of blanks, which
        // the reader of a pipe takes for a real one: such rows are left out (the summary counts them).
        file.leavesOutFailed = !layout.showsFailures
        file.toTerminal = isatty(STDOUT_FILENO) == 1
        file.waitsForReader = !PrivateFile.isRegular(STDOUT_FILENO)
        file.rejectPartial = rejectPartial
        file.writeHead()
        return file
    }

    /// A new `<path>.partial`, replacing one an earlier run left; sealed with `sealing`.
    static func create(path: String, layout: OutputLayout, sealing: Sealing? = nil) throws(RunError) -> OutputFile {
        let partial = SideFile.partial.of(path)
        let fd = try PrivateFile.create(partial, for: path)
        let file = OutputFile(path: path, layout: layout, fd: fd, partialPath: partial, sealing: sealing)
        if let sealing {
            do {
                file.sealer = try SealedWriter.create(fd: fd, key: sealing.key, name: partial)
            } catch {
                file.closeFiles()
                throw RunError.runtime(OutputError.sealingFailed(reason: error.message, journal: SideFile.journal.of(path)))
            }
        }
        file.writeHead()
        return file
    }

    /// The `<path>.partial` of an interrupted run, cut back to `checkpoint`, where the run goes on;
    /// nil when there is no partial file any more.
    static func resume(path: String, layout: OutputLayout,
                       from checkpoint: Journal.Checkpoint, sealing: Sealing? = nil) throws(RunError) -> OutputFile? {
        let partial = SideFile.partial.of(path)
        guard let fd = try PrivateFile.openExisting(partial, for: path) else { return nil }
        if let sealing { return try resumeSealed(path: path, partial: partial, fd: fd, layout: layout, from: checkpoint, sealing: sealing) }
        let size = lseek(fd, 0, SEEK_END)
        guard size >= checkpoint.offset else {
            close(fd)
            throw RunError.runtime(JournalError.partialShorter(partial: partial, size: Int(size), checkpoint: checkpoint.offset, journal: "\(path).journal"))
        }
        // The bytes before the checkpoint are kept as they are: they must be the ones the journal
        // counted (a file edited, swapped or damaged since would otherwise be finished as if whole).
        var hash = fnvOffsetBasis
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var done = 0
        let reader = FileDescriptor(borrowing: fd, path: partial)
        while done < checkpoint.offset {
            let want = min(buffer.count, checkpoint.offset - done)
            let got: Int
            do {
                got = try reader.read(into: &buffer, from: buffer.count - want, at: done)
            } catch {
                close(fd)
                throw RunError.runtime(JournalError.partialNotReadBack(partial: partial, reason: error.reason))
            }
            guard got == want else {
                close(fd)
                throw RunError.runtime(JournalError.partialNotReadBack(partial: partial, reason: "it ended early"))
            }
            hash = fnv1a(buffer[(buffer.count - want)...], seed: hash)
            done += got
        }
        guard hash == checkpoint.hash else {
            close(fd)
            throw RunError.runtime(JournalError.partialChanged(partial: partial, checkpoint: checkpoint.offset, journal: "\(path).journal"))
        }
        guard ftruncate(fd, off_t(checkpoint.offset)) == 0, lseek(fd, off_t(checkpoint.offset), SEEK_SET) >= 0 else {
            let code = errno
            close(fd)
            throw RunError.runtime(JournalError.partialNotCut(partial: partial, errno: code))
        }
        let file = OutputFile(path: path, layout: layout, fd: fd, partialPath: partial)
        file.flushed = checkpoint.offset
        file.hash = checkpoint.hash
        file.counts = checkpoint.counts
        file.lastOrdinal = checkpoint.ordinal
        file.ownRows = checkpoint.ownRows ?? checkpoint.counts.rows
        return file
    }

    /// A sealed `.partial` cut back to `checkpoint`: every chunk before it authenticates, and the
    /// plaintext they hold is what the journal counted.
    private static func resumeSealed(path: String, partial: String, fd: Int32, layout: OutputLayout,
                                     from checkpoint: Journal.Checkpoint, sealing: Sealing) throws(RunError) -> OutputFile {
        var hash = fnvOffsetBasis
        let sealer: SealedWriter
        do {
            sealer = try SealedWriter.resume(fd: fd, key: sealing.key, name: partial, plaintextCount: checkpoint.offset) { chunk in
                hash = fnv1a(chunk, seed: hash)
            }
        } catch {
            close(fd)
            throw RunError.runtime(JournalError.sealedPartialRefused(reason: error.message, journal: "\(path).journal", partial: partial))
        }
        guard sealing.key.journalTag(hash) == checkpoint.hash else {
            close(fd)
            throw RunError.runtime(JournalError.partialChanged(partial: partial, checkpoint: checkpoint.offset, journal: "\(path).journal"))
        }
        let file = OutputFile(path: path, layout: layout, fd: fd, partialPath: partial, sealing: sealing)
        file.sealer = sealer
        file.flushed = checkpoint.offset
        file.hash = hash
        file.counts = checkpoint.counts
        file.lastOrdinal = checkpoint.ordinal
        file.ownRows = checkpoint.ownRows ?? checkpoint.counts.rows
        return file
    }

    /// For a `--retry-failed` rewrite: the rows the file holds from the run it rewrites (copied
    /// by `KeptRows`), counted as that run counted them, and its last work item.
    func carry(_ kept: RowCounts, lastOrdinal: Int) {
        counts = kept
        self.lastOrdinal = lastOrdinal
    }

    /// Sends this output's failed (and with `partial`, partial) rows to `file` from now on.
    func attachRejects(_ file: OutputFile, partial: Bool) {
        rejects = file
        rejectPartial = partial
        file.owner = path
    }

    /// What comes before the first row.
    private func writeHead() {
        switch format {
        case .csv: buffer = RowEncoding.csvHeader(layout)
        case .json: buffer = Array("[".utf8)
        case .jsonl: break
        }
    }

    /// Where the next byte goes.
    var offset: Int { flushed + buffer.count }

    /// Appends a row; returns where its bytes are (a JSON row without its separator), and
    /// whether they went to the rejects file.
    @discardableResult
    func write(_ row: ResultRow) throws(RunError) -> (start: Int, end: Int, rejected: Bool) {
        if leavesOutFailed, row.status == .failed || (rejectPartial && row.status == .partial) {
            counts.count(row.status)
            lastOrdinal = max(lastOrdinal, row.ordinal)
            return (offset, offset, true)
        }
        if let rejects, row.status == .failed || (rejectPartial && row.status == .partial) {
            let span = try rejects.write(row)
            counts.count(row.status)
            lastOrdinal = max(lastOrdinal, row.ordinal)
            return (span.start, span.end, true)
        }
        let layout = self.layout
        let span = try place { buffer in
            switch layout.format {
            case .csv: RowEncoding.csvLine(row, layout, to: &buffer)
            case .json, .jsonl:
                if layout.custom { RowEncoding.writeFlatJSON(row, layout, to: &buffer) } else { RowEncoding.writeJSON(row, to: &buffer) }
                if layout.format == .jsonl { buffer.append(0x0A) }
            }
        }
        counts.count(row.status)
        lastOrdinal = max(lastOrdinal, row.ordinal)
        return (span.start, span.end, false)
    }

    /// Appends a row a `--retry-failed` rewrite keeps from the file it rewrites, as it was
    /// written there (`ShardRows` gives CSV and JSON Lines rows with their line ending, JSON rows
    /// without their separator), to this file or, with `toRejects`, its rejects file; returns
    /// where its bytes are. It was counted when the rewrite began (`carry`).
    @discardableResult
    func writeKept(_ bytes: [UInt8], toRejects: Bool) throws(RunError) -> (start: Int, end: Int) {
        if toRejects, let rejects { return try rejects.writeKept(bytes, toRejects: false) }
        return try place { $0.append(contentsOf: bytes) }
    }

    /// Appends one row's bytes (`encode` writes them), with JSON's separator before them; where
    /// they are.
    private func place(_ encode: (inout [UInt8]) -> Void) throws(RunError) -> (start: Int, end: Int) {
        if format == .json { buffer.append(contentsOf: (ownRows == 0 ? "\n" : ",\n").utf8) }
        ownRows += 1
        let start = offset
        encode(&buffer)
        let end = offset
        if buffer.count >= 1 << 16 { try flush() }
        // A gzip file's bytes are not the rows': its rows are placed by their number in the
        // file, which, unlike `offset` (compressed bytes flushed and plain bytes buffered), only
        // grows, across a resume too.
        if gzip != nil { return (ownRows - 1, ownRows) }
        return (start, end)
    }

    /// Hands the buffered bytes to the file.
    func flush() throws(RunError) {
        try flush(endingMember: false)
    }

    /// Hands the buffered bytes to the file; for gzip, compressed, and with `endingMember` the
    /// member is ended so that the file is whole up to here.
    private func flush(endingMember: Bool) throws(RunError) {
        try rejects?.flush()
        guard !closed else { return }
        if let gzip {
            guard !buffer.isEmpty || endingMember else { return }
            gzip.compress(buffer, endMember: endingMember, into: &compressed)
            buffer.removeAll(keepingCapacity: true)
            try hand(&compressed)
        } else {
            if toTerminal { buffer = Self.escapedForTerminal(buffer) }
            try hand(&buffer)
        }
    }

    /// Writes `bytes` to the file, counts and hashes them, and empties them.
    private func hand(_ bytes: inout [UInt8]) throws(RunError) {
        guard !bytes.isEmpty else { return }
        // Hashed first (sealing wipes the bytes), counted once written.
        guard !writeFailed else { throw RunError.runtime(OutputError.notWrittenWhole(file: partialPath ?? path, journal: journalPath)) }
        let hashed = fnv1a(bytes, seed: hash)
        if let sealer {
            do {
                try sealer.append(bytes)
            } catch {
                writeFailed = true
                throw RunError.runtime(OutputError.sealingFailed(reason: error.message, journal: journalPath))
            }
            // The plaintext has been sealed: it need not stay in memory.
            bytes.withUnsafeMutableBytes { wipe($0) }
        } else if waitsForReader {
            switch bytes.withUnsafeBytes({ PrivateFile.writeAll(fd, $0, unless: abandoned) }) {
            case .written: break
            case .abandoned:
                // Interrupted: nothing more goes to standard output (there is no journal to keep).
                closed = true
                bytes.removeAll(keepingCapacity: true)
                return
            case .failed(let failure):
                writeFailed = true
                throw writeError(failure)
            }
        } else if let failure = bytes.withUnsafeBytes({ PrivateFile.writeAll(fd, $0) }) {
            writeFailed = true
            throw writeError(failure)
        }
        hash = hashed
        flushed += bytes.count
        bytes.removeAll(keepingCapacity: true)
    }

    /// Flushes and makes the bytes durable (a checkpoint may then say they are there).
    func sync() throws(RunError) {
        try rejects?.sync()
        if writeFailed { throw RunError.runtime(OutputError.notWrittenWhole(file: partialPath ?? path, journal: journalPath)) }
        try flush(endingMember: true)
        guard partialPath != nil, !closed else { return }
        guard fdatasync(fd) == 0 else { throw writeError(errno) }
    }

    /// Where the file stands, once flushed: what a checkpoint records.
    var checkpoint: Journal.Checkpoint {
        Journal.Checkpoint(ordinal: lastOrdinal, offset: flushed, counts: counts, hash: recordedHash,
                           rejects: rejects.map { ($0.flushed, $0.recordedHash, $0.ownRows) }, ownRows: rejects == nil ? nil : ownRows)
    }

    /// The hash as the journal records it: a sealed file's is a MAC under its data key, so that
    /// the journal gives no way to test guesses of the rows.
    private var recordedHash: UInt64 { sealing.map { $0.key.journalTag(hash) } ?? hash }

    /// Ends the content (the JSON array's close) and makes it durable; the file is then ready to
    /// be renamed into place.
    func finishContent() throws(RunError) {
        try rejects?.finishContent()
        if format == .json {
            buffer.append(contentsOf: (ownRows == 0 ? "]\n" : "\n]\n").utf8)
        }
        try sync()
    }

    /// The rows the finished content holds, read back from its `.partial` (and its rejects
    /// file's), not from what the writer counted: what says the night adds up before it is put
    /// in place. A sealed file gets its last chunk first. Nil for standard output.
    func countRows() throws(RunError) -> (output: Int, rejects: Int?)? {
        guard let partialPath, !closed else { return nil }
        let rejected = try rejects?.countRows()?.output
        if let sealer, !sealer.isFinished {
            do {
                try sealer.finish()
            } catch {
                throw RunError.runtime(OutputError.sealingFailed(reason: error.message, journal: journalPath))
            }
            guard fdatasync(fd) == 0 else { throw writeError(errno) }
        }
        let own = try NightCount.rows(of: partialPath, layout: layout, key: sealing?.key)
        return (own, rejected)
    }

    /// Closes the file and puts it in place: renamed or, encrypted, made into an OpenPGP message.
    /// With `keepingSealed`, an OpenPGP message's sealed rows are kept beside it (`.sealed`) for
    /// `--retry-failed`, once every message of the output (its rejects file's too) is in place.
    func commit(keepingSealed: Bool = false) throws(RunError) {
        try publish(keepingSealed: keepingSealed)
        if keepingSealed { try keepSealedRows() }
    }

    /// Puts the file and its rejects file in place (`commit`); with `keepingSealed`, an OpenPGP
    /// message's sealed file stays as `.partial`, for `keepSealedRows`.
    func publish(keepingSealed: Bool) throws(RunError) {
        try rejects?.publish(keepingSealed: keepingSealed)
        do {
            try publishOwn(keepingSealed: keepingSealed)
        } catch {
            // The output and its rejects file are one night: never one final and one `.partial`.
            rejects?.withdraw()
            throw error
        }
    }

    /// Puts this very file in place (`publish`).
    private func publishOwn(keepingSealed: Bool) throws(RunError) {
        guard let partialPath, !closed else { return }
        if let sealer, let sealing {
            // The last chunk ends the sealed file (a resumed one had it cut off).
            if !sealer.isFinished {
                do {
                    try sealer.finish()
                } catch {
                    throw RunError.runtime(OutputError.sealingFailed(reason: error.message, journal: journalPath))
                }
                guard fdatasync(fd) == 0 else { throw writeError(errno) }
            }
            if let encryptor = sealing.encryptor {
                let lines = try envelope.map { envelope throws(RunError) in
                    envelope.lines(try envelope.totals(of: partialPath, layout: layout, key: sealing.key), layout: layout)
                }
                try OpenPGPPublisher.publish(sealed: fd, partial: partialPath, key: sealing.key, to: path, encryptor: encryptor,
                                             isCancelled: sealing.isCancelled, keepingSealed: keepingSealed, around: lines)
                closeFiles()
                return
            }
        }
        closeFiles()
        if let envelope {
            // The rows stay in `.partial` (for `--resume`, or kept beside the file when rows
            // failed) until the file with its header and trailer is in place.
            let finished = SideFile.enveloping.of(path)
            try envelope.write(partialPath, to: finished, for: path, layout: layout)
            guard rename(finished, path) == 0 else {
                let code = errno
                unlink(finished)
                throw RunError.runtime(FileError(.rename(to: path), finished, errno: code, next: OutputError.journalKept(journalPath)))
            }
            if !keepingSealed { unlink(partialPath) }
            return
        }
        guard rename(partialPath, path) == 0 else {
            throw RunError.runtime(FileError(.rename(to: path), partialPath, errno: errno, next: OutputError.journalKept(journalPath)))
        }
        renamedInPlace = true
    }

    /// Puts a rejects file renamed into place back to its `.partial` name, where the kept journal
    /// expects it, when its output could not be put in place.
    private func withdraw() {
        guard renamedInPlace, let partialPath, rename(path, partialPath) == 0 else { return }
        renamedInPlace = false
    }

    /// After `publish(keepingSealed: true)`: an OpenPGP message's sealed file (and its rejects
    /// file's) becomes its kept sealed rows, `<path>.sealed`, replacing the ones kept before.
    func keepSealedRows() throws(RunError) {
        try rejects?.keepSealedRows()
        guard let partialPath, sealing?.encryptor != nil || envelope != nil else { return }
        let kept = sealing?.encryptor != nil ? SideFile.sealedRows.of(path) : SideFile.keptRows.of(path)
        guard rename(partialPath, kept) == 0 else {
            throw RunError.runtime(FileError(.rename(to: kept), partialPath, errno: errno))
        }
    }

    /// The run is interrupted: a write to standard output that is waiting for its reader is given
    /// up (called from any thread).
    func abandonWaitingWrites() {
        rejects?.abandonWaitingWrites()
        abandoned.store(true, ordering: .relaxed)
    }

    /// Leaves the partial file with what could be written (an interrupted or failed run).
    /// Leaves the file as it is, synced; returns the sync's failure, if it had one.
    @discardableResult
    func abandon() -> RunError? {
        let rejected = rejects?.abandon()
        var failure: RunError?
        do { try sync() } catch { failure = error }
        closeFiles()
        return rejected ?? failure
    }

    fileprivate func closeFiles() {
        guard !closed else { return }
        closed = true
        if partialPath != nil { close(fd) }
    }

    /// A failed write in words: which file, what happened, and what is kept.
    private func writeError(_ code: Int32) -> RunError {
        guard let partialPath else {
            return .runtime(OutputError.standardOutputUnwritable(errno: code))
        }
        return .runtime(FileError(.write, partialPath, errno: code, next: OutputError.journalKept(journalPath)))
    }
}
