import Foundation
import Synchronization
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// Runs `body` in a task that is cancelled before `body` starts, and returns what it returned:
/// a wait that parks a cancelled task (a cancellation handler that ran before the wait was
/// registered) would never return, and the time limit would end the test.
private func inCancelledTask<T: Sendable>(_ body: @escaping @Sendable () async -> T) async -> T {
    let task = Task { () async -> T in
        while !Task.isCancelled { await Task.yield() }
        return await body()
    }
    task.cancel()
    return await task.value
}

/// Every wait of a run ends when the run is cancelled, also when the task was cancelled before it
/// reached the wait (SIGTERM at each wait).
@Suite struct CancellationTests {
    @Test(.timeLimit(.minutes(1))) func aCancelledAttemptIsNotParkedInAPause() async {
        let pause = CircuitPause(settings: PauseSettings(minimumFailures: 1, window: 4, maxPause: 600_000), seed: 1)
        _ = pause.attemptEnded(ordinal: 0, signal: .transient, probe: false)
        #expect(pause.reason == .outage)
        let admission = await inCancelledTask { await pause.admit(ordinal: 1) }
        #expect(admission == .cancelled)
        pause.shutDown()
    }

    @Test(.timeLimit(.minutes(1))) func parkedAttemptsGoOnWhenTheRunIsCancelled() async {
        let pause = CircuitPause(settings: PauseSettings(minimumFailures: 1, window: 4, maxPause: 600_000, firstProbe: 600_000), seed: 1)
        _ = pause.attemptEnded(ordinal: 0, signal: .transient, probe: false)
        let waiting = Task { await pause.admit(ordinal: 1) }
        while pause.parkedCount == 0 { await Task.yield() }
        waiting.cancel()
        #expect(await waiting.value == .cancelled)
        pause.shutDown()
    }

    /// A cancelled task returns from the feed's wait without ever parking in it.
    @Test(.timeLimit(.minutes(1))) func aCancelledTaskDoesNotWaitForTheFeed() async {
        let empty = BatchQueue<Int>(capacity: 1)
        let parkedAfter = await inCancelledTask { () async -> Int in
            await empty.elements()
            return empty.parkedTasks
        }
        #expect(parkedAfter == 0)
    }

    /// A full writer queue is waited for even by a cancelled run, as the writer drains it (an
    /// interrupted run still writes every finished row); a queue the writer closed ends the wait.
    @Test(.timeLimit(.minutes(1))) func handingRowsOverWaitsForTheWriterEvenWhenCancelled() async {
        let full = BatchQueue<Int>(capacity: 1)
        full.put([1])
        let handing = Task { await inCancelledTask { await full.putWhenRoom([2]) } }
        // Once it is parked, waiting for room: not before.
        while full.parkedTasks == 0 { await Task.yield() }
        var batch: [Int] = []
        #expect(full.take(into: &batch) == .taken && batch == [1])
        #expect(await handing.value)
        batch = []
        #expect(full.take(into: &batch) == .taken && batch == [2])
        full.put([3])
        let refused = Task { await full.putWhenRoom([4]) }
        while full.parkedTasks == 0 { await Task.yield() }
        full.close()
        #expect(await refused.value == false)
    }

    @Test(.timeLimit(.minutes(1))) func waitingForTheFeedEndsWithItsItemsOrItsEnd() async {
        let queue = BatchQueue<Int>()
        let waiter = Task { await queue.elements() }
        while queue.parkedTasks == 0 { await Task.yield() }
        queue.put([7] as [Int])
        await waiter.value
        var batch: [Int] = []
        #expect(queue.take(into: &batch, wait: false) == .taken && batch == [7])
        let end = Task { await queue.elements() }
        while queue.parkedTasks == 0 { await Task.yield() }
        queue.finish()
        await end.value
    }

    #if DEBUG
    /// In a debug build, a blocking wait on the curl loop's thread stops the process.
    @Test func aBlockingWaitOnTheLoopThreadTraps() async {
        await #expect(processExitsWith: .failure) {
            NonBlockingThread.markCurrent()
            BatchQueue<Int>(capacity: 1).put([1])
        }
    }
    #endif
}

/// Waits bounded by the pause: a probe's wait for its answer, and a retry's backoff.
@Suite struct PauseBoundTests {
    /// A probe that would hang waits no longer than what is left of circuit.max_pause (at least
    /// 1 s): a hanging probe cannot hold the run past it.
    @Test func aProbeWaitsNoLongerThanThePause() {
        let pause = CircuitPause(settings: PauseSettings(minimumFailures: 1, window: 4, maxPause: 3_000), seed: 1)
        #expect(pause.probeTimeout(.seconds(120)) == .seconds(120))
        _ = pause.attemptEnded(ordinal: 0, signal: .transient, probe: false)
        #expect(pause.reason == .outage)
        let bounded = pause.probeTimeout(.seconds(120))
        #expect(bounded <= .seconds(3) && bounded >= .seconds(1))
        pause.shutDown()
    }

