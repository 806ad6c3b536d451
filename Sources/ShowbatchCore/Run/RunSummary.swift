/// The outcome of a run.
public struct RunSummary: Sendable {
    /// Rows written.
    public var rows = 0
    /// Rows with status ok.
    public var ok = 0
    /// Rows with status partial.
    public var partial = 0
    /// Rows with status failed.
    public var failed = 0
    /// Attempts beyond the first, over all rows.
    public var retries = 0
    /// Rows taken from the journal instead of being sent.
    public var replayed = 0
    /// Work items not sent because `--fail-fast` stopped the run.
    public var skipped = 0
    /// Wall time.
    public var elapsed: Duration = .zero
    /// Output files written (or "-").
    public var outputs: [String] = []
    /// True when SIGINT/SIGTERM stopped the run: outputs were not renamed into place.
    public var interrupted = false
    /// Why the circuit breaker stopped the run (outputs left `.partial`, journals kept), if it did.
    public var stopReason: String?

    /// Requests per second over the run.
    public var rate: Double { elapsed.seconds > 0 ? Double(rows) / elapsed.seconds : 0 }
}
