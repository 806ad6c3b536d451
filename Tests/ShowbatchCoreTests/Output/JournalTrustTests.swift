import Foundation
import Synchronization
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

private func rows(_ count: Int) -> String {
    "id\n" + (0..<count).map(String.init).joined(separator: "\n") + "\n"
}

/// An error a run threw that is not a `RunError` (a fixture's own), in its words: the test
/// fails on it as on any other refusal.
private struct NotARunError: RunProblem {
    let words: String

    var description: String { words }

    func redacted(_ redact: (String) -> String) -> NotARunError { NotARunError(words: redact(words)) }
}

/// A run of this manifest with `poisoned` paths failing has rows 7, 50, 51 and 120 failed, every
/// time the same (with one attempt, or two when other rows were answered after them:
/// `sameRows`).
private func manifestText(format: String = "csv") -> String {
    """
    vault: tnt1
    concurrency: 4
    retry: {attempts: 1}
    output: {path: out/r.\(format)}
    requests: [{name: "r${row.id}", each: {csv: d.csv}, path: "/p/${row.id}", labels: {p: path}}]
    """
}

private let poisoned: Set<String> = ["/p/7", "/p/50", "/p/51", "/p/120"]

/// The same CSV rows, but for how many attempts a failed row made: a row's failure is its own
/// once it was tried once more after other rows' answers, which depends on how the rows met.
private func sameRows(_ written: String?, _ expected: String) -> Bool {
    func blanked(_ text: String) -> String {
        text.replacingOccurrences(of: #",failed,503,[12],"#, with: ",failed,503,n,", options: .regularExpression)
    }
    return written.map(blanked) == blanked(expected)
}

/// A journal's lines as the codec reads them, and the journal re-encoded from records (with a
/// chain that matches: a forger who knows the format).
private func records(_ bytes: [UInt8]) -> [JournalRecord] {
    guard let contents = try? JournalCodec.read(bytes) else { return [] }
    var out: [JournalRecord] = [.identity(contents.identity)]
    // The codec keeps only the last checkpoint: one line per failed row, then it.
    for row in contents.failedRows { out.append(.failed(row)) }
    if let checkpoint = contents.lastCheckpoint { out.append(.checkpoint(checkpoint)) }
    if let ended = contents.ended { out.append(.end(size: ended.size, hash: ended.hash)) }
    return out
}

private func encode(_ records: [JournalRecord]) -> [UInt8] {
    var writer = JournalCodec.Writer()
    var bytes: [UInt8] = []
    for record in records { writer.encode(record, into: &bytes) }
    return bytes
}

/// What a run does with an edited journal: it is refused (exit 2, in words), or the run goes on
/// to exactly the bytes a run that was never stopped writes. Never trusted into a wrong file,
/// never a crash.
@Suite(.serialized) struct JournalTrustTests {
    /// The finished output with failed rows, its journal, and the file a run without failures writes.
    private func finished(_ fixture: RunFixture, format: String = "csv") async throws -> (manifest: Manifest, expected: String) {
        let clean = try fixture.manifest(manifestText(format: format), files: ["d.csv": rows(200)])
        _ = try await fixture.run(clean)
        let expected = try #require(fixture.read("out/r.\(format)"))
        try FileManager.default.removeItem(atPath: fixture.dir.path + "/out")
        let summary = try await fixture.run(clean) {
            $0.faults.failPaths = poisoned
            $0.faults.failStatus = 503
        }
        #expect(summary.failed == 4)
        return (clean, expected)
    }

    /// `--retry-failed` with the journal as it is, or edited: refused, or the exact file.
    private func retry(_ fixture: RunFixture, _ manifest: Manifest) async -> Result<String?, RunError> {
        var options = RunOptions()
        options.retryFailed = true
        do {
            _ = try await fixture.run(manifest, options: options)
            return .success(fixture.read("out/r.csv"))
        } catch let error as RunError {
            return .failure(error)
        } catch {
            return .failure(.runtime(NotARunError(words: "\(error)")))
        }
    }

    /// A finished output whose journal was kept (rows failed) is checked against the journal's
    /// end before `--resume` calls it done: emptied since, it is refused, and `--resume=auto`
    /// writes it again.
    @Test func aFinishedOutputThatChangedIsNotCalledDone() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let (manifest, _) = try await finished(fixture)
        let failedRun = try #require(fixture.read("out/r.csv"))
        try Data().write(to: URL(fileURLWithPath: fixture.dir.path + "/out/r.csv"))
        var strict = RunOptions()
        strict.resume = true
        let refusal = await #expect(throws: RunError.self) {
            _ = try await fixture.run(manifest, options: strict) {
                $0.faults.failPaths = poisoned
                $0.faults.failStatus = 503
            }
        }
        #expect(refusal?.description == fixture.dir.path + "/out/r.csv does not match its journal (it changed since the run that wrote it); run without --resume to write it again")
        #expect(fixture.read("out/r.csv") == "")
        var auto = strict
        auto.resumeAuto = true
        let summary = try await fixture.run(manifest, options: auto) {
            $0.faults.failPaths = poisoned
            $0.faults.failStatus = 503
        }
        #expect(summary.rows == 200 && summary.replayed == 0 && summary.failed == 4)
        #expect(sameRows(fixture.read("out/r.csv"), failedRun))
    }

    /// `--resume=auto` measures a journal's age from the time it records as well as from its
    /// modification time: a journal whose own time is a day old, or hours ahead of the clock, is
    /// started afresh although its file was modified just now; a journal of now is gone on from.
    @Test(arguments: [(-13 * 3600, false), (3 * 3600, false), (0, true)])
    func aJournalsOwnTimeAgesIt(offset: Int, goneOn: Bool) async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let (manifest, _) = try await finished(fixture)
        let failedRun = try #require(fixture.read("out/r.csv"))
        let path = fixture.dir.path + "/out/r.csv.journal"
        var edited = records(try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))))
        let index = try #require(edited.lastIndex { if case .checkpoint = $0 { true } else { false } })
        guard case .checkpoint(var checkpoint) = edited[index] else { return }
        let written = try #require(checkpoint.at)
        #expect(abs(written - time(nil)) < 60)
        checkpoint.at = written + offset
        edited[index] = .checkpoint(checkpoint)
        try Data(encode(edited)).write(to: URL(fileURLWithPath: path))
        var auto = RunOptions()
        auto.resume = true
        auto.resumeAuto = true
        let summary = try await fixture.run(manifest, options: auto) {
            $0.faults.failPaths = poisoned
            $0.faults.failStatus = 503
        }
        #expect(summary.rows == 200 && summary.failed == 4)
        #expect(summary.replayed == (goneOn ? 200 : 0))
        #expect(sameRows(fixture.read("out/r.csv"), failedRun))
    }

    /// Why a journal is too old or from the future, in words; the clocks of two machines may be a
    /// few minutes apart.
    @Test(arguments: [
        (-13 * 3600, false, "its journal was last written 13h ago, more than resume_max_age (12h)"),
        (-(12 * 3600 + 90), true, "its journal says it was last written 12h 1m 30s ago, more than resume_max_age (12h)"),
        (-3600, false, nil),
        (200, false, nil),
        (3 * 3600, false, "its journal was last written 3h in the future (a clock set back, or a time set by hand), so its age is unknown"),
        (2_000_000_000, true, "its journal says it was last written 555555h 33m 20s in the future (a clock set back, or a time set by hand), so its age is unknown"),
    ] as [(Int, Bool, String?)])
    func aJournalsStaleness(offset: Int, recorded: Bool, expected: String?) {
        let now = 1_800_000_000
        #expect(Journal.staleness(writtenAt: now + offset, now: now, maxAge: .seconds(12 * 3600), recorded: recorded) == expected)
    }

    /// The same for a finished output's rejects file (where its failed rows are): emptied since,
    /// `--resume` refuses; and an output deleted since is named as gone.
    @Test func aFinishedRejectsFileThatChangedIsNotCalledDone() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(manifestText().replacingOccurrences(of: "output: {path: out/r.csv}", with: "output: {path: out/r.csv, rejects: out/bad.csv}"),
                                            files: ["d.csv": rows(200)])
        let summary = try await fixture.run(manifest) {
            $0.faults.failPaths = poisoned
            $0.faults.failStatus = 503
        }
        #expect(summary.failed == 4 && fixture.read("out/bad.csv")?.isEmpty == false)
        try Data().write(to: URL(fileURLWithPath: fixture.dir.path + "/out/bad.csv"))
        var strict = RunOptions()
        strict.resume = true
        let refusal = await #expect(throws: RunError.self) { _ = try await fixture.run(manifest, options: strict) }
        #expect(refusal?.description == fixture.dir.path + "/out/bad.csv does not match its journal (it changed since the run that wrote it); run without --resume to write it again")
        try FileManager.default.removeItem(atPath: fixture.dir.path + "/out/r.csv")
        let gone = await #expect(throws: RunError.self) { _ = try await fixture.run(manifest, options: strict) }
        #expect(gone?.description == fixture.dir.path + "/out/r.csv was finished, and it is gone since; run without --resume to write it again")
    }

    @Test func anUntouchedJournalIsTrusted() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let (manifest, expected) = try await finished(fixture)
        #expect(try await retry(fixture, manifest).get() == expected)
    }

    /// Edits a forger would make, with a chain recomputed to match: each is caught by what the
    /// output itself holds.
    @Test(arguments: ["ordinal+100", "ordinal-1000", "counts", "swap spans", "span moved", "extra failed", "dropped failed"])
    func aForgedJournalIsRefused(edit: String) async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let (manifest, _) = try await finished(fixture)
        let path = fixture.dir.path + "/out/r.csv.journal"
        var lines = records(Array(try #require(FileManager.default.contents(atPath: path))))
        let failedIndices = lines.indices.filter { if case .failed = lines[$0] { return true } else { return false } }
        func changeCheckpoint(_ change: (inout Journal.Checkpoint) -> Void) {
            for index in lines.indices {
                if case .checkpoint(var checkpoint) = lines[index] {
                    change(&checkpoint)
                    lines[index] = .checkpoint(checkpoint)
                }
            }
        }
        switch edit {
        case "ordinal+100": changeCheckpoint { $0.ordinal += 100 }
        case "ordinal-1000": changeCheckpoint { $0.ordinal = max(-1, $0.ordinal - 1000) }
        case "counts": changeCheckpoint { $0.counts.ok -= 2; $0.counts.partial += 2 }
        case "swap spans":
            guard case .failed(let first) = lines[failedIndices[1]], case .failed(let second) = lines[failedIndices[2]] else { return }
            lines[failedIndices[1]] = .failed(Journal.FailedRow(ordinal: first.ordinal, start: second.start, end: second.end))
            lines[failedIndices[2]] = .failed(Journal.FailedRow(ordinal: second.ordinal, start: first.start, end: first.end))
        case "span moved":
            guard case .failed(var row) = lines[failedIndices[0]] else { return }
            row.start += 3
            row.end += 3
            lines[failedIndices[0]] = .failed(row)
        case "extra failed":
            lines.insert(.failed(Journal.FailedRow(ordinal: 3, start: 120, end: 140)), at: failedIndices[0])
            changeCheckpoint { $0.counts.failed += 1; $0.counts.ok -= 1 }
        default:
            lines.remove(at: failedIndices[3])
            changeCheckpoint { $0.counts.failed -= 1; $0.counts.ok += 1 }
        }
        try Data(encode(lines)).write(to: URL(fileURLWithPath: path))
        switch await retry(fixture, manifest) {
        case .success: Issue.record("a forged journal (\(edit)) was trusted")
        case .failure(let error):
            #expect(error.exitCode == .usage)
            #expect(error.description.hasPrefix("the journal \(path) cannot be trusted: "), "\(error)")
        }
    }

    /// Seeded edits of the bytes themselves (truncations, a changed digit, swapped, dropped or
    /// doubled lines), on a finished journal (`--retry-failed`) and an interrupted one
    /// (`--resume`): each is refused in words or ends in the exact file.
    @Test(.timeLimit(.minutes(10)), arguments: ["retry", "resume"]) func randomEditsAreRefusedOrExact(mode: String) async throws {
        var random = SeededGenerator(seed: mode == "retry" ? 19 : 23)
        var refused = 0, exact = 0
        for round in 0..<24 {
            let fixture = RunFixture()
            defer { fixture.dir.remove() }
            var manifest: Manifest
            var expected: String
            var options = RunOptions()
            if mode == "retry" {
                (manifest, expected) = try await finished(fixture)
                options.retryFailed = true
            } else {
                manifest = try fixture.manifest(manifestText(), files: ["d.csv": rows(1_500)])
                _ = try await fixture.run(manifest)
                expected = try #require(fixture.read("out/r.csv"))
                try FileManager.default.removeItem(atPath: fixture.dir.path + "/out")
                let (emulator, interrupted, _) = try await fixture.interruptedRun(manifest, after: 300 + Int(random.next() % 900))
                emulator.stop()
                #expect(interrupted.interrupted)
                options.resume = true
            }
            let path = fixture.dir.path + "/out/r.csv.journal"
            var bytes = Array(try #require(FileManager.default.contents(atPath: path)))
            var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map(Array.init)
            lines.removeLast()
            switch (round % 6, lines.count) {
            case (0, _): bytes = Array(bytes[0..<Int(random.next() % UInt64(bytes.count))])
            case (1, _):
                let digits = bytes.indices.filter { bytes[$0] >= 0x30 && bytes[$0] <= 0x39 }
                let at = digits[Int(random.next() % UInt64(digits.count))]
                bytes[at] = 0x30 + UInt8((bytes[at] - 0x30 + 1 + UInt8(random.next() % 8)) % 10)
            case (2, 3...):
                let a = 1 + Int(random.next() % UInt64(lines.count - 1)), b = 1 + Int(random.next() % UInt64(lines.count - 1))
                lines.swapAt(a, b)
                bytes = Array(lines.joined(separator: [0x0A])) + [0x0A]
            case (3, 2...):
                lines.remove(at: 1 + Int(random.next() % UInt64(lines.count - 1)))
                bytes = Array(lines.joined(separator: [0x0A])) + [0x0A]
            case (4, 2...):
                let at = 1 + Int(random.next() % UInt64(lines.count - 1))
                lines.insert(lines[at], at: at)
                bytes = Array(lines.joined(separator: [0x0A])) + [0x0A]
            default:
                // A forged record with a matching chain: a checkpoint moved back or forth.
                var forged = records(bytes)
                for index in forged.indices {
                    if case .checkpoint(var checkpoint) = forged[index] {
                        checkpoint.ordinal += Int(random.next() % 7) - 3
                        forged[index] = .checkpoint(checkpoint)
                    }
                }
                bytes = encode(forged)
            }
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            do {
                _ = try await fixture.run(manifest, options: options)
                #expect(fixture.read("out/r.csv") == expected, "round \(round): the run went on to other bytes")
                exact += 1
            } catch let error as RunError {
                #expect(error.exitCode == .usage || error.description.contains("is not what its journal says was written")
                        || error.description.contains("is shorter than its journal says"), "round \(round): \(error)")
                refused += 1
            }
        }
        #expect(refused > 0 && exact > 0, "\(refused) refused, \(exact) exact")
    }
}