    /// A backoff that began while the endpoint was down (a Retry-After of minutes) ends when the
    /// pause does, whether the pause ends while it sleeps or between the attempt's end and the
    /// start of its sleep (a loaded machine starts the sleeper late).
    @Test(.timeLimit(.minutes(1)), arguments: [false, true])
    func aBackoffEndsWhenThePauseEnds(endsBeforeTheSleep: Bool) async throws {
        let pause = CircuitPause(settings: PauseSettings(minimumFailures: 1, window: 4, maxPause: 600_000), seed: 1)
        let failed = pause.attemptEnded(ordinal: 0, signal: .transient, probe: false)
        #expect(pause.reason == .outage)
        // An answer to an attempt sent after the pause opened ends it.
        let later = Int64.max / 2
        if endsBeforeTheSleep { _ = pause.attemptEnded(ordinal: 1, signal: .answered, probe: false, sentAt: later) }
        let sleeper = Task { try await pause.backoff(.seconds(600), since: failed.closures) }
        if !endsBeforeTheSleep { _ = pause.attemptEnded(ordinal: 1, signal: .answered, probe: false, sentAt: later) }
        #expect(pause.reason == nil)
        try await sleeper.value
        pause.shutDown()
    }
}

extension CancellationTests {
    /// A request that ends cancelled though the run was not interrupted (a transport ending it on
    /// its own) stops the run: its outputs stay `.partial` with their journals, nothing is taken
    /// for whole, and --resume sends the rows left, each once.
    @Test(.timeLimit(.minutes(1))) func aRequestCancelledOutsideAnInterruptStopsTheRun() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        concurrency: 1
        output: {path: r.csv, columns: [request, pan]}
        emulator: {aliases: {tok_1: "4000", tok_2: "4111", tok_3: "4222"}}
        requests: [{name: "r${row.id}", each: {csv: d.csv}, path: /p, payload: {pan: "tok_${row.id}"}, labels: {pan: json.pan}}]
        """, files: ["d.csv": "id\n1\n2\n3\n"])
        let (emulator, options) = try fixture.emulator(for: manifest)
        defer { emulator.stop() }
        let cancelling = CancellingTransport(inner: CurlTransport(maxConnections: 1), ordinal: 1)
        let summary = try await Runner(manifest: manifest, options: options, transport: cancelling, environment: [:]).run()
        #expect(summary.stopReason == "a request ended as cancelled though the run was not interrupted")
        #expect(!summary.interrupted && summary.exitCode == .stopped && summary.ok == 1, "\(summary.ok) \(summary.rows) \(summary.exitCode)")
        #expect(fixture.read("r.csv") == nil && fixture.read("r.csv.partial") != nil && fixture.read("r.csv.journal") != nil)
        var resume = options
        resume.resume = true
        let resumed = try await Runner(manifest: manifest, options: resume, environment: [:]).run()
        #expect(resumed.stopReason == nil && resumed.exitCode == .ok, "\(resumed.exitCode) \(resumed.ok) \(resumed.failed)")
        #expect(fixture.read("r.csv") == "request,pan\nr1,4000\nr2,4111\nr3,4222\n")
    }
}

extension CancellationTests {
    /// An interrupt reaches a run's workers one by one: a request that ended cancelled before
    /// its own worker heard (a pause resumes every parked worker as cancelled at once) reads as
    /// the interrupt it is, not as a stop; outside an interrupt it is a stop, and a stop of the
    /// endpoint's stays one whether or not an interrupt came after it.
    @Test(arguments: [
        (RunDispatch.cancelledOnItsOwn as RunStop?, true, true),
        (RunDispatch.cancelledOnItsOwn, false, false),
        (RunStop.interruptedFetchingToken, false, true),
        (RunStop("the token endpoint refused the client credentials: HTTP 401"), true, false),
        (nil, true, false),
    ])
    func aCancelledRequestInAnInterruptedRunIsTheInterrupt(stop: RunStop?, runCancelled: Bool, interrupted: Bool) {
        #expect(Runner.endedByInterrupt(stop, runCancelled: runCancelled) == interrupted)
    }
}

/// Answers the first attempt of the request for `ordinal`'s row as cancelled, though nothing
/// cancelled it; sends everything else.
private final class CancellingTransport: Transport, Sendable {
    let inner: any Transport
    let name: String
    let done = Atomic<Bool>(false)
    init(inner: any Transport, ordinal: Int) {
        self.inner = inner
        name = "r\(ordinal + 1)"
    }
    var executor: (any TaskExecutor)? { inner.executor }
    func send(_ request: PreparedRequest, timeout: Duration) async -> TransportResult {
        if request.name == name, !done.exchange(true, ordering: .relaxed) { return .failure(.cancelled) }
        return await inner.send(request, timeout: timeout)
    }
}
