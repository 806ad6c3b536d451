import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// Which work items of an output a run does not send.
enum SkipRule: Sendable, Equatable {
    case none
    /// Items up to this ordinal are in the output already (a resumed run).
    case through(Int)
    /// Only these items are sent (again); the rest of the output is copied (a retry run).
    case allBut(Set<Int>)
    /// The output is complete, or left as it is.
    case all

    /// Whether the item with `ordinal` is not sent.
    func skips(_ ordinal: Int) -> Bool {
        switch self {
        case .none: return false
        case .through(let last): return ordinal <= last
        case .allBut(let sent): return !sent.contains(ordinal)
        case .all: return true
        }
    }
}

/// The files of one run: an output and its journal per target, opened together, written and
/// checkpointed row by row, and then either committed together (renamed into place; journals
/// removed, or kept when rows failed) or abandoned together (left as `.partial`, with a last
/// checkpoint in each journal).
///
/// One owner, so that `Runner.run` has one cleanup path, whatever ends the run, and a checkpoint
/// is taken in one order wherever it is taken: the output's bytes on disk, then the journal.
/// Used by the writer thread while the run writes, and by the runner once the writer is done.
final class RunOutputs {
    /// A checkpoint is taken after this many rows of an output, or this many milliseconds: each
    /// costs a sync of the output and of its journal, and bounds what a crash makes the
    /// resumed run send again.
    static let checkpointRows = 4096
    static let checkpointInterval: Int64 = 1000

    /// The outputs by target; nil for one this run leaves as it is.
    let files: [OutputFile?]
    /// The journals by target; nil for standard output.
    let journals: [Journal?]
    /// Each output's run identity, when the run is a shard: written beside the finished output
    /// for `merge` (`ShardIdentity`).
    private let shardIdentities: [Journal.Identity?]
    /// Rows written to each output since its last checkpoint, and when that was.
    private var sinceCheckpoint: [Int]
    private var lastCheckpoint: [Int64]
    /// What each target's work items skip.
    let skips: [SkipRule]
    /// For a `--retry-failed` rewrite, by target: the rows kept from the files it rewrites.
    private let kept: [KeptRows?]
    private let targets: [OutputTarget]
    /// Rows already in the outputs (from the run being resumed, or kept by a retry), by status.
    let carried: RowCounts
    private let mode: RunMode
    /// Outputs whose content an earlier run completed: committing only renames them.
    private let complete: Set<Int>
    /// What the run does with each output, for its first log line.
    let modes: [OutputMode]
    /// The rows the outputs held already (resumed), by error code and HTTP status.
    let carriedTally: RowTally
    /// Outputs an earlier run finished already: this run sends nothing for them.
    let finishedBefore: [FinishedOutput]
    /// The rows each output's files hold once committed, read back from them (or, for one an
    /// earlier run finished, from its journal, which its files were checked against): what says
    /// the night adds up. Nil for standard output and an output left as it is.
    private(set) var counted: [NightFileRows?]
    private var closed = false

