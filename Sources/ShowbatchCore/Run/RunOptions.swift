/// Options of one run; flags beat manifest values.
public struct RunOptions: Sendable, Equatable {
    /// `--output PATH` (relative to the current folder), or `-` for standard output.
    public var output: String?
    /// `--format`.
    public var format: OutputFormat?
    /// `--concurrency`.
    public var concurrency: Int?
    /// `--connections`: most connections per host.
    public var connections: Int?
    /// `--rate`.
    public var rate: Rate?
    /// `--timeout`.
    public var timeout: Duration?
    /// `--fail-fast`: stop at the first failed row.
    public var failFast = false
    /// `--resume`: go on from each output's last checkpoint.
    public var resume = false
    /// `--retry-failed`: send the failed rows of finished outputs again, keeping every other row.
    public var retryFailed = false
    /// `--shard`.
    public var shard: Shard?
    /// `--strict-hostname`: a failed hostname check is exit 3.
    public var strictHostname = false
    /// `--progress`.
    public var progress: ProgressMode = .auto
    /// `--log-format`.
    public var logFormat: LogFormat = .text
    /// `--quiet`: no summary, only errors.
    public var quiet = false
    /// `--verbose`: a line per attempt (method, URL, status, duration).
    public var verbose = false
    /// `--transport`: which HTTP client sends the requests.
    public var transport: TransportKind?
    /// Send every request here instead (the emulator of `--emulate`).
    public var baseURLOverride: String?
    /// Fetch tokens here instead (the emulator's token endpoint under `--emulate`).
    public var tokenURLOverride: String?

    /// Default options.
    public init() {}
}

/// How progress is shown on stderr.
public enum ProgressMode: String, Sendable, CaseIterable {
    case auto, always, never
}

/// The HTTP clients showbatch can send with.
public enum TransportKind: String, Sendable, CaseIterable {
    /// libcurl's multi interface on one event-loop thread (the default: measured faster).
    case curl
    /// FoundationNetworking's URLSession.
    case urlsession
}

/// How log lines are written on stderr.
public enum LogFormat: String, Sendable, CaseIterable {
    case text, json
}
