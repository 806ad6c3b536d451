import Testing
@testable import ShowbatchBasics
@testable import ShowbatchCore

/// `AliasCallState` driven by seeded random sequences of rows arriving, leaders taking calls,
/// calls answered, linger timers firing and rows cancelled, as the dispatch's model test drives
/// `DispatchState`: every row gets exactly one result, no call is over its aliases or mixes
/// headers, at most `slots` calls are out, and nothing waits for ever.
@Suite struct AliasCallStateTests {
    @Test(arguments: 0..<8)
    func randomSequencesKeepTheInvariants(part: Int) {
        for seed in UInt64(part * 2_500)..<UInt64((part + 1) * 2_500) {
            var model = CallModel(seed: seed)
            if let problem = model.run() {
                Issue.record("seed \(seed): \(problem)\n  events: \(model.trace.suffix(30).joined(separator: "; "))")
                return
            }
        }
    }

    /// Rows fill a call in arrival order, whole, each alias once; a row that would overfill it
    /// waits for the next; rows with other headers (a renewed token) wait for their own call.
    @Test func aCallTakesRowsWholeAndAliasesOnce() {
        var state = AliasCallState<Int, Int>(slots: 2, perCall: 5)
        #expect(state.arrive(id: 1, aliases: ["a", "b"], labels: ["x", "y"], headers: ["h1"], waiter: 1, now: 0) == .wait(armTimer: true))
        #expect(state.arrive(id: 2, aliases: ["a", "c"], labels: ["x", "y"], headers: ["h2"], waiter: 2, now: 0) == .wait(armTimer: false))
        #expect(state.arrive(id: 3, aliases: ["b", "d"], labels: ["x", "y"], headers: ["h1"], waiter: 3, now: 0) == .wait(armTimer: false))
        // a, b, d and then e, f: five distinct aliases for the first headers: a full call.
        #expect(state.arrive(id: 4, aliases: ["e", "f"], labels: ["x", "y"], headers: ["h1"], waiter: 4, now: 1) == .lead)
        #expect(state.take().map(\.id) == [1, 3, 4])
        #expect(state.queue.map(\.id) == [2])
        #expect(state.calls == 1 && state.inCalls == 3)
    }

    /// A call that is not full waits for more rows until the oldest has lingered `maxLinger`,
    /// or every row that can come is here.
    @Test func aCallThatIsNotFullLingers() {
        var state = AliasCallState<Int, Int>(slots: 2, perCall: 20, rows: 3, maxLinger: 20)
        #expect(state.arrive(id: 1, aliases: ["a"], labels: ["x"], headers: [], waiter: 1, now: 0) == .wait(armTimer: true))
        guard case .rearm(let more) = state.timerFired(now: 2) else { Issue.record("did not linger"); return }
        #expect(more == 18)
        guard case .done(let leader) = state.timerFired(now: 20) else { Issue.record("lingered past maxLinger"); return }
        #expect(leader == 1 && state.calls == 1)
        #expect(state.take().map(\.id) == [1])
        #expect(state.arrive(id: 2, aliases: ["b"], labels: ["x"], headers: [], waiter: 2, now: 21) == .wait(armTimer: true))
        // Row 1 is in a call and row 3 arrives: every row is here, the call goes at once.
        #expect(state.arrive(id: 3, aliases: ["c"], labels: ["x"], headers: [], waiter: 3, now: 22) == .lead)
        #expect(state.take().map(\.id) == [2, 3])
    }
}

/// A model of the rows and leaders around `AliasCallState`, as `AliasCalls` drives it.
private struct CallModel {
    enum Task: Equatable {
        /// Arrived and waiting for a result or the lead.
        case waiting
        /// Leading: about to take a call (it may still wait for the pacer).
        case leading
        /// Its call is out, with these rows.
        case calling([Int])
        /// Led a call that did not take its row: waits again.
        case rewaiting
        case done
    }

    var random: SeededGenerator
    var state: AliasCallState<Int, Int>
    let slots: Int
    let perCall: Int
    let total: Int
    var now: Int64 = 0
    var next = 0
    var tasks: [Int: Task] = [:]
    var results: [Int: Int] = [:]
    var timer = false
    var trace: [String] = []

    init(seed: UInt64) {
        random = SeededGenerator(seed: seed &* 0x9E3779B97F4A7C15 &+ 7)
        slots = 1 + Int(random.next() % 3)
        perCall = 1 + Int(random.next() % 6)
        total = 1 + Int(random.next() % 25)
        state = AliasCallState(slots: slots, perCall: perCall, rows: 1 + Int(random.next() % 12), maxLinger: 20)
    }

