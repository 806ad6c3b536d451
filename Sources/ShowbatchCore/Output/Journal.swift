import Foundation
import ShowbatchBasics
import ShowbatchManifest
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
/// Its lines are written and read by `JournalCodec` only (identity, failed rows, chained
/// checkpoints, end); what they say of the output is checked against the output's own rows by
/// `OutputCheck` before a run trusts it. The journal is removed when no row failed.
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
        /// When it was written (Unix seconds), as the journal says: what `--resume=auto` measures
        /// a journal's age from, besides its modification time (which anyone who can write the
        /// file can set). Not part of what the checkpoint covers.
        var at: Int? = nil

        /// The checkpoint as written now.
        func stamped() -> Checkpoint {
            var stamped = self
            stamped.at = time(nil)
            return stamped
        }

        static func == (lhs: Checkpoint, rhs: Checkpoint) -> Bool {
            lhs.ordinal == rhs.ordinal && lhs.offset == rhs.offset && lhs.counts == rhs.counts && lhs.hash == rhs.hash
                && lhs.rejects?.offset == rhs.rejects?.offset && lhs.rejects?.hash == rhs.rejects?.hash
                && lhs.rejects?.rows == rhs.rejects?.rows && lhs.ownRows == rhs.ownRows
        }
    }

    /// How an encrypted output's data key is kept in its journal.
    enum StoredKey: Equatable {
        /// Wrapped under the state key (`KeyWrap`).
        case wrapped(String)
        /// Not at all: it lived in the memory of the run that wrote the output (no state key).
        case memoryOnly
    }

    /// An encrypted output's journal: the data key its sealed files are written under is made
    /// (and wrapped under `stateKey`, when there is one) or taken back from the journal.
    struct Sealing {
        var stateKey: StateKey?
    }

    /// Where a failed row's bytes are in the output (a JSON row without its separator).
    struct FailedRow: Equatable {
        var ordinal: Int
        var start: Int
        var end: Int
    }

    /// Tries at taking a journal's lock, 20 ms apart: 250 (5 s).
    ///
    /// `SHOWBATCH_TEST_LOCK_TRIES` in the environment raises it (never lowers it; at most 30,000,
    /// 10 min), for one end-to-end test: a signal during the wait must end the run with 130, and
    /// that signal comes from the test process once the wait's note has crossed the stderr
    /// thread, a pipe and the test's reader thread. A CI machine with both cores pinned can hold
    /// that chain up for seconds, and then the wait runs out first (exit 3); the test sets 5 min.
    /// The note still says 5 s. Read once, when the first journal is locked.
    static let lockTries: Int = {
        let tries = 250
        guard let text = ProcessInfo.processInfo.environment["SHOWBATCH_TEST_LOCK_TRIES"], let raised = Int(text) else { return tries }
        return min(max(raised, tries), 30_000)
    }()

    let path: String
    let output: String
    let identity: Identity
    private var fd: Int32
    private var buffer: [UInt8] = []
    private var writer = JournalCodec.Writer()
    private var closed = false
    /// The last checkpoint read back (resume and retry).
    private(set) var lastCheckpoint: Checkpoint?
    /// The failed rows up to the last checkpoint read back.
    private(set) var failedRows: [FailedRow] = []
    /// Size and hash of the output, when the run that wrote it finished.
    private(set) var ended: (size: Int, hash: UInt64)?
    /// Rows other than failed ones the rejects file holds so far (read back, and noted since; in
    /// a rewrite, those of the rewritten rejects file).
    private(set) var rejectedCount = 0
    /// Those rows' work items, as read back (`--retry-failed` copies them).
    private(set) var rejectedRows: [Int] = []
    /// A rewrite's failed and rejected rows, in work-item order, held until `prepareRewrite`
    /// writes them (retry runs write no checkpoints).
    var rewriteRecords: [JournalRecord] = []
    /// Whether the journal `prepareRewrite` wrote stays (rows failed, or its rejects file holds rows).
    var rewriteKept = false
    private let mode: RunMode
    /// With `--resume=auto`: why the journal found was not gone on from (and was started afresh).
    private(set) var discarded: String?
    /// An encrypted output's sealing, and its data key once made or unwrapped.
    private let sealing: Sealing?
    /// The journal of an encrypted output.
    var isOfEncryptedOutput: Bool { sealing != nil }
    private(set) var dataKey: DataKey?
    /// The data key as the journal holds it (for a shard's identity).
    private(set) var storedKey: StoredKey?

    /// Opens and locks the journal of `output`. The lock keeps a second run off the same output
    /// (an overlapping cron job) for as long as this one runs.
    /// With `staleAfter` (`--resume=auto`), a journal that cannot be gone on from (another run's,
    /// one that cannot be trusted, or one last written longer ago than that) is started afresh
    /// instead of refused, and `discarded` says why.
    init(output: String, identity: Identity, mode: RunMode, staleAfter: Duration? = nil, sealing: Sealing? = nil,
         waiting: () -> Void = {}) throws(RunError) {
        self.output = output
        self.identity = identity
        self.sealing = sealing
        self.mode = mode
        path = SideFile.journal.of(output)
        fd = try Journal.lock(path, output: output, create: mode != .retryFailed, waiting: waiting)
        do {
            switch mode {
            case .fresh: try start()
            case .resume:
                guard let staleAfter else {
                    try read(keepTail: false)
                    break
                }
                var info = stat()
                if fstat(fd, &info) == 0, info.st_size > 0, let stale = Journal.staleness(writtenAt: info.st_mtim.tv_sec, now: time(nil), maxAge: staleAfter) {
                    try restart(because: stale)
                    break
                }
                let refused: String?
                do {
                    let contents = try readChecked()
                    refused = contents?.lastCheckpoint?.at.flatMap { Journal.staleness(writtenAt: $0, now: time(nil), maxAge: staleAfter, recorded: true) }
                } catch {
                    refused = "its journal \(error.reason)"
                }
                if let refused { try restart(because: refused) } else { try read(keepTail: false) }
            case .retryFailed: try read(keepTail: true)
            }
        } catch {
            Glibc.close(fd)
            throw error
        }
    }

    /// How far ahead of this machine's clock a journal's time may be before it is called one from
    /// the future: a little, for clocks a moment apart (an NFS server's, a container's).
    static let clockSkew = 300

    /// Why a journal written at `writtenAt` is too old to go on from at `now` (or from the future:
    /// a clock that jumped back, or a time set by hand, which would otherwise never age out); nil
    /// when it is fresh. `recorded`: the time is the one the journal itself holds.
    static func staleness(writtenAt: Int, now: Int, maxAge: Duration, recorded: Bool = false) -> String? {
        let source = recorded ? "its journal says it was last written" : "its journal was last written"
        let age = now - writtenAt
        if age < -clockSkew {
            return "\(source) \(Units.text(.seconds(-age))) in the future (a clock set back, or a time set by hand), so its age is unknown"
        }
        guard Double(age) > maxAge.seconds else { return nil }
        return "\(source) \(Units.text(.seconds(age))) ago, more than resume_max_age (\(Units.text(maxAge)))"
    }

    /// Starts the journal afresh (`--resume=auto`), saying why.
    func restart(because reason: String) throws(RunError) {
        discarded = reason
        try start()
    }

    /// Opens (or creates) the journal at `path` and locks it. A process being started elsewhere
    /// in this program holds a copy of the descriptor (and so the lock) between its fork and its
    /// exec, and a run finishing holds it while it renames its outputs: that is waited out (up to
    /// 5 s, 20 ms at a time) before the journal is called another run's. A lock is only good while
    /// the locked file is the one at the path: a run that finished meanwhile removed (or replaced)
    /// it, and then the file at the path now is opened and locked instead. A journal is never
    /// created over one that appeared meanwhile (O_EXCL), so two runs never lock two journals of
    /// one output.
    private static func lock(_ path: String, output: String, create: Bool, waiting: () -> Void) throws(RunError) -> Int32 {
        var told = false
        var tries = 0
        while true {
            var fd = try PrivateFile.openExisting(path, for: output)
            if fd == nil {
                guard create else {
                    throw RunError.usage(JournalError.noJournal(output: output))
                }
                fd = try PrivateFile.createNew(path, for: output)
                // Someone else created it first: open theirs.
                if fd == nil { continue }
            }
            let opened = fd!
            var locked = flock(opened, LOCK_EX | LOCK_NB) == 0
            while !locked && errno == EWOULDBLOCK && tries < lockTries && !Task.isCancelled {
                if !told {
                    told = true
                    waiting()
                }
                tries += 1
                usleep(20_000)
                locked = flock(opened, LOCK_EX | LOCK_NB) == 0
            }
            guard locked else {
                Glibc.close(opened)
                throw RunError.runtime(JournalError.journalHeld(output: output, journal: path, keepsBeingReplaced: false))
            }
            // Still the file at the path? (An interrupted wait ends here too, as the run ends.)
            var held = stat(), atPath = stat()
            if fstat(opened, &held) == 0, lstat(path, &atPath) == 0, held.st_dev == atPath.st_dev, held.st_ino == atPath.st_ino {
                return opened
            }
            Glibc.close(opened)
            tries += 1
            guard tries < lockTries, !Task.isCancelled else {
                throw RunError.runtime(JournalError.journalHeld(output: output, journal: path, keepsBeingReplaced: true))
            }
        }
    }

    /// Empties the journal and writes the identity line.
    private func start() throws(RunError) {
        guard ftruncate(fd, 0) == 0, lseek(fd, 0, SEEK_SET) == 0 else { throw failure(errno) }
        lastCheckpoint = nil
        failedRows = []
        ended = nil
        writer = JournalCodec.Writer()
        writer.encode(.identity(identity), into: &buffer)
        if let sealing {
            let key = DataKey.random()
            let stored: StoredKey = sealing.stateKey.map { .wrapped(KeyWrap.wrap(key, under: $0, context: wrapContext)) } ?? .memoryOnly
            writer.encode(.dataKey(stored), into: &buffer)
            dataKey = key
            storedKey = stored
        }
        try writeBuffer(sync: true)
    }

    /// What a wrapped data key is bound to: this output.
    private var wrapContext: [UInt8] { Journal.wrapContext(identity.output) }

    /// What the data key of the journal of `output` is wrapped for.
    static func wrapContext(_ output: String) -> [UInt8] { Array("showbatch output \(output)".utf8) }

    /// The data key a journal read back holds; a refusal when it cannot be had.
    private func unwrapKey(_ contents: JournalCodec.Contents) throws(Refusal) -> DataKey? {
        guard let sealing else { return nil }
        switch contents.dataKey {
        case nil:
            guard contents.lastCheckpoint == nil else { throw Refusal(reason: "cannot be trusted: it has no data key record") }
            return nil
        case .memoryOnly?:
            guard contents.lastCheckpoint == nil else {
                throw Refusal(reason: "holds no data key: the run that wrote \(output) kept it in memory only (output.encrypt has no state_key), so its sealed rows cannot be read")
            }
            return nil
        case .wrapped(let text)?:
            guard let stateKey = sealing.stateKey else {
                throw Refusal(reason: "holds its data key wrapped under a state key, and output.encrypt has no state_key now")
            }
            do {
                return try KeyWrap.unwrap(text, under: stateKey, context: wrapContext)
            } catch {
                throw Refusal(reason: "cannot be used: \(error.message)")
            }
        }
    }

    /// Reads an existing journal: checks it (`JournalCodec`) and its identity, and keeps its failed
    /// rows, last checkpoint and end. A journal torn while its identity line was written starts
    /// over. A journal that cannot be trusted is refused, saying why: a run never goes on from it.
    private func read(keepTail: Bool) throws(RunError) {
        let flag: JournalError.Flag = keepTail ? .retryFailed : .resume
        let contents: JournalCodec.Contents?
        do {
            contents = try readChecked()
        } catch {
            throw RunError.usage(JournalError.journalRefused(journal: path, reason: error.reason, flag: flag))
        }
        guard let contents else {
            if keepTail { throw RunError.usage(JournalError.emptyJournal(journal: path)) }
            try start()
            return
        }
        if sealing != nil {
            // `readChecked` refused a key that cannot be had; none at all means nothing was
            // sealed under one yet, and the output starts afresh.
            guard let key = try? unwrapKey(contents) else {
                // A rewrite reads the rows sealed under it: none there is nothing to rewrite from.
                if keepTail { throw RunError.usage(JournalError.noDataKey(journal: path, output: output)) }
                try start()
                return
            }
            dataKey = key
            storedKey = contents.dataKey
        }
        failedRows = contents.failedRows
        rejectedRows = contents.rejectedRows
        // A rewrite notes again every row its rejects file will hold.
        rejectedCount = keepTail ? 0 : contents.rejectedRows.count
        lastCheckpoint = contents.lastCheckpoint
        ended = contents.ended
        writer = JournalCodec.Writer(chain: contents.chain)
        if keepTail {
            guard ended != nil else {
                throw RunError.usage(JournalError.unfinished(journal: path))
            }
        } else {
            // What follows the last checkpoint (a torn line, rows failed past it) is dropped:
            // the resumed run writes those rows again.
            guard ftruncate(fd, off_t(contents.length)) == 0, lseek(fd, off_t(contents.length), SEEK_SET) >= 0 else { throw failure(errno) }
        }
    }

    /// Why a journal is not gone on from, in words that follow "the journal PATH".
    private struct Refusal: Error {
        let reason: String
    }

    /// The journal's records, checked and of this run; nil when it has no whole identity line.
    private func readChecked() throws(Refusal) -> JournalCodec.Contents? {
        // From the start whatever read it before (`--resume=auto` checks it, then reads it): a
        // second read from where the first ended found nothing, took the journal for one torn at
        // its first line, and started every output afresh.
        guard lseek(fd, 0, SEEK_SET) == 0 else { throw Refusal(reason: "cannot be read: \(describeErrno(errno))") }
        let bytes: [UInt8]
        do {
            bytes = try FileDescriptor(borrowing: fd, path: path).readAll(limit: Int.max)
        } catch {
            throw Refusal(reason: "cannot be read: \(error.reason)")
        }
        let contents: JournalCodec.Contents?
        do {
            contents = try JournalCodec.read(bytes)
        } catch {
            throw Refusal(reason: "\(error.foreign ? "does not match this run" : "cannot be trusted"): \(error.reason)")
        }
        if let contents, let difference = JournalCodec.difference(contents.identity, from: identity) {
            throw Refusal(reason: "does not match this run: \(difference)")
        }
        if let contents { _ = try unwrapKey(contents) }
        return contents
    }

    /// Notes a failed row; written with the next checkpoint.
    func recordFailed(_ row: FailedRow) {
        guard mode != .retryFailed else {
            rewriteRecords.append(.failed(row))
            return
        }
        writer.encode(.failed(row), into: &buffer)
    }

    /// Notes that a row other than a failed one went to the rejects file; written with the next
    /// checkpoint.
    func recordRejected(_ ordinal: Int) {
        rejectedCount += 1
        guard mode != .retryFailed else {
            rewriteRecords.append(.rejected(ordinal))
            return
        }
        writer.encode(.rejected(ordinal), into: &buffer)
    }

    /// Records that the output is written (and on disk) up to `checkpoint`, and syncs.
    func checkpoint(_ checkpoint: Checkpoint) throws(RunError) {
        guard mode != .retryFailed else { return }
        writer.encode(.checkpoint(checkpoint.stamped()), into: &buffer)
        try writeBuffer(sync: true)
    }

    /// Records that the output is complete: a last checkpoint and its size and hash.
    func end(_ checkpoint: Checkpoint) throws(RunError) {
        guard mode != .retryFailed else { return }
        writer.encode(.checkpoint(checkpoint.stamped()), into: &buffer)
        writer.encode(.end(size: checkpoint.offset, hash: checkpoint.hash), into: &buffer)
        try writeBuffer(sync: true)
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
        .runtime(FileError(.write, .journal, path, errno: code))
    }

    /// Closes the journal, keeping it.
    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
    }

    /// Deletes the journal, then closes it: unlinked while still locked, so a run waiting for the
    /// lock can never take it on the file about to go (its check that the locked file is the one
    /// at the path then sees the path empty, or a new journal).
    func remove() {
        unlink(path)
        close()
    }
}
