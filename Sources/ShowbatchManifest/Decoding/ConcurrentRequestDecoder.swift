import Foundation
import ShowbatchBasics
import ShowbatchYAML

/// Decodes the items of `requests:` on a second thread while the parser is still reading the
/// rest of the file.
///
/// libyaml reads a 50,000-request manifest in about 0.3 s and decoding its requests takes
/// about as long again; on two cores the two overlap. Items reach the worker in batches, each
/// handed over under a lock, so the worker only ever reads nodes the parser has finished.
final class ConcurrentRequestDecoder: @unchecked Sendable {
    private static let batchSize = 64
    private let queue = BatchQueue<Node>()
    /// Items parsed but not yet handed over (parsing thread only).
    private var batch: [Node] = []
    /// The streamed list once the parser has finished it (parsing thread only).
    private(set) var list: Node?
    /// The worker's decoder and results: read only after `finish()` has joined the worker.
    private var decoder: ManifestDecoder
    private var decoded: [RequestSpec] = []
    private var itemCount = 0
    private var hash: UInt64 = 0
    private var worker: WorkerThread!

    /// Starts the worker; `decoder` is a copy used by the worker alone. The worker also hashes
    /// `bytes` (the manifest), which it has time for while the first items are being parsed.
    init(decoder: ManifestDecoder, bytes: [UInt8]) {
        self.decoder = decoder
        worker = WorkerThread(name: "showbatch-decode") { [self] in
            hash = fnv1a(bytes)
            work()
        }
    }

    /// The stream to give the parser.
    var stream: YAMLParser.ListStream {
        YAMLParser.ListStream(key: "requests", item: { [self] node in
            batch.append(node)
            if batch.count >= Self.batchSize { handOver() }
        }, end: { [self] node in
            list = node
        })
    }

    /// The secrets the worker's requests resolved (read after `finish()`).
    var environmentSecrets: Set<String> { decoder.environmentSecrets }

    private func handOver() {
        queue.put(batch)
        batch.removeAll(keepingCapacity: true)
    }

    /// Hands over the last items, waits for the worker, and returns the streamed list, its
    /// decoded requests (items with problems have none) and number of items, the worker's
    /// problems, and the hash of the manifest's bytes.
    func finish() -> (list: Node?, requests: [RequestSpec], items: Int, problems: [(mark: Mark, message: String)], hash: UInt64) {
        handOver()
        queue.finish()
        worker.join()
        // Moved out, not copied: fifty thousand requests are worth not retaining twice.
        let requests = decoded
        decoded = []
        return (list, requests, itemCount, decoder.problems, hash)
    }

    private func work() {
        var number = 0
        var items: [Node] = []
        while queue.take(into: &items) == .taken {
            for item in items {
                number += 1
                if let request = decoder.listedRequest(item, number: number) { decoded.append(request) }
            }
            items.removeAll(keepingCapacity: true)
        }
        itemCount = number
    }
}
