/// Something a run reports while it goes; the executable decides how to print it.
public enum RunEvent: Sendable {
    /// A warning (hostname fallback, stale journal). Never holds a secret.
    case warning(String)
    /// One attempt finished (for `--verbose`): method, URL, status or failure, duration.
    case attempt(AttemptRecord)
    /// Rows written so far.
    case progress(RunProgress)
}

/// One attempt, as `--verbose` shows it.
public struct AttemptRecord: Sendable {
    /// The request name.
    public var request: String
    /// The method.
    public var method: String
    /// The URL.
    public var url: String
    /// 1-based attempt number.
    public var attempt: Int
    /// The HTTP status, when one arrived.
    public var status: Int?
    /// The failure kind, when none arrived.
    public var failure: String?
    /// How long the attempt took.
    public var duration: Duration
}

/// Progress of a run.
public struct RunProgress: Sendable {
    /// Rows written.
    public var done: Int
    /// Rows the run will write, when known.
    public var total: Int?
    /// Failed rows so far.
    public var failed: Int
    /// Time since the run started.
    public var elapsed: Duration
}
