import ShowbatchBasics
/// Which failures are tried again, how often, and how long to wait between tries: the one policy
/// of everything showbatch tries again. Rows and delivery take the manifest's (`retry`); the
/// token endpoint, the hostname check and the metrics push take a service's, and each says only
/// its numbers.
package struct RetryPolicy: Sendable, Equatable {
    /// Total attempts per request.
    package var attempts = 3
    /// The wait between tries (`retry.backoff` its base, `retry.max_backoff` its cap), drawn
    /// between none and all of it: many rows, one endpoint.
    package var backoff = Backoff(base: .milliseconds(200), cap: .seconds(10), jitter: .full)
    /// HTTP statuses that are retried.
    package var statuses: Set<Int> = [429, 502, 503, 504]
    /// Whether network failures are retried.
    package var network = true
    /// Whether timeouts are retried.
    package var timeout = true

    /// The default policy (the manifest's when it has no `retry`).
    package init() {}

    package init(attempts: Int, backoff: Backoff, statuses: Set<Int>) {
        self.attempts = attempts
        self.backoff = backoff
        self.statuses = statuses
    }

    /// Whether an answer with `status` is asked for again (attempts allowing).
    package func retries(status: Int) -> Bool { statuses.contains(status) }

    /// What a service's answer is worth asking again for, whoever asks: 5xx and above (the
    /// server's own trouble; libcurl takes any three digits), 429 (too many, for now) and 408 (it
    /// gave up waiting). Anything else (a 4xx) is the server's word and will not change.
    package static let serviceStatuses = Set(500...999).union([408, 429])

    /// A service the run depends on beside the endpoint (the token endpoint): 0.5 s, 1 s, 2 s…
    /// up to 30 s, half to all of it, for as long as the caller's own deadline allows (no count
    /// of attempts). Services' failures without an answer are always asked again for.
    package static let service = RetryPolicy(attempts: .max, backoff: Backoff(base: .milliseconds(500), cap: .seconds(30), jitter: .half),
                                             statuses: serviceStatuses)
    /// The Pushgateway: a push at the end of a run is short, 3 tries, 0.25 s then 0.5 s apart.
    package static let push = RetryPolicy(attempts: 3, backoff: Backoff(base: .milliseconds(250), cap: .seconds(1), jitter: .none),
                                          statuses: serviceStatuses)

    /// This policy's attempts and waits for one request asked of a service (the hostname check):
    /// a service's statuses, and the whole wait, with nothing to spread it from.
    package var forOneServiceRequest: RetryPolicy {
        RetryPolicy(attempts: max(attempts, 1), backoff: Backoff(base: backoff.base, cap: backoff.cap, jitter: .none),
                    statuses: RetryPolicy.serviceStatuses)
    }
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
