import ShowbatchBasics
import ShowbatchManifest

/// The decisions of a run's dispatch: which work item goes out next, when a worker must wait, and
/// when finished rows go to the writer, in work-item order.
///
/// The state only decides. Each call returns what is to be done (rows to hand to the writer,
/// workers to wake), and `RunDispatch` does it once the lock is released, as
/// async-http-client's connection-pool state machine does: nothing blocks or prints under the
/// lock, and the rules can be tested without a network. `Waiter` is whatever resumes a parked
/// worker (a continuation in a run, a number in tests).
struct DispatchState<Waiter: Sendable>: ~Copyable {
    /// A request to send, with where its row goes.
    struct Job: Sendable {
        let sequence: Int
        let target: Int
        let ordinal: Int
        let request: PreparedRequest
        let labels: [LabelBinding]
        /// Attempts already made: a recheck is one more attempt, numbered after them.
        var attemptsMade = 0
    }

    /// What a worker does next.
    enum Next: Sendable {
        case send(Job)
        /// The window is full: `park` and wait for the oldest row to be written.
        case wait
        /// The feed has nothing ready yet: wait for it outside the lock, then ask again.
        case awaitFeed
        /// Nothing more to send (the end, `--fail-fast`, a write error, or an interrupt).
        case stop
    }

    /// What the caller must do after releasing the lock.
    struct Actions: Sendable {
        /// Rows to give the writer, in order; then report with `handedOver`.
        var handOver: [RowWriter.Entry]?
        /// Parked workers to resume.
        var wake: [Waiter] = []
        /// Undecided rows failed here because nothing was left that could decide them: the pause
        /// must forget them (`PauseState.forget`).
        var forget: [Int] = []
    }

    /// What the run needs once the workers are done (the writer counts the rows).
    struct Outcome {
        /// True when rows were left unwritten behind a request that never finished.
        var gap: Bool
        /// Work items handed out whose rows were not handed to the writer (their request was
        /// under way when the run stopped, or they were held or waited behind one): `--resume`
        /// sends them.
        var unfinished = 0
        /// Why the run stopped early (the circuit breaker), if it did.
        var stopReason: RunStop?
        var stopped: Bool
        var exhausted: Bool
        var writeError: RunError?
    }

    /// Rows handed to the writer at once, at most: one lock and one wakeup of the writer per batch.
    static var batchSize: Int { 256 }
    /// A slow run still hands its rows over this many milliseconds after the last batch.
    static var handOverInterval: Int64 { 20 }

    /// Labels of each request of the manifest.
    let labels: [[LabelBinding]]
    /// The output of each request.
    let byRequest: [Int]
    let failFast: Bool
    /// Rows sent but not yet written, at most.
    let window: Int
    /// Rows waiting for a hand-over already under way, at most (a slow writer holds workers back).
    let outboxLimit: Int
    /// Failed rows in a row (rows that could not be sent, 1490, aside) after which the failure is
    /// taken to be the endpoint's or the credentials', not the rows': the run stops. 0: never.
    let failureLimit: Int

    /// Rows that finished before their turn, by sequence.
    private var pending: [Int: RowWriter.Entry] = [:]
    private var nextToWrite = 0
    private var nextSequence = 0
    private(set) var stopped = false
    private var exhausted = false
    private var writeError: RunError?
    /// Rows in order, not yet handed to the writer.
    private var outbox: [RowWriter.Entry] = []
    /// True while a worker is handing a batch to the writer: batches go one at a time, so in order.
    private var handingOver = false
    private var lastHandOver: Int64
    /// Workers waiting for room in the window.
    private var parked: [Waiter] = []
    /// Failed rows of the current streak, by sequence: written once a row gets through, dropped
    /// (and sent again by a resumed run) when the streak stops the run.
    private var held: [Int: RowWriter.Entry] = [:]
    private var streak = 0
    /// Jobs handed out and not finished: while none is, nothing but this state can make room.
    private(set) var inFlight = 0
    /// Why the run stopped early, if it did.
    private(set) var stopReason: RunStop?
    /// Rows whose failure waits for evidence (`JobOutcome.undecided`), by ordinal: they keep their
    /// place in the window.
    private var undecided: [Int: (job: Job, row: ResultRow)] = [:]
    /// Verdicts that came before their row was handed back as undecided.
    private var early: [Int: UndecidedVerdict] = [:]
    /// Undecided rows to send again (the pause opened): handed out before anything fresh.
    private var resend: [Job] = []

