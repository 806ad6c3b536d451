import Foundation
import Synchronization
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import ShowbatchEmulator
import TestSupport

@Suite struct JournalLockTests {
    @Test func aSecondRunOnTheSameOutputIsRefused() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("vault: tnt1\noutput: {path: r.csv}\nrequests: [{name: a, path: /p}]\n")
        // An overlapping run holds the journal.
        let holder = try Journal(output: fixture.dir.path + "/r.csv",
                                 identity: Journal.Identity(manifest: "x", data: "x", shard: "", output: "x", format: "csv", columns: []),
                                 mode: .fresh)
        do {
            _ = try await fixture.run(manifest)
            Issue.record("expected a refusal")
        } catch let error as RunError {
            #expect(error.description == "another showbatch run is writing \(fixture.dir.path)/r.csv (its journal \(fixture.dir.path)/r.csv.journal is locked)")
        }
        holder.close()
        #expect(try await fixture.run(manifest).ok == 1)
    }

    @Test func aJournalTornInsideItsIdentityLineStartsOver() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("vault: tnt1\noutput: {path: r.csv}\nrequests: [{name: a, path: /p}]\n")
        _ = fixture.dir.file("r.csv.journal", "{\"showbatch_jour")
        var options = RunOptions()
        options.resume = true
        #expect(try await fixture.run(manifest, options: options).ok == 1)
        #expect(fixture.read("r.csv") == "request,status,http_status,attempts,error\na,ok,200,1,\n")
    }
}

private func rows(_ count: Int, width: Int = 8) -> String {
    "id,alias,note\n" + (0..<count).map { "\($0),tok_\($0 % 3),\(String(repeating: "n", count: width))" }.joined(separator: "\n") + "\n"
}

/// Half the rows fail (seeded; one connection, so the same rows every time) and are not retried:
/// the journal is kept for --retry-failed.
private func failingManifest(label: String = "json.c", failRate: String = "0.5", extra: String = "") -> String {
    """
    vault: tnt1
    concurrency: 1
    retry: {attempts: 1}
    headers: {Authorization: "Bearer sk-DISTINCT-HEADER-7f3a"}
    output: {path: out/r.csv}
    emulator: {aliases: {tok_0: "4111-DISTINCT-REVEALED-0000", tok_1: "4111-DISTINCT-REVEALED-1111", tok_2: "4111-DISTINCT-REVEALED-2222"}, fail_rate: \(failRate), seed: 5}
    \(extra)
    requests:
      - name: "r${row.id}"
        each: {csv: d.csv}
        path: /p
        payload: {c: "${row.alias}", note: "DISTINCT-PAYLOAD-${row.note}"}
        labels: {c: \(label), note: {path: json.note, revealed: optional}}
    """
}

