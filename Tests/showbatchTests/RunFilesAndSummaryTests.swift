import Foundation
import Testing

/// A night of 10 customers whose rows 2 and 6 carry an alias the vault does not know: they fail
/// (1408, not revealed) and go to the rejects file. `circuit` is added to the manifest.
private func night(latency: String = "1ms") -> String {
    """
    vault: tnt1
    concurrency: 1
    retry: {attempts: 1}
    output: {path: out/cards.csv, rejects: out/rejects.csv}
    emulator: {aliases: {tok_0: "4000000000000002", tok_1: "4111111111111111"}, latency: \(latency)}
    requests:
      - {name: "r${row.id}", each: {csv: d.csv}, path: /p, payload: {c: "${row.alias}"}, labels: {card: json.c}}
    """
}

private func customers(_ count: Int = 10) -> String {
    "id,alias\n" + (0..<count).map { $0 % 4 == 2 ? "\($0),tok_9" : "\($0),tok_\($0 % 2)" }.joined(separator: "\n") + "\n"
}

/// The first word of each line of a CSV file (its request column), header included: no card number.
private func requests(_ text: String?) -> [String] {
    (text ?? "").split(separator: "\n").map { String($0.split(separator: ",", omittingEmptySubsequences: false)[0]) }
}

/// The JSON log lines of `run` that are `event`.
private func events(_ run: Execution, _ event: String) -> [LogLine] {
    run.stderr.split(separator: "\n").map(LogLine.init).filter { $0.event == event }
}

private let message1408 = "label card: not revealed: the value is one the request sent (an unknown alias comes back unchanged)"

@Suite(.serialized) struct RunFilesAndSummaryTests {
    // MARK: A canary or a test run never replaces the night's files

    @Test func aCanaryWritesItsOwnFolderAndLeavesTheNightsFilesAlone() async throws {
        let work = Workspace(["m.yaml": night(), "d.csv": customers()])
        defer { work.remove() }
        let full = try await showbatch(["run", "m.yaml", "--emulate"], in: work.path)
        #expect(full.status == 1)
        let cards = work.read("out/cards.csv"), rejects = work.read("out/rejects.csv"), journal = work.read("out/cards.csv.journal")
        #expect(requests(cards) == ["request", "r0", "r1", "r3", "r4", "r5", "r7", "r8", "r9"])
        #expect(requests(rejects) == ["request", "r2", "r6"])

        let canary = try await showbatch(["run", "m.yaml", "--emulate", "--limit", "4"], in: work.path)
        #expect(canary.status == 1)
        let untouched = work.read("out/cards.csv") == cards && work.read("out/rejects.csv") == rejects && work.read("out/cards.csv.journal") == journal
        #expect(untouched, "the canary changed a file of the night (compared here: a failure prints no row)")
        #expect(requests(work.read("out/canary/cards.csv")) == ["request", "r0", "r1", "r3"])
        #expect(requests(work.read("out/canary/rejects.csv")) == ["request", "r2"])
        #expect(work.exists("out/canary/cards.csv.journal"))
        let files = try FileManager.default.contentsOfDirectory(atPath: work.path + "/out").sorted()
        #expect(files == ["canary", "cards.csv", "cards.csv.journal", "rejects.csv"])
        #expect(canary.stderr.contains("; wrote out/canary/cards.csv, out/canary/rejects.csv (rejects: 1 row)\n"), "\(canary.stderr)")
    }

    @Test func anOutputFlagTakesTheRejectsFileWithIt() async throws {
        let work = Workspace(["m.yaml": night(), "d.csv": customers()])
        defer { work.remove() }
        let full = try await showbatch(["run", "m.yaml", "--emulate"], in: work.path)
        #expect(full.status == 1)
        let rejects = work.read("out/rejects.csv")
        let test = try await showbatch(["run", "m.yaml", "--emulate", "--output", "out/test.csv", "--limit", "3"], in: work.path)
        #expect(test.status == 1)
        let untouched = work.read("out/rejects.csv") == rejects
        #expect(untouched, "--output rewrote the manifest's rejects file")
        #expect(requests(work.read("out/test.csv")) == ["request", "r0", "r1"])
        #expect(requests(work.read("out/test.rejects.csv")) == ["request", "r2"])
        #expect(work.exists("out/test.csv.journal") && !work.exists("out/canary"))
    }