    /// A dispatch of jobs for requests with `labels`, writing to the outputs of `byRequest`.
    init(labels: [[LabelBinding]], byRequest: [Int], failFast: Bool, window: Int, outboxLimit: Int = 4096,
         failureLimit: Int = 0, now: Int64) {
        self.labels = labels
        self.failureLimit = failureLimit
        self.byRequest = byRequest
        self.failFast = failFast
        self.window = window
        self.outboxLimit = outboxLimit
        lastHandOver = now
        outbox.reserveCapacity(Self.batchSize)
    }

    /// Workers waiting for room.
    var parkedCount: Int { parked.count }

    /// Undecided rows do not take the window's room: fresh rows sent past them are what can
    /// tell whether they failed for the endpoint (a window held shut by them decided nothing).
    var windowFull: Bool { nextSequence - nextToWrite >= window + min(undecided.count, window) || outbox.count >= outboxLimit }

    /// The next thing a worker does; rows that need no request (unpreparable ones) are
    /// queued on the way.
    mutating func next(from source: some WorkSource, cancelled: Bool, now: Int64) -> (Next, Actions) {
        if cancelled { stopped = true }
        var actions = Actions()
        var queuedRows = false
        var next = take(from: source, queuedRows: &queuedRows)
        if inFlight == 0, !handingOver, !undecided.isEmpty, !stopped, next.endsOrWaits {
            // Nothing in flight and nothing to send (the feed is at its end, or the window
            // is full twice over): no attempt is left that could tell whether the endpoint is
            // down, so the undecided rows fail on their own.
            failUndecided(into: &actions)
            next = take(from: source, queuedRows: &queuedRows)
            // Room was made: workers waiting for it go on.
            actions.wake = wakeable()
        }
        if case .wait = next, inFlight == 0, !handingOver {
            let woken = actions.wake
            // Nothing in flight or being handed over can make room, so nobody would wake a
            // parked worker: rows held as a possible streak of failures (with unpreparable rows
            // queued behind them) are written now, as `finish` writes them, and what is ready
            // is handed over whether due or not. The streak's count stays.
            releaseHeld()
            moveReady()
            forceHandOver(now: now, into: &actions)
            next = take(from: source, queuedRows: &queuedRows)
            actions.wake = woken + wakeable()
        }
        if !actions.forget.isEmpty {
            // The failed rows may be due: handed over as queued rows are.
            queuedRows = true
        }
        // Not in a defer: the actions must be complete before they are returned.
        if queuedRows { writeReady(now: now, into: &actions) }
        return (next, actions)
    }

    /// The run is cancelled: nothing more is handed out, and every parked worker goes on (to
    /// see it and return).
    mutating func cancel() -> Actions {
        stopped = true
        var actions = Actions()
        actions.wake = parked
        parked.removeAll()
        return actions
    }

    private mutating func take(from source: some WorkSource, queuedRows: inout Bool) -> Next {
        if !stopped, !resend.isEmpty {
            // Its place in the window is its own already.
            inFlight += 1
            return .send(resend.removeFirst())
        }
        while !stopped && !exhausted {
            if windowFull { return .wait }
            let entry: WorkEntry
            switch source.poll() {
            case .item(let item): entry = item
            case .notReady: return .awaitFeed
            case .end:
                exhausted = true
                continue
            }
            let sequence = nextSequence
            nextSequence += 1
            let target = byRequest[entry.requestIndex]
            switch entry.work {
            case .failed(let failure):
                let names = labels[entry.requestIndex].map { (name: $0.name, value: String?.none) }
                var row = ResultRow(ordinal: entry.ordinal, request: failure.name, status: .failed, httpStatus: nil,
                                    attempts: 0, labels: names, errors: [failure.error])
                row.extras = failure.extras
                pending[sequence] = (.row(row), target)
                queuedRows = true
                if failFast { stopped = true }
            case .send(let request):
                inFlight += 1
                return .send(Job(sequence: sequence, target: target, ordinal: entry.ordinal, request: request,
                                 labels: labels[entry.requestIndex]))
            }
        }
        return .stop
    }