/// Overlapping runs on one output: a run that waited for the journal's lock while another
/// finished (and removed its journal) locks the journal at the path, not the removed file, so
/// its own journal is where `--retry-failed` finds it.
@Suite(.serialized) struct OverlappingRunTests {
    @Test(.timeLimit(.minutes(1))) func aRunThatWaitedLocksTheJournalAtThePath() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(manifestText(), files: ["d.csv": rows(200)])
        let journal = fixture.dir.path + "/out/r.csv.journal"
        // Run A holds the journal, as a run that is finishing does.
        let holder = try Journal(output: fixture.dir.path + "/out/r.csv",
                                 identity: Journal.Identity(manifest: "a", data: "a", shard: "", output: "a", format: "csv", columns: []),
                                 mode: .fresh)
        let (emulator, options) = try fixture.emulator(for: manifest) {
            $0.faults.failPaths = poisoned
            $0.faults.failStatus = 503
        }
        defer { emulator.stop() }
        let log = fixture.log
        // A finishes as soon as B says it waits: its journal goes (no row failed), then its lock.
        // Done in B's own note, on the thread that waits, so a busy machine cannot let B's wait
        // run out before the test gets to it.
        let finishing = Mutex<Journal?>(holder)
        let runB = Task {
            try await Runner(manifest: manifest, options: options, environment: [:]) { note in
                log.record(note)
                guard case .note(let text) = note, text.contains("is locked by another process") else { return }
                finishing.withLock { held in
                    guard let journalA = held else { return }
                    unlink(journal)
                    journalA.close()
                    held = nil
                }
            }.run()
        }
        let summary = try await runB.value
        #expect(summary.failed == 4 && summary.rows == 200)
        // B's journal, with its failed rows, is the one at the path.
        let bytes = try #require(FileManager.default.contents(atPath: journal))
        let contents = try #require(try JournalCodec.read(Array(bytes)))
        #expect(contents.failedRows.map(\.ordinal) == [7, 50, 51, 120] && contents.ended != nil)
    }
}
