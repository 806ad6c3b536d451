import ShowbatchBasics

/// A problem of the journals: opening and trusting one, the checkpoints an output is resumed
/// from, and the rows `--retry-failed` rewrites an output from. Put in words here only.
enum JournalError: RunProblem, Equatable {
    /// How a run goes on from a journal, as its flag says it.
    enum Flag: String, Sendable, Equatable {
        case resume = "--resume"
        case retryFailed = "--retry-failed"
    }

    /// A finished output whose journal was kept is gone.
    case finishedOutputGone(output: String)
    /// A finished file does not match its journal: it changed since its run (or a `--retry-failed`
    /// run that rewrote it was cut short, `flag` `--retry-failed`).
    case changedSince(path: String, flag: Flag)
    /// A finished encrypted output cannot be checked against the journal left beside it.
    case encryptedUnchecked(output: String)
    /// A `.partial` file a journal goes on from is gone.
    case partialGone(partial: String)
    /// A file is not what its journal says was written.
    case notAsJournalSays(path: String, journal: String)
    /// `--retry-failed` was given the journal of a run that did not finish.
    case unfinished(journal: String)
    /// A journal holds no data key, so the sealed rows of its output cannot be read.
    case noDataKey(journal: String, output: String)
    /// The rows an output's run kept to rewrite it from (`file`, sealed or not) are gone.
    case keptRowsGone(output: String, file: String, sealed: Bool)
    /// `--retry-failed` found no journal of an output.
    case noJournal(output: String)
    /// Another run holds an output's journal: locked, or replaced every time it is opened.
    case journalHeld(output: String, journal: String, keepsBeingReplaced: Bool)
    /// A journal is not gone on from (`reason`: why, in words that follow its path).
    case journalRefused(journal: String, reason: String, flag: Flag)
    /// `--retry-failed` was given an empty journal.
    case emptyJournal(journal: String)
    /// A data file cannot be read for the journal's identity (`reason`: the reader's words).
    case dataFileUnreadable(name: String, reason: String)
    /// The file of the rows to rewrite an output from cannot be opened (`refusal`, or the errno).
    case keptRowsUnopened(path: String, refusal: String?, errno: Int32)
    /// The file of the rows to rewrite an output from cannot be read (`reason`: why).
    case keptRowsUnreadable(path: String, reason: String)
    /// A rewrite was sent a work item again whose row did not fail.
    case resentRowDidNotFail(file: String, item: Int)
    /// A rewrite went past a failed row without sending its work item again.
    case failedRowNotResent(file: String, item: Int)
    /// A journal does not hold what its output's files do (`reason`: what does not agree).
    case untrusted(journal: String, reason: String)
    /// A journal's file is not what the journal says was written (`reason`: the reader's words).
    case untrustedFile(journal: String, path: String, reason: String)
    /// A file cannot be read to check it against its journal (`reason`: why).
    case uncheckable(path: String, journal: String, reason: String)
    /// A `.partial` file is shorter than its journal's checkpoint.
    case partialShorter(partial: String, size: Int, checkpoint: Int, journal: String)
    /// The bytes of a `.partial` file before its checkpoint changed since.
    case partialChanged(partial: String, checkpoint: Int, journal: String)
    /// A sealed `.partial` file cannot be gone on from (`reason`: the sealed file's words).
    case sealedPartialRefused(reason: String, journal: String, partial: String)
    /// A `.partial` file cannot be read back to its last checkpoint (`reason`: why).
    case partialNotReadBack(partial: String, reason: String)
    /// A `.partial` file cannot be cut back to its last checkpoint.
    case partialNotCut(partial: String, errno: Int32)

