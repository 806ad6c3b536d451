import Synchronization
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// `CredentialState` driven by seeded random event sequences: workers ask for the token, send,
/// get 401s and ask for renewals, fetches succeed or fail, tokens expire, the run is cancelled.
/// After every event: at most one fetch is under way, and only while the state says so; a fetch
/// that ends resumes every waiter once, with the same outcome; a renewal after a token that was
/// already replaced takes the newer one instead of fetching; the token handed out is the newest;
/// generations grow one by one; after a cancellation nobody waits.
@Suite struct CredentialModelTests {
    /// 20,000 sequences in all.
    static let perCase = 2_500

    @Test(arguments: 0..<8) func randomSequencesKeepTheInvariants(part: Int) async {
        for seed in (part * Self.perCase)..<((part + 1) * Self.perCase) {
            // Now and then the thread goes back to the pool: other tests' tasks wait on it.
            if seed % 500 == 0 { await Task.yield() }
            var model = CredentialModel(seed: UInt64(seed))
            if model.run() != nil {
                model = CredentialModel(seed: UInt64(seed), tracing: true)
                let problem = model.run() ?? "(not again)"
                Issue.record("seed \(seed): \(problem)\nevents: \(model.trace.suffix(40).joined(separator: "; "))")
                return
            }
        }
    }

    /// Requests that got a 401 with one token share one renewal; the token that worked for
    /// someone is not taken for refused credentials.
    @Test func oneRenewalServesEveryoneRefusedWithTheSameToken() {
        var state = CredentialState<Int>()
        var steps: [CredentialStep] = [state.current(now: 0)]
        _ = state.fetched(.success(("t1", nil)), now: 0)
        let first = Token(value: "t1", generation: 1)
        steps.append(state.renew(after: first, now: 1))
        steps.append(state.renew(after: first, now: 1))
        #expect(steps == [.fetch, .fetch, .wait])
        let parked = state.park(7)
        #expect(parked == nil)
        let (outcome, waiters) = state.fetched(.success(("t2", 60_000)), now: 2)
        #expect(outcome == .success(Token(value: "t2", generation: 2)) && waiters == [7])
        let second = Token(value: "t2", generation: 2)
        let again = state.renew(after: first, now: 3)
        #expect(again == .ready(second))
        let untried = state.neverWorked(second)
        state.accepted(second)
        let tried = state.neverWorked(second)
        #expect(untried && !tried)
        // Renewed a tenth of its life (at most a minute) before it runs out.
        let early = state.current(now: 2 + 53_999)
        let due = state.current(now: 2 + 54_000)
        #expect(early == .ready(second) && due == .fetch)
        // While that renewal is under way the others go on with the token until it runs out.
        let meanwhile = state.current(now: 2 + 59_999)
        let runOut = state.current(now: 2 + 60_000)
        #expect(meanwhile == .ready(second) && runOut == .wait)
    }
}

private struct CredentialModel: ~Copyable {
    enum Worker: Equatable {
        case ready
        case fetching(replacing: Token?)
        case parked
        case sending(Token)
        case done
    }

    var random: SeededGenerator
    var state = CredentialState<Int>()
    var workers: [Worker]
    var now: Int64 = 0
    var generation = 0
    var cancelled = false
    var failed = false
    var rounds = 0
    let tracing: Bool
    var trace: [String] = []

    init(seed: UInt64, tracing: Bool = false) {
        self.tracing = tracing
        random = SeededGenerator(seed: seed &* 0x9E3779B97F4A7C15 &+ 13)
        workers = Array(repeating: .ready, count: 1 + Int(random.next() % 4))
    }

    mutating func run() -> String? {
        for _ in 0..<2_000 {
            if workers.allSatisfy({ $0 == .done }) { return nil }
            let active = workers.indices.filter { workers[$0] != .parked && workers[$0] != .done }
            if active.isEmpty { return "deadlock: \(workers)" }
            now += Int64(random.next() % 500)
            if random.next() % 100 == 0 && !cancelled {
                cancelled = true
                if tracing { trace.append("cancel") }
                for waiter in state.cancel() { resume(waiter, with: nil) }
                if workers.contains(.parked) { return "a worker waits after cancel" }
                continue
            }
            let index = active[Int(random.next() % UInt64(active.count))]
            if let problem = step(index) { return problem }
            if let problem = check() { return problem }
        }
        return "did not end in 2,000 events"
    }

