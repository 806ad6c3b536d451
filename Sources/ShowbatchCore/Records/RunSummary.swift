import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// The outcome of a run.
package struct RunSummary: Sendable {
    /// Rows written.
    package var rows = 0
    /// Rows with status ok.
    package var ok = 0
    /// Rows with status partial.
    package var partial = 0
    /// Rows with status failed.
    package var failed = 0
    /// Attempts beyond the first, over all rows.
    package var retries = 0
    /// Rows taken from the journal instead of being sent.
    package var replayed = 0
    /// Work items not sent because `--fail-fast` stopped the run.
    package var skipped = 0
    /// Wall time.
    package var elapsed: Duration = .zero
    /// Files written (or "-"): each output, its rejects file, and where its binary labels' files
    /// go (`out/pdf/${row.id}.pdf`).
    package var outputs: [String] = []
    /// Of `outputs`, the files of a finished night the run left as they were (it sent nothing for them).
    package var leftAsTheyWere: [String] = []
    /// The rows in each file the run put in place (an output's or its rejects file's), and the
    /// keys each encrypted output is for: what its audit entries say.
    package var writtenRows: [String: Int] = [:]
    package var recipients: [String: [String]] = [:]
    /// Each rejects file written, with the rows it holds.
    package var rejects: [RejectsFile] = []
    /// True when SIGINT/SIGTERM stopped the run: outputs were not renamed into place.
    package var interrupted = false
    /// Why the circuit breaker stopped the run (outputs left `.partial`, journals kept), if it did.
    package var stopReason: String?
    /// The outputs' rows by error code and HTTP status: this run's, and after `--resume` those an
    /// earlier run left in the outputs too (read back from them).
    package var tally = RowTally()
    /// Rows not ok the run may end with and still exit 0 (`max_failed`).
    package var allowance: FailureAllowance?
    /// Requests sent again because an answer refused their token (401).
    package var resentAfter401 = 0
    /// Requests sent again because the endpoint answered 429 (rate limited).
    package var resentAfter429 = 0
    /// Access tokens fetched again (renewals), the first one not counted.
    package var tokenRenewals = 0
    /// Answers 429 (rate limited) the run got: requests', or the Vault API's calls'.
    package var answered429 = 0
    /// The Vault API's calls sent (each revealing the aliases of several rows); nil through the proxy.
    package var calls: Int?
    /// The rate the run kept to, and where it comes from (`5000/m (VGS's documented …)`); nil: none.
    package var pace: String?
    /// That rate, per second.
    package var pacePerSecond: Double?
    /// Work items whose request was under way when the run stopped or was interrupted: not
    /// written, sent again by `--resume`.
    package var unfinished = 0
    /// What changed in a data file while the run read it (cut, grown, rewritten), one message
    /// per file: the run's files are not that file's rows, whatever `max_failed` allows.
    package var dataChanged: [String] = []

    /// When each recipient key that expires does (Unix time), by fingerprint.
    package var keyExpiries: [String: Int] = [:]
    /// How each delivered output's delivery ended (`output.deliver`).
    package var deliveries: [DeliveryOutcome] = []

    /// The night the outputs' names hold (`${run.date}`, `${run.seq}`), when one does.
    package var night: NightDate?
    /// How each night-named output's night ended (a run that writes its night, not a test run):
    /// a night that is not whole makes the run exit 1, whatever this run's own rows were.
    package var nights: [NightOutcome] = []

    /// A run interrupted before anything was opened or sent.
    package init(interruptedBeforeStart: Void) { interrupted = true }

    /// An empty summary.
    package init() {}

    /// True when every work item was sent and written, and no data file changed under the run.
    package var whole: Bool { skipped == 0 && unfinished == 0 && dataChanged.isEmpty }

    /// True when the rows not ok are within `allowance` (and there are some).
    package var withinAllowance: Bool {
        guard let allowance, whole, ok < rows else { return false }
        return rows - ok <= allowance.rows(of: nightRows ?? rows)
    }

    /// A shard's: the whole night's work items, which a percentage `max_failed` is of (the
    /// night is judged whole by merge); nil for an unsharded run, or when not counted.
    package var nightRows: Int?

    /// Requests per second over the run: the rows this run sent, not those taken from a journal.
    package var rate: Double { elapsed.seconds > 0 ? Double(max(0, rows - replayed)) / elapsed.seconds : 0 }
}

/// How the night of one output ended, judged on the whole night (its files' rows, whatever this
/// run sent): whole (added up, within `max_failed`), or why not.
package struct NightOutcome: Sendable, Equatable {
    package var path: String
    package var date: NightDate
    package var seq: Int
    /// The night's data rows, and of them not ok (partial or failed) and failed.
    package var rows: Int
    package var notOk: Int
    package var failed: Int
    /// Failed rows a `--retry-failed` can send again: the night's journal keeps them.
    package var retryable: Bool
    package var state: State

    package enum State: Sendable, Equatable {
        /// Added up, all ok or within `max_failed`.
        case whole
        /// Added up, with rows not ok beyond `max_failed` (`allowed` of them were allowed).
        case beyondMaxFailed(allowed: Int)
        /// Its files hold `counted` rows, not its data's: never recorded finished.
        case doesNotAddUp(counted: Int)
        /// A data file changed while the night was written: its rows may be two versions' (never
        /// recorded finished).
        case dataChanged
        /// Begun and never recorded finished (a run stopped before it recorded its files), and
        /// this run wrote nothing of it.
        case notFinished
        /// Delivered before, and tonight's data files hold other rows, which are not sent.
        case deliveredOtherData
    }

    package var isWhole: Bool { state == .whole }
}

/// A rejects file a run wrote, and the rows it holds.
package struct RejectsFile: Sendable, Equatable {
    package var path: String
    package var rows: Int
}

/// An output whose run had finished before this one (a rerun of a finished night).
package struct FinishedOutput: Sendable, Equatable {
    package var path: String
    /// When it was finished (its file's time).
    package var finished: Date
    /// The failed rows it holds (its rejects file's included).
    package var failed: Int
}

/// What a run does with one output, for the `run_started` event: `fresh`, `resumed` (from a
/// checkpoint), `restarted` (what an earlier run left discarded, `reason` saying why),
/// `finished` (an earlier run finished it: nothing is sent), `retried` (`--retry-failed`
/// rewrites it) or `unchanged` (`--retry-failed`, and it has no failed rows).
package struct OutputMode: Sendable, Equatable {
    package var path: String
    package var mode: String
    package var reason: String?
}

extension RunSummary {
    /// The exit code of a run that ended with this summary.
    package var exitCode: ExitCode {
        if interrupted { return .interrupted }
        if stopReason != nil { return .stopped }
        let nightsWhole = nights.allSatisfy(\.isWhole)
        let rowsCode: ExitCode = ((ok == rows && whole) || withinAllowance) && nightsWhole ? .ok : .rowsFailed
        if rowsCode == .ok && deliveries.contains(where: { if case .refused = $0.result { return true } else { return false } }) {
            return .deliveryRefused
        }
        if rowsCode == .ok && deliveries.contains(where: \.result.isFailure) {
            return .undelivered
        }
        return rowsCode
    }
}
