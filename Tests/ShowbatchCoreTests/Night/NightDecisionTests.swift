import Testing
import ShowbatchManifest
@testable import ShowbatchCore

private let today = NightDate(parsing: "2026-12-06")!
private let night = NightDate(parsing: "2026-12-05")!
private let rows = Manifest.rowsHashPrefix + "aa"
private let otherRows = Manifest.rowsHashPrefix + "bb"

private func record(_ date: NightDate = night, seq: Int = 3, data: String = rows, finished: Bool = true, complete: Bool = true,
                    delivered: Bool = false, handing: Bool = false, partial: Int = 0, failed: Int = 0) -> NightRecord {
    var record = NightRecord(date: date, seq: seq, data: data)
    if finished {
        record.manifest = "m1"
        record.file = "cards-\(date.compact)-\(seq).csv"
        record.finished = "2026-12-06T02:20:00.000Z"
        record.sha256 = "ab"
        record.complete = complete
        record.rows = NightRecord.NightRows(data: 10, output: 10 - partial - failed, rejects: partial + failed, ok: 10 - partial - failed,
                                            partial: partial, failed: failed)
    }
    if handing { record.handing = NightRecord.Handing(to: "sftp://p/in/", part: ".c.csv.1.part", at: "2026-12-06T02:21:00.000Z") }
    if delivered {
        record.delivery = NightRecord.Delivery(to: "sftp://p/in/", file: record.file, size: 1, sha256: "ab", at: "2026-12-06T02:21:01.000Z")
    }
    return record
}

private func facts(_ record: NightRecord? = nil, latest: NightRecord? = nil, repeatOf: NightRecord? = nil, data: String = rows,
                   manifest: String = "m1", asRecorded: Bool = true, leftovers: Bool = false, testRun: Bool = false) -> NightFacts {
    NightFacts(night: Night(date: night, today: today, testRun: testRun), record: record, latest: latest ?? record, repeatOf: repeatOf,
               data: data, manifest: manifest, fileAsRecorded: asRecorded, leftovers: leftovers)
}

/// What a run does with its output's night, for every state of the ledger and the files.
@Suite struct NightDecisionTests {
    static let later = record(NightDate(parsing: "2026-12-06")!, seq: 4)

    @Test(arguments: [
        // A new night: begun, unless it would come after a later one or repeats another's rows.
        (facts(), RunMode.fresh, false, NightVerdict.begin),
        (facts(), .resume, false, .begin),
        (facts(latest: later), .fresh, false, .refuse(.outOfOrder(night, latest: later))),
        (facts(repeatOf: later), .fresh, false, .refuse(.repeated(night, of: later))),
        (facts(repeatOf: later), .fresh, true, .begin),
        (facts(), .retryFailed, false, .refuse(.neverWritten(path: "out/c.csv", night))),
        // A test run goes nowhere a processor reads: whatever the ledger says.
        (facts(record(delivered: true), testRun: true), .fresh, false, .write(again: nil)),
        (facts(latest: later, testRun: true), .fresh, false, .write(again: nil)),
        // Delivered: the processor's; --retry-failed is refused; other rows tonight are said (exit 1).
        (facts(record(delivered: true)), .fresh, false, .leave(.delivered(dataChanged: false))),
        (facts(record(delivered: true), data: otherRows), .resume, false, .leave(.delivered(dataChanged: true))),
        (facts(record(delivered: true)), .retryFailed, false, .refuse(.retryDelivered(path: "out/c.csv", record(delivered: true)))),
        (facts(record(delivered: true), asRecorded: false), .fresh, false, .leave(.delivered(dataChanged: false))),
        (facts(record(handing: true)), .fresh, false, .leave(.handing)),
        (facts(record(handing: true)), .retryFailed, false, .refuse(.retryDelivered(path: "out/c.csv", record(handing: true)))),
        // Begun and never finished: written (or resumed) under its number.
        (facts(record(finished: false)), .fresh, false, .write(again: nil)),
        (facts(record(finished: false)), .resume, false, .write(again: nil)),
        // Finished and whole, as it was: left.
        (facts(record()), .fresh, false, .leave(.finished)),
        (facts(record()), .resume, false, .leave(.finished)),
        (facts(record(data: "1f2e")), .fresh, false, .leave(.finished)),
        // ... unless something changed, or a run left files, or it was not whole.
        (facts(record(), asRecorded: false), .fresh, false, .write(again: nil)),
        (facts(record(), leftovers: true), .resume, false, .write(again: nil)),
        (facts(record()), .retryFailed, false, .write(again: nil)),
        (facts(record(), data: otherRows), .fresh, false, .write(again: .dataChanged)),
        (facts(record(), manifest: "m2"), .fresh, false, .write(again: .manifestChanged)),
        (facts(record(complete: false, partial: 10)), .fresh, false, .write(again: .notWhole(notOk: 10, rows: 10))),
        (facts(record(complete: false, failed: 2), leftovers: true), .fresh, false, .write(again: .notWhole(notOk: 2, rows: 10))),
        (facts(record(complete: false, failed: 2), leftovers: true), .resume, false, .write(again: nil)),
        (facts(record(), manifest: "m2", leftovers: true), .fresh, false, .write(again: .manifestChanged)),
    ])
    func aRunsVerdict(facts: NightFacts, mode: RunMode, allowRepeat: Bool, expected: NightVerdict) {
        #expect(NightDecision.run(facts, NightFlags(mode: mode, allowRepeat: allowRepeat), path: "out/c.csv") == expected)
    }