    mutating func run() -> String? {
        for _ in 0..<5_000 {
            if next == total && tasks.values.allSatisfy({ $0 == .done }) { return check(final: true) }
            let roll = random.next() % 100
            now += Int64(random.next() % 4)
            if roll < 25 && next < total {
                if let problem = arrive() { return problem }
            } else if roll < 35 && timer {
                timer = false
                switch state.timerFired(now: now) {
                case .done(let waiter):
                    trace.append("timer: lead \(waiter.map(String.init) ?? "-")")
                    if let waiter, let problem = lead(waiter) { return problem }
                case .rearm:
                    timer = true
                    now += 20
                }
            } else if roll < 40, random.next() % 4 == 0,
                      let id = tasks.filter({ $0.value != .done }).keys.sorted().randomElement(using: &random) {
                // Cancelled: a waiting row ends at once; a leading one goes on with its call.
                let waiter = state.cancel(id: id)
                trace.append("cancel \(id): \(waiter.map(String.init) ?? "-")")
                switch (tasks[id], waiter) {
                case (.waiting?, let waiter?):
                    guard waiter == id else { return "cancelling \(id) gave the waiter \(waiter)" }
                    if let problem = finish(id, with: -1) { return problem }
                case (.waiting?, nil):
                    // Taken by a call out and not yet waited for? It is pending or held: the
                    // call's end answers it.
                    break
                case (_, let waiter?):
                    return "cancelling row \(id), which is \(String(describing: tasks[id])), gave the waiter \(waiter)"
                default:
                    break
                }
            } else {
                // A leader takes its call, or a call is answered.
                let active = tasks.filter { if case .calling = $0.value { return true }; return $0.value == .leading }.keys.sorted()
                guard !active.isEmpty else {
                    if let problem = stuck() { return problem }
                    continue
                }
                let id = active[Int(random.next() % UInt64(active.count))]
                if let problem = step(id) { return problem }
            }
            if let problem = check(final: false) { return problem }
        }
        return "did not end in 5,000 events"
    }

    mutating func arrive() -> String? {
        let id = next
        next += 1
        let count = 1 + Int(random.next() % UInt64(perCall))
        let aliases = (0..<count).map { _ in "t\(random.next() % 8)" }
        let headers = random.next() % 5 == 0 ? ["renewed"] : ["token"]
        let arrival = state.arrive(id: id, aliases: aliases, labels: aliases.indices.map { "l\($0)" }, headers: headers, waiter: id, now: now)
        trace.append("arrive \(id) \(aliases) \(headers[0]): \(arrival)")
        switch arrival {
        case .lead: tasks[id] = .leading
        case .wait(let armTimer):
            tasks[id] = .waiting
            if armTimer {
                if timer { return "a second linger timer armed" }
                timer = true
            }
        }
        return nil
    }

    mutating func lead(_ id: Int) -> String? {
        guard tasks[id] == .waiting else { return "row \(id) was given the lead while \(String(describing: tasks[id]))" }
        tasks[id] = .leading
        return nil
    }

    mutating func step(_ id: Int) -> String? {
        switch tasks[id] {
        case .leading?:
            let rows = state.take()
            trace.append("\(id) takes \(rows.map(\.id))")
            if rows.isEmpty {
                if let problem = freed(state.callEnded()) { return problem }
                return rewait(id)
            }
            var aliases = Set<String>()
            for row in rows { aliases.formUnion(row.aliases) }
            if aliases.count > perCall && rows.count > 1 { return "a call of \(aliases.count) aliases, over \(perCall)" }
            if Set(rows.map(\.headers)).count > 1 { return "a call mixes headers" }
            for row in rows where tasks[row.id] == .done { return "row \(row.id) taken after it ended" }
            tasks[id] = .calling(rows.map(\.id))
            if state.calls > slots { return "\(state.calls) calls out, over \(slots)" }
        case .calling(let ids)?:
            trace.append("\(id)'s call \(ids) answered")
            state.answered(ids.count)
            if let problem = freed(state.callEnded()) { return problem }
            var own = false
            for row in ids {
                if row == id {
                    own = true
                } else if tasks[row] == .waiting {
                    if let problem = finish(row, with: row) { return problem }
                } else if let waiter = state.deliver(row, to: row) {
                    guard waiter == row else { return "row \(row)'s result went to \(waiter)" }
                    if let problem = finish(row, with: row) { return problem }
                }
            }
            if own { return finish(id, with: id) }
            return rewait(id)
        default:
            break
        }
        return nil
    }

    /// What a slot's freeing asked for.
    mutating func freed(_ freed: AliasCallState<Int, Int>.Freed) -> String? {
        switch freed {
        case .idle: return nil
        case .lead(let waiter): return lead(waiter)
        case .armTimer:
            if timer { return "a second linger timer armed" }
            timer = true
            return nil
        }
    }

    /// A leader whose call did not hold its row waits for it.
    mutating func rewait(_ id: Int) -> String? {
        switch state.wait(id: id, waiter: id) {
        case .result(let result):
            return finish(id, with: result)
        case .wait(let armTimer):
            if armTimer {
                if timer { return "a second linger timer armed" }
                timer = true
            }
            tasks[id] = .waiting
            return nil
        }
    }

    mutating func finish(_ id: Int, with result: Int) -> String? {
        guard results[id] == nil else { return "row \(id) got a second result" }
        if result != -1 && result != id { return "row \(id) got row \(result)'s result" }
        results[id] = result
        tasks[id] = .done
        return nil
    }

    /// Nothing is leading or out: rows may wait only for the timer.
    mutating func stuck() -> String? {
        let waiting = tasks.filter { $0.value == .waiting }.keys
        guard !waiting.isEmpty, !timer else { return nil }
        // A row that waits with no call out, no leader and no timer is never woken.
        if state.queuedRows > 0 { return "rows \(waiting.sorted()) wait and nothing can wake them" }
        return nil
    }

    func check(final: Bool) -> String? {
        if state.calls < 0 || state.calls > slots { return "\(state.calls) calls counted" }
        if final {
            if results.count != total { return "\(total - results.count) rows never got a result" }
            if state.queuedRows != 0 || state.calls != 0 { return "the state kept \(state.queuedRows) rows and \(state.calls) calls" }
        }
        return nil
    }
}
