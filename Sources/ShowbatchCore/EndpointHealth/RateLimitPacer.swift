import Foundation
import ShowbatchBasics
import Synchronization
import ShowbatchManifest

/// What an answer said about the endpoint's rate limit.
struct RateSignal: Equatable, Sendable {
    /// `Retry-After`, when the answer is a 429 that has one.
    var retryAfter: Duration?
    /// `x-ratelimit-remaining` (or `ratelimit-remaining`): requests left in the current window.
    var remaining: Int?
    /// `x-ratelimit-reset` (or `ratelimit-reset`): milliseconds until the window resets (at most
    /// a day: an hourly window is paced over its hour; a wait for it is capped as Retry-After is).
    var reset: Int64?

    /// The signal in `headers` (names lower-cased); `now` is for a reset given as a Unix time.
    static func from(_ headers: [String: String], status: Int, nowSince1970: Double? = nil) -> RateSignal {
        var signal = RateSignal()
        // Most answers carry none of these (curl keeps only them): nothing to look up.
        guard !headers.isEmpty else { return signal }
        if status == 429 { signal.retryAfter = headers["retry-after"].flatMap(RetryAfter.parse) }
        if let text = headers["x-ratelimit-remaining"] ?? headers["ratelimit-remaining"],
           let value = Int(text.trimmingCharacters(in: .whitespaces)), value >= 0 {
            signal.remaining = value
        }
        if let text = headers["x-ratelimit-reset"] ?? headers["ratelimit-reset"],
           let value = Double(text.trimmingCharacters(in: .whitespaces)), value >= 0, value.isFinite {
            // A large number is a Unix time (as GitHub and Vimeo send it); else seconds from now
            // (as the IETF RateLimit fields say).
            let seconds = value > 1_000_000_000 ? value - (nowSince1970 ?? Date().timeIntervalSince1970) : value
            signal.reset = Int64(min(86_400, max(0, seconds)) * 1000)
        }
        return signal
    }
}

/// How the run keeps to the endpoint's rate limit.
struct PaceSettings: Sendable {
    /// Milliseconds between two starts that `rate_limit` asks for; 0: no cap.
    var capSpacing: Double = 0
    /// The wait between probes while the endpoint answers 429 and says nothing of when it
    /// stops (milliseconds): short, since a window that resets is seen only by a probe.
    var probeWait: Int64 = 250
    /// The probe wait once the endpoint has answered 429 for `slowAfter` with nothing let
    /// through (a window of a minute is probed four times a second for no gain).
    var slowProbeWait: Int64 = 2_000
    var slowAfter: Int64 = 10_000
    /// Answered 429 this long (milliseconds) with nothing let through: the run stops.
    var maxThrottle: Int64 = 300_000
    /// The share of the measured rate the run keeps to.
    var margin = 0.97
    /// The share of the rate added for each window (the time between two resets; a second
    /// until one is seen) without a 429: additive increase.
    var increase = 0.02
}

/// What an attempt may do now.
enum PaceAdmission: Equatable, Sendable {
    /// Send now; `probe`: this attempt is the one that probes a rate limit.
    case go(probe: Bool)
    /// A start at this time (milliseconds) is reserved: sleep until then, then send unless the
    /// endpoint answered 429 meanwhile (`PaceState.epoch` changed).
    case sendAt(Double, epoch: Int)
    /// Ask again at this time (milliseconds).
    case askAt(Int64)
    /// The run stops, for this reason.
    case stop(String)
}

