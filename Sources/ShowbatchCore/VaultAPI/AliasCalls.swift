import Foundation
import ShowbatchBasics
import ShowbatchManifest
import Synchronization

/// The Vault API's calls, as a transport for the rows: each row "sends" its aliases, and gets
/// back an answer made for it alone, `{"LABEL": value, …}` for the aliases the call revealed,
/// with the call's status and headers. So a row's attempts, retries, 401 renewals, 429s and the
/// outage pause work as for a reveal-proxy request, and a call's rows share its fate.
///
/// Calls are paced here (the run's pacer counts calls, not rows). A call answered 400 for more
/// than one row is split in two and each half sent again, down to the row whose alias the API
/// refuses, which alone gets the 400.
final class AliasCalls: Transport, Sendable {
    private typealias Waiter = CheckedContinuation<AliasCallState<Void, TransportResult>.Wake, Never>
    private typealias State = AliasCallState<Waiter, TransportResult>

    private let transport: any Transport
    private let spec: VaultAPISpec
    private let pacer: RateLimitPacer?
    private let linger: Duration
    private let state: Mutex<State>
    private let nextID = Atomic<Int>(0)
    /// Calls sent, calls answered 400 and split, for the summary and the tests.
    let callsSent = Atomic<Int>(0)
    let splits = Atomic<Int>(0)

    /// Calls for `spec` through `transport`, at most `slots` out at once, paced by `pacer`; a
    /// call that is not full waits `linger` for more rows.
    /// `rows`: the run's workers, the most rows that can be waiting here at once.
    init(transport: any Transport, spec: VaultAPISpec, pacer: RateLimitPacer?, slots: Int, rows: Int, linger: Duration = .milliseconds(2)) {
        self.transport = transport
        self.spec = spec
        self.pacer = pacer
        self.linger = linger
        state = Mutex(State(slots: max(1, slots), perCall: spec.aliasesPerCall, rows: max(1, rows)))
    }

    var executor: (any TaskExecutor)? { transport.executor }

