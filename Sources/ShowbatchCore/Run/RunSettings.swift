import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// What a run's flags and its manifest decide together, resolved once, so that each has one
/// owner: a flag wins over the manifest, the manifest over the default.
struct RunSettings: Sendable, Equatable {
    /// Requests in flight at once (`--concurrency`, `concurrency`).
    let concurrency: Int
    /// Connections the transport may open (`--connections`, `connections`, else the concurrency).
    let connections: Int
    /// How long one attempt may take (`--timeout`, `timeout`).
    let timeout: Duration
    /// The rows that are not ok a run may end with and still exit 0 (`--max-failed`, `max_failed`).
    let failureAllowance: FailureAllowance?
    /// The rate this process keeps: `--rate`, else the manifest's `rate_limit`, which is the whole
    /// job's, so a shard of N keeps a share of it.
    let rate: Rate?

    init(manifest: Manifest, options: RunOptions) {
        concurrency = options.concurrency ?? manifest.concurrency
        connections = options.connections ?? manifest.connections ?? concurrency
        timeout = options.timeout ?? manifest.timeout
        failureAllowance = options.maxFailed ?? manifest.maxFailed
        if let rate = options.rate {
            self.rate = rate
        } else if let rate = manifest.rateLimit, let shard = options.shard, shard.count > 1 {
            self.rate = rate.share(of: shard.count)
        } else {
            self.rate = manifest.rateLimit
        }
    }
}