/// The pacing of a run's requests, as a plain value that returns what to do (as `PauseState`
/// does): starts spaced by `rate_limit` and by the rate learned from the endpoint's 429s.
///
/// A 429 is the endpoint saying "slower" to every row, not a row failing: the first 429 to an
/// attempt sent after the last one slows everyone down at once (a shared throttle until its
/// `Retry-After`, or `x-ratelimit-reset`; with neither, one request at a time probes every
/// `probeWait` until one gets through). 429s to attempts that were already on their way when it
/// began say nothing new. When a request gets through again, the window has reset: the requests
/// let through since the reset before, over the time between the two, is the rate the endpoint
/// allows, and the run keeps to `margin` of it, adding `increase` of it for every second without
/// a 429 (additive increase; a 429 then measures it again, the multiplicative decrease). An
/// answer saying `x-ratelimit-remaining: 0` throttles as a 429 would, before one is spent.
struct PaceState {
    let settings: PaceSettings
    private var random: SeededGenerator
    /// The rate learned from the endpoint, requests per second; nil until a 429.
    private(set) var learned: Double?
    /// When the next paced start may be, in milliseconds.
    private var nextSlot: Double = 0
    private var lastIncrease: Int64 = 0
    /// No request starts before this (milliseconds) while throttled; nil: not throttled.
    private(set) var throttledUntil: Int64?
    /// The throttle ends at `throttledUntil` for everyone (the endpoint said when), rather than
    /// with a probe that gets through.
    private var resetKnown = false
    private(set) var probeOut = false
    /// When the current throttle began: 429s to attempts sent before it are not news (nor those
    /// sent in the same millisecond: the clock is coarse, and an old answer must not pass for news).
    private var throttleBegan: Int64 = .min
    /// The first 429 since anything got through (for the slower probes and the stop).
    private var throttledSince: Int64?
    /// A throttle began and nothing has got through since.
    private var awaitingReset = false
    /// When the window was last seen to reset (or the first request went), and the requests
    /// let through since.
    private var lastReset: Int64?
    private var acceptedSinceReset = 0
    /// The requests let through between the last reset and the throttle after it.
    private var acceptedBeforeThrottle = 0
    /// The time between the last two resets, in milliseconds: the endpoint's window, as seen.
    private var cycle: Int64 = 1_000
    /// The rate that spends what `x-ratelimit-remaining` says is left by the `x-ratelimit-reset`
    /// it gives, from the latest answer that said both: requests per second.
    private(set) var headerRate: Double?
    /// The rate kept when the window last reset, before any increase.
    private var measuredRate: Double = 0
    /// An endpoint that says `x-ratelimit-remaining` and never when its window resets (the Vault
    /// API): the latest count, by the send time of the answer that said it; where a window was
    /// last seen to turn (the count did not go down between two answers in send order); and the
    /// window's length once two turns were seen.
    private var remainingSeen: (count: Int, sentAt: Int64)?
    private(set) var windowTurn: Int64?
    private(set) var windowLength: Int64?
    private var firstTurn: Int64?
    /// When the latest request answered 429 was sent: the window had not turned then.
    private var lastRefused: Int64 = .min
    /// Goes up with each throttle: a start reserved before it is void.
    private(set) var epoch = 0
    /// 429 answers, and the throttles they began.
    private(set) var answered429 = 0
    private(set) var throttles = 0
    private(set) var stopped: String?

    init(settings: PaceSettings, seed: UInt64) {
        self.settings = settings
        random = SeededGenerator(seed: seed)
    }

    /// Milliseconds between two starts now: the larger of the cap's and the endpoint's. What the
    /// endpoint says is left, once it can be spread over the window, is its word on the rate and
    /// outweighs a rate learned from 429s (which measured a window spent unevenly, before the
    /// window's turns were known, and held a Vault API night to half its limit).
    var spacing: Double {
        let told = headerRate.map { 1000 / $0 } ?? 0
        let measured = learned.map { 1000 / $0 } ?? 0
        // Only the count alone spread over a window learned outweighs the 429s: with a reset the
        // endpoint names, 429s may come from a limit its fields do not describe (a burst limit,
        // a proxy in front), and the slower of the two is kept.
        return max(settings.capSpacing, windowLength != nil && headerRate != nil ? told : max(told, measured))
    }

    /// Attempts admitted and not yet ended: with `x-ratelimit-remaining` alone, what a count
    /// leaves is what these have not spent yet.
    private(set) var inFlight = 0

    /// The most attempts on their way at once so far (about the run's concurrency): how far
    /// answers counted out of order can lift a count. (A window of no more calls than that shows
    /// no turn: the run then spends each window as it comes and probes for the next.)
    private(set) var peakInFlight = 0

    /// An attempt admitted (`.go`) is on its way.
    mutating func sent() {
        inFlight += 1
        peakInFlight = max(peakInFlight, inFlight)
    }