    @Test func anOutputFlagBesideTheNightsLabelFilesIsRefusedAndACanaryWritesThemInItsFolder() async throws {
        let manifest = """
        vault: tnt1
        output: {path: out/scans.csv}
        emulator: {aliases: {tok_1: "\(Data("%PDF-1".utf8).base64EncodedString())"}}
        requests:
          - {name: "s${row.id}", each: {csv: d.csv}, path: /p, payload: {d: "${row.alias}"},
             labels: {document: {path: json.d, decode: base64, file: "pdf/${row.id}.pdf"}}}
        """
        let work = Workspace(["m.yaml": manifest, "d.csv": "id,alias\n1,tok_1\n2,tok_1\n"])
        defer { work.remove() }
        let refused = try await showbatch(["run", "m.yaml", "--emulate", "--output", "out/test.csv"], in: work.path)
        #expect(refused.status == 2)
        #expect(refused.stderr == "showbatch: error: --output out/test.csv is in the folder of the manifest's output out/scans.csv, whose binary labels' files (file:) it would replace; give --output a path in another folder\n")
        #expect(!work.exists("out"))
        let canary = try await showbatch(["run", "m.yaml", "--emulate", "--limit", "1", "--report", "report.json"], in: work.path)
        #expect(canary.status == 0, "\(canary.stderr)")
        #expect(work.exists("out/canary/pdf/1.pdf") && !work.exists("out/canary/pdf/2.pdf") && !work.exists("out/pdf"))
        let report = LogLine(Substring(work.read("report.json") ?? ""))
        #expect(report["outputs"] as? [String] == ["out/canary/scans.csv", "out/canary/pdf/${row.id}.pdf"])
    }

    // MARK: A rerun of a finished night says so

    @Test func aRerunOfAFinishedNightSaysSoSendsNothingAndCountsNoRate() async throws {
        let work = Workspace(["m.yaml": night(), "d.csv": customers()])
        defer { work.remove() }
        let full = try await showbatch(["run", "m.yaml", "--emulate"], in: work.path)
        #expect(full.status == 1)
        let rerun = try await showbatch(["run", "m.yaml", "--emulate", "--resume=auto", "--log-format", "json", "--verbose"], in: work.path)
        #expect(rerun.status == 1)
        let warning = try #require(events(rerun, "warning").first?["message"] as? String)
        #expect(warning.hasPrefix("out/cards.csv was already finished at 20"))
        #expect(warning.hasSuffix(": nothing is sent for it; 2 failed rows: --retry-failed sends them"))
        #expect(events(rerun, "attempt").isEmpty)
        let started = try #require(events(rerun, "run_started").first)
        let modes = started["output_modes"] as? [[String: Any]]
        #expect(modes?.first?["mode"] as? String == "finished")
        let summary = try #require(events(rerun, "summary").first)
        #expect(summary["requests_per_s"] as? Double == 0 && summary["replayed"] as? Int == 10)
        #expect(summary["errors_by_code"] as? [String: Int] == ["1408": 2])
    }

    // MARK: An exit-1 summary says why, where and what next

