import Foundation
import ShowbatchBasics
import ShowbatchManifest

// What a run builds to send: its attempts' context, credentials, progress and counts.
extension Runner {
    /// What every attempt of the run shares, with its pacer and, for the Vault API, its calls.
    func attemptContext(credentials: Credentials?, pause: CircuitPause, counts: AttemptCounts)
        -> (AttemptContext, RateLimitPacer, AliasCalls?) {
        let pacer = RateLimitPacer(settings: RateLimitPacer.settings(rate: settings.rate, maxPause: manifest.circuit.maxPause), seed: pauseSeed &+ 2, events: events)
        var context: AttemptContext
        var calls: AliasCalls?
        if let vaultAPI = manifest.vaultAPI {
            // Rows ride in calls, which the pacer paces.
            let aliasCalls = AliasCalls(transport: transport, spec: vaultAPI, pacer: pacer, slots: settings.concurrency,
                                        rows: min(settings.concurrency * manifest.rowsPerCall, 8192))
            calls = aliasCalls
            context = AttemptContext(transport: aliasCalls, policy: manifest.retry, timeout: settings.timeout,
                                     pacer: nil, events: events, verbose: options.verbose)
            context.callsPaced = true
        } else {
            context = AttemptContext(transport: transport, policy: manifest.retry, timeout: settings.timeout,
                                     pacer: pacer, events: events, verbose: options.verbose)
        }
        context.credentials = credentials
        context.redactor = redactor
        context.reveal = RevealTiming(failFast: options.failFast)
        context.counts = counts
        context.pause = pause
        return (context, pacer, calls)
    }

    /// Progress from the writer's counts, every 100 ms, on a clock of its own: it goes on while
    /// sending is paused, when no row is written. Cancelled by the caller.
    func progressTicker(writer: RowWriter, total: Int?, carried: Int, start: ContinuousClock.Instant) -> Task<Void, Never> {
        Task.detached { [events] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(100))
                guard !Task.isCancelled else { return }
                let written = writer.progress
                var progress = RunProgress(done: written.rows, total: total, failed: written.failed, elapsed: ContinuousClock.now - start,
                                           ok: written.ok, retries: written.retries)
                progress.carried = carried
                events(.progress(progress))
            }
        }
    }

    /// A shard's whole night: every work item of every shard (a percentage `max_failed` is of
    /// them), when the data files were counted as the manifest was read; nil otherwise.
    var nightRows: Int? {
        guard options.shard != nil, manifest.requests.allSatisfy({ $0.each == nil || $0.each?.rows != nil }) else { return nil }
        return manifest.requests.reduce(0) { $0 + ($1.each?.rows ?? 1) }
    }

    /// The work items of this run's shard (up to `--limit`), for the progress line; nil when the
    /// run is interrupted while counting (reading a large data file takes seconds, and an
    /// interrupt must not wait).
    func countWorkItems() -> Int? {
        let selection = self.selection
        // The data files were counted when the manifest was read: no need to read them again.
        if manifest.requests.allSatisfy({ $0.each == nil || $0.each?.rows != nil }) {
            return selection.count(of: manifest.requests.reduce(0) { $0 + ($1.each?.rows ?? 1) })
        }
        var count = 0
        for item in WorkItemSequence(manifest: manifest) {
            if selection.takes(item.ordinal) { count += 1 }
            if !selection.hasRoom(after: count) { return count }
            if item.ordinal & 1023 == 0 && Task.isCancelled { return nil }
        }
        return count
    }

    /// The run's credentials, when the manifest has `auth` (under `--emulate`, the emulator's
    /// token endpoint stands in for the real one).
    func makeCredentials() -> Credentials? {
        guard var spec = manifest.auth else { return nil }
        if case .clientCredentials(var credentials) = spec.source, let override = options.tokenURLOverride {
            credentials.tokenURL = override
            spec.source = .clientCredentials(credentials)
        }
        return Credentials(spec: spec, transport: transport, timeout: settings.timeout, maxPause: manifest.circuit.maxPause,
                           seed: pauseSeed &+ 1, redactor: redactor, events: events)
    }

    /// Seeds the jitter of the pauses' waits: drawn from the run's id, so a run's waits can be
    /// told again from its logs.
    var pauseSeed: UInt64 {
        options.runID.flatMap { UInt64($0, radix: 16) } ?? 0x5EED
    }
}