    func send(_ request: PreparedRequest, timeout: Duration) async -> TransportResult {
        // A request that is not a row's aliases (a token, a hostname check) goes as it is.
        guard let aliases = request.aliases else { return await transport.send(request, timeout: timeout) }
        let id = nextID.add(1, ordering: .relaxed).newValue
        let headers = request.headers.flatMap { [$0.name.lowercased(), $0.value] }
        var wake = await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: Waiter) in
                if Task.isCancelled {
                    waiter.resume(returning: .result(.failure(.cancelled)))
                    return
                }
                let arrival = state.withLock { $0.arrive(id: id, aliases: aliases, labels: request.aliasLabels, headers: headers, waiter: waiter, now: coarseMilliseconds()) }
                switch arrival {
                case .lead: waiter.resume(returning: .lead)
                case .wait(let armTimer): if armTimer { armLingerTimer() }
                }
            }
        } onCancel: {
            if let waiter = state.withLock({ $0.cancel(id: id) }) { waiter.resume(returning: .result(.failure(.cancelled))) }
        }
        while true {
            switch wake {
            case .result(let result):
                return result
            case .lead:
                let own = await lead(id: id, request: request, timeout: timeout)
                if let own { return own }
                // The call was others': this row waits for its own.
                wake = await withTaskCancellationHandler {
                    await withCheckedContinuation { (waiter: Waiter) in
                        switch state.withLock({ $0.wait(id: id, waiter: waiter) }) {
                        case .result(let result): waiter.resume(returning: .result(result))
                        case .wait(let armTimer): if armTimer { armLingerTimer() }
                        }
                    }
                } onCancel: {
                    if let waiter = state.withLock({ $0.cancel(id: id) }) { waiter.resume(returning: .result(.failure(.cancelled))) }
                }
            }
        }
    }

    private func armLingerTimer() {
        let linger = self.linger
        Task { [self] in
            var wait = linger
            while true {
                try? await Task.sleep(for: wait)
                switch state.withLock({ $0.timerFired(now: coarseMilliseconds()) }) {
                case .done(let waiter):
                    waiter?.resume(returning: .lead)
                    return
                case .rearm(let milliseconds):
                    wait = min(linger, .milliseconds(milliseconds))
                }
            }
        }
    }

    /// Leads one call (the pacer first, then the rows queued then); returns this row's result
    /// when the call held it.
    private func lead(id: Int, request: PreparedRequest, timeout: Duration) async -> TransportResult? {
        var paceProbe = false
        if let pacer {
            switch await pacer.admit() {
            case .go(let probe): paceProbe = probe
            case .stop(let reason):
                // The rate limit let nothing through for max_pause: the run stops, in the pacer's words.
                endCall()
                return .failure(.stopped(reason))
            case .cancelled:
                endCall()
                return .failure(.cancelled)
            }
        }
        let rows = state.withLock { $0.take() }
        guard !rows.isEmpty else {
            pacer?.unsent(probe: paceProbe)
            endCall()
            return nil
        }
        var results = await call(rows, request: request, timeout: timeout, paceProbe: paceProbe)
        state.withLock { $0.answered(rows.count) }
        endCall()
        var own: TransportResult?
        for row in rows {
            let result = results.removeValue(forKey: row.id) ?? .failure(.cancelled)
            if row.id == id {
                own = result
            } else if let waiter = row.waiter {
                waiter.resume(returning: .result(result))
            } else if let waiter = state.withLock({ $0.deliver(result, to: row.id) }) {
                waiter.resume(returning: .result(result))
            }
        }
        return own
    }

    /// The slot of a call is free: the next call's leader, if rows wait for one.
    private func endCall() {
        switch state.withLock({ $0.callEnded() }) {
        case .idle: break
        case .lead(let waiter): waiter.resume(returning: .lead)
        case .armTimer: armLingerTimer()
        }
    }

    /// Sends the call for `rows`; a 400 for several rows is split until it is one row's.
    private func call(_ rows: [State.Row], request: PreparedRequest, timeout: Duration, paceProbe: Bool) async -> [Int: TransportResult] {
        var aliases: [String] = []
        var seen = Set<String>()
        for row in rows { for alias in row.aliases where seen.insert(alias).inserted { aliases.append(alias) } }
        var sent = request
        sent.aliases = nil
        sent.url = request.url + spec.query(aliases)
        let sentAt = coarseMilliseconds()
        callsSent.add(1, ordering: .relaxed)
        let result = await transport.send(sent, timeout: timeout)
        switch result {
        case .response(let status, let headers, _): pacer?.ended(sentAt: sentAt, status: status, headers: headers, probe: paceProbe)
        case .failure: pacer?.ended(sentAt: sentAt, status: nil, headers: [:], probe: paceProbe)
        }
        if case .response(400, _, _) = result, rows.count > 1, !Task.isCancelled {
            // Some alias is one the API refuses: each half again, until it is one row's.
            splits.add(1, ordering: .relaxed)
            let half = rows.count / 2
            var results: [Int: TransportResult] = [:]
            for part in [Array(rows[..<half]), Array(rows[half...])] {
                let probe = await admitPart()
                if let refused = probe.refused {
                    for row in part { results[row.id] = refused }
                    continue
                }
                results.merge(await call(part, request: request, timeout: timeout, paceProbe: probe.probe)) { first, _ in first }
            }
            return results
        }
        var results: [Int: TransportResult] = [:]
        for row in rows {
            results[row.id] = AliasAnswer.forRow(result, aliases: row.aliases, labels: row.labels)
        }
        return results
    }

    /// The pacer's admission for half of a split call: whether it probes, or why it is not sent.
    private func admitPart() async -> (probe: Bool, refused: TransportResult?) {
        guard let pacer else { return (false, nil) }
        switch await pacer.admit() {
        case .go(let probe): return (probe, nil)
        case .stop(let reason): return (false, .failure(.stopped(reason)))
        case .cancelled: return (false, .failure(.cancelled))
        }
    }
}
