import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// Work items from a list; `stall` makes the next polls answer "not ready".
private final class ListSource: WorkSource {
    var entries: [WorkEntry]
    var stall = 0

    init(_ entries: [WorkEntry]) { self.entries = entries.reversed() }

    func poll() -> WorkPoll {
        if stall > 0 {
            stall -= 1
            return .notReady
        }
        return entries.popLast().map(WorkPoll.item) ?? .end
    }
}

private let label = LabelBinding(name: "card", path: try! ContentPath(parsing: "json.card"), transforms: [], mask: nil)

private func send(_ ordinal: Int) -> WorkEntry {
    WorkEntry(ordinal: ordinal, requestIndex: 0,
              work: .send(PreparedRequest(name: "r\(ordinal)", method: .post, url: "http://127.0.0.1/p", headers: [], body: nil)))
}

private func row(_ ordinal: Int, _ status: RowStatus = .ok) -> ResultRow {
    ResultRow(ordinal: ordinal, request: "r\(ordinal)", status: status, httpStatus: status == .ok ? 200 : 500, attempts: 1,
              labels: [("card", status == .ok ? "4111" : nil)], errors: status == .ok ? [] : [RowError(code: .httpStatus, label: nil, message: "HTTP 500")])
}

private func state(window: Int = 64, failFast: Bool = false, outboxLimit: Int = 4096) -> DispatchState<Int> {
    DispatchState(labels: [[label]], byRequest: [0], failFast: failFast, window: window, outboxLimit: outboxLimit, now: 0)
}

/// Takes jobs until the state says something else; returns them and what it said last.
private func jobs(_ state: inout DispatchState<Int>, _ source: ListSource, now: Int64 = 0)
    -> (jobs: [DispatchState<Int>.Job], last: DispatchState<Int>.Next, handedOver: [Int]) {
    var taken: [DispatchState<Int>.Job] = []
    var handedOver: [Int] = []
    while true {
        let (next, actions) = state.next(from: source, cancelled: false, now: now)
        handedOver += actions.handOver?.map(ordinal) ?? []
        guard case .send(let job) = next else { return (taken, next, handedOver) }
        taken.append(job)
    }
}

private func ordinal(_ entry: RowWriter.Entry) -> Int {
    switch entry.row {
    case .row(let row): return row.ordinal
    case .answer(let answer): return answer.ordinal
    }
}

private func isStop(_ next: DispatchState<Int>.Next) -> Bool { if case .stop = next { return true } else { return false } }
private func isWait(_ next: DispatchState<Int>.Next) -> Bool { if case .wait = next { return true } else { return false } }

@Suite struct DispatchStateTests {
    /// Rows answered in any order reach the writer in work-item order, in batches of at most 256
    /// while a batch is under way, and only one batch is handed over at a time.
    @Test func rowsGoToTheWriterInOrderOneBatchAtATime() {
        var dispatch = state(window: 1000)
        let source = ListSource((0..<600).map(send))
        let (taken, last, _) = jobs(&dispatch, source)
        #expect(taken.count == 600 && isStop(last))
        var handedOver: [[Int]] = []
        var underWay: [Int]?
        // Answers arrive last first, so nothing can be written until the first one is in.
        for job in taken.reversed() {
            let actions = dispatch.finished(job, outcome: .row(.row(row(job.ordinal))), now: 0)
            if let batch = actions.handOver {
                #expect(underWay == nil, "a second batch was handed over while one was under way")
                underWay = batch.map(ordinal)
            }
        }
        // Everything became writable at once and went out as one batch; nothing is left.
        handedOver.append(underWay ?? [])
        let after = dispatch.handedOver(writerFailure: nil, now: 0)
        #expect(after.handOver == nil)
        let (rest, outcome) = dispatch.finish()
        #expect((handedOver.joined() + rest.map(ordinal)) == Array(0..<600))
        #expect(!outcome.gap && outcome.exhausted)
    }

