import Foundation
import ShowbatchBasics
import Synchronization
import ShowbatchManifest

/// How a job ended.
enum JobOutcome: Sendable {
    /// Its row.
    case row(FinishedRow)
    /// Its last attempt failed in a way that can be the endpoint's (no answer, a timeout, a
    /// retried status): `row` is written only if other rows are seen to get answers after it;
    /// if the pause opens instead, the row is sent again with fresh attempts. The row keeps its
    /// place in the window meanwhile, and its worker takes another.
    case undecided(ResultRow)
    /// The run was cancelled before the row was finished.
    case cancelled
    /// The run must stop: the failure is not the row's (a certificate, credentials, an endpoint
    /// that stays down). The row is not written; a resumed run sends it.
    case stop(RunStop)
}

/// How `AttemptContext.perform` ended.
enum PerformResult: Sendable {
    /// The job's outcome.
    case done(JobOutcome)
    /// The row is held back (a pause's probe is taken from a fresh row): it goes on later from
    /// `attempts` attempts.
    case steppedAside(attempts: Int)
}

/// What the attempts of a run count, for its summary, metrics and report.
final class AttemptCounts: Sendable {
    /// Requests sent again because an answer refused their token (401).
    let resentAfter401 = Atomic<Int>(0)
    /// Requests sent again because the endpoint answered 429 (rate limited).
    let throttled = Atomic<Int>(0)
}

/// Everything an attempt needs, shared by the tasks of a run.
struct AttemptContext: Sendable {
    let transport: any Transport
    let policy: RetryPolicy
    let timeout: Duration
    /// Starts spaced by `rate_limit` and by the rate the endpoint's 429s teach.
    let pacer: RateLimitPacer?
    let events: @Sendable (RunEvent) -> Void
    let verbose: Bool
    /// The bearer token, when the manifest has `auth`.
    var credentials: Credentials?
    /// When a 2xx answer's labels are extracted.
    var reveal = RevealTiming(failFast: false)
    /// The circuit breaker's pause (an outage, refused fresh tokens).
    var pause: CircuitPause?
    /// What the attempts of a run count.
    var counts: AttemptCounts?
    /// Clears a failure's words (curl quoting a host that came from a secret) before the row keeps them.
    var redactor: Redactor?
    /// The transport paces its own calls (the Vault API's): a 429 waits for its pacer, as for `pacer`.
    var callsPaced = false

    /// Sends with retries; a 2xx answer comes back as `reveal` says (revealed now, or as it is for
    /// the writer). `attempts`: attempts the row made before it was held back. `mayStepAside`:
    /// the caller can hold the row back while a fresh row probes a pause.
    func perform(_ request: PreparedRequest, ordinal: Int, labels: [LabelBinding], attempts: Int = 0,
                 mayStepAside: Bool = false) async -> PerformResult {
        var random = SeededGenerator(seed: UInt64(ordinal) &* 0x9E3779B97F4A7C15 &+ UInt64(attempts) &+ 1)
        var attempt = attempts
        guard let outcome = await perform(request, ordinal: ordinal, labels: labels, attempt: &attempt, random: &random,
                                          mayStepAside: mayStepAside) else {
            return .steppedAside(attempts: attempt)
        }
        return .done(outcome)
    }