@Suite(.serialized) struct CheckpointJournalTests {
    /// The journal of a run that ended with failed rows holds none of the run's revealed, header
    /// or payload values, whatever was revealed.
    @Test func aKeptJournalHoldsNoRevealedHeaderOrPayloadValue() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(failingManifest(), files: ["d.csv": rows(60)])
        let summary = try await fixture.run(manifest)
        #expect(summary.failed > 0 && summary.ok > 0)
        let output = try #require(fixture.read("out/r.csv"))
        #expect(output.contains("4111-DISTINCT-REVEALED-1111") && output.contains("DISTINCT-PAYLOAD-"))
        let journal = try #require(FileManager.default.contents(atPath: fixture.dir.path + "/out/r.csv.journal"))
        let text = String(decoding: journal, as: UTF8.self)
        for secret in ["DISTINCT-REVEALED", "4111", "sk-DISTINCT-HEADER", "DISTINCT-PAYLOAD", "tok_", "Bearer"] {
            #expect(!text.contains(secret), "the journal holds \(secret)")
        }
        #expect(fixture.mode("out/r.csv.journal") == 0o600)
    }

    /// The journal's size does not grow with the width of the rows: rows many times wider, the
    /// same journal give or take the digits of larger offsets.
    @Test func theJournalDoesNotGrowWithTheWidthOfRows() async throws {
        var sizes: [(journal: Int, output: Int)] = []
        for width in [8, 2_000] {
            let fixture = RunFixture()
            defer { fixture.dir.remove() }
            let manifest = try fixture.manifest(failingManifest(), files: ["d.csv": rows(60, width: width)])
            _ = try await fixture.run(manifest)
            let journal = try FileManager.default.attributesOfItem(atPath: fixture.dir.path + "/out/r.csv.journal")[.size] as? Int ?? 0
            let output = try FileManager.default.attributesOfItem(atPath: fixture.dir.path + "/out/r.csv")[.size] as? Int ?? 0
            sizes.append((journal, output))
        }
        #expect(sizes[1].output > sizes[0].output * 10)
        #expect(sizes[1].journal <= sizes[0].journal + sizes[0].journal / 4, "\(sizes)")
    }

    /// A journal from another manifest, data file, shard, format or set of columns is refused, and
    /// the message says which.
    @Test(arguments: [
        ("label", "the manifest changed since (its endpoint, requests, labels, outputs or retry rules)"),
        ("data", "the content of a data file changed since"),
        ("shard", "it was written for no shard, and this run is shard 0/1"),
        ("format", "it was written as csv, and this run writes jsonl"),
    ])
    func aJournalOfAnotherRunIsRefusedSayingWhatDiffers(change: String, difference: String) async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(failingManifest(), files: ["d.csv": rows(20)])
        _ = try await fixture.run(manifest)
        var changed = manifest
        var options = RunOptions()
        options.resume = true
        switch change {
        case "label": changed = try fixture.manifest(failingManifest(label: "json.c.x"))
        case "data": _ = fixture.dir.file("d.csv", rows(21))
        case "shard": options.shard = Shard(index: 0, count: 1)
        default:
            options.output = fixture.dir.path + "/out/r.csv"
            options.format = .jsonl
        }
        let error = await #expect(throws: RunError.self) { try await fixture.run(changed, options: options) }
        #expect(error?.description == "the journal \(fixture.dir.path)/out/r.csv.journal does not match this run: \(difference); remove it to start over, or run without --resume")
        #expect(error?.exitCode == .usage)
    }

    /// What cannot change a row's bytes (pace, timeout, backoff, a renewed header value) is not
    /// part of the journal's identity: a resumed run with other settings goes on.
    @Test func settingsThatCannotChangeRowsKeepTheJournal() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(batch, files: ["d.csv": rows(300)])
        _ = try await fixture.run(manifest)
        let baseline = try #require(fixture.read("out/r.csv"))
        try FileManager.default.removeItem(atPath: fixture.dir.path + "/out/r.csv")
        let (emulator, interrupted, baseOptions) = try await fixture.interruptedRun(manifest, after: 120)
        defer { emulator.stop() }
        #expect(interrupted.interrupted)
        let changed = try fixture.manifest(batch.replacingOccurrences(of: "concurrency: 8", with: "concurrency: 3\nrate_limit: 5000/s\ntimeout: 7s\ntransport: curl")
            .replacingOccurrences(of: "Bearer one", with: "Bearer two").replacingOccurrences(of: "backoff: 1ms", with: "backoff: 5ms"))
        var options = baseOptions
        options.resume = true
        let resumed = try await Runner(manifest: changed, options: options, environment: [:]).run()
        #expect(resumed.replayed == interrupted.rows)
        #expect(fixture.read("out/r.csv") == baseline)
    }

    /// A `.partial` file changed before its last checkpoint (edited, swapped, damaged) is not
    /// finished as if whole: resume refuses it and says how to start over.
    @Test func aPartialFileChangedBeforeItsCheckpointIsRefused() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(batch, files: ["d.csv": rows(300)])
        let (emulator, interrupted, baseOptions) = try await fixture.interruptedRun(manifest, after: 120)
        defer { emulator.stop() }
        #expect(interrupted.interrupted)
        let partial = fixture.dir.path + "/out/r.csv.partial"
        let handle = try #require(FileHandle(forUpdatingAtPath: partial))
        try handle.seek(toOffset: 20)
        try handle.write(contentsOf: Array("X".utf8))
        try handle.close()
        var options = baseOptions
        options.resume = true
        let error = await #expect(throws: RunError.self) { try await Runner(manifest: manifest, options: options, environment: [:]).run() }
        #expect(error?.description == "\(partial) is not what its journal says was written (its first \(lastCheckpointOffset(fixture.read("out/r.csv.journal") ?? "")) bytes changed since); remove \(fixture.dir.path)/out/r.csv.journal and \(partial) to start over")
    }

    /// --retry-failed sends only the failed rows again and rewrites the output as a run without
    /// those failures would have written it, in every format; the journal goes once none failed.
    @Test(arguments: [OutputFormat.csv, .json, .jsonl])
    func retryFailedSendsOnlyTheFailedRows(format: OutputFormat) async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let path = fixture.dir.path + "/out/r.\(format.rawValue)"
        var options = RunOptions()
        options.output = path
        let clean = try fixture.manifest(failingManifest(failRate: "0"), files: ["d.csv": rows(80)])
        _ = try await fixture.run(clean, options: options)
        let expected = try #require(fixture.read("out/r.\(format.rawValue)"))
        let failing = try fixture.manifest(failingManifest())
        let first = try await fixture.run(failing, options: options)
        #expect(first.failed > 0 && first.ok > 0)
        #expect(fixture.read("out/r.\(format.rawValue)") != expected)
        #expect(fixture.dir.exists("out/r.\(format.rawValue).journal"))
        // The same manifest with the failures gone: the emulator section is not part of the identity.
        let retried = try fixture.manifest(failingManifest(failRate: "0"))
        options.retryFailed = true
        let (emulator, pointed) = try fixture.emulator(for: retried, options: options)
        defer { emulator.stop() }
        let summary = try await Runner(manifest: retried, options: pointed, environment: [:]).run()
        #expect(emulator.snapshot.requests == first.failed)
        #expect(summary.rows == 80 && summary.ok == 80 && summary.failed == 0 && summary.replayed == 80 - first.failed)
        #expect(fixture.read("out/r.\(format.rawValue)") == expected)
        #expect(!fixture.dir.exists("out/r.\(format.rawValue).journal"))
        #expect(!fixture.dir.exists("out/r.\(format.rawValue).partial"))
    }

    /// Rows that fail again are recorded again: a second --retry-failed sends just those.
    @Test func rowsThatFailAgainAreKeptForTheNextRetry() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(failingManifest(), files: ["d.csv": rows(40)])
        let first = try await fixture.run(manifest)
        var options = RunOptions()
        options.retryFailed = true
        // Still failing half: fewer failures each time, until none.
        var failed = first.failed
        var runs = 0
        while failed > 0 && runs < 20 {
            let summary = try await fixture.run(try fixture.manifest(failingManifest(extra: "# retry \(runs)")), options: options)
            #expect(summary.failed < failed || summary.failed == 0)
            #expect(summary.rows == 40)
            failed = summary.failed
            runs += 1
            #expect(fixture.dir.exists("out/r.csv.journal") == (failed > 0))
        }
        #expect(failed == 0)
        let lines = try #require(fixture.read("out/r.csv")).split(separator: "\n")
        #expect(lines.count == 41 && lines.dropFirst().allSatisfy { $0.contains(",ok,200,") })
    }

    /// A --retry-failed run cut short in its commit (its journal written as `.journal.next`, the
    /// output renamed or not) is finished by the next run: the journal always describes the
    /// output, so the next retry goes on instead of refusing the output as changed.
    @Test(arguments: [true, false])
    func aRetryCutShortInItsCommitIsFinishedByTheNextRun(renamed: Bool) async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        _ = try await fixture.run(try fixture.manifest(failingManifest(), files: ["d.csv": rows(40)]))
        let before = (output: try #require(fixture.read("out/r.csv")), journal: try #require(fixture.read("out/r.csv.journal")))
        var options = RunOptions()
        options.retryFailed = true
        let again = try await fixture.run(try fixture.manifest(failingManifest(extra: "# retry")), options: options)
        #expect(again.failed > 0)
        let after = (output: try #require(fixture.read("out/r.csv")), journal: try #require(fixture.read("out/r.csv.journal")))
        // The state a kill between the two renames leaves, or one before the output's rename.
        _ = fixture.dir.file("out/r.csv.journal.next", after.journal)
        _ = fixture.dir.file("out/r.csv.journal", before.journal)
        if !renamed { _ = fixture.dir.file("out/r.csv", before.output) }
        try Journal.finishInterruptedRewrite(of: OutputTarget(path: fixture.dir.path + "/out/r.csv", layout: .standard(format: .csv, labels: [], csv: CSVDialect())))
        #expect(fixture.read("out/r.csv.journal") == (renamed ? after.journal : before.journal))
        #expect(!fixture.dir.exists("out/r.csv.journal.next"))
        let last = try await fixture.run(try fixture.manifest(failingManifest(failRate: "0")), options: options)
        #expect(last.failed == 0 && last.rows == 40)
        #expect(!fixture.dir.exists("out/r.csv.journal"))
    }

    /// A cut-short retry in which no row failed again: once the output is in place, its journal goes.
    @Test func aRetryCutShortWithNoFailureLeftRemovesTheJournal() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        _ = try await fixture.run(try fixture.manifest(failingManifest(), files: ["d.csv": rows(40)]))
        let journal = try #require(fixture.read("out/r.csv.journal"))
        var options = RunOptions()
        options.retryFailed = true
        _ = try await fixture.run(try fixture.manifest(failingManifest(failRate: "0")), options: options)
        let output = try #require(fixture.read("out/r.csv"))
        let size = output.utf8.count
        let hash = String(fnv1a(Array(output.utf8)), radix: 16)
        let identity = try #require(try JournalCodec.read(Array(journal.utf8))?.identity)
        var next: [UInt8] = []
        var writer = JournalCodec.Writer()
        writer.encode(.identity(identity), into: &next)
        let hashValue = try #require(UInt64(hash, radix: 16))
        writer.encode(.checkpoint(Journal.Checkpoint(ordinal: 39, offset: size, counts: RowCounts(rows: 40, ok: 40, partial: 0, failed: 0), hash: hashValue)), into: &next)
        writer.encode(.end(size: size, hash: hashValue), into: &next)
        _ = fixture.dir.file("out/r.csv.journal.next", String(decoding: next, as: UTF8.self))
        _ = fixture.dir.file("out/r.csv.journal", journal)
        try Journal.finishInterruptedRewrite(of: OutputTarget(path: fixture.dir.path + "/out/r.csv", layout: .standard(format: .csv, labels: [], csv: CSVDialect())))
        #expect(!fixture.dir.exists("out/r.csv.journal"))
        #expect(!fixture.dir.exists("out/r.csv.journal.next"))
    }

    /// `--resume` with no journal (the last run finished) starts over and says so.
    @Test func resumeWithNothingToResumeStartsOverAndSaysSo() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(failingManifest(failRate: "0"), files: ["d.csv": rows(10)])
        _ = try await fixture.run(manifest)
        let first = fixture.read("out/r.csv")
        var options = RunOptions()
        options.resume = true
        let summary = try await fixture.run(manifest, options: options)
        #expect(summary.rows == 10 && summary.replayed == 0)
        #expect(fixture.read("out/r.csv") == first)
        #expect(fixture.log.all.filter { $0.hasPrefix("warning") } == ["warning: \(fixture.dir.path)/out/r.csv has no journal, so there is nothing to resume: it is written again from the start"])
    }

    /// With nothing to retry (the run had no failed row, so no journal), the output is left as it is.
    @Test func retryFailedWithoutFailedRowsLeavesTheOutputAlone() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(failingManifest(failRate: "0"), files: ["d.csv": rows(10)])
        _ = try await fixture.run(manifest)
        let before = fixture.read("out/r.csv")
        var options = RunOptions()
        options.retryFailed = true
        let (emulator, pointed) = try fixture.emulator(for: manifest, options: options)
        defer { emulator.stop() }
        let summary = try await Runner(manifest: manifest, options: pointed, environment: [:]).run()
        #expect(emulator.snapshot.requests == 0 && summary.rows == 0)
        #expect(fixture.read("out/r.csv") == before)
    }
}