    var description: String {
        switch self {
        case .finishedOutputGone(let output):
            return "\(output) was finished, and it is gone since; run without --resume to write it again"
        case .changedSince(let path, let flag):
            let cause = flag == .retryFailed ? ", or a --retry-failed run was cut short" : ""
            return "\(path) does not match its journal (it changed since the run that wrote it\(cause)); run without \(flag.rawValue) to write it again"
        case .encryptedUnchecked(let output):
            return "\(output) was finished, but an encrypted output cannot be checked against the journal left beside it; run without --resume to write it again"
        case .partialGone(let partial):
            return "\(partial) is gone, so the run cannot go on from its journal; run without --resume to start over"
        case .notAsJournalSays(let path, let journal):
            return "\(path) is not what the journal \(journal) says was written; run without --resume to start over"
        case .unfinished(let journal):
            return "the journal \(journal) is of a run that did not finish; finish it with --resume first"
        case .noDataKey(let journal, let output):
            return "the journal \(journal) holds no data key, so the sealed rows of \(output) cannot be read; run without --retry-failed"
        case .keptRowsGone(let output, let file, let sealed):
            return "--retry-failed cannot rewrite \(output): \(file), the \(sealed ? "sealed " : "")rows its run kept to rewrite it from, is gone; run without --retry-failed to write it again"
        case .noJournal(let output):
            return "\(output) has no journal, so no failed rows to send again: its run left none, or never finished (then use --resume)"
        case .journalHeld(let output, let journal, let keepsBeingReplaced):
            return "another showbatch run is writing \(output) (its journal \(journal) \(keepsBeingReplaced ? "keeps being replaced" : "is locked"))"
        case .journalRefused(let journal, let reason, let flag):
            return "the journal \(journal) \(reason); remove it to start over, or run without \(flag.rawValue)"
        case .emptyJournal(let journal):
            return "the journal \(journal) is empty: there are no failed rows to send again"
        case .dataFileUnreadable(let name, let reason):
            return "cannot read the data file \(name): \(reason)"
        case .keptRowsUnopened(let path, let refusal, let errno):
            return "cannot read \(path), whose failed rows are to be sent again: \(refusal ?? describeErrno(errno))"
        case .keptRowsUnreadable(let path, let reason):
            return "cannot read \(path), whose failed rows are being sent again: \(reason)"
        case .resentRowDidNotFail(let file, let item):
            return "cannot rewrite \(file): work item \(item) was sent again, and its row did not fail"
        case .failedRowNotResent(let file, let item):
            return "cannot rewrite \(file): the failed row of work item \(item) was not sent again"
        case .untrusted(let journal, let reason):
            return "the journal \(journal) cannot be trusted: \(reason); remove it to start over"
        case .untrustedFile(let journal, let path, let reason):
            return "the journal \(journal) cannot be trusted: \(path) is not what it says was written (\(reason)); remove it to start over"
        case .uncheckable(let path, let journal, let reason):
            return "cannot read \(path) to check it against its journal \(journal): \(reason)"
        case .partialShorter(let partial, let size, let checkpoint, let journal):
            return "\(partial) is shorter than its journal says (\(size) bytes, not \(checkpoint)); remove \(journal) to start over"
        case .partialChanged(let partial, let checkpoint, let journal):
            return "\(partial) is not what its journal says was written (its first \(checkpoint) bytes changed since); remove \(journal) and \(partial) to start over"
        case .sealedPartialRefused(let reason, let journal, let partial):
            return "\(reason); remove \(journal) and \(partial) to start over"
        case .partialNotReadBack(let partial, let reason):
            return "cannot read \(partial) back to its last checkpoint: \(reason)"
        case .partialNotCut(let partial, let errno):
            return "cannot cut \(partial) back to its last checkpoint: \(describeErrno(errno))"
        }
    }

    func redacted(_ redact: (String) -> String) -> JournalError {
        switch self {
        case .finishedOutputGone(let output): return .finishedOutputGone(output: redact(output))
        case .changedSince(let path, let flag): return .changedSince(path: redact(path), flag: flag)
        case .encryptedUnchecked(let output): return .encryptedUnchecked(output: redact(output))
        case .partialGone(let partial): return .partialGone(partial: redact(partial))
        case .notAsJournalSays(let path, let journal): return .notAsJournalSays(path: redact(path), journal: redact(journal))
        case .unfinished(let journal): return .unfinished(journal: redact(journal))
        case .noDataKey(let journal, let output): return .noDataKey(journal: redact(journal), output: redact(output))
        case .keptRowsGone(let output, let file, let sealed): return .keptRowsGone(output: redact(output), file: redact(file), sealed: sealed)
        case .noJournal(let output): return .noJournal(output: redact(output))
        case .journalHeld(let output, let journal, let keepsBeingReplaced):
            return .journalHeld(output: redact(output), journal: redact(journal), keepsBeingReplaced: keepsBeingReplaced)
        case .journalRefused(let journal, let reason, let flag): return .journalRefused(journal: redact(journal), reason: redact(reason), flag: flag)
        case .emptyJournal(let journal): return .emptyJournal(journal: redact(journal))
        case .dataFileUnreadable(let name, let reason): return .dataFileUnreadable(name: redact(name), reason: redact(reason))
        case .keptRowsUnopened(let path, let refusal, let errno): return .keptRowsUnopened(path: redact(path), refusal: refusal.map(redact), errno: errno)
        case .keptRowsUnreadable(let path, let reason): return .keptRowsUnreadable(path: redact(path), reason: redact(reason))
        case .resentRowDidNotFail(let file, let item): return .resentRowDidNotFail(file: redact(file), item: item)
        case .failedRowNotResent(let file, let item): return .failedRowNotResent(file: redact(file), item: item)
        case .untrusted(let journal, let reason): return .untrusted(journal: redact(journal), reason: redact(reason))
        case .untrustedFile(let journal, let path, let reason): return .untrustedFile(journal: redact(journal), path: redact(path), reason: redact(reason))
        case .uncheckable(let path, let journal, let reason): return .uncheckable(path: redact(path), journal: redact(journal), reason: redact(reason))
        case .partialShorter(let partial, let size, let checkpoint, let journal):
            return .partialShorter(partial: redact(partial), size: size, checkpoint: checkpoint, journal: redact(journal))
        case .partialChanged(let partial, let checkpoint, let journal):
            return .partialChanged(partial: redact(partial), checkpoint: checkpoint, journal: redact(journal))
        case .sealedPartialRefused(let reason, let journal, let partial):
            return .sealedPartialRefused(reason: redact(reason), journal: redact(journal), partial: redact(partial))
        case .partialNotReadBack(let partial, let reason): return .partialNotReadBack(partial: redact(partial), reason: redact(reason))
        case .partialNotCut(let partial, let errno): return .partialNotCut(partial: redact(partial), errno: errno)
        }
    }
}
