import Foundation
import ShowbatchBasics
import Synchronization
import ShowbatchManifest

/// The workers of a run and the state they share: each takes a request, sends it, puts its row
/// back and takes the next; rows reach the writer in work-item order.
///
/// A run has one long-lived worker per unit of concurrency. A task per request would cost a
/// task's creation, a wakeup of a coordinating task and its end, for every request, on the thread
/// that drives the transfers. `DispatchState` decides; this class acts on its decisions after
/// the lock is released.
final class RunDispatch: Sendable {
    typealias State = DispatchState<UnsafeContinuation<Void, Never>>

    /// Why the run stops when a request ended cancelled though the run was not interrupted.
    static let cancelledOnItsOwn = RunStop("a request ended as cancelled though the run was not interrupted")

    private let state: Mutex<State>
    // The feed's consumer side is only used under `state`'s lock (in `State.next`).
    private let feed: RequestFeed
    private let writer: RowWriter
    private let onPark: (@Sendable (Int) -> Void)?
    /// The circuit breaker's pause, which decides the undecided rows.
    private let pause: CircuitPause?

    /// Dispatch for a run: `feed` gives the work items, `writer` takes the rows; `pause` gives
    /// its verdicts on undecided rows to this dispatch.
    init(manifest: Manifest, feed: RequestFeed, writer: RowWriter, byRequest: [Int], failFast: Bool, window: Int,
         failureLimit: Int = 0, pause: CircuitPause? = nil, onPark: (@Sendable (Int) -> Void)? = nil) {
        self.feed = feed
        self.onPark = onPark
        self.writer = writer
        self.pause = pause
        state = Mutex(State(labels: manifest.requests.map(\.labels), byRequest: byRequest, failFast: failFast,
                            window: window, failureLimit: failureLimit, now: coarseMilliseconds()))
    }

    /// One worker: sends requests until there are none left, `--fail-fast` stops, or the run is
    /// cancelled (the request then in flight leaves its row unwritten; a resumed run sends it).
    func work(_ context: AttemptContext) async {
        while true {
            let cancelled = Task.isCancelled
            let (next, actions) = state.withLock { $0.next(from: feed, cancelled: cancelled, now: coarseMilliseconds()) }
            await perform(actions)
            switch next {
            case .stop:
                return
            case .awaitFeed:
                // Off the thread: with the curl transport this worker runs on the loop's thread.
                await feed.itemsReady()
            case .wait:
                await park()
            case .send(let job):
                await send(job, context)
            }
        }
    }

    /// Sends `job`. When a pause asks it to step aside (every row waiting failed in the pause),
    /// the row is held and a fresh one taken to probe with; the held rows are sent after it,
    /// newest first. When no fresh row can be had now (the window is full, the feed not ready
    /// or at its end), the row probes itself.
    private func send(_ job: State.Job, _ context: AttemptContext) async {
        var held: [(job: State.Job, attempts: Int)] = []
        var current = (job: job, attempts: job.attemptsMade)
        var mayStepAside = true
        while true {
            let result = await context.perform(current.job.request, ordinal: current.job.ordinal, labels: current.job.labels,
                                               attempts: current.attempts, mayStepAside: mayStepAside)
            switch result {
            case .steppedAside(let attempts):
                let cancelled = Task.isCancelled
                let (next, actions) = state.withLock { $0.next(from: feed, cancelled: cancelled, now: coarseMilliseconds()) }
                await perform(actions)
                if case .send(let fresh) = next {
                    held.append((current.job, attempts))
                    current = (fresh, 0)
                    mayStepAside = true
                } else {
                    current.attempts = attempts
                    mayStepAside = false
                }
            case .done(var outcome):
                // A request ends cancelled only when the run is. One that ends so in a run still
                // going (a transport that ended it on its own) stops the run, which keeps its
                // journals for --resume, instead of ending it as whole with the row unwritten.
                if case .cancelled = outcome, !Task.isCancelled { outcome = .stop(RunDispatch.cancelledOnItsOwn) }
                await perform(state.withLock { $0.finished(current.job, outcome: outcome, now: coarseMilliseconds()) })
                switch outcome {
                case .row, .undecided:
                    guard let last = held.popLast() else { return }
                    current = last
                    mayStepAside = true
                case .cancelled, .stop:
                    // The run ends: the held rows are not sent (a resumed run sends them).
                    for entry in held {
                        await perform(state.withLock { $0.finished(entry.job, outcome: .cancelled, now: coarseMilliseconds()) })
                    }
                    return
                }
            }
        }
    }

    /// Waits for room in the window; a cancelled run wakes every parked worker.
    private func park() async {
        await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                // Parked only if nothing made room since `next` (and the run goes on); else straight on.
                let cancelled = Task.isCancelled
                let parked = state.withLock { state -> Int? in !cancelled && state.park(continuation) ? state.parkedCount : nil }
                if let parked { onPark?(parked) } else { continuation.resume() }
            }
        } onCancel: {
            for waiter in state.withLock({ $0.cancel() }).wake { waiter.resume() }
        }
    }

    /// The pause's verdicts on undecided rows. Rows that fail are written by the next hand-over
    /// (a worker's); this only changes the state and wakes workers, so the pause can call it
    /// from wherever its actions are carried out.
    func decided(_ verdicts: [(ordinal: Int, verdict: UndecidedVerdict)]) {
        let actions = state.withLock { $0.decided(verdicts) }
        for waiter in actions.wake { waiter.resume() }
    }

    /// Does what the state asked for: hands rows to the writer (which may make this worker wait
    /// for room, without holding a thread) and wakes parked workers.
    private func perform(_ actions: State.Actions) async {
        var actions = actions
        if !actions.forget.isEmpty { pause?.forget(actions.forget) }
        while let batch = actions.handOver {
            await writer.submit(batch)
            let failure = writer.failure
            let more = state.withLock { $0.handedOver(writerFailure: failure, now: coarseMilliseconds()) }
            if !more.forget.isEmpty { pause?.forget(more.forget) }
            actions.handOver = more.handOver
            actions.wake += more.wake
        }
        for waiter in actions.wake { waiter.resume() }
    }

    /// Hands what is left to the writer; called once every worker has returned.
    func finish() async -> State.Outcome {
        var (rest, outcome) = state.withLock { $0.finish() }
        await writer.submit(rest)
        rest = []
        if outcome.writeError == nil, let failure = writer.failure { outcome.writeError = failure }
        return outcome
    }
}