    /// The attempts of one row: its outcome, or nil when it steps aside.
    private func perform(_ request: PreparedRequest, ordinal: Int, labels: [LabelBinding], attempt: inout Int,
                         random: inout SeededGenerator, mayStepAside: Bool) async -> JobOutcome? {
        // Renewals this row asked for. A token renewed for everyone can be used up by others
        // before this row sends it (short-lived tokens, many workers), so a refusal is taken to be
        // the credentials' only when this row was refused after two renewals with a token that
        // never worked for anyone.
        var renewals = 0
        /// The row's last attempt failed transiently.
        var failedBefore = false
        while true {
            attempt += 1
            let sent: SentAttempt
            switch await send(request, ordinal: ordinal, attempt: attempt, mayStepAside: mayStepAside) {
            case .steppedAside:
                attempt -= 1
                return nil
            case .ended(let outcome): return outcome
            case .sent(let attempt): sent = attempt
            }
            let decision = AttemptDecision.of(sent.result, attempt: attempt, policy: policy, timeout: timeout, probe: sent.probe,
                                              failedBefore: failedBefore, credentials: credentials != nil, paced: pacer != nil || callsPaced)
            if case .stop(let reason) = decision.next {
                if sent.probe { _ = pause?.attemptEnded(ordinal: ordinal, signal: .none, probe: true) }
                return .stop(RunStop(reason))
            }
            let signal = await signal(of: decision, sent, renewals: renewals)
            failedBefore = signal == .transient
            var undecided = false
            var closures = 0
            if let pause {
                let ended = pause.attemptEnded(ordinal: ordinal, signal: signal, probe: sent.probe, weighs: decision.weighs,
                                               last: attempt >= policy.attempts, sentAt: sent.at)
                if !ended.counts {
                    // Sending is paused: this attempt does not count; it is made again once the pause ends.
                    attempt -= 1
                    if signal == .refused { renewals = 0 }
                    continue
                }
                undecided = ended.undecided
                closures = ended.closures
            }
            if signal == .refused {
                return .stop(RunStop("authentication failed (HTTP 401) with a freshly renewed access token"))
            }
            var retryAfter: Duration?
            switch decision.next {
            case .cancelled:
                return .cancelled
            case .stop(let reason):
                return .stop(RunStop(reason))
            case .reveal(let status, let body):
                return .row(reveal.finished(FinishedRow.Answer(ordinal: ordinal, request: request.name, status: status, attempts: attempt,
                                                               body: body, labels: labels, extras: request.extras,
                                                               files: request.labelFiles, sent: request.body)))
            case .renewToken:
                // A token that ran out: renewed (once for everyone), and the row sent again
                // without counting an attempt.
                if let stopped = await renew(after: sent.token) { return stopped }
                renewals += 1
                attempt -= 1
                counts?.resentAfter401.add(1, ordering: .relaxed)
                continue
            case .throttled:
                // The endpoint asks the run to slow down: every row waits as the pacer says, and
                // this one is sent again without using an attempt. It is not the row's failure.
                attempt -= 1
                counts?.throttled.add(1, ordering: .relaxed)
                continue
            case .fail(let status, let error):
                // A failed row, or undecided when the pause says its failure may be the endpoint's.
                let row = failed(request, ordinal, labels, status: status, attempts: attempt, error)
                return undecided ? .undecided(row) : .row(.row(row))
            case .retry(let after):
                retryAfter = after
            }
            // The server's Retry-After, or the policy's backoff.
            let delay = retryAfter ?? policy.backoff.delay(after: attempt, random: &random)
            guard await wait(delay, since: closures) else { return .cancelled }
        }
    }

    /// Sleeps a retry's backoff (less when a pause ends after the attempt did); false when cancelled.
    private func wait(_ delay: Duration, since closures: Int) async -> Bool {
        do {
            if let pause { try await pause.backoff(delay, since: closures) } else { try await Task.sleep(for: delay) }
            return true
        } catch {
            return false
        }
    }

    /// Renews the token an answer refused: nil when renewed, else how the row ends.
    private func renew(after token: Token?) async -> JobOutcome? {
        guard let token, let credentials else { return .stop(RunStop("authentication failed (HTTP 401)")) }
        switch await credentials.renew(after: token) {
        case .success: return nil
        case .failure(let stop): return Task.isCancelled ? .cancelled : .stop(stop)
        }
    }

    /// An attempt that was sent, and what came back.
    private struct SentAttempt {
        let result: TransportResult
        /// The token it carried, when the manifest has `auth`.
        let token: Token?
        /// When it was sent (coarse milliseconds).
        let at: Int64
        /// It probes a pause.
        let probe: Bool
    }

    /// How an admission to send ended.
    private enum Sending {
        case sent(SentAttempt)
        /// The row is held back while a fresh row probes the pause.
        case steppedAside
        /// Not sent: the run stops or is cancelled.
        case ended(JobOutcome)
    }

