import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// Data rows: every third lacks `alias`, so it cannot be sent (a 1490 row, which fails again
/// whenever it is sent again).
private func dataRows(_ count: Int) -> String {
    (0..<count).map { index in
        index % 3 == 2 ? "{\"id\": \(index)}" : "{\"id\": \(index), \"alias\": \"tok_\(index % 2)\"}"
    }.joined(separator: "\n") + "\n"
}

/// Rows fail at `failRate` (seeded; one connection, no retry, so the same rows every time) on top
/// of the 1490 rows; `lone`, the first work item, is always partial (its label is not in the
/// answer), so with `reject_partial` it is in the rejects file before any failed row.
private func manifest(output: String, rejects: String?, failRate: String, extra: String = "") -> String {
    """
    vault: tnt1
    concurrency: 1
    retry: {attempts: 1}
    output: {path: out/\(output)\(rejects.map { ", rejects: out/\($0), reject_partial: true" } ?? "")}
    emulator: {aliases: {tok_0: "4000000000000002", tok_1: "4111111111111111"}, fail_rate: \(failRate), seed: 5}
    \(extra)
    requests:
      - {name: lone, path: /p, payload: {c: tok_0}, labels: {card: json.nope}}
      - {name: "r${row.id}", each: {jsonl: d.jsonl}, path: /p, payload: {c: "${row.alias}"}, labels: {card: json.c}}
    """
}

/// A file's rows as a reader gets them: `gzip -dc` of a `.gz` file (its members end at
/// checkpoints, which come with time; the rows they hold do not).
private func content(_ path: String) throws -> [UInt8]? {
    guard path.hasSuffix(".gz") else { return FileManager.default.contents(atPath: path).map { Array($0) } }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/gzip")
    process.arguments = ["-dc", path]
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return process.terminationStatus == 0 ? Array(data) : nil
}

/// `--retry-failed` of outputs with a rejects file and of gzip outputs: the failed rows are sent
/// again, and both files end as if those rows had not failed the first time.
@Suite(.serialized) struct RetryRewriteTests {
    static let files: [(String, String?)] = [
        ("r.csv", "rejects.csv"), ("r.json", "rejects.json"), ("r.jsonl", "rejects.jsonl"),
        ("r.csv.gz", "rejects.csv.gz"), ("r.jsonl.gz", "rejects.csv"), ("r.json.gz", nil),
    ]

    /// The files of a run in which only the 1490 rows failed, read and removed.
    private func cleanRun(_ fixture: RunFixture, _ output: String, _ rejects: String?, rows: Int) async throws -> [[UInt8]?] {
        let clean = try fixture.manifest(manifest(output: output, rejects: rejects, failRate: "0"), files: ["d.jsonl": dataRows(rows)])
        _ = try await fixture.run(clean)
        defer { try? FileManager.default.removeItem(atPath: fixture.dir.path + "/out") }
        return try ([output] + (rejects.map { [$0] } ?? [])).map { try content(fixture.dir.path + "/out/" + $0) }
    }

    private func written(_ fixture: RunFixture, _ output: String, _ rejects: String?) throws -> [[UInt8]?] {
        try ([output] + (rejects.map { [$0] } ?? [])).map { try content(fixture.dir.path + "/out/" + $0) }
    }