    /// Opens every target's journal, then its output. Journals come first: taking a journal's
    /// lock is what keeps a second run off the output. What a journal says is checked against its
    /// output (`check` of the target's index) before the run goes on from it. On failure what was
    /// opened is closed again.
    /// With `staleAfter` (`--resume=auto`), what cannot be gone on from (a journal of another
    /// run, one that cannot be trusted or is older than that, a `.partial` file gone or changed)
    /// is removed and the output started afresh, `note` saying what was discarded and why.
    /// Encrypted targets are sealed under their journal's data key and, when `encryptors` has
    /// one for them, made into an OpenPGP message at the end (`isCancelled` is asked meanwhile).
    init(targets: [OutputTarget], identity: (OutputTarget) -> Journal.Identity, mode: RunMode, sharded: Bool = false,
         staleAfter: Duration? = nil, note: (String) -> Void = { _ in },
         check: (Int) -> OutputCheck, waitingForLock: (String) -> Void = { _ in },
         encryptors: [Int: OpenPGPEncryptor] = [:], isCancelled: @escaping () -> Bool = { false }) throws(RunError) {
        // Waits for a journal's lock (up to 5 s): never on a thread of the cooperative pool.
        Blocking.assertMayBlock()
        self.mode = mode
        var journals: [Journal?] = []
        var opened = Opened(count: targets.count)
        do throws(RunError) {
            // Nothing another user could have planted is resumed, locked or written into.
            try PrivateFile.requireTrusted(sideFilesOf: targets.flatMap(\.paths))
            var starts: [OutputStart?] = []
            for target in targets {
                let (start, journal) = try RunOutputs.openJournal(of: target, identity: identity, mode: mode, staleAfter: staleAfter,
                                                                  waitingForLock: waitingForLock)
                starts.append(start)
                journals.append(journal)
            }
            for (index, target) in targets.enumerated() {
                let journal = journals[index]
                // Asked as each file is made: a journal restarted after a failed resume has a new data key.
                func sealing() -> OutputFile.Sealing? {
                    guard target.encrypt != nil, let key = journal?.dataKey else { return nil }
                    return OutputFile.Sealing(key: key, encryptor: encryptors[index], isCancelled: isCancelled)
                }
                let start: OutputStart
                if let early = starts[index] {
                    start = early
                } else if let journal {
                    start = OutputStart.start(mode: mode, discarded: journal.discarded, hasCheckpoint: journal.lastCheckpoint != nil)
                } else {
                    preconditionFailure("an output with neither a start nor a journal")
                }
                try opened.begin(target, index: index, start: start, journal: journal, sealing: sealing,
                                 check: { check(index) }, staleAfter: staleAfter, note: note)
            }
        } catch {
            opened.files.forEach { $0?.abandon() }
            journals.forEach { $0?.close() }
            throw error
        }
        files = opened.files
        for (file, target) in zip(files, targets) { file?.envelope = target.envelope }
        self.journals = journals
        kept = opened.kept
        self.targets = targets
        shardIdentities = targets.map { sharded && !$0.isStandardOutput ? identity($0) : nil }
        sinceCheckpoint = Array(repeating: 0, count: files.count)
        lastCheckpoint = Array(repeating: coarseMilliseconds(), count: files.count)
        skips = opened.skips
        carried = opened.carried
        complete = opened.complete
        modes = opened.modes
        carriedTally = opened.carriedTally
        finishedBefore = opened.finishedBefore
        counted = Array(repeating: nil, count: files.count)
        for (index, journal) in journals.enumerated() where files[index] == nil && journal?.ended != nil && mode != .fresh {
            guard let checkpoint = journal?.lastCheckpoint else { continue }
            counted[index] = NightFileRows(output: checkpoint.ownRows ?? checkpoint.counts.rows, rejects: checkpoint.rejects?.rows,
                                           counts: checkpoint.counts)
        }
    }

