/// Which rows' aliases go into which Vault API call, as a plain value that returns what to do
/// (as `DispatchState` does): `AliasCalls` runs it under a lock.
///
/// Rows come in one at a time, each with its aliases; a call takes rows from the front of the
/// queue, whole, while their distinct aliases fit `perCall` and their headers are the first
/// one's (a renewed token must not ride with an old one). No task of its own makes the calls: a
/// row's own task leads one (so cancelling the run cancels it), either the row whose arrival
/// fills a call, or the oldest waiting row when the linger timer fires or a call ends with rows
/// still queued. At most `slots` calls are out at once.
struct AliasCallState<Waiter, Result> {
    /// A row waiting for its aliases.
    struct Row {
        let id: Int
        let aliases: [String]
        /// The label each alias fills.
        let labels: [String]
        /// When it arrived (milliseconds).
        let arrived: Int64
        /// Rows with equal keys send the same headers.
        let headers: [String]
        var waiter: Waiter?
    }

    /// How a row that waited goes on.
    enum Wake {
        case result(Result)
        /// Lead a call (the row is still queued, at the front).
        case lead
    }

    let slots: Int
    let perCall: Int
    /// Rows that can be here at once (the run's workers): when they all are, nothing more is
    /// coming, and a call that is not full goes without lingering.
    let rows: Int
    /// How long rows wait for a call to fill, at most (milliseconds).
    let maxLinger: Int64
    private(set) var queue: [Row] = []
    /// Calls out, counted from when a leader is chosen (it may still wait for the pacer).
    private(set) var calls = 0
    /// The linger timer is armed.
    private(set) var timerArmed = false
    /// The timer fired while every slot was busy: the next call to end hands the lead on.
    private var due = false

    /// Rows in calls out.
    private(set) var inCalls = 0

    init(slots: Int, perCall: Int, rows: Int = .max, maxLinger: Int64 = 50) {
        self.slots = slots
        self.perCall = perCall
        self.rows = rows
        self.maxLinger = maxLinger
    }

    /// What the arriving row does.
    enum Arrival: Equatable {
        /// Lead a call now (its row may or may not be in it: then it waits afterwards).
        case lead
        /// Wait; `armTimer`: arm the linger timer, whose firing calls `timerFired`.
        case wait(armTimer: Bool)
    }

    /// Results of rows a call took while they had no waiter (their own task was leading
    /// another call): claimed by `wait`.
    private var held: [Int: Result] = [:]

    /// A row arrives with its waiter; on `.lead` the waiter is not kept (the caller resumes it
    /// to lead at once).
    mutating func arrive(id: Int, aliases: [String], labels: [String], headers: [String], waiter: Waiter, now: Int64) -> Arrival {
        if calls < slots && (fullCallQueued(adding: aliases, headers: headers) || queue.count + 1 + inCalls >= rows) {
            queue.append(Row(id: id, aliases: aliases, labels: labels, arrived: now, headers: headers, waiter: nil))
            calls += 1
            return .lead
        }
        queue.append(Row(id: id, aliases: aliases, labels: labels, arrived: now, headers: headers, waiter: waiter))
        if timerArmed { return .wait(armTimer: false) }
        timerArmed = true
        return .wait(armTimer: true)
    }

    /// How a row that led a call without its own row goes on.
    enum Rewait {
        /// A call took the row meanwhile: its result.
        case result(Result)
        /// Wait; `armTimer`: the row is still queued and no timer would end its wait.
        case wait(armTimer: Bool)
    }

    /// After leading a call, row `id` waits for its own result.
    mutating func wait(id: Int, waiter: Waiter) -> Rewait {
        if let result = held.removeValue(forKey: id) { return .result(result) }
        if let index = queue.firstIndex(where: { $0.id == id }) {
            queue[index].waiter = waiter
            if timerArmed { return .wait(armTimer: false) }
            timerArmed = true
            return .wait(armTimer: true)
        }
        // Taken by a call still out: its leader holds the result here when it ends.
        pending[id] = waiter
        return .wait(armTimer: false)
    }

    /// Rows taken by a call that had no waiter then, and now have one.
    private var pending: [Int: Waiter] = [:]

    /// The result of a taken row whose waiter was not there when it was taken: the waiter to
    /// resume with it, if it has come since; else it is held for `wait`.
    mutating func deliver(_ result: Result, to id: Int) -> Waiter? {
        if let waiter = pending.removeValue(forKey: id) { return waiter }
        if dropped.remove(id) == nil { held[id] = result }
        return nil
    }

