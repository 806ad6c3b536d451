import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import ShowbatchEmulator
import TestSupport

/// The vault's own rate limit, as its proxy keeps it: a fixed number of requests per window, then
/// 429 until the window resets, with or without `Retry-After` and the `x-ratelimit-*` fields.
/// With the default settings (no `rate_limit`), the run slows down and paces itself: every row
/// ok after one attempt, exit 0, and most requests are not 429s. (A run used to fail 25 rows
/// in a row and stop, exit 4, in under a second, unless every 429 had a Retry-After.)
@Suite struct RateLimitTests {
    @Test(.timeLimit(.minutes(1)), arguments: [false, true], [false, true])
    func aWindowLimitSlowsTheRunAndFailsNoRow(retryAfter: Bool, headers: Bool) async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let count = 800
        let manifest = try fixture.manifest("""
        vault: tnt1
        concurrency: 16
        output: {path: r.csv}
        requests: [{name: "r${row.id}", each: {csv: d.csv}, path: /p, labels: {p: path}}]
        """, files: ["d.csv": "id\n" + (0..<count).map(String.init).joined(separator: "\n") + "\n"])
        let (emulator, options) = try fixture.emulator(for: manifest) {
            $0.faults.windowLimit = 100
            $0.faults.windowLength = .milliseconds(500)
            $0.faults.windowRetryAfter = retryAfter
            $0.faults.windowHeaders = headers
        }
        defer { emulator.stop() }
        let log = fixture.log
        let summary = try await Runner(manifest: manifest, options: options, environment: [:]) { log.record($0) }.run()
        #expect(summary.stopReason == nil && summary.ok == count && summary.exitCode == .ok, "stop: \(summary.stopReason ?? "none")")
        let lines = try #require(fixture.read("r.csv")).split(separator: "\n").dropFirst()
        #expect(lines.count == count)
        for (index, line) in lines.enumerated() where line != "r\(index),ok,200,1,,/p" {
            Issue.record("row \(index) is \(line)")
            break
        }
        let throttled = emulator.snapshot.throttled
        #expect(summary.resentAfter429 == throttled)
        // Pacing, not hammering: far fewer 429s than rows (without it, a run at concurrency 16
        // meets hundreds); told what is left, hardly any.
        #expect(throttled < (headers ? count / 20 : count / 4), "\(throttled) answers were 429")
        // With x-ratelimit-remaining the run keeps to the window from its first answers, and
        // may never meet a 429.
        #expect(headers || log.all.contains { $0.hasPrefix("warning: the endpoint answers 429 (rate limited)") })
    }

    /// The endpoint answering 429 to everything for circuit.max_pause stops the run (exit 4,
    /// the journal kept), rather than waiting for ever.
    @Test(.timeLimit(.minutes(1))) func endless429sStopTheRunAtMaxPause() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        concurrency: 4
        circuit: {max_pause: 2s}
        output: {path: r.csv}
        requests: [{name: "r${row.id}", each: {csv: d.csv}, path: /p, labels: {p: path}}]
        """, files: ["d.csv": "id\n" + (0..<20).map(String.init).joined(separator: "\n") + "\n"])
        let (emulator, options) = try fixture.emulator(for: manifest) {
            $0.faults.windowLimit = 0
            $0.faults.windowLength = .seconds(600)
        }
        defer { emulator.stop() }
        let summary = try await Runner(manifest: manifest, options: options, environment: [:]).run()
        #expect(summary.stopReason == "the endpoint's rate limit let no request through for 2s (circuit.max_pause)")
        #expect(summary.exitCode == .stopped && summary.ok == 0 && summary.failed == 0)
    }
}

/// `PaceState` on its own: what a 429 and the rate-limit fields do, without a network.
@Suite struct PaceStateTests {
    /// 429s to attempts sent before the first one say nothing new; the probe after the window
    /// resets measures the rate let through, and the run keeps to 97% of it.
    @Test func theRateIsMeasuredBetweenResets() {
        var state = PaceState(settings: PaceSettings(), seed: 1)
        #expect(state.admit(now: 0) == .go(probe: false))
        for _ in 0..<200 { _ = state.ended(sentAt: 0, status: 200, signal: RateSignal(), probe: false, now: 10) }
        let warning = state.ended(sentAt: 10, status: 429, signal: RateSignal(), probe: false, now: 20)
        #expect(warning != nil && state.throttles == 1)
        // Others under way before it: no new throttle.
        _ = state.ended(sentAt: 15, status: 429, signal: RateSignal(), probe: false, now: 21)
        #expect(state.throttles == 1 && state.answered429 == 2)
        guard case .askAt(let until) = state.admit(now: 22) else { Issue.record("not throttled"); return }
        #expect((125...250).contains(until - 20))
        // At the end of the wait one request probes; the others wait for it.
        #expect(state.admit(now: until) == .go(probe: true))
        if case .askAt = state.admit(now: until) {} else { Issue.record("a second request went while the probe was out") }
        // The window resets at 2 s: the probe of 1.9 s is refused, the next gets through.
        _ = state.ended(sentAt: until, status: 429, signal: RateSignal(), probe: true, now: 1_900)
        #expect(state.throttles == 2)
        guard case .askAt(let next) = state.admit(now: 1_901) else { Issue.record("not throttled"); return }
        #expect(state.admit(now: next) == .go(probe: true))
        _ = state.ended(sentAt: next, status: 200, signal: RateSignal(), probe: true, now: 2_050)
        let learned = try! #require(state.learned)
        #expect(abs(learned - 200.0 * 1000 / 2_050 * 0.97) < 0.01)
        #expect(state.throttledUntil == nil)
        // Paced now: starts a spacing apart.
        #expect(state.admit(now: 2_050) == .go(probe: false))
        guard case .sendAt(let slot, _) = state.admit(now: 2_050) else { Issue.record("not paced"); return }
        #expect(abs(slot - (2_050 + 1000 / learned)) < 0.01)
    }

    /// x-ratelimit-reset, or a Retry-After that is not in whole seconds, says when: everyone
    /// waits until then and goes, no probe. A Retry-After in whole seconds is rounded up (a 2 s
    /// window that runs out 0.3 s before its end says 1): a probe goes a second before it, then
    /// one at a time until one gets through, so a short window is not overshot (waiting it out
    /// took 1.23x the ideal time). x-ratelimit-remaining: 0 throttles before a 429 is spent.
    @Test func theEndpointsWordOnTheResetIsTaken() {
        var exact = PaceState(settings: PaceSettings(), seed: 1)
        _ = exact.admit(now: 0)
        _ = exact.ended(sentAt: 0, status: 429, signal: RateSignal(retryAfter: .milliseconds(1_500)), probe: false, now: 5)
        #expect(exact.admit(now: 10) == .askAt(1_505))
        #expect(exact.admit(now: 1_505) == .go(probe: false))
        #expect(exact.admit(now: 1_505) == .go(probe: false))

        var state = PaceState(settings: PaceSettings(), seed: 1)
        _ = state.admit(now: 0)
        _ = state.ended(sentAt: 0, status: 429, signal: RateSignal(retryAfter: .seconds(2)), probe: false, now: 5)
        #expect(state.admit(now: 10) == .askAt(1_005))
        #expect(state.admit(now: 1_005) == .go(probe: true))
        #expect(state.admit(now: 1_005) == .askAt(1_055))
        // The probe finds the window not reset yet: the next probes follow, a probe wait apart.
        _ = state.ended(sentAt: 1_005, status: 429, signal: RateSignal(retryAfter: .seconds(1)), probe: true, now: 1_010)
        guard case .askAt(let next) = state.admit(now: 1_011), (1_010 + 125...1_010 + 250).contains(next) else {
            Issue.record("no probe a probe wait later")
            return
        }
        #expect(state.admit(now: next) == .go(probe: true))
        _ = state.ended(sentAt: next, status: 200, signal: RateSignal(remaining: 0, reset: 1_000), probe: true, now: next + 5)
        #expect(state.admit(now: next + 10) == .askAt(next + 1_005))
        #expect(state.answered429 == 2)
    }

    /// Starts reserved before a throttle are void: after a 1 s reset the schedule starts again,
    /// however far the old reservations reached (they used to hold the run back for minutes).
    @Test func aThrottleVoidsTheStartsReservedBeforeIt() {
        var state = PaceState(settings: PaceSettings(), seed: 1)
        _ = state.admit(now: 0)
        _ = state.ended(sentAt: 0, status: 200, signal: RateSignal(remaining: 1, reset: 100_000), probe: false, now: 10)
        var last: Double = 0
        for _ in 0..<64 { if case .sendAt(let slot, _) = state.admit(now: 20) { last = slot } }
        #expect(last > 600_000)
        _ = state.ended(sentAt: 15, status: 200, signal: RateSignal(remaining: 0, reset: 1_000), probe: false, now: 100)
        #expect(state.admit(now: 1_100) == .go(probe: false))
    }

    /// The additive increase is additive, and stops at twice the rate measured: a quiet hour
    /// does not turn pacing off.
    @Test func theIncreaseIsAdditiveAndBounded() {
        var state = PaceState(settings: PaceSettings(), seed: 1)
        _ = state.admit(now: 0)
        for _ in 0..<100 { _ = state.ended(sentAt: 0, status: 200, signal: RateSignal(), probe: false, now: 5) }
        _ = state.ended(sentAt: 5, status: 429, signal: RateSignal(retryAfter: .seconds(1)), probe: false, now: 1_000)
        _ = state.admit(now: 2_000)
        _ = state.ended(sentAt: 2_000, status: 200, signal: RateSignal(), probe: false, now: 2_000)
        let measured = try! #require(state.learned)
        _ = state.ended(sentAt: 3_000, status: 200, signal: RateSignal(), probe: false, now: 4_000)
        let once = try! #require(state.learned)
        #expect(abs((once - measured) - measured * 0.02) < 1e-9)
        for second in 5...3_600 { _ = state.ended(sentAt: Int64(second) * 1000, status: 200, signal: RateSignal(), probe: false, now: Int64(second) * 1000) }
        #expect(state.learned! <= 2 * measured + 1e-9)
    }

    /// The headers as servers send them: seconds or a Unix time for the reset.
    @Test func rateLimitFieldsAreRead() {
        let now = 1_800_000_000.0
        #expect(RateSignal.from(["x-ratelimit-remaining": "7", "x-ratelimit-reset": "30"], status: 200, nowSince1970: now)
                == RateSignal(retryAfter: nil, remaining: 7, reset: 30_000))
        #expect(RateSignal.from(["ratelimit-reset": "1800000012"], status: 200, nowSince1970: now).reset == 12_000)
        // An hourly window is paced over its hour.
        #expect(RateSignal.from(["x-ratelimit-reset": "1800003600"], status: 200, nowSince1970: now).reset == 3_600_000)
        #expect(RateSignal.from(["retry-after": "3", "x-ratelimit-remaining": "x"], status: 429, nowSince1970: now)
                == RateSignal(retryAfter: .seconds(3), remaining: nil, reset: nil))
        #expect(RateSignal.from(["retry-after": "3"], status: 200).retryAfter == nil)
    }
}

/// The pacing against a fixed-window limit in virtual time (the state driven by simulated
/// workers, an answer taking `latency`): the run's length against the ideal (rows ÷ allowed
/// rate) and the share of 429s, for the windows the VGS proxy keeps (5,000 a minute live, 200
/// sandbox) and a short one, with the endpoint saying when it resets (in whole seconds, as
/// servers do) or not.
@Suite struct PaceSimulationTests {
    @Test(arguments: [
        // limit, window (ms), rows, concurrency, latency (ms), Retry-After, x-ratelimit-*, at most: ratio, 429 share
        (200, Int64(2_000), 2_000, 16, Int64(2), false, false, 1.15, 0.05),
        (200, 2_000, 2_000, 1, 5, false, false, 1.15, 0.05),
        (5_000, 60_000, 20_000, 16, 50, false, false, 1.05, 0.02),
        (5_000, 60_000, 20_000, 16, 50, true, false, 1.05, 0.02),
        (5_000, 60_000, 20_000, 64, 20, false, true, 1.05, 0.02),
        // Sandbox: the first minute is probed for its reset, a tenth of 1,000 rows.
        (200, 60_000, 1_000, 8, 30, false, false, 1.05, 0.10),
        (200, 60_000, 1_000, 8, 30, false, true, 1.05, 0.02),
        (200, 2_000, 2_000, 16, 2, false, true, 1.15, 0.01),
        (200, 2_000, 2_000, 1, 5, false, true, 1.15, 0.01),
        // A Retry-After in whole seconds, honoured, on a window of two: up to a second lost when
        // the window runs out just before its end.
        (200, 2_000, 2_000, 16, 2, true, false, 1.25, 0.05),
    ] as [(Int, Int64, Int, Int, Int64, Bool, Bool, Double, Double)])
    func pacingKeepsCloseToTheLimit(limit: Int, window: Int64, rows: Int, concurrency: Int, latency: Int64,
                                    retryAfter: Bool, headers: Bool, ratio: Double, share: Double) {
        let result = simulateWindow(limit: limit, window: window, rows: rows, concurrency: concurrency, latency: latency,
                                    retryAfter: retryAfter, headers: headers)
        let ideal = Double(rows) / Double(limit) * Double(window)
        #expect(Double(result.elapsed) / ideal <= ratio, "\(result.elapsed) ms for an ideal of \(ideal)")
        #expect(Double(result.throttled) / Double(rows) <= share, "\(result.throttled) answers were 429")
    }
}

extension PaceSimulationTests {
    /// The Vault API says `x-ratelimit-remaining` alone: once two turns show the window, the run
    /// keeps to it within a tenth of the ideal on a short window, and closer on VGS's minute,
    /// with few 429s; the window's turn does not wander with each bracket (a scaled-down night
    /// lost a probe's wait or spent a 429 at most windows' turns that way).
    ///
    /// Requests reach the server, and their answers come back, up to `arrival` ms late, so
    /// counts come back in another order than they were sent: a count higher than the one
    /// before is a turn only when it is higher by more than the requests on their way could
    /// make it.
    @Test(arguments: [
        // limit, window (ms), calls, concurrency, latency (ms), arrival (ms), at most: ratio, 429 share
        (100, Int64(2_000), 10_000, 16, Int64(10), Int64(0), 1.06, 0.02),
        (100, 2_000, 10_000, 16, 10, 8, 1.06, 0.02),
        (100, 2_000, 4_000, 4, 30, 0, 1.08, 0.02),
        (100, 2_000, 4_000, 4, 30, 20, 1.08, 0.02),
        (3_000, 60_000, 30_000, 8, 40, 0, 1.03, 0.01),
        (3_000, 60_000, 30_000, 16, 15, 10, 1.03, 0.01),
        // Limits at and just above the concurrency: kept to, with more 429s where no turn can
        // be told from answers counted out of order (the window is then probed for).
        (17, 1_000, 1_700, 16, 10, 5, 1.15, 0.10),
        (33, 2_000, 3_300, 32, 10, 5, 1.15, 0.10),
        (10, 1_000, 1_000, 16, 10, 5, 1.15, 0.30),
    ] as [(Int, Int64, Int, Int, Int64, Int64, Double, Double)])
    func aCountAloneIsKeptTo(limit: Int, window: Int64, calls: Int, concurrency: Int, latency: Int64, arrival: Int64,
                             ratio: Double, share: Double) {
        let result = simulateWindow(limit: limit, window: window, rows: calls, concurrency: concurrency, latency: latency,
                                    retryAfter: false, headers: true, remainingOnly: true, arrival: arrival)
        // What is left is spread to the window's end, the last window's too: calls ÷ the rate.
        let ideal = Double(calls) / Double(limit) * Double(window)
        #expect(Double(result.elapsed) / ideal <= ratio, "\(result.elapsed) ms for an ideal of \(ideal)")
        #expect(Double(result.throttled) / Double(calls) <= share, "\(result.throttled) answers were 429")
    }
}

/// A run of `rows` requests at `concurrency` against a fixed-window limit, in virtual time.
/// `remainingOnly`: the answers say `x-ratelimit-remaining` and not when the window resets.
/// `arrival`: a request reaches the server up to this many milliseconds after it was sent, and
/// its answer comes back up to as many later than `latency` (seeded): the server counts
/// requests in another order than they were sent, and they are answered in yet another.
private func simulateWindow(limit: Int, window: Int64, rows: Int, concurrency: Int, latency: Int64 = 2,
                    retryAfter: Bool, headers: Bool, remainingOnly: Bool = false,
                    arrival: Int64 = 0) -> (elapsed: Int64, throttled: Int, learned: Double?) {
    var state = PaceState(settings: PaceSettings(), seed: 1)
    var network = SeededGenerator(seed: 46)
    var used = 0, windowStart: Int64 = 0
    var left = rows
    var throttled = 0
    // Each worker: the time it acts next, and what it does then.
    enum Step {
        case admit, wake(epoch: Int), send(probe: Bool), arrive(sentAt: Int64, probe: Bool)
        case answer(sentAt: Int64, status: Int, signal: RateSignal, probe: Bool)
    }
    var workers: [(at: Int64, step: Step)] = Array(repeating: (0, .admit), count: concurrency)
    var now: Int64 = 0
    var events = 0
    while left > 0 && events < 2_000_000 {
        events += 1
        let index = workers.indices.min { workers[$0].at < workers[$1].at }!
        now = max(now, workers[index].at)
        switch workers[index].step {
        case .admit:
            switch state.admit(now: now) {
            case .go(let probe): workers[index] = (now, .send(probe: probe))
            case .sendAt(let slot, let epoch):
                // Sleeps to its slot, then sends unless the epoch moved.
                workers[index] = (Int64(slot.rounded(.up)), .wake(epoch: epoch))
            case .askAt(let time): workers[index] = (min(time, now + 100), .admit)
            case .stop: return (now, throttled, state.learned)
            }
        case .wake(let epoch):
            workers[index] = (now, state.epoch == epoch ? .send(probe: false) : .admit)
        case .send(let probe):
            state.sent()
            workers[index] = (now + Int64(network.unit() * Double(arrival)), .arrive(sentAt: now, probe: probe))
        case .arrive(let sentAt, let probe):
            if now - windowStart >= window { windowStart += (now - windowStart) / window * window; used = 0 }
            let allowed = used < limit
            if allowed { used += 1 }
            let reset = windowStart + window - now
            var signal = RateSignal()
            if headers { signal.remaining = limit - used; signal.reset = remainingOnly ? nil : (reset + 999) / 1000 * 1000 }
            if !allowed && retryAfter { signal.retryAfter = .seconds((reset + 999) / 1000) }
            if !allowed { throttled += 1 }
            // The answer takes its time too: answers come back in another order than counted.
            let back = now + latency + Int64(network.unit() * Double(arrival))
            workers[index] = (back, .answer(sentAt: sentAt, status: allowed ? 200 : 429, signal: signal, probe: probe))
        case .answer(let sentAt, let status, let signal, let probe):
            _ = state.ended(sentAt: sentAt, status: status, signal: signal, probe: probe, now: now)
            if status != 429 { left -= 1 }
            workers[index] = (now, .admit)
        }
    }
    return (now, throttled, state.learned)
}


/// An endpoint that says only `x-ratelimit-remaining` (the Vault API): the count is spent as it
/// comes until two windows have turned (a count that does not go down between two answers in
/// send order); then what is left is spread to where the window ends, and a count of 0 waits
/// for the next window's start.
@Suite struct RemainingOnlyTests {
    @Test func theWindowIsLearnedFromTheCountAndKeptTo() throws {
        var state = PaceState(settings: PaceSettings(), seed: 1)
        _ = state.admit(now: 0)
        func answer(_ sentAt: Int64, _ remaining: Int, _ now: Int64, probe: Bool = false) -> RunEvent? {
            state.ended(sentAt: sentAt, status: 200, signal: RateSignal(remaining: remaining), probe: probe, now: now)
        }
        func refused(_ sentAt: Int64, _ now: Int64) {
            _ = state.ended(sentAt: sentAt, status: 429, signal: RateSignal(), probe: true, now: now)
        }
        // Window 1: spent as it comes; nothing is known of its end.
        _ = answer(10, 3, 20)
        #expect(state.spacing == 0 && state.windowTurn == nil)
        _ = answer(30, 1, 40)
        _ = answer(20, 2, 45)  // sent before the answer above: says nothing new
        _ = answer(50, 0, 60)  // spent: one request at a time probes
        #expect(state.admit(now: 70) != .go(probe: false))
        // A probe refused at 900, one let through at 1,000 with the count back up: the window
        // turned between the two, at about 950.
        refused(900, 905)
        _ = answer(1_000, 3, 1_010, probe: true)
        #expect(state.windowTurn == 950 && state.windowLength == nil)
        _ = answer(1_100, 0, 1_110)
        refused(1_950, 1_955)
        _ = answer(2_010, 3, 2_020, probe: true)
        // Two turns (950 and 1,980): windows of 1,030 ms, the next at 3,010.
        #expect(state.windowTurn == 1_980 && state.windowLength == 1_030)
        _ = answer(2_500, 2, 2_510)
        #expect(abs((state.headerRate ?? 0) - 2.0 * 1000 / 500) < 0.01)
        // The count spread over the window is the endpoint's word: it outweighs the slower rate
        // learned from the 429s of windows spent as they came.
        let learned = try #require(state.learned)
        #expect(learned < 4 && state.spacing == 250, "learned \(learned)/s, spacing \(state.spacing) ms")
        // A count of 0 waits for the next window's start, where a probe goes.
        _ = answer(2_600, 0, 2_610)
        #expect(state.admit(now: 2_620) == .askAt(3_010))
        // The probe at the turn foreseen is refused (the forecast was early): the next goes a
        // probe's wait later, not a window later.
        #expect(state.admit(now: 3_010) == .go(probe: true))
        refused(3_010, 3_015)
        guard case .askAt(let next) = state.admit(now: 3_020), next <= 3_015 + 250 else {
            Issue.record("no probe soon after the refused one")
            return
        }
        #expect(state.admit(now: 3_040) == .askAt(next))
        #expect(state.admit(now: next) == .go(probe: true))
        // Let through at 3,040 with the count up: the turn was between 3,010 and 3,040, and the
        // windows seen put it at 3,010, in the bracket: it stays; the next is foreseen a window
        // on, at 4,040.
        _ = answer(3_040, 3, 3_050, probe: true)
        #expect(state.windowTurn == 3_010 && state.windowLength == 1_030)
        _ = answer(3_100, 0, 3_110)
        #expect(state.admit(now: 3_120) == .askAt(4_040))
    }

    /// A turn found outside where the windows seen put it moves the forecast only to the nearer
    /// end of the bracket the answers give (the last in the old window, the first in the new).
    @Test func aTurnOutsideTheForecastMovesItToTheBracket() {
        var state = PaceState(settings: PaceSettings(), seed: 1)
        _ = state.admit(now: 0)
        func answer(_ sentAt: Int64, _ remaining: Int) {
            _ = state.ended(sentAt: sentAt, status: 200, signal: RateSignal(remaining: remaining), probe: false, now: sentAt + 5)
        }
        // Turns at 1,000 and 2,000 (brackets of 20 ms): windows of 1,000 ms.
        answer(10, 5); answer(990, 4); answer(1_010, 9); answer(1_990, 8); answer(2_010, 9)
        #expect(state.windowTurn == 2_000 && state.windowLength == 1_000)
        // The next turn, foreseen at 3,000, comes between 3,050 and 3,090: at 3,050.
        answer(2_500, 5); answer(3_050, 1); answer(3_090, 9)
        #expect(state.windowTurn == 3_050)
        // Windows of 1,025 ms now (2,050 ms over two); one in the bracket 3,990...4,100 stays
        // where they put it: 4,075.
        #expect(state.windowLength == 1_025)
        answer(3_990, 2); answer(4_100, 9)
        #expect(state.windowTurn == 4_075)
    }
}