    /// While a batch is on its way to the writer, later rows wait in the outbox and leave with the
    /// next batch, after it: order holds however long the writer takes.
    @Test func rowsFinishedDuringAHandOverFollowIt() {
        var dispatch = state(window: 1000)
        let (taken, _, _) = jobs(&dispatch, ListSource((0..<400).map(send)))
        var batches: [[Int]] = []
        for job in taken[0..<256] {
            if let batch = dispatch.finished(job, outcome: .row(.row(row(job.ordinal))), now: 0).handOver { batches.append(batch.map(ordinal)) }
        }
        #expect(batches == [Array(0..<256)])
        // Due by time, but a batch is under way: these wait for it.
        for job in taken[256..<399] {
            let result = dispatch.finished(job, outcome: .row(.row(row(job.ordinal))), now: 25)
            #expect(result.handOver == nil)
        }
        let next = dispatch.handedOver(writerFailure: nil, now: 26)
        #expect(next.handOver?.map(ordinal) == Array(256..<399))
        let done = dispatch.handedOver(writerFailure: nil, now: 27)
        #expect(done.handOver == nil)
        let last = dispatch.finished(taken[399], outcome: .row(.row(row(399))), now: 50)
        #expect(last.handOver?.map(ordinal) == [399])
    }

    /// A slow run hands over what it has 20 ms after the last batch, not only every 256 rows.
    @Test func aSlowRunHandsOverWithinTwentyMilliseconds() {
        var dispatch = state()
        let (taken, _, _) = jobs(&dispatch, ListSource((0..<3).map(send)))
        let result3 = dispatch.finished(taken[0], outcome: .row(.row(row(0))), now: 5)
        #expect(result3.handOver == nil)
        let result4 = dispatch.finished(taken[1], outcome: .row(.row(row(1))), now: 19)
        #expect(result4.handOver == nil)
        let result5 = dispatch.finished(taken[2], outcome: .row(.row(row(2))), now: 20)
        #expect(result5.handOver?.map(ordinal) == [0, 1, 2])
    }

    /// At most `window` rows are out unwritten: the next worker waits, is parked, and is woken
    /// when the oldest row is written (not when a later one is).
    @Test func aFullWindowParksWorkersUntilTheOldestRowIsWritten() {
        var dispatch = state(window: 4)
        let (taken, last, _) = jobs(&dispatch, ListSource((0..<10).map(send)))
        #expect(taken.map(\.ordinal) == [0, 1, 2, 3] && isWait(last))
        let result6 = dispatch.park(7)
        #expect(result6)
        let result7 = dispatch.park(8)
        #expect(result7)
        let result8 = dispatch.finished(taken[1], outcome: .row(.row(row(1))), now: 0)
        #expect(result8.wake.isEmpty)
        let result9 = dispatch.finished(taken[0], outcome: .row(.row(row(0))), now: 0)
        #expect(result9.wake == [7, 8])
        let (more, _, _) = jobs(&dispatch, ListSource([]))
        #expect(more.isEmpty)
        // Room was made between being told to wait and parking: no need to park.
        var roomy = state(window: 1)
        let (one, _, _) = jobs(&roomy, ListSource((0..<2).map(send)))
        _ = roomy.finished(one[0], outcome: .row(.row(row(0))), now: 0)
        let result10 = roomy.park(9)
        #expect(!result10)
    }