    /// Rows that failed for a moment and succeed when sent again move from the rejects file into
    /// the output at their work-item position; the rejects file keeps the partial row and the rows
    /// that fail again (the 1490 rows): both files are the ones a run without those failures
    /// writes, in every format, gzip too. Only the failed rows are sent; a second retry sends
    /// only the rows that cannot be sent and changes nothing.
    @Test(arguments: RetryRewriteTests.files)
    func retryFailedRewritesTheOutputAndItsRejectsFileAsIfTheRowsHadSucceeded(output: String, rejects: String?) async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let expected = try await cleanRun(fixture, output, rejects, rows: 90)
        let first = try await fixture.run(try fixture.manifest(manifest(output: output, rejects: rejects, failRate: "0.4")))
        // 30 rows have no alias; the others that failed are the emulator's.
        let transient = first.failed - 30
        #expect(transient > 5 && first.ok > 5)
        #expect(try written(fixture, output, rejects) != expected)
        var options = RunOptions()
        options.retryFailed = true
        let healed = try fixture.manifest(manifest(output: output, rejects: rejects, failRate: "0"))
        let (emulator, pointed) = try fixture.emulator(for: healed, options: options)
        defer { emulator.stop() }
        let summary = try await Runner(manifest: healed, options: pointed, environment: [:]).run()
        #expect(emulator.snapshot.requests == transient)
        #expect(summary.rows == 91 && summary.failed == 30 && summary.partial == 1 && summary.replayed == 91 - first.failed)
        let same = try written(fixture, output, rejects) == expected
        #expect(same, "the rewritten files are not those of a run without the failures (compared here: a failure prints no row)")
        // The 1490 rows failed again: the journal stays, and describes the new files.
        #expect(fixture.dir.exists("out/\(output).journal"))
        for name in [output] + (rejects.map { [$0] } ?? []) {
            #expect(fixture.mode("out/\(name)") == 0o600)
            #expect(!fixture.dir.exists("out/\(name).partial"))
        }
        #expect(!fixture.dir.exists("out/\(output).journal.next"))
        let again = try await Runner(manifest: healed, options: pointed, environment: [:]).run()
        #expect(emulator.snapshot.requests == transient)
        #expect(again.failed == 30 && again.replayed == 61)
        let unchanged = try written(fixture, output, rejects) == expected
        #expect(unchanged, "a retry with nothing that can succeed changed the files")
    }

    /// The rejects file keeps only what failed again: retried while the endpoint still fails some
    /// rows, each retry's output holds every row that succeeded so far, in work-item order, and its
    /// rejects file the partial row and this retry's failed rows; until the last retry leaves the
    /// files a run without those failures writes.
    @Test func theRejectsFileKeepsOnlyWhatFailedAgain() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let expected = try await cleanRun(fixture, "r.csv", "rejects.csv", rows: 60)
        let data = dataRows(60)
        var failed = try await fixture.run(try fixture.manifest(manifest(output: "r.csv", rejects: "rejects.csv", failRate: "0.5"),
                                                                files: ["d.jsonl": data])).failed
        var options = RunOptions()
        options.retryFailed = true
        var retries = 0
        while failed > 20 && retries < 20 {
            retries += 1
            let summary = try await fixture.run(try fixture.manifest(manifest(output: "r.csv", rejects: "rejects.csv", failRate: "0.5",
                                                                              extra: "# retry \(retries)")), options: options)
            #expect(summary.rows == 61 && summary.failed <= failed)
            failed = summary.failed
            let main = try #require(fixture.read("out/r.csv")).split(separator: "\n").dropFirst()
            let side = try #require(fixture.read("out/rejects.csv")).split(separator: "\n").dropFirst()
            let ids = main.map { Int($0.prefix { $0 != "," }.dropFirst()) ?? -1 }
            #expect(ids == ids.sorted() && main.allSatisfy { $0.contains(",ok,200,") })
            #expect(main.count + side.count == 61 && side.count == failed + 1)
            #expect(side.first?.hasPrefix("lone,partial,") == true && side.dropFirst().allSatisfy { $0.contains(",failed,") })
        }
        #expect(retries > 0)
        _ = try await fixture.run(try fixture.manifest(manifest(output: "r.csv", rejects: "rejects.csv", failRate: "0")), options: options)
        let same = try written(fixture, "r.csv", "rejects.csv") == expected
        #expect(same, "the last retry's files are not those of a run without the failures")
    }

    /// A retry with rejects cut short after its new journal was written and its rejects file put
    /// in place, but not its output: the next run puts the output (whole at `.partial`) in place
    /// and adopts the journal, so the files and the journal agree and nothing is sent twice.
    @Test func aRetryCutShortBetweenItsRenamesIsFinishedByTheNextRun() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let text = { (rate: String, extra: String) in manifest(output: "r.csv", rejects: "rejects.csv", failRate: rate, extra: extra) }
        _ = try await fixture.run(try fixture.manifest(text("0.4", ""), files: ["d.jsonl": dataRows(60)]))
        let before = (output: try #require(fixture.read("out/r.csv")), journal: try #require(fixture.read("out/r.csv.journal")))
        var options = RunOptions()
        options.retryFailed = true
        _ = try await fixture.run(try fixture.manifest(text("0", "# retry")), options: options)
        let after = (output: try #require(fixture.read("out/r.csv")), journal: try #require(fixture.read("out/r.csv.journal")))
        // The state a kill between the rejects file's rename and the output's leaves.
        _ = fixture.dir.file("out/r.csv.partial", after.output)
        _ = fixture.dir.file("out/r.csv", before.output)
        _ = fixture.dir.file("out/r.csv.journal", before.journal)
        _ = fixture.dir.file("out/r.csv.journal.next", after.journal)
        let healed = try fixture.manifest(text("0", "# again"))
        let (emulator, pointed) = try fixture.emulator(for: healed, options: options)
        defer { emulator.stop() }
        let summary = try await Runner(manifest: healed, options: pointed, environment: [:]).run()
        #expect(emulator.snapshot.requests == 0 && summary.failed == 20)
        let placed = fixture.read("out/r.csv") == after.output
        #expect(placed, "the output left at .partial was not put in place")
        #expect(fixture.read("out/r.csv.journal") == after.journal)
        #expect(!fixture.dir.exists("out/r.csv.partial") && !fixture.dir.exists("out/r.csv.journal.next"))
    }
}