    /// The output of `target` as an interrupted run left it, cut back to `checkpoint` and checked
    /// against its journal; nil when the run finished it (and renamed it) already.
    static func resume(_ target: OutputTarget, index: Int, journal: Journal, checkpoint: Journal.Checkpoint,
                               check: OutputCheck, sealing: OutputFile.Sealing?) throws(RunError) -> (OutputFile?, RowTally) {
        guard let resumed = try OutputFile.resume(path: target.path, layout: target.layout, from: checkpoint, sealing: sealing) else {
            if let ended = journal.ended {
                // Finished and renamed already: nothing is left to do for this output, if it is
                // still what its run wrote (an encrypted one is a message showbatch cannot read),
                // and so is its rejects file.
                guard case .regular = PrivateFile.inspect(target.path) else {
                    throw RunError.runtime(JournalError.finishedOutputGone(output: target.path))
                }
                if let sealing {
                    // A shard's sealed file can be read back and checked, and so can the sealed
                    // rows kept beside an OpenPGP message whose rows failed; the message cannot (a
                    // journal left without them, by a kill between the rename and the journal's
                    // removal or by an older showbatch, is not trusted blindly).
                    let rows = target.readableRows(of: target.path)
                    let readable = target.sealedShard || PrivateFile.inspect(rows) != .none
                    guard readable, Journal.outputMatches(rows, size: ended.size, hash: ended.hash, key: sealing.key) else {
                        throw RunError.usage(readable
                            ? JournalError.changedSince(path: rows, flag: .resume)
                            : JournalError.encryptedUnchecked(output: target.path))
                    }
                } else {
                    let rejectsChanged = target.rejects.map { rejects in
                        !Journal.outputMatches(rejects.path, size: checkpoint.rejects?.offset ?? 0, hash: checkpoint.rejects?.hash ?? fnvOffsetBasis)
                    } ?? false
                    let rows = target.readableRows(of: target.path)
                    if !Journal.outputMatches(rows, size: ended.size, hash: ended.hash) || rejectsChanged {
                        throw RunError.usage(JournalError.changedSince(path: rejectsChanged ? target.rejects!.path : rows, flag: .resume))
                    }
                }
                return (nil, finishedTally(target, ended: ended, checkpoint: checkpoint, key: sealing?.key, journal: journal.path))
            }
            throw RunError.runtime(JournalError.partialGone(partial: SideFile.partial.of(target.path)))
        }
        let tally: RowTally
        do throws(RunError) {
            // A finished run stopped between putting its rejects file in place and its output (the
            // rejects file goes first): the rejects file is done, only the output is left to place.
            let rejectsPlaced = try target.rejects.map { rejects throws(RunError) in
                try rejectsAlreadyPlaced(rejects.path, journal: journal, checkpoint: checkpoint, encrypted: sealing != nil)
            } ?? false
            tally = try check.verify(checkpoint, failed: journal.failedRows, path: SideFile.partial.of(target.path),
                             rejectsPath: rejectsPlaced ? nil : target.rejects.map { SideFile.partial.of($0.path) }, key: sealing?.key,
                             rejectsPlaced: rejectsPlaced, of: target, journal: journal.path)
            if let rejects = target.rejects, !rejectsPlaced {
                let mark = checkpoint.rejects ?? (0, fnvOffsetBasis, 0)
                guard let side = try OutputFile.resume(path: rejects.path, layout: rejects.layout,
                                                       from: Journal.Checkpoint(ordinal: -1, offset: mark.offset, counts: RowCounts(), hash: mark.hash,
                                                                                ownRows: mark.rows), sealing: sealing) else {
                    throw RunError.runtime(JournalError.partialGone(partial: SideFile.partial.of(rejects.path)))
                }
                resumed.attachRejects(side, partial: target.rejectPartial)
            }
        } catch {
            resumed.abandon()
            throw error
        }
        return (resumed, tally)
    }

    /// Whether an output's rejects file is in place already: its run finished (the journal has
    /// its end), the rejects file's `.partial` is gone and the file is there, holding what the
    /// journal says (an encrypted one cannot be read back: that it is there is what can be known).
    private static func rejectsAlreadyPlaced(_ path: String, journal: Journal, checkpoint: Journal.Checkpoint,
                                             encrypted: Bool) throws(RunError) -> Bool {
        guard journal.ended != nil, PrivateFile.inspect(SideFile.partial.of(path)) == .none else { return false }
        guard case .regular = PrivateFile.inspect(path) else {
            throw RunError.runtime(JournalError.partialGone(partial: SideFile.partial.of(path)))
        }
        if !encrypted, let mark = checkpoint.rejects, !Journal.outputMatches(path, size: mark.offset, hash: mark.hash) {
            throw RunError.usage(JournalError.notAsJournalSays(path: path, journal: journal.path))
        }
        return true
    }