    /// A shard's night is finished by merge: merged and as it was, it sends nothing.
    @Test(arguments: [
        (facts(), RunMode.fresh, NightVerdict.begin),
        (facts(record(finished: false)), .fresh, .write(again: nil)),
        (facts(record()), .fresh, .leave(.merged)),
        (facts(record(), asRecorded: false), .fresh, .write(again: nil)),
        (facts(record(), data: otherRows), .fresh, .write(again: nil)),
        (facts(record()), .retryFailed, .write(again: nil)),
        (facts(), .retryFailed, .refuse(.neverWritten(path: "out/c-shard-0.csv", night))),
        (facts(record(delivered: true)), .fresh, .leave(.delivered(dataChanged: false))),
    ])
    func aShardsVerdict(facts: NightFacts, mode: RunMode, expected: NightVerdict) {
        #expect(NightDecision.run(facts, NightFlags(mode: mode, shard: true), path: "out/c-shard-0.csv") == expected)
    }

    /// A night whose files are in place: recorded finished only when its rows add up, and
    /// whole only within max_failed.
    @Test(arguments: [
        (NightRecord.NightRows(data: 300, output: 0, rejects: 300, ok: 0, partial: 300, failed: 0), 0, NightFinish.beyondMaxFailed(notOk: 300)),
        (NightRecord.NightRows(data: 300, output: 300, rejects: 0, ok: 300, partial: 0, failed: 0), 0, .whole),
        (NightRecord.NightRows(data: 300, output: 298, rejects: 2, ok: 298, partial: 1, failed: 1), 2, .whole),
        (NightRecord.NightRows(data: 300, output: 298, rejects: 2, ok: 298, partial: 1, failed: 1), 1, .beyondMaxFailed(notOk: 2)),
        (NightRecord.NightRows(data: 300, output: 0, rejects: 0, ok: 0, partial: 0, failed: 0), 0, .doesNotAddUp(counted: 0, expected: 300)),
        (NightRecord.NightRows(data: 300, output: 299, rejects: 0, ok: 299, partial: 0, failed: 0), 5, .doesNotAddUp(counted: 299, expected: 300)),
        (NightRecord.NightRows(data: 300, output: 300, rejects: 1, ok: 300, partial: 0, failed: 1), 5, .doesNotAddUp(counted: 301, expected: 300)),
        (NightRecord.NightRows(data: 0, output: 0, rejects: 0, ok: 0, partial: 0, failed: 0), 0, .whole),
    ])
    func aNightIsFinishedWhenItsRowsAddUp(rows: NightRecord.NightRows, allowed: Int, expected: NightFinish) {
        #expect(NightDecision.finish(rows, allowed: allowed) == expected)
    }

    /// A multiset's hash is compared with a multiset's only: an earlier showbatch's ordered hash
    /// says nothing either way.
    @Test func rowsHashesOfTwoKindsAreNotCompared() {
        #expect(NightRecord.sameRows(rows, rows) == true)
        #expect(NightRecord.sameRows(rows, otherRows) == false)
        #expect(NightRecord.sameRows("1f2e", rows) == nil)
        #expect(NightRecord.sameRows("", "") == true)
    }
}