    @Test func anExitOneSummaryNamesTheErrorsTheRejectsFileAndTheNextCommand() async throws {
        let work = Workspace(["m.yaml": night(), "d.csv": customers()])
        defer { work.remove() }
        for flags in [[], ["--quiet"]] {
            let run = try await showbatch(["run", "m.yaml", "--emulate"] + flags, in: work.path)
            #expect(run.status == 1)
            let lines = run.stderr.split(separator: "\n").map(String.init)
            #expect(lines.count == 3, "\(run.stderr)")
            #expect(lines.first?.hasPrefix("showbatch: 10 rows: 8 ok, 0 partial, 2 failed; 0 retries; ") == true)
            #expect(lines.first?.hasSuffix("; wrote out/cards.csv, out/rejects.csv (rejects: 2 rows)") == true)
            #expect(Array(lines.dropFirst()) == ["showbatch: 1408 not_revealed: 2 rows, the first: " + message1408,
                                                 "showbatch: next: showbatch run m.yaml --retry-failed --emulate sends the 2 failed rows again"])
        }
        let report = try await showbatch(["run", "m.yaml", "--emulate", "--report", "r.json", "--quiet"], in: work.path)
        #expect(report.status == 1)
        let written = LogLine(Substring(work.read("r.json") ?? ""))
        #expect(written["outputs"] as? [String] == ["out/cards.csv", "out/rejects.csv"])
        let rejects = (written["rejects"] as? [[String: Any]] ?? []).map { "\($0["path"] as? String ?? "?") \($0["rows"] as? Int ?? -1)" }
        #expect(rejects == ["out/rejects.csv 2"])
        #expect(written["first_error_messages"] as? [String: String] == ["1408": message1408])
        // Exit 0 under --quiet prints nothing still.
        work.write("d.csv", "id,alias\n1,tok_1\n")
        let ok = try await showbatch(["run", "m.yaml", "--emulate", "--quiet"], in: work.path)
        #expect(ok.status == 0 && ok.stderr == "")
    }

    @Test func runStartedSaysEachOutputsModeAndWhy() async throws {
        let work = Workspace(["m.yaml": night(), "d.csv": customers()])
        defer { work.remove() }
        func mode(_ run: Execution) -> [String?] {
            let modes = events(run, "run_started").first?["output_modes"] as? [[String: Any]] ?? []
            return modes.flatMap { [$0["output"] as? String, $0["mode"] as? String, $0["reason"] as? String] }
        }
        let fresh = try await showbatch(["run", "m.yaml", "--emulate", "--log-format", "json"], in: work.path)
        #expect(mode(fresh) == ["out/cards.csv", "fresh", nil])
        let retried = try await showbatch(["run", "m.yaml", "--emulate", "--retry-failed", "--log-format", "json"], in: work.path)
        #expect(mode(retried) == ["out/cards.csv", "retried", "2 failed rows are sent again"])
        work.write("d.csv", customers(11))
        let restarted = try await showbatch(["run", "m.yaml", "--emulate", "--resume=auto", "--log-format", "json"], in: work.path)
        #expect(mode(restarted) == ["out/cards.csv", "restarted", "its journal does not match this run: the content of a data file changed since"])
    }

    /// The interrupt is sent once the output's `.partial` file holds 20 rows (a checkpoint wrote
    /// them: the resume has rows to go on from), by a thread of the test's own (`Child`), not
    /// after a time. Checkpoints come once a second, so that is after about 40 rows were sent:
    /// of the 400 rows at 50 ms each (concurrency 1), 360 or so, 18 s at the least, are still to
    /// go, however loaded the machine. The resume sends them at 1 ms: the emulator's latency is
    /// no part of what a journal is valid for.
    @Test(.timeLimit(.minutes(1))) func errorsByCodeCountTheWholeOutputAfterAResume() async throws {
        let work = Workspace(["m.yaml": night(latency: "50ms"), "d.csv": customers(400)])
        defer { work.remove() }
        let partial = work.path + "/out/cards.csv.partial"
        let interrupted = try Child(["run", "m.yaml", "--emulate"], in: work.path, signalWhen: (condition: { _ in
            // The header and 20 rows.
            (FileManager.default.contents(atPath: partial) ?? Data()).count { $0 == UInt8(ascii: "\n") } >= 21
        }, number: SIGINT))
        let (status, _) = await interrupted.finish()
        try #require(interrupted.signalled, "the run ended before its output held 20 rows: \(interrupted.errors)")
        #expect(status == 130)
        work.write("m.yaml", night(latency: "1ms"))
        let resumed = try await showbatch(["run", "m.yaml", "--emulate", "--resume", "--log-format", "json"], in: work.path)
        #expect(resumed.status == 1)
        let summary = try #require(events(resumed, "summary").first)
        let replayed = summary["replayed"] as? Int ?? 0
        #expect(replayed > 0, "the run was interrupted before a checkpoint; nothing was resumed")
        #expect(events(resumed, "run_started").first.flatMap { ($0["output_modes"] as? [[String: Any]])?.first?["mode"] as? String } == "resumed")
        // Every fourth customer's alias is unknown: 100 of 400 rows fail, whichever run sent them.
        #expect(summary["errors_by_code"] as? [String: Int] == ["1408": 100])
        #expect(summary["rows_by_http_status"] as? [String: Int] == ["200": 400])
        #expect(requests(work.read("out/rejects.csv")).count == 101)
    }
}