    /// Parks a worker that was told to wait; false when it need not wait after all (room was
    /// made, the run is stopping, or nothing is left in flight to wake it, since it was told).
    mutating func park(_ waiter: Waiter) -> Bool {
        guard windowFull && !stopped && resend.isEmpty && (inFlight > 0 || handingOver) else { return false }
        parked.append(waiter)
        return true
    }

    /// A job has ended: its row, or why it has none (the run was cancelled, or must stop). A row
    /// without a request is never written; a resumed run sends it.
    mutating func finished(_ job: Job, outcome: JobOutcome, now: Int64) -> Actions {
        var actions = Actions()
        inFlight -= 1
        switch outcome {
        case .row(let row):
            accept((row, job.target), sequence: job.sequence)
            // Written before this worker takes another, so --fail-fast sends nothing past a failure.
            writeReady(now: now, into: &actions)
        case .undecided(let row) where failFast:
            // The first failed row stops the run: there is nothing to wait for.
            early[job.ordinal] = nil
            actions.forget = [job.ordinal]
            accept((.row(row), job.target), sequence: job.sequence)
            writeReady(now: now, into: &actions)
        case .undecided(let row):
            undecided[job.ordinal] = (job, row)
            if let verdict = early.removeValue(forKey: job.ordinal) {
                apply(verdict, to: job.ordinal, into: &actions)
                writeReady(now: now, into: &actions)
            }
        case .cancelled:
            stopped = true
        case .stop(let reason):
            stop(reason)
        }
        actions.wake += wakeable()
        return actions
    }

    /// The pause's verdict on undecided rows: they fail (other rows got answers after them) or
    /// are sent again (the pause opened). A verdict may come before its row is handed back. The
    /// actions only wake workers: rows that fail reach the writer with the next hand-over.
    mutating func decided(_ verdicts: [(ordinal: Int, verdict: UndecidedVerdict)]) -> Actions {
        var actions = Actions()
        for (ordinal, verdict) in verdicts {
            if undecided[ordinal] == nil {
                early[ordinal] = verdict
            } else {
                apply(verdict, to: ordinal, into: &actions)
            }
        }
        actions.wake += wakeable()
        return actions
    }

    private mutating func apply(_ verdict: UndecidedVerdict, to ordinal: Int, into actions: inout Actions) {
        let resent = resend.count
        decide(ordinal, verdict)
        if verdict == .failed {
            moveReady()
        } else if resend.count > resent {
            // A worker is needed for it, whether or not the window has room.
            actions.wake += parked
            parked.removeAll()
        }
    }

    /// Undecided rows that nothing in flight can decide fail; the pause forgets them (`Actions.forget`).
    private mutating func failUndecided(into actions: inout Actions) {
        actions.forget = undecided.keys.sorted()
        for ordinal in actions.forget { decide(ordinal, .failed) }
        moveReady()
    }

    private mutating func decide(_ ordinal: Int, _ verdict: UndecidedVerdict) {
        guard let entry = undecided.removeValue(forKey: ordinal) else { return }
        switch verdict {
        case .failed: accept((.row(entry.row), entry.job.target), sequence: entry.job.sequence)
        case .resend:
            // Fresh attempts: the endpoint was down.
            var job = entry.job
            job.attemptsMade = 0
            resend.append(job)
        case .recheck:
            var job = entry.job
            job.attemptsMade = entry.row.attempts
            resend.append(job)
        }
    }

    /// Takes a finished row into `pending`, or holds it while it may be part of a streak of
    /// failures that is not the rows' fault.
    private mutating func accept(_ entry: RowWriter.Entry, sequence: Int) {
        // With --fail-fast the first failed row stops the run itself: nothing is held.
        guard failureLimit > 0, !failFast else {
            pending[sequence] = entry
            return
        }
        if case .row(let row) = entry.row, row.status == .failed {
            guard row.errors.first?.code != .invalidRow else {
                // A data row that could not be sent says nothing about the endpoint.
                pending[sequence] = entry
                return
            }
            held[sequence] = entry
            streak += 1
            if streak >= failureLimit {
                let last = row.errors.first.map { " (the last: \($0.text))" } ?? ""
                stop(RunStop("\(streak) rows in a row failed\(last): the failure is not the rows' but the endpoint's or the credentials' (circuit.failed_rows)"))
            }
            return
        }
        // A row that got through ends the streak: the rows it held were the rows' own failures.
        streak = 0
        releaseHeld()
        pending[sequence] = entry
    }