    /// The rows of the next call, taken from the queue: from the front, whole, while their
    /// distinct aliases fit and their headers are the first row's. Empty when nothing is queued.
    mutating func take() -> [Row] {
        guard let first = queue.first else { return [] }
        var aliases = Set<String>()
        var taken: [Row] = []
        var kept: [Row] = []
        var full = false
        for row in queue {
            if full || row.headers != first.headers {
                kept.append(row)
                continue
            }
            let added = aliases.union(row.aliases)
            if added.count > perCall && !taken.isEmpty {
                full = true
                kept.append(row)
                continue
            }
            aliases = added
            taken.append(row)
        }
        queue = kept
        inCalls += taken.count
        return taken
    }

    /// The rows of a call are answered: they leave.
    mutating func answered(_ count: Int) {
        inCalls -= count
    }

    /// What a free slot does.
    enum Freed {
        /// Nothing waits for it.
        case idle
        /// `Waiter` leads the next call.
        case lead(Waiter)
        /// Rows wait for a call that is not full: arm the linger timer for them.
        case armTimer
    }

    /// A leader took nothing (another call had taken every row) or its call ended: the slot is
    /// free. A full call's worth, or rows that lingered long enough, get a leader; rows that
    /// have not get the linger timer.
    mutating func callEnded() -> Freed {
        calls -= 1
        guard !queue.isEmpty, calls < slots else { return .idle }
        if fullCallQueued || due, let waiter = handLead() { return .lead(waiter) }
        if timerArmed { return .idle }
        timerArmed = true
        return .armTimer
    }

    /// What the linger timer's firing does.
    enum Linger {
        /// Nothing: no row waits, or the lead went to `Waiter`.
        case done(Waiter?)
        /// Wait this long more (milliseconds): rows are still coming and the oldest has not
        /// waited `maxLinger`.
        case rearm(Int64)
    }

    /// The linger timer fired: the rows queued go in a call even if it is not full, once the
    /// oldest has waited `maxLinger` or every row is here. Returns the waiter to lead it, if a
    /// slot is free (else the next call to end hands the lead on).
    mutating func timerFired(now: Int64) -> Linger {
        guard let oldest = queue.first else {
            timerArmed = false
            return .done(nil)
        }
        // Rows still to come (every row is not here yet): while calls are out their rows come
        // back to fill the next, so a call that is not full goes only after `maxLinger` with
        // none out, or ten times that.
        let waited = now - oldest.arrived
        let longest = calls > 0 ? maxLinger * 10 : maxLinger
        if waited < longest && queue.count + inCalls < rows && !fullCallQueued {
            return .rearm(min(maxLinger, longest - waited))
        }
        timerArmed = false
        guard calls < slots else {
            due = true
            return .done(nil)
        }
        return .done(handLead())
    }

    /// A row's task is cancelled: the waiter to resume (as cancelled), when it waits. A queued
    /// row leaves the queue; one that a call out holds is answered by nobody now (its result is
    /// dropped). A row without a waiter is leading a call: it goes on, and sees the cancel there.
    mutating func cancel(id: Int) -> Waiter? {
        if let index = queue.firstIndex(where: { $0.id == id }), let waiter = queue[index].waiter {
            queue.remove(at: index)
            return waiter
        }
        if let waiter = pending.removeValue(forKey: id) {
            dropped.insert(id)
            return waiter
        }
        return nil
    }

    /// Rows whose result is no longer waited for (cancelled while their call was out).
    private var dropped: Set<Int> = []

    /// Rows queued with their aliases.
    var queuedRows: Int { queue.count }

    /// A whole call's worth is queued.
    private var fullCallQueued: Bool {
        guard let first = queue.first else { return false }
        return fullCallQueued(adding: [], headers: first.headers)
    }

    /// A whole call's worth is queued with a row of `aliases` added.
    private func fullCallQueued(adding added: [String], headers: [String]) -> Bool {
        let front = queue.first?.headers ?? headers
        var aliases = Set<String>()
        for row in queue where row.headers == front {
            aliases.formUnion(row.aliases)
            if aliases.count >= perCall { return true }
        }
        if headers == front { aliases.formUnion(added) }
        return aliases.count >= perCall
    }

    /// The front row's waiter leads; a row without a waiter (its task is leading a call) is
    /// skipped for the next.
    private mutating func handLead() -> Waiter? {
        guard let index = queue.firstIndex(where: { $0.waiter != nil }) else { return nil }
        let waiter = queue[index].waiter
        queue[index].waiter = nil
        calls += 1
        due = false
        return waiter
    }
}
