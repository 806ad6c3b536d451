import ShowbatchBasics
/// What failures are retried.
package struct RetryPolicy: Sendable, Equatable {
    /// Total attempts per request.
    package var attempts = 3
    /// Base of the capped exponential backoff.
    package var backoff: Duration = .milliseconds(200)
    /// Cap of the backoff.
    package var maxBackoff: Duration = .seconds(10)
    /// HTTP statuses that are retried.
    package var statuses: Set<Int> = [429, 502, 503, 504]
    /// Whether network failures are retried.
    package var network = true
    /// Whether timeouts are retried.
    package var timeout = true

    /// The default policy.
    package init() {}
}

/// When a run stops or pauses because the failure is not the rows' (the manifest's `circuit`).
package struct CircuitPolicy: Sendable, Equatable {
    /// Failed rows in a row that stop the run (rows that could not be sent aside); 0: never.
    package var failedRows = 25
    /// Transient failures in a row (network, timeout, retried 5xx) that pause sending while one
    /// request probes the endpoint; 0: never.
    package var outageAfter = 3
    /// The longest pause before the run stops.
    package var maxPause: Duration = .seconds(300)

    /// The default policy.
    package init() {}
}