    /// The rows held as a possible streak go to be written: they failed on their own.
    private mutating func releaseHeld() {
        guard !held.isEmpty else { return }
        pending.merge(held) { first, _ in first }
        held.removeAll()
    }

    private mutating func stop(_ reason: RunStop) {
        stopped = true
        if stopReason == nil { stopReason = reason }
    }

    /// A hand-over has reached the writer, which reported `writerFailure` (its first write error).
    mutating func handedOver(writerFailure: RunError?, now: Int64) -> Actions {
        handingOver = false
        if writeError == nil, let writerFailure {
            writeError = writerFailure
            stopped = true
        }
        var actions = Actions()
        if inFlight == 0, exhausted, resend.isEmpty, !undecided.isEmpty, !stopped {
            // The last job ended while this hand-over was under way, with nothing left to send:
            // no attempt is left that could decide the undecided rows (as in `next`).
            failUndecided(into: &actions)
            forceHandOver(now: now, into: &actions)
        }
        handOverIfDue(now: now, into: &actions)
        actions.wake = wakeable()
        return actions
    }

    /// Ends the dispatch once every worker has returned: the rows still to hand to the writer,
    /// and the outcome.
    mutating func finish() -> (handOver: [RowWriter.Entry], outcome: Outcome) {
        if stopReason == nil && !held.isEmpty {
            // The run ended inside a streak too short to stop it: those rows failed on their own.
            releaseHeld()
            moveReady()
        }
        let rest = outbox
        outbox = []
        let gap = !pending.isEmpty || !held.isEmpty || !undecided.isEmpty || !resend.isEmpty
        return (rest, Outcome(gap: gap, unfinished: nextSequence - nextToWrite, stopReason: stopReason,
                              stopped: stopped, exhausted: exhausted, writeError: writeError))
    }

    /// Moves the rows whose turn has come to the outbox, and hands them over when due.
    private mutating func writeReady(now: Int64, into actions: inout Actions) {
        moveReady()
        handOverIfDue(now: now, into: &actions)
    }

    /// Moves the rows whose turn has come to the outbox.
    private mutating func moveReady() {
        while let entry = pending.removeValue(forKey: nextToWrite) {
            nextToWrite += 1
            guard writeError == nil else { continue }
            outbox.append(entry)
            // With --fail-fast every row comes revealed: the first failed one stops the run.
            if failFast, case .row(let row) = entry.row, row.status == .failed { stopped = true }
        }
    }

    /// Starts a hand-over when the outbox is worth a wakeup of the writer or has waited long
    /// enough, and none is under way.
    private mutating func handOverIfDue(now: Int64, into actions: inout Actions) {
        guard outbox.count >= Self.batchSize || now - lastHandOver >= Self.handOverInterval else { return }
        forceHandOver(now: now, into: &actions)
    }

    /// Starts a hand-over of the outbox unless it is empty or one is under way.
    private mutating func forceHandOver(now: Int64, into actions: inout Actions) {
        guard !handingOver, !outbox.isEmpty else { return }
        lastHandOver = now
        handingOver = true
        actions.handOver = outbox
        outbox = []
        outbox.reserveCapacity(Self.batchSize)
    }

    /// The parked workers to wake, when there is room again or the run is stopping.
    private mutating func wakeable() -> [Waiter] {
        guard !parked.isEmpty, stopped || !windowFull else { return [] }
        defer { parked.removeAll() }
        return parked
    }
}

/// What the pause decided about a row whose last attempt failed in a way that can be the endpoint's.
enum UndecidedVerdict: Equatable, Sendable {
    /// Other rows got answers after it, and after its one more try: the failure is the row's own.
    case failed
    /// Other rows got answers after it: it is tried once more (the outage may have ended
    /// between its failure and their answers).
    case recheck
    /// The pause opened: the endpoint was down; the row is sent again with fresh attempts.
    case resend
}

extension DispatchState.Next {
    /// Nothing fresh can be handed out now (the window is full, or there is nothing left).
    var endsOrWaits: Bool {
        switch self {
        case .wait, .stop: return true
        case .send, .awaitFeed: return false
        }
    }
}
