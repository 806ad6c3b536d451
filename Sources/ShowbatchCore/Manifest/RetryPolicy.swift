/// What failures are retried.
public struct RetryPolicy: Sendable, Equatable {
    /// Total attempts per request.
    public var attempts = 3
    /// Base of the capped exponential backoff.
    public var backoff: Duration = .milliseconds(200)
    /// Cap of the backoff.
    public var maxBackoff: Duration = .seconds(10)
    /// HTTP statuses that are retried.
    public var statuses: Set<Int> = [429, 502, 503, 504]
    /// Whether network failures are retried.
    public var network = true
    /// Whether timeouts are retried.
    public var timeout = true

    /// The default policy.
    public init() {}
}
