import ShowbatchBasics
internal import CCurl
import Synchronization
import ShowbatchManifest

/// The transport on libcurl's multi interface: every transfer of a run is driven by one event-loop
/// thread, with connections reused from the multi handle's cache (HTTP/2 when a TLS server offers
/// it). URLSession on Linux hops threads for every callback; this loop does not.
///
/// The loop is also a task executor: a run that prefers it (`Runner` does) has its tasks run on
/// the loop thread between transfers, as `curl --parallel` does all its work on one thread. A
/// request then goes from task to transfer and back without waking another thread, and the
/// other core is left to the rest of the machine (on a small box, often the server itself).
package final class CurlTransport: Transport, Sendable {
    private let loop: CurlLoop

    /// The loop thread, as an executor for the run's tasks.
    package var executor: (any TaskExecutor)? { loop }

    /// A transport allowing `maxConnections` connections per host, refusing bodies over
    /// `maxBodyBytes`, verifying TLS as `tls` says. Over HTTP/2 requests wait for a connection
    /// they can share rather than opening one each, as `curl --parallel` does.
    package init(maxConnections: Int, maxBodyBytes: Int = Limits.responseBody, tls: TLSSettings = TLSSettings()) {
        loop = CurlLoop(maxConnections: max(1, maxConnections), maxBodyBytes: maxBodyBytes, tls: tls)
    }

    deinit { loop.stop() }

    /// Hands the request to the loop and waits for its result; a cancelled task ends the transfer.
    package func send(_ request: PreparedRequest, timeout: Duration) async -> TransportResult {
        let transfer = CurlTransfer(request: request, timeout: timeout)
        return await withTaskCancellationHandler {
            // Unchecked: the loop resumes each transfer's continuation exactly once (in `finish`,
            // or in `start`/`shutDown` for one that never started), and a checked one costs an
            // allocation per request.
            await withUnsafeContinuation { continuation in
                transfer.continuation = continuation
                loop.submit(transfer)
            }
        } onCancel: {
            loop.cancel(transfer)
        }
    }
}

/// One request in flight. After `submit` only the loop thread touches its mutable state;
/// `cancelled` is the one field other threads write.
final class CurlTransfer: @unchecked Sendable {
    let request: PreparedRequest
    let timeout: Duration
    var continuation: UnsafeContinuation<TransportResult, Never>?
    var easy: UnsafeMutableRawPointer?
    var headerList: UnsafeMutablePointer<curl_slist>?
    var body: [UInt8] = []
    var headers: [String: String] = [:]
    var limit = 0
    var tooLarge = false
    let cancelled = Atomic<Bool>(false)

    init(request: PreparedRequest, timeout: Duration) {
        self.request = request
        self.timeout = timeout
    }
}
