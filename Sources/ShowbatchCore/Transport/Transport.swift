/// Sends one HTTP request. Kept narrow so that another transport can stand in.
package protocol Transport: Sendable {
    /// Sends `request`, giving up after `timeout`.
    func send(_ request: PreparedRequest, timeout: Duration) async -> TransportResult

    /// The executor the run's tasks should prefer, when the transport has a thread of its own
    /// that can run them between transfers; nil for the shared pool.
    var executor: (any TaskExecutor)? { get }
}

extension Transport {
    /// No executor of its own: tasks run on the shared pool.
    package var executor: (any TaskExecutor)? { nil }
}

/// What one attempt came back with.
package enum TransportResult: Sendable {
    /// An HTTP answer; header names are lower-cased. The curl transport keeps only the header the
    /// engine reads (`retry-after`).
    case response(status: Int, headers: [String: String], body: [UInt8])
    /// No usable answer.
    case failure(TransportFailure)
}

/// Why an attempt has no usable answer.
package enum TransportFailure: Error, Sendable, Equatable {
    /// Connect, reset, DNS or TLS failure, described without any request data.
    case network(String)
    /// No complete answer within the per-attempt timeout.
    case timeout
    /// The body is over the size limit.
    case bodyTooLarge(Int)
    /// The server's certificate is not trusted, names another host or has expired, or the client
    /// certificate cannot be used: never retried (a run stops on it).
    case certificate(String)
    /// Something answered, but not in HTTP (another protocol, or HTTP/0.9): the row error 1400.
    case notHTTP(String)
    /// The run was cancelled (interrupt).
    case cancelled
}
