import Foundation
import ShowbatchYAML

/// Decodes the items of `requests:` on a second thread while the parser is still reading the
/// rest of the file.
///
/// libyaml reads a 50,000-request manifest in about 0.3 s and decoding its requests takes
/// about as long again; on two cores the two overlap. Items reach the worker in batches, each
/// handed over under a lock, so the worker only ever reads nodes the parser has finished.
final class ConcurrentRequestDecoder: @unchecked Sendable {
    private let condition = NSCondition()
    /// Items handed over and not yet taken by the worker (guarded by `condition`).
    private var queue: [Node] = []
    /// Set when the parser is done handing over items (guarded by `condition`).
    private var finished = false
    /// Items parsed but not yet handed over (parsing thread only).
    private var batch: [Node] = []
    /// The streamed list once the parser has finished it (parsing thread only).
    private(set) var list: Node?
    /// The worker's decoder and results: read only after `finish()` has joined the worker.
    private var decoder: ManifestDecoder
    private var decoded: [RequestSpec] = []
    private var itemCount = 0
    private var hash: UInt64 = 0
    private let joined = DispatchSemaphore(value: 0)

    /// Starts the worker; `decoder` is a copy used by the worker alone. The worker also hashes
    /// `bytes` (the manifest), which it has time for while the first items are being parsed.
    init(decoder: ManifestDecoder, bytes: [UInt8]) {
        self.decoder = decoder
        let thread = Thread { [self] in
            hash = fnv1a(bytes)
            work()
            joined.signal()
        }
        thread.name = "showbatch-decode"
        thread.start()
    }

    /// The stream to give the parser.
    var stream: YAMLParser.ListStream {
        YAMLParser.ListStream(key: "requests", item: { [self] node in
            batch.append(node)
            if batch.count >= 64 { handOver() }
        }, end: { [self] node in
            list = node
        })
    }

    private func handOver() {
        condition.lock()
        queue.append(contentsOf: batch)
        condition.signal()
        condition.unlock()
        batch.removeAll(keepingCapacity: true)
    }

    /// Hands over the last items, waits for the worker, and returns the streamed list, its
    /// decoded requests (items with problems have none) and number of items, the worker's
    /// problems, and the hash of the manifest's bytes.
    func finish() -> (list: Node?, requests: [RequestSpec], items: Int, problems: [(mark: Mark, message: String)], hash: UInt64) {
        handOver()
        condition.lock()
        finished = true
        condition.signal()
        condition.unlock()
        joined.wait()
        // Moved out, not copied: fifty thousand requests are worth not retaining twice.
        let requests = decoded
        decoded = []
        return (list, requests, itemCount, decoder.problems, hash)
    }

    private func work() {
        var number = 0
        while true {
            condition.lock()
            while queue.isEmpty && !finished { condition.wait() }
            let items = queue
            queue = []
            let last = finished
            condition.unlock()
            for item in items {
                number += 1
                if let request = decoder.listedRequest(item, number: number) { decoded.append(request) }
            }
            // `finished` was read with the queue, so nothing can have been added after it.
            if last {
                itemCount = number
                return
            }
        }
    }
}