    /// Admits the row's `attempt` (the pause, the pacer, the token) and sends it.
    private func send(_ request: PreparedRequest, ordinal: Int, attempt: Int, mayStepAside: Bool) async -> Sending {
        let admission = await pause?.admit(ordinal: ordinal, mayStepAside: mayStepAside) ?? .go
        switch admission {
        case .go, .probe: break
        case .stepAside: return .steppedAside
        case .stop(let reason): return .ended(.stop(RunStop(reason)))
        case .cancelled: return .ended(.cancelled)
        }
        let probe = admission == .probe
        /// The pacer let the attempt go; it probes the endpoint's rate limit.
        var paced = false
        var paceProbe = false
        /// Ends an attempt that is not sent: a probe's place goes to another row.
        func unsent(_ outcome: JobOutcome) -> Sending {
            if probe { _ = pause?.attemptEnded(ordinal: ordinal, signal: .none, probe: true) }
            if paced { pacer?.unsent(probe: paceProbe) }
            return .ended(outcome)
        }
        switch await pacer?.admit() ?? .go(probe: false) {
        case .go(let probe):
            paced = pacer != nil
            paceProbe = probe
        case .stop(let reason): return unsent(.stop(RunStop(reason)))
        case .cancelled: return unsent(.cancelled)
        }
        if Task.isCancelled { return unsent(.cancelled) }
        var sent = request
        var token: Token?
        if let credentials {
            var current = await credentials.current()
            // The probe of a pause for refused tokens sends a token renewed for it.
            if probe, pause?.reason == .credentials, case .success(let stale) = current {
                current = await credentials.renew(after: stale)
            }
            switch current {
            case .success(let value): token = value
            case .failure(let stop): return unsent(Task.isCancelled ? .cancelled : .stop(stop))
            }
            sent.setCredential(credentials.spec.header, "Bearer " + token!.value)
        }
        let began = verbose ? ContinuousClock.now : nil
        let sentAt = coarseMilliseconds()
        let result = await transport.send(sent, timeout: probe ? pause!.probeTimeout(timeout) : timeout)
        switch result {
        case .response(let status, let headers, _): pacer?.ended(sentAt: sentAt, status: status, headers: headers, probe: paceProbe)
        case .failure: pacer?.ended(sentAt: sentAt, status: nil, headers: [:], probe: paceProbe)
        }
        if let began {
            events(.attempt(AttemptRecord(request, attempt: attempt, result: result, duration: ContinuousClock.now - began)))
        }
        return .sent(SentAttempt(result: result, token: token, at: sentAt, probe: probe))
    }

    /// What the attempt tells the breaker, the credentials considered: a refused token says
    /// nothing of whether the endpoint is up (an edge checks tokens while the service behind it
    /// is down), unless a token renewed for this is refused too. An answer marks its token as
    /// one that worked.
    private func signal(of decision: AttemptDecision, _ sent: SentAttempt, renewals: Int) async -> AttemptSignal {
        switch decision.next {
        case .renewToken:
            guard let token = sent.token, let credentials,
                  (sent.probe && pause?.reason == .credentials) || (renewals >= 2 && credentials.neverWorked(token)) else { break }
            // Answers of the same token may still be on their way: give them a moment.
            if !sent.probe { try? await Task.sleep(for: .milliseconds(200)) }
            if sent.probe || credentials.neverWorked(token) || renewals >= 100 { return .refused }
        case .cancelled, .stop:
            break
        default:
            if case .response = sent.result, let token = sent.token { credentials?.accepted(token) }
        }
        return decision.signal
    }

    private func failed(_ request: PreparedRequest, _ ordinal: Int, _ labels: [LabelBinding], status: Int?, attempts: Int,
                        _ error: RowError) -> ResultRow {
        var row = ResultRow(ordinal: ordinal, request: request.name, status: .failed, httpStatus: status, attempts: attempts,
                            labels: labels.map { ($0.name, nil) }, errors: [redactor?.redact(error) ?? error])
        row.extras = request.extras
        return row
    }
}