    /// Before an attempt.
    mutating func admit(now: Int64) -> PaceAdmission {
        if let stopped { return .stop(stopped) }
        if lastReset == nil {
            lastReset = now
            nextSlot = Double(now)
        }
        if let until = throttledUntil {
            if let since = throttledSince, now - since >= settings.maxThrottle {
                let text = "the endpoint's rate limit let no request through for \(Units.text(.milliseconds(settings.maxThrottle))) (circuit.max_pause)"
                stopped = text
                return .stop(text)
            }
            if now < until { return .askAt(until) }
            if resetKnown {
                throttledUntil = nil
                nextSlot = max(nextSlot, Double(now))
            } else {
                if probeOut { return .askAt(now + min(50, settings.probeWait)) }
                probeOut = true
                return .go(probe: true)
            }
        }
        let spacing = self.spacing
        guard spacing > 0 else { return .go(probe: false) }
        let slot = max(Double(now), nextSlot)
        nextSlot = slot + spacing
        return slot <= Double(now) ? .go(probe: false) : .sendAt(slot, epoch: epoch)
    }

    /// After an attempt sent at `sentAt`: its status (nil: no answer) and what its headers said.
    /// Returns a line for the log, when there is one to say.
    mutating func ended(sentAt: Int64, status: Int?, signal: RateSignal, probe: Bool, now: Int64) -> RunEvent? {
        if probe { probeOut = false }
        inFlight = max(0, inFlight - 1)
        guard let status else { return nil }
        if status == 429 {
            answered429 += 1
            lastRefused = max(lastRefused, sentAt)
            // Already throttled, or sent before the throttle began: nothing new.
            guard sentAt > throttleBegan, throttledUntil == nil || probe else { return nil }
            return throttle(now: now, wait: signal.retryAfter ?? signal.reset.map { .milliseconds(min($0, 600_000)) },
                            retryAfter: signal.retryAfter != nil)
        }
        var event: RunEvent?
        if awaitingReset && sentAt > throttleBegan {
            event = windowReset(now: now)
        } else {
            acceptedSinceReset += 1
        }
        if let rate = learned, throttledUntil == nil, now - lastIncrease >= 1000 {
            // Additive: a share of the measured rate per window, up to twice it (a 429 measures again).
            learned = min(2 * measuredRate, rate + measuredRate * settings.increase * Double(min(now - lastIncrease, cycle)) / Double(cycle))
            lastIncrease = now
        }
        if let remaining = signal.remaining, let reset = signal.reset, remaining > 0 {
            // What is left, spread over the time to the reset: the window is never spent early.
            // A reset in whole seconds is half a second early on average.
            headerRate = max(0.1, Double(remaining) * 1000 / Double(max(500, reset - 500)))
        }
        var turnAt: Int64?
        if let remaining = signal.remaining, signal.reset == nil {
            turnAt = countLeft(remaining, sentAt: sentAt, now: now)
        }
        // With the count alone, the attempts on their way spend what it says is left.
        let left = signal.remaining.map { signal.reset == nil ? $0 - inFlight : $0 }
        if let left, left <= 0, throttledUntil == nil, sentAt > throttleBegan {
            // Nothing left in this window: wait for it before spending a 429 (to where the window
            // turns, when that is known: a probe then finds it).
            if let turnAt {
                return throttle(now: now, wait: nil, counted: false, probeAt: turnAt) ?? event
            }
            return throttle(now: now, wait: signal.reset.map { .milliseconds(min($0, 600_000)) }, counted: false) ?? event
        }
        return event
    }

    /// An answer said `remaining` and nothing of when the window resets: a count that did not go
    /// down since the answer sent before it says a window turned (at about `sentAt`); what is
    /// left is spread evenly to where this window ends. Returns where the next window begins,
    /// once known.
    private mutating func countLeft(_ remaining: Int, sentAt: Int64, now: Int64) -> Int64? {
        if let seen = remainingSeen {
            // Answers come back out of order: only one sent later says something new (one sent
            // in the same tick of the coarse clock may have been counted first).
            guard sentAt > seen.sentAt else {
                if sentAt == seen.sentAt { remainingSeen = (min(remaining, seen.count), sentAt) }
                return nextTurn(after: sentAt)
            }
            // A request sent later that left more than the one before: a new window, which began
            // after the last request seen in the old one (answered, or refused) and by this one.
            // More by as many as were on their way at once: a server counts requests as they
            // reach it, not as they were sent, so one sent a tick later and counted first is
            // higher by up to that many (taken for turns, they once halved the window learned,
            // which then held, with a 429 every probe wait through the second half of each).
            if remaining >= seen.count + max(1, peakInFlight) {
                let before = max(seen.sentAt, lastRefused)
                var turn = before < sentAt ? before + (sentAt - before) / 2 : sentAt
                if let last = windowTurn, let length = windowLength, turn - last >= 200 {
                    // The turn is somewhere between `before` and `sentAt`: where the windows
                    // already seen put it, when that is in between (the middle of each bracket
                    // would move the forecast back and forth by half a probe's wait, a 429 or a
                    // late start each window); else the nearest end of the bracket.
                    let foreseen = last + max(1, ((turn - last) * 2 + length) / (2 * length)) * length
                    turn = min(max(foreseen, before), sentAt)
                }
                if let first = firstTurn, turn - (windowTurn ?? first) >= 200 {
                    // The window's length: the time since the first turn over the windows between
                    // (a window nobody spent in shows no turn of its own: the count is rounded).
                    let windows = max(1, windowLength.map { Int64((Double(turn - first) / Double($0)).rounded()) } ?? 1)
                    windowLength = (turn - first) / windows
                    windowTurn = turn
                } else if firstTurn == nil {
                    firstTurn = turn
                    windowTurn = turn
                }
            }
        }
        remainingSeen = (remaining, sentAt)
        guard let next = nextTurn(after: sentAt) else { return nil }
        if remaining > 0 {
            // What is left, by the time left (a coarse clock and answers on their way: a little early).
            headerRate = max(0.1, Double(remaining) * 1000 / Double(max(50, next - now)))
        }
        return next
    }