    /// The run is interrupted: writes waiting for standard output's reader are given up (called
    /// from any thread, while the writer may be in one).
    func abandonWaitingWrites() {
        for file in files { file?.abandonWaitingWrites() }
    }

    /// The row as target `index` takes it: a cell its header or trailer sums must be a number.
    func checked(_ row: ResultRow, for index: Int) -> ResultRow {
        let summed = targets[index].summed
        return summed.isEmpty ? row : FileEnvelope.checked(row, summing: summed)
    }

    /// Writes a row to target `index` (nothing when this run leaves it as it is), notes it in the
    /// journal when it failed, and takes a checkpoint when one is due; `beforeCheckpoint` makes
    /// what else a checkpoint counts durable first (binary labels' files).
    func write(_ row: ResultRow, to index: Int, beforeCheckpoint: () throws(RunError) -> Void) throws(RunError) {
        guard let file = files[index] else { return }
        // A rewrite: the kept rows before this one first, the failed row it replaces dropped.
        try kept[index]?.copy(before: row.ordinal, into: file, journal: journals[index])
        let span = try file.write(row)
        guard let journal = journals[index] else { return }
        if row.status == .failed {
            journal.recordFailed(Journal.FailedRow(ordinal: row.ordinal, start: span.start, end: span.end))
        } else if span.rejected {
            journal.recordRejected(row.ordinal)
        }
        sinceCheckpoint[index] += 1
        let now = coarseMilliseconds()
        if sinceCheckpoint[index] >= Self.checkpointRows || now - lastCheckpoint[index] >= Self.checkpointInterval {
            try beforeCheckpoint()
            try checkpoint(index, now: now)
        }
    }

    /// Whether a finished output's journal stays: for `--retry-failed` when rows failed, and for
    /// merge to know which rows a shard's rejects file holds. An encrypted output's serves
    /// neither (showbatch cannot read the message back), and `--resume` could only trust it
    /// blindly: it goes.
    private func keepsJournal(_ index: Int, _ checkpoint: Journal.Checkpoint, _ journal: Journal) -> Bool {
        var wrapped = false
        if case .wrapped? = journal.storedKey { wrapped = true }
        return Journal.stays(failed: checkpoint.counts.failed, rejected: journal.rejectedCount,
                             publishesMessage: targets[index].publishesMessage, keyWrapped: wrapped)
    }

    /// Removes the sealed rows kept beside an OpenPGP message (and its rejects file's) once no
    /// journal describes them.
    private func removeSealedRows(_ index: Int) {
        for kept in targets[index].rowsAside {
            // Only a regular file: a link planted there is refused before the run, and never followed.
            if case .regular = PrivateFile.inspect(kept) { unlink(kept) }
        }
    }

    /// Makes target `index`'s bytes durable, then records in its journal that they are there.
    private func checkpoint(_ index: Int, now: Int64) throws(RunError) {
        guard let file = files[index], !complete.contains(index) else { return }
        try file.sync()
        try journals[index]?.checkpoint(file.checkpoint)
        sinceCheckpoint[index] = 0
        lastCheckpoint[index] = now
    }

