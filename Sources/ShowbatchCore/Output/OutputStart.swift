import ShowbatchBasics
import ShowbatchManifest

/// How one output of a run begins, decided from the run's mode and what the output's files and
/// journal show. Pure, so every case is table-tested without files; `RunOutputs` opens, removes
/// and creates what the decision names, and says it in the run's first log line.
enum OutputStart: Equatable {
    /// Written to standard output: no journal, nothing to go on from.
    case standardOutput
    /// Left as it is (no file is opened for it), for this reason.
    case unchanged(reason: String)
    /// Written from its first row; with a reason when a resume found nothing to go on from.
    case fresh(reason: String?)
    /// What an earlier run left of it is discarded and it is written afresh, for this reason.
    case discard(reason: String)
    /// Gone on from the journal's last checkpoint.
    case resume
    /// Rewritten from the rows kept, its failed rows sent again (`--retry-failed`).
    case retry
    /// The run cannot start with it: a usage error, saying why.
    case refused(OutputError)

    /// What is known of an output before its journal is opened.
    struct Files: Equatable {
        /// `output.path` (`-`: standard output).
        var path: String
        /// Encrypted to recipients without a `state_key`: its sealed rows cannot be kept.
        var encryptedWithoutStateKey = false
        /// Its journal exists.
        var hasJournal = true
        /// The finished output is a regular file.
        var outputExists = true
        /// Its night was finished, the file is as it was then and no journal is left (why, in words).
        var finishedNight: String?
    }

    /// Before its journal is opened: nil when the output has a journal to open (the decision
    /// then waits for `start(mode:discarded:hasCheckpoint:)`), else how it begins without one.
    static func withoutJournal(_ files: Files, mode: RunMode) -> OutputStart? {
        if files.path == "-" { return .standardOutput }
        if let finished = files.finishedNight, mode != .retryFailed { return .unchanged(reason: finished + ": nothing is sent for it") }
        guard mode == .retryFailed else { return nil }
        if files.encryptedWithoutStateKey {
            return .refused(.retryWithoutStateKey(path: files.path))
        }
        guard !files.hasJournal else { return nil }
        // A finished output without a journal had no failed row: it stays as it is.
        guard files.outputExists else {
            return .refused(.retryNeverWritten(path: files.path))
        }
        return .unchanged(reason: "it has no journal, so no failed rows")
    }

    /// With its journal open: `discarded`, why the journal was found stale and started over
    /// (`--resume=auto`); `hasCheckpoint`, whether it has a checkpoint to go on from.
    static func start(mode: RunMode, discarded: String?, hasCheckpoint: Bool) -> OutputStart {
        switch mode {
        case .fresh: return .fresh(reason: nil)
        case .retryFailed: return .retry
        case .resume:
            if let discarded { return .discard(reason: discarded) }
            return hasCheckpoint ? .resume : .fresh(reason: "its journal has no checkpoint to go on from")
        }
    }

    /// A resume whose files do not hold what the journal says (`problem`): with `--resume=auto`
    /// (`staleAfter` set) they are discarded and the output written afresh; else the run stops
    /// on it (nil: the problem stands).
    static func afterFailedResume(_ problem: String, staleAfter: Duration?) -> OutputStart? {
        staleAfter == nil ? nil : .discard(reason: problem)
    }

    /// How the run's first log line says it, for `path`; nil for a resume and a retry, which
    /// say it once the journal's rows are counted.
    func mode(path: String) -> OutputMode? {
        switch self {
        case .standardOutput: return OutputMode(path: path, mode: "fresh")
        case .unchanged(let reason): return OutputMode(path: path, mode: "unchanged", reason: reason)
        case .fresh(let reason): return OutputMode(path: path, mode: "fresh", reason: reason)
        case .discard(let reason): return OutputMode(path: path, mode: "restarted", reason: reason)
        case .resume, .retry, .refused: return nil
        }
    }
}