    mutating func step(_ index: Int) -> String? {
        switch workers[index] {
        case .ready:
            rounds += 1
            if rounds > 60 || cancelled || failed {
                workers[index] = .done
                return nil
            }
            let step = state.current(now: now)
            if tracing { trace.append("w\(index) current: \(step)") }
            return carryOut(step, by: index, replacing: nil)
        case .sending(let token):
            if random.next() % 3 == 0 {
                // 401: this token is refused.
                let step = state.renew(after: token, now: now)
                if tracing { trace.append("w\(index) 401 with \(token.generation), renew: \(step)") }
                if case .ready(let newer) = step, newer.generation <= token.generation { return "a renewal handed the refused token back" }
                return carryOut(step, by: index, replacing: token)
            }
            state.accepted(token)
            if state.neverWorked(token) { return "a token that worked is said never to have worked" }
            workers[index] = .ready
            return nil
        case .fetching(let old):
            let roll = random.next() % 100
            let lifetime: Int64? = roll < 50 ? nil : Int64(random.next() % 5_000)
            let result: Result<(value: String, lifetime: Int64?), RunStop> = roll < 4 ? .failure(RunStop("refused")) : .success(("t\(generation + 1)", lifetime))
            let parked = workers.indices.filter { workers[$0] == .parked }
            let (outcome, waiters) = state.fetched(result, now: now)
            if tracing { trace.append("w\(index) fetched \(roll < 4 ? "failure" : "t\(generation + 1)"), resumes \(waiters)") }
            if Set(waiters) != Set(parked) || waiters.count != parked.count { return "the fetch resumed \(waiters), not the waiting \(parked)" }
            if state.waitingCount != 0 { return "waiters left after the fetch" }
            if case .success(let token) = outcome {
                generation += 1
                if token.generation != generation { return "generation \(token.generation) after \(generation - 1)" }
                if let old, token.generation <= old.generation { return "a renewal did not renew" }
            } else {
                failed = true
            }
            for waiter in waiters { resume(waiter, with: outcome) }
            return given(outcome, to: index)
        default:
            return nil
        }
    }

    mutating func carryOut(_ step: CredentialStep, by index: Int, replacing old: Token?) -> String? {
        switch step {
        case .ready(let token):
            if token.generation != generation { return "handed out generation \(token.generation), the newest is \(generation)" }
            workers[index] = .sending(token)
        case .failed:
            if !failed { return "failed without a failed fetch" }
            workers[index] = .done
        case .fetch:
            if workers.contains(where: { if case .fetching = $0 { return true } else { return false } }) { return "a second fetch" }
            if !state.fetching { return "fetching, but the state does not say so" }
            workers[index] = .fetching(replacing: old)
        case .wait:
            if !state.fetching { return "told to wait with no fetch under way" }
            if let immediate = state.park(index) {
                return given(immediate, to: index)
            }
            workers[index] = .parked
        }
        return nil
    }

    mutating func resume(_ waiter: Int, with outcome: Result<Token, RunStop>?) {
        guard workers[waiter] == .parked else { return }
        if let outcome { _ = given(outcome, to: waiter) } else { workers[waiter] = .done }
    }

    mutating func given(_ outcome: Result<Token, RunStop>, to index: Int) -> String? {
        switch outcome {
        case .success(let token): workers[index] = .sending(token)
        case .failure: workers[index] = .done
        }
        return nil
    }

    func check() -> String? {
        let fetchers = workers.filter { if case .fetching = $0 { return true } else { return false } }.count
        if fetchers > 1 { return "\(fetchers) fetches at once" }
        if (fetchers == 1) != state.fetching { return "the state's fetch flag is \(state.fetching) with \(fetchers) fetching" }
        if fetchers == 0 && workers.contains(.parked) { return "workers wait with no fetch under way" }
        return nil
    }
}

/// A token endpoint that answers only once cancelled (a fetch under way for as long as a test
/// wants), and says when it was asked.
private final class HangingEndpoint: Transport {
    let asked = Atomic<Bool>(false)

    func send(_ request: PreparedRequest, timeout: Duration) async -> TransportResult {
        asked.store(true, ordering: .sequentiallyConsistent)
        while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(2)) }
        return .failure(.cancelled)
    }
}

extension CredentialModelTests {
    /// An interrupt that reaches one waiter wakes every waiter with it: each is told it was
    /// interrupted (an interrupt, not a stop), even one whose own task is not cancelled yet, as
    /// happens while a run's cancellation reaches its workers one by one.
    @Test(.timeLimit(.minutes(1))) func waitersWokenByAnInterruptAreToldItIsOne() async throws {
        let spec = AuthSpec(source: .clientCredentials(.init(tokenURL: "http://127.0.0.1:1/token", clientID: "id", clientSecret: "s")))
        let endpoint = HangingEndpoint()
        let credentials = Credentials(spec: spec, transport: endpoint, timeout: .seconds(30), events: { _ in })
        let fetcher = Task { await credentials.current() }
        // Once the endpoint is asked, the fetch is under way: the next callers wait for it.
        while !endpoint.asked.load(ordering: .sequentiallyConsistent) { try await Task.sleep(for: .milliseconds(1)) }
        let cancelled = Task { await credentials.current() }
        let bystander = Task { () -> (Result<Token, RunStop>, Bool) in
            let result = await credentials.current()
            return (result, Task.isCancelled)
        }
        // Parked or not yet: either way the interrupt reaches the bystander as one.
        cancelled.cancel()
        let (result, bystanderCancelled) = await bystander.value
        #expect(!bystanderCancelled)
        guard case .failure(let stop) = result else {
            Issue.record("the waiter got a token")
            return
        }
        #expect(stop.byInterrupt && stop.reason == "interrupted while fetching an access token")
        fetcher.cancel()
        _ = await fetcher.value
        _ = await cancelled.value
    }
}
