import ShowbatchBasics
import ShowbatchManifest

/// Something a run reports while it goes; the executable decides how to print it.
package enum RunEvent: Sendable {
    /// The run is about to send: what it will write, and how many rows when known.
    case started(RunStart)
    /// Something an operator may want to know that is not a problem (the hostname check's
    /// result, a renewed token); shown with `--verbose` and in JSON logs. Never holds a secret.
    case note(String)
    /// A warning (hostname fallback, stale journal). Never holds a secret.
    case warning(String)
    /// One attempt finished (for `--verbose`): method, URL, status or failure, duration.
    case attempt(AttemptRecord)
    /// Rows written so far.
    case progress(RunProgress)
}

/// One attempt, as `--verbose` shows it.
package struct AttemptRecord: Sendable {
    /// The request name.
    package var request: String
    /// The method.
    package var method: String
    /// The URL, clipped to `Limits.loggedURL` characters with its length said (a data row's
    /// value can make it megabytes long).
    package var url: String
    /// 1-based attempt number.
    package var attempt: Int
    /// The HTTP status, when one arrived.
    package var status: Int?
    /// The failure kind, when none arrived.
    package var failure: String?
    /// How long the attempt took.
    package var duration: Duration

    package init(request: String, method: String, url: String, attempt: Int, status: Int? = nil, failure: String? = nil, duration: Duration) {
        self.request = request
        self.method = method
        self.url = url.utf8.count <= Limits.loggedURL ? url : "\(String(decoding: url.utf8.prefix(Limits.loggedURL), as: UTF8.self))… (\(url.utf8.count) bytes)"
        self.attempt = attempt
        self.status = status
        self.failure = failure
        self.duration = duration
    }

    /// The `attempt`th attempt of `request`, which ended with `result` after `duration`.
    init(_ request: PreparedRequest, attempt: Int, result: TransportResult, duration: Duration) {
        self.init(request: request.name, method: request.method.rawValue, url: request.url, attempt: attempt, duration: duration)
        switch result {
        case .response(let status, _, _): self.status = status
        case .failure(let failure): self.failure = failure.words
        }
    }
}

/// Progress of a run.
package struct RunProgress: Sendable {
    /// Rows written.
    package var done: Int
    /// Rows the run will write, when known.
    package var total: Int?
    /// Failed rows so far.
    package var failed: Int
    /// Time since the run started.
    package var elapsed: Duration
    /// Ok rows so far.
    package var ok = 0
    /// Attempts beyond the first so far.
    package var retries = 0
    /// Rows of `done` an earlier run wrote (taken from its journal, not sent).
    package var carried = 0

    /// Requests per second: the rows this run sent.
    package var rate: Double { elapsed.seconds > 0 ? Double(max(0, done - carried)) / elapsed.seconds : 0 }

    /// Progress of `done` rows (`total` expected), `failed` of them failed, after `elapsed`.
    package init(done: Int, total: Int?, failed: Int, elapsed: Duration, ok: Int = 0, retries: Int = 0) {
        self.done = done
        self.total = total
        self.failed = failed
        self.elapsed = elapsed
        self.ok = ok
        self.retries = retries
    }
}

/// What a run is about to do, for its first log line.
package struct RunStart: Sendable {
    /// The manifest's path.
    package var manifest: String
    /// The outputs, `-` for standard output.
    package var outputs: [String]
    /// The rows this run will write (its shard's), when known.
    package var rows: Int?
    /// `I/N` when sharded.
    package var shard: String?
    /// fresh, resume or retry_failed.
    package var mode: String
    /// Where requests go (the vault URL, a custom hostname, a satellite or the emulator).
    package var baseURL: String
    /// The rate limit this process keeps (a shard's share of the manifest's), if any.
    package var rateLimit: Rate?
    /// What the run does with each output (fresh, resumed, restarted and why…).
    package var outputModes: [OutputMode] = []
}