    /// Ends every output and renames it into place. A journal is removed when its output has no
    /// failed row, and kept (for `--retry-failed`) when it has. If an output cannot be finished,
    /// it and the ones after it stay `.partial` and their journals are kept.
    func commit() throws(RunError) {
        // Syncs every output, and runs gpg for encrypted ones: never on the cooperative pool.
        Blocking.assertMayBlock()
        guard !closed else { return }
        closed = true
        for (index, file) in files.enumerated() {
            let journal = journals[index]
            guard let file else {
                // An output finished by an earlier run: a shard's identity is written if that run
                // did not get to it; its journal goes if nothing in it failed.
                if let journal, mode == .resume, let checkpoint = journal.lastCheckpoint, journal.ended != nil,
                   let run = shardIdentities[index], ShardIdentity.read(beside: journal.output) == nil {
                    try writeShardIdentity(run, path: journal.output, checkpoint, journal: journal)
                }
                if let journal, mode == .resume, let checkpoint = journal.lastCheckpoint, !keepsJournal(index, checkpoint, journal) {
                    journal.remove()
                    removeSealedRows(index)
                } else {
                    journal?.close()
                }
                continue
            }
            do {
                if !complete.contains(index) {
                    // A rewrite's kept rows after the last one sent again come first.
                    try kept[index]?.finish(into: file, journal: journal)
                    try file.finishContent()
                }
                let checkpoint = file.checkpoint
                if let rows = try file.countRows() {
                    counted[index] = NightFileRows(output: rows.output, rejects: rows.rejects, counts: checkpoint.counts)
                }
                let keep = journal.map { keepsJournal(index, checkpoint, $0) } ?? false
                let aside = targets[index].keepsRowsAside
                switch mode {
                case .fresh, .resume:
                    if !complete.contains(index) { try journal?.end(checkpoint) }
                    // The identity first: a run killed after the rename still leaves one for merge.
                    try writeShardIdentity(index, checkpoint)
                    try file.commit(keepingSealed: keep && aside)
                    if let journal, !keep {
                        journal.remove()
                        removeSealedRows(index)
                    } else {
                        journal?.close()
                    }
                case .retryFailed:
                    // An OpenPGP message or a file with a header or trailer, which nothing
                    // checks, is put in place first; `.next` then describes the rows kept beside
                    // it, which are put in place after.
                    if aside { try file.publish(keepingSealed: keep) }
                    try journal?.prepareRewrite(checkpoint, keep: keep)
                    try writeShardIdentity(index, checkpoint)
                    if !aside {
                        try file.commit()
                    } else if keep {
                        try file.keepSealedRows()
                    } else {
                        removeSealedRows(index)
                    }
                    try journal?.adoptRewrite()
                }
            } catch {
                for later in index..<files.count {
                    files[later]?.abandon()
                    journals[later]?.close()
                }
                throw error
            }
        }
    }

    /// A shard's finished output says what it is, beside it, while its journal is still held.
    private func writeShardIdentity(_ index: Int, _ checkpoint: Journal.Checkpoint) throws(RunError) {
        guard let run = shardIdentities[index], let file = files[index] else { return }
        try writeShardIdentity(run, path: file.path, checkpoint, journal: journals[index])
    }

    private func writeShardIdentity(_ run: Journal.Identity, path: String, _ checkpoint: Journal.Checkpoint, journal: Journal?) throws(RunError) {
        var wrapped: String?
        if case .wrapped(let text)? = journal?.storedKey { wrapped = text }
        try ShardIdentity(run: run, checkpoint: checkpoint, wrappedKey: wrapped).write(beside: path)
    }

    /// Leaves every output as `.partial`, its journal holding a last checkpoint of what could be
    /// written (an interrupted or failed run).
    /// Returns what could not be written: a journal then holds the checkpoint before (so
    /// `--resume` sends the rows after it again), and the caller says so.
    @discardableResult
    func abandon() -> [RunError] {
        guard !closed else { return [] }
        closed = true
        var failures: [RunError] = []
        for (index, file) in files.enumerated() {
            var failure: RunError?
            do { try checkpoint(index, now: coarseMilliseconds()) } catch { failure = error }
            if let abandoned = file?.abandon(), failure == nil { failure = abandoned }
            // Standard output has no journal: nothing there to go on from, nothing to say.
            if let failure, journals[index] != nil { failures.append(failure) }
            journals[index]?.close()
        }
        return failures
    }
}

/// The rows an output's files hold, counted from them, and their statuses as the journal counts them.
struct NightFileRows: Equatable, Sendable {
    var output: Int
    /// Nil when the output has no rejects file.
    var rejects: Int?
    var counts: RowCounts
}

extension RowCounts {
    mutating func add(_ other: RowCounts) {
        rows += other.rows
        ok += other.ok
        partial += other.partial
        failed += other.failed
    }
}