/// The offset of the last checkpoint in a journal's text.
private func lastCheckpointOffset(_ journal: String) -> String {
    journal.split(separator: "\n").last { $0.hasPrefix("{\"checkpoint\"") }
        .flatMap { line in line.firstRange(of: "\"offset\":").map { line[$0.upperBound...].prefix { $0.isNumber } } }
        .map(String.init) ?? "?"
}

private let batch = """
vault: tnt1
concurrency: 8
headers: {Authorization: "Bearer one"}
retry: {attempts: 2, backoff: 1ms}
output: {path: out/r.csv}
emulator: {aliases: {tok_0: "4000", tok_1: "4111", tok_2: "4222"}, latency: 1ms±1ms, seed: 2}
requests:
  - name: "r${row.id}"
    each: {csv: d.csv}
    path: /p
    payload: {c: "${row.alias}"}
    labels: {c: json.c}
"""

/// What a journal's identity is made of: never a header or payload value (a hash of a short PIN
/// could be guessed back), always what shapes a row.
@Suite struct JournalIdentityTests {
    static let base = "vault: tnt1\nheaders: {Authorization: Bearer sk_one}\nrequests:\n  - {name: a, path: /p, payload: {pin: \"4821\"}, labels: {c: json.c}}\n"

    @Test(arguments: [
        ("Bearer sk_one", "Bearer sk_two"),
        ("\"4821\"", "\"1234\""),
    ])
    func secretValuesAreNotPartOfIt(from: String, to: String) throws {
        let one = try loadManifest(Self.base)
        let two = try loadManifest(Self.base.replacingOccurrences(of: from, with: to))
        #expect(one.rowIdentity == two.rowIdentity)
    }

    @Test(arguments: [
        ("pin:", "code:"),
        ("path: /p", "path: /q"),
        ("name: a", "name: b"),
        ("json.c", "json.d"),
        ("Authorization", "X-Token"),
        ("vault: tnt1", "vault: tnt2"),
    ])
    func whatShapesARowIs(from: String, to: String) throws {
        let one = try loadManifest(Self.base)
        let two = try loadManifest(Self.base.replacingOccurrences(of: from, with: to))
        #expect(one.rowIdentity != two.rowIdentity)
    }
}