    /// Where the window holding `sentAt` ends: from the last turn seen, a window's length at a
    /// time (a request sent a little after a turn foreseen, whose count has not turned, is in
    /// the window before it: the forecast was early); nil until two turns have shown the length
    /// (until then the count is spent as it comes, and a count of 0 is probed past).
    private func nextTurn(after sentAt: Int64) -> Int64? {
        guard let turn = windowTurn, let length = windowLength else { return nil }
        let windows = max(1, (sentAt - turn - length / 4) / length + 1)
        return turn + windows * length
    }

    /// An attempt admitted as the probe was not sent (cancelled, or stopped first).
    mutating func unsent(probe: Bool) {
        if probe { probeOut = false }
        inFlight = max(0, inFlight - 1)
    }

    /// A throttle: everyone waits `wait` (the endpoint said when), or one request at a time
    /// probes, the first at `probeAt` when given. A `Retry-After` in whole seconds (a 2 s window
    /// that runs out 0.3 s before its end says 1) is an upper bound: a probe goes a second
    /// before it, then every probe wait, so a short window is not overshot.
    private mutating func throttle(now: Int64, wait: Duration?, counted: Bool = true, probeAt: Int64? = nil,
                                   retryAfter: Bool = false) -> RunEvent? {
        epoch += 1
        throttles += counted ? 1 : 0
        throttleBegan = now
        if !awaitingReset { acceptedBeforeThrottle = acceptedSinceReset }
        awaitingReset = true
        let first = throttledSince == nil && learned == nil && throttles <= 1
        if throttledSince == nil { throttledSince = now }
        resetKnown = wait != nil
        let waited = now - (throttledSince ?? now)
        let base = waited >= settings.slowAfter ? settings.slowProbeWait : settings.probeWait
        let drawn = base / 2 + Int64(random.unit() * Double(base - base / 2))
        // Paced: the window runs out near its end, so a probe soon after finds it reset (not
        // with a count alone: its turn is foreseen, or not known yet).
        let paced = remainingSeen == nil ? learned.map { min(drawn, max(20, Int64(4000 / $0))) } ?? drawn : drawn
        var milliseconds = wait.map { Int64($0.seconds * 1000) } ?? paced
        if let probeAt { milliseconds = max(1, probeAt - now) }
        if retryAfter, let wait, wait.seconds >= 1, wait.seconds == wait.seconds.rounded() {
            resetKnown = false
            milliseconds = max(drawn, milliseconds - 1000)
        }
        throttledUntil = now + max(1, milliseconds)
        // Starts reserved before the throttle are void (their sleepers see the epoch change).
        nextSlot = Double(throttledUntil!)
        probeOut = false
        guard first else { return nil }
        let how = wait != nil ? "until the endpoint says its limit resets" : "while one request at a time probes it"
        let what = counted ? "answers 429 (rate limited)" : "says its rate limit is reached (x-ratelimit-remaining: 0)"
        return .warning("the endpoint \(what): sending waits for every row \(how), then keeps to the rate the endpoint lets through; a 429 never fails a row")
    }