    /// With --fail-fast the first failed row stops the dispatch before another request goes out,
    /// whether the row failed on an answer or could not be prepared.
    @Test func failFastStopsAtTheFirstFailedRow() {
        var dispatch = state(failFast: true)
        let source = ListSource((0..<5).map(send))
        let first = dispatch.next(from: source, cancelled: false, now: 0)
        guard case .send(let job) = first.0 else { Issue.record("expected a job"); return }
        _ = dispatch.finished(job, outcome: .row(.row(row(0, .failed))), now: 0)
        let result11 = dispatch.next(from: source, cancelled: false, now: 0)
        #expect(isStop(result11.0))
        let (rest, outcome) = dispatch.finish()
        #expect(rest.map(ordinal) == [0] && outcome.stopped && !outcome.exhausted)
        if case .row(let failed)? = rest.first?.row { #expect(failed.status == .failed) } else { Issue.record("expected the failed row") }

        var unpreparable = state(failFast: true)
        let failure = PreparationFailure(name: "d.csv:row 0", error: RowError(code: .invalidRow, label: nil, message: "bad row"))
        let items = ListSource([WorkEntry(ordinal: 0, requestIndex: 0, work: .failed(failure)), send(1)])
        let result12 = unpreparable.next(from: items, cancelled: false, now: 0)
        #expect(isStop(result12.0))
        let result13 = unpreparable.finish()
        #expect(result13.handOver.map(ordinal) == [0])
    }

    /// An interrupt stops the dispatch; a request that never finished leaves a gap, and the rows
    /// after it are not written (a resumed run sends them).
    @Test func cancellationLeavesNoRowAfterAGap() {
        var dispatch = state()
        let source = ListSource((0..<5).map(send))
        let (taken, _, _) = jobs(&dispatch, ListSource((0..<3).map(send)))
        let result14 = dispatch.park(1)
        #expect(result14 == false)
        _ = dispatch.finished(taken[1], outcome: .row(.row(row(1))), now: 50)
        _ = dispatch.finished(taken[2], outcome: .row(.row(row(2))), now: 50)
        let cancelled = dispatch.finished(taken[0], outcome: .cancelled, now: 50)
        #expect(cancelled.handOver == nil)
        let result15 = dispatch.next(from: source, cancelled: true, now: 60)
        #expect(isStop(result15.0))
        let (rest, outcome) = dispatch.finish()
        #expect(rest.isEmpty && outcome.gap)
    }

    /// A write error stops the dispatch, wakes every parked worker, and no later row is handed over.
    @Test func aWriteErrorStopsTheRunAndWakesEveryone() {
        var dispatch = state(window: 2)
        let (taken, last, _) = jobs(&dispatch, ListSource((0..<5).map(send)))
        #expect(taken.count == 2 && isWait(last))
        let result16 = dispatch.park(4)
        #expect(result16)
        let first = dispatch.finished(taken[0], outcome: .row(.row(row(0))), now: 100)
        #expect(first.handOver?.map(ordinal) == [0] && first.wake == [4])
        let result17 = dispatch.park(5)
        #expect(result17 == false)
        let failed = dispatch.handedOver(writerFailure: .runtime(FileError(.write, "out.csv.partial", errno: ENOSPC)), now: 100)
        #expect(failed.handOver == nil)
        _ = dispatch.finished(taken[1], outcome: .row(.row(row(1))), now: 200)
        let result18 = dispatch.next(from: ListSource([]), cancelled: false, now: 200)
        #expect(isStop(result18.0))
        let (rest, outcome) = dispatch.finish()
        #expect(rest.isEmpty)
        #expect(outcome.writeError?.description == "cannot write out.csv.partial: No space left on device (the disk is full)")
    }

    /// While the writer is slow to take a batch, rows pile up only to the outbox limit; then
    /// workers wait, and the next hand-over wakes them.
    @Test func aSlowWriterHoldsWorkersBack() {
        var dispatch = state(window: 10_000, outboxLimit: 300)
        let source = ListSource((0..<1000).map(send))
        var taken: [DispatchState<Int>.Job] = []
        for _ in 0..<600 {
            guard case .send(let job) = dispatch.next(from: source, cancelled: false, now: 0).0 else { break }
            taken.append(job)
        }
        #expect(taken.count == 600)
        let result19 = dispatch.finished(taken[0], outcome: .row(.row(row(0))), now: 100)
        #expect(result19.handOver?.count == 1)
        for job in taken[1...300] { _ = dispatch.finished(job, outcome: .row(.row(row(job.ordinal))), now: 100) }
        let result20 = dispatch.next(from: source, cancelled: false, now: 100)
        #expect(isWait(result20.0))
        let result21 = dispatch.park(1)
        #expect(result21)
        let after = dispatch.handedOver(writerFailure: nil, now: 101)
        #expect(after.handOver?.count == 300 && after.wake == [1])
    }

    /// When the feed has nothing ready, the worker is told to wait for it, not to stop.
    @Test func anEmptyFeedIsWaitedForNotTakenForTheEnd() {
        var dispatch = state()
        let source = ListSource([send(0)])
        source.stall = 2
        guard case .awaitFeed = dispatch.next(from: source, cancelled: false, now: 0).0 else { Issue.record("expected awaitFeed"); return }
        guard case .awaitFeed = dispatch.next(from: source, cancelled: false, now: 0).0 else { Issue.record("expected awaitFeed"); return }
        guard case .send(let job) = dispatch.next(from: source, cancelled: false, now: 0).0 else { Issue.record("expected a job"); return }
        #expect(job.ordinal == 0)
        let result22 = dispatch.next(from: source, cancelled: false, now: 0)
        #expect(isStop(result22.0))
    }

    /// Failed rows in a row are held, not written: a row that gets through writes them (they were
    /// the rows' own failures); reaching the limit stops the run and leaves them unwritten.
    @Test func aStreakOfFailedRowsIsHeldThenWrittenOrStopsTheRun() {
        var dispatch = DispatchState<Int>(labels: [[label]], byRequest: [0], failFast: false, window: 64, failureLimit: 3, now: 0)
        let (taken, _, _) = jobs(&dispatch, ListSource((0..<6).map(send)))
        let first = dispatch.finished(taken[0], outcome: .row(.row(row(0, .failed))), now: 50)
        let second = dispatch.finished(taken[1], outcome: .row(.row(row(1, .failed))), now: 100)
        #expect(first.handOver == nil && second.handOver == nil)
        // A row that gets through: the two failures were the rows' own, and are written.
        let through = dispatch.finished(taken[2], outcome: .row(.row(row(2))), now: 200)
        #expect(through.handOver?.map(ordinal) == [0, 1, 2])
        _ = dispatch.handedOver(writerFailure: nil, now: 200)
        for index in 3..<6 { _ = dispatch.finished(taken[index], outcome: .row(.row(row(index, .failed))), now: 300) }
        #expect(dispatch.stopReason == RunStop("3 rows in a row failed (the last: 1500 http_status: HTTP 500): the failure is not the rows' but the endpoint's or the credentials' (circuit.failed_rows)"))
        let (rest, outcome) = dispatch.finish()
        #expect(rest.isEmpty && outcome.stopReason != nil)
    }

    /// Rows that could not be sent (1490) neither count nor break a streak; a streak still open when
    /// the run ends is written; with --fail-fast nothing is held.
    @Test func unsendableRowsAndTheEndOfARunAndFailFast() {
        var dispatch = DispatchState<Int>(labels: [[label]], byRequest: [0], failFast: false, window: 64, failureLimit: 2, now: 0)
        let failure = PreparationFailure(name: "d.csv:row 1", error: RowError(code: .invalidRow, label: nil, message: "bad row"))
        let (taken, _, _) = jobs(&dispatch, ListSource([send(0), WorkEntry(ordinal: 1, requestIndex: 0, work: .failed(failure)), send(2)]))
        _ = dispatch.finished(taken[0], outcome: .row(.row(row(0, .failed))), now: 0)
        #expect(dispatch.stopReason == nil)
        let (rest, outcome) = dispatch.finish()
        #expect(rest.map(ordinal) == [0, 1] && outcome.stopReason == nil)
        var fast = DispatchState<Int>(labels: [[label]], byRequest: [0], failFast: true, window: 64, failureLimit: 2, now: 0)
        let (one, _, _) = jobs(&fast, ListSource((0..<3).map(send)))
        _ = fast.finished(one[0], outcome: .row(.row(row(0, .failed))), now: 0)
        #expect(fast.stopped && fast.finish().handOver.map(ordinal) == [0])
    }

    /// A job that must stop the run (a certificate, refused credentials) stops it with its reason,
    /// its row unwritten.
    @Test func aJobThatMustStopTheRunStopsIt() {
        var dispatch = state()
        let (taken, _, _) = jobs(&dispatch, ListSource((0..<3).map(send)))
        _ = dispatch.finished(taken[1], outcome: .row(.row(row(1))), now: 0)
        _ = dispatch.finished(taken[0], outcome: .stop(RunStop("TLS: not trusted")), now: 0)
        #expect(isStop(dispatch.next(from: ListSource([]), cancelled: false, now: 0).0))
        let outcome = dispatch.finish().outcome
        #expect(outcome.stopReason == RunStop("TLS: not trusted") && outcome.gap)
    }
}
