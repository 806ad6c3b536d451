import ShowbatchBasics
import ShowbatchManifest

/// Options of one run; flags beat manifest values.
package struct RunOptions: Sendable, Equatable {
    /// `--output PATH` (relative to the current folder), or `-` for standard output.
    package var output: String?
    /// `--audit PATH`: the audit trail, instead of the manifest's `audit.path`.
    package var audit: String?
    /// `--format`.
    package var format: OutputFormat?
    /// `--concurrency`.
    package var concurrency: Int?
    /// `--connections`: most connections per host.
    package var connections: Int?
    /// `--rate`.
    package var rate: Rate?
    /// `--timeout`.
    package var timeout: Duration?
    /// `--fail-fast`: stop at the first failed row.
    package var failFast = false
    /// `--resume`: go on from each output's last checkpoint.
    package var resume = false
    /// `--resume=auto`: go on from a journal when one matches this run and is recent
    /// (`resume_max_age`); else start afresh, removing what the stale run left.
    package var resumeAuto = false
    /// `--retry-failed`: send the failed rows of finished outputs again, keeping every other row.
    package var retryFailed = false
    /// `--shard`.
    package var shard: Shard?
    /// `--max-failed`: rows not ok the run may end with and still exit 0; beats `max_failed`.
    package var maxFailed: FailureAllowance?
    /// `--limit N`: send only the first N work items (of this shard): a canary.
    package var limit: Int?
    /// `--date`: the night `${run.date}` and `${run.seq}` name (a day, `today` or `yesterday`);
    /// nil: today in `TZ`. `Night.decide` reads it once.
    package var night: NightChoice?
    /// `--allow-future`: a night more than a day after today is taken.
    package var allowFuture = false
    /// `--allow-repeat`: send a night whose data files are those of another night of the output.
    package var allowRepeat = false
    /// `--rebuild-ledger`: each night-named output's ledger is rebuilt from the files and
    /// delivery records beside it before the night is decided.
    package var rebuildLedger = false
    /// `--strict-hostname`: a failed hostname check is exit 3.
    package var strictHostname = false
    /// `--progress`.
    package var progress: ProgressMode = .auto
    /// `--log-format`.
    package var logFormat: LogFormat = .text
    /// `--quiet`: no summary, only errors.
    package var quiet = false
    /// `--verbose`: a line per attempt (method, URL, status, duration).
    package var verbose = false
    /// Send every request here instead (the emulator of `--emulate`).
    package var baseURLOverride: String?
    /// Fetch tokens here instead (the emulator's token endpoint under `--emulate`).
    package var tokenURLOverride: String?
    /// Someone may be watching (stderr is a terminal): a custom hostname check that cannot be
    /// made then falls back to the vault URL with a warning, as the Show SDKs do; unattended,
    /// it stops the run unless the manifest sets `hostname_fallback`.
    package var interactive = false
    /// Files the command writes besides the outputs (`--metrics`, `--report`), by flag: a run
    /// refuses to start when one of them is an input or a file of an output.
    package var sideFiles: [String: String] = [:]
    /// Names the run in every JSON log line, the metrics and the report (the command sets a new
    /// one for each run).
    package var runID: String?

    /// 16 random hex digits.
    package static func newRunID() -> String {
        var generator = SystemRandomNumberGenerator()
        let value = generator.next() as UInt64
        let hex = String(value, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// Default options.
    package init() {}
}

/// How progress is shown on stderr.
package enum ProgressMode: String, Sendable, CaseIterable {
    case auto, always, never
}

/// How log lines are written on stderr.
package enum LogFormat: String, Sendable, CaseIterable {
    case text, json
}