    /// A request got through after a throttle: the window has reset. What was let through
    /// since the reset before is the rate the endpoint allows.
    private mutating func windowReset(now: Int64) -> RunEvent? {
        awaitingReset = false
        throttledUntil = nil
        throttledSince = nil
        probeOut = false
        var event: RunEvent?
        if let previous = lastReset, now > previous, acceptedSinceReset > 0 {
            // From one reset to the next: what the endpoint let through in a window. Once paced,
            // the rate the run went at when the window ran out says it better (a reset the
            // endpoint gives in whole seconds can be most of a short window late), but not more
            // than half as much again as the window's (a run paced too fast would measure itself).
            let window = Double(acceptedSinceReset) * 1000 / Double(now - previous)
            var measured = window
            if learned != nil, throttleBegan > previous, acceptedBeforeThrottle > 0 {
                measured = min(1.5 * window, Double(acceptedBeforeThrottle) * 1000 / Double(throttleBegan - previous))
            }
            cycle = max(1_000, now - previous)
            if learned == nil {
                event = .note("keeping to \(Self.text(measured * settings.margin)) requests/s, the rate the endpoint let through before its 429s")
            }
            // A decrease is at most a halving per throttle (as TCP's), so one odd window cannot
            // bring the run to a crawl.
            learned = max(0.1, learned.map { $0 / 2 } ?? 0, measured * settings.margin)
            measuredRate = learned!
        }
        lastReset = now
        acceptedSinceReset = 1
        lastIncrease = now
        headerRate = nil
        nextSlot = Double(now)
        return event
    }

    static func text(_ rate: Double) -> String {
        rate >= 100 ? String(Int(rate.rounded())) : String(format: "%.1f", rate)
    }
}

/// The pacing of a run: `PaceState` under a lock. Workers sleep (as tasks) until their start.
final class RateLimitPacer: Sendable {
    private let state: Mutex<PaceState>
    private let events: @Sendable (RunEvent) -> Void

    init(settings: PaceSettings, seed: UInt64, events: @escaping @Sendable (RunEvent) -> Void = { _ in }) {
        state = Mutex(PaceState(settings: settings, seed: seed))
        self.events = events
    }

    /// What the run's pacing waits for: `rate` (the run's `rate_limit`), and 429s for as long as
    /// `maxPause` with nothing let through.
    static func settings(rate: Rate?, maxPause: Duration) -> PaceSettings {
        var settings = PaceSettings()
        if let rate { settings.capSpacing = rate.spacing.seconds * 1000 }
        settings.maxThrottle = Int64(maxPause.seconds * 1000)
        return settings
    }

    /// How an admission ended.
    enum Outcome: Equatable, Sendable {
        case go(probe: Bool)
        case stop(String)
        case cancelled
    }

    /// Waits until this attempt may start.
    func admit() async -> Outcome {
        while true {
            switch state.withLock({ $0.admit(now: coarseMilliseconds()) }) {
            case .go(let probe):
                state.withLock { $0.sent() }
                return .go(probe: probe)
            case .stop(let reason): return .stop(reason)
            case .sendAt(let slot, let epoch):
                // In steps of at most 100 ms: a throttle meanwhile voids the start.
                var void = false
                while !void {
                    let wait = slot - Double(coarseMilliseconds())
                    if wait <= 0 { break }
                    do { try await Task.sleep(for: .microseconds(Int64(min(wait, 100) * 1000))) } catch { return .cancelled }
                    void = state.withLock({ $0.epoch }) != epoch
                }
                if !void && state.withLock({ (state: inout PaceState) -> Bool in
                    guard state.epoch == epoch else { return false }
                    state.sent()
                    return true
                }) { return .go(probe: false) }
            case .askAt(let time):
                // Never long at once: a throttle may end sooner (a probe gets through).
                let wait = min(100, max(1, time - coarseMilliseconds()))
                do { try await Task.sleep(for: .milliseconds(wait)) } catch { return .cancelled }
            }
        }
    }

    /// After an attempt admitted by `admit`.
    func ended(sentAt: Int64, status: Int?, headers: [String: String], probe: Bool) {
        let signal = status.map { RateSignal.from(headers, status: $0) } ?? RateSignal()
        let event = state.withLock { $0.ended(sentAt: sentAt, status: status, signal: signal, probe: probe, now: coarseMilliseconds()) }
        if let event { events(event) }
    }

    /// An attempt admitted was not sent (cancelled, or stopped first); `probe`: it was the probe.
    func unsent(probe: Bool) { state.withLock { $0.unsent(probe: probe) } }

    /// Answers 429 so far.
    var answered429: Int { state.withLock { $0.answered429 } }


}
