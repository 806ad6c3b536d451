import Foundation
import Testing
import ShowbatchEmulator

/// One `--log-format json` line, parsed.
struct LogLine {
    let text: String
    let object: [String: Any]

    init(_ text: Substring) {
        self.text = String(text)
        object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }

    var event: String { object["event"] as? String ?? "?" }
    var level: String { object["level"] as? String ?? "?" }
    subscript(key: String) -> Any? { object[key] }
}

/// `--metrics` with the times and durations, which change from run to run, replaced by `T`.
private func stable(_ metrics: String) -> String {
    metrics.split(separator: "\n", omittingEmptySubsequences: false).map { line in
        for name in ["showbatch_run_duration_seconds{", "showbatch_last_run_timestamp_seconds{", "showbatch_last_success_timestamp_seconds{"]
        where line.hasPrefix(name) {
            return line.split(separator: " ").dropLast().joined(separator: " ") + " T"
        }
        return String(line)
    }.joined(separator: "\n")
}

private func rows(_ count: Int) -> String {
    "id,alias\n" + (0..<count).map { "\($0),tok_\($0 % 2)" }.joined(separator: "\n") + "\n"
}

private let okManifest = """
vault: tnt1
concurrency: 4
output: {path: out/r.csv}
emulator: {aliases: {tok_0: "4000", tok_1: "4111"}, latency: 2ms}
requests:
  - {name: "r${row.id}", each: {csv: d.csv}, path: /p, payload: {c: "${row.alias}"}, labels: {c: json.c}}
"""

/// One more request, which ends partial: json.nope is not in the answer.
private let manifest = okManifest + "\n  - {name: last, path: /p, payload: {c: tok_0}, labels: {m: json.nope}}\n"

/// What operators read: JSON log lines, `--metrics`, `--report`, and the exit code of a stopped run.
@Suite(.serialized) struct OperatorOutputTests {
    @Test func jsonLogLinesCarryTimeLevelEventAndRunID() async throws {
        let work = Workspace(["m.yaml": manifest, "d.csv": rows(40)])
        defer { work.remove() }
        let result = try await showbatch(["run", "m.yaml", "--emulate", "--log-format", "json", "--progress-every", "1ms"], in: work.path)
        #expect(result.status == 1)  // "last" is partial: json.nope is not in the answer
        let lines = result.stderr.split(separator: "\n").map(LogLine.init)
        #expect(lines.first?.event == "run_started")
        #expect(lines.last?.event == "summary")
        #expect(lines.dropFirst().dropLast().allSatisfy { $0.event == "progress" }, "\(lines.map(\.event))")
        #expect(lines.count >= 3)
        let runIDs = Set(lines.map { $0["run_id"] as? String ?? "" })
        #expect(runIDs.count == 1)
        #expect(runIDs.first?.range(of: "^[0-9a-f]{16}$", options: .regularExpression) != nil)
        for line in lines {
            #expect(line.text.hasPrefix(#"{"ts":""#))
            let ts = line["ts"] as? String ?? ""
            #expect(ts.range(of: #"^20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-6][0-9]\.[0-9]{3}Z$"#, options: .regularExpression) != nil, "\(ts)")
            let keys = line.text.split(separator: ",").prefix(4).map { $0.split(separator: ":").first.map(String.init) ?? "" }
            #expect(keys == [#"{"ts""#, #""level""#, #""event""#, #""run_id""#])
        }
        let started = lines[0]
        #expect(started.level == "info")
        #expect(started["manifest"] as? String == "m.yaml")
        #expect(started["outputs"] as? [String] == ["out/r.csv"])
        #expect(started["rows"] as? Int == 41)
        #expect(started["shard"] is NSNull)
        #expect(started["mode"] as? String == "fresh")
        let progress = lines[lines.count - 2]
        #expect(progress["done"] as? Int == 41 && progress["total"] as? Int == 41)
        #expect(progress["ok"] as? Int == 40 && progress["failed"] as? Int == 0 && progress["retries"] as? Int == 0)
        #expect(progress["requests_per_s"] is NSNumber && progress["elapsed_s"] is NSNumber)
        let summary = lines[lines.count - 1]
        #expect(summary.level == "warning")
        #expect(summary["exit_code"] as? Int == 1)
        #expect(summary["errors_by_code"] as? [String: Int] == ["1403": 1])
        #expect(summary["rows_by_http_status"] as? [String: Int] == ["200": 41])
        #expect(summary["rows_without_answer"] as? Int == 0)
    }

    @Test func anInvalidManifestIsOneJSONLinePerProblem() async throws {
        let work = Workspace(["m.yaml": "vault: tnt1\ntimeout: forever\nrequests: [{name: a, path: /p, headers: {X-Key: sk_secret_1}}]\nbogus: 1\n"])
        defer { work.remove() }
        let result = try await showbatch(["run", "m.yaml", "--emulate", "--log-format", "json"], in: work.path)
        #expect(result.status == 2)
        let lines = result.stderr.split(separator: "\n").map(LogLine.init)
        #expect(lines.map(\.event) == ["invalid", "invalid"])
        #expect(lines.map { "\($0["file"] ?? "-"):\($0["line"] ?? "-"):\($0["column"] ?? "-") \($0["message"] ?? "-")" } == [
            "m.yaml:2:10 timeout must be a positive duration such as 500ms, 30s or 2m; found \"forever\"",
            "m.yaml:4:1 unknown key \"bogus\" in the manifest; expected version, name, vault, environment, data_region, route_id, hostname, hostname_check, hostname_fallback, satellite_port, vault_api, headers, concurrency, rate_limit, max_failed, audit, metrics, resume_max_age, timeout, transport, connections, tls, auth, circuit, retry, output, emulator or requests",
        ])
        #expect(lines.allSatisfy { $0.level == "error" && ($0["run_id"] as? String)?.count == 16 })
        #expect(!result.stderr.contains("sk_secret_1"))
    }

    @Test func metricsAndReportAreWrittenHoweverTheRunEnds() async throws {
        let work = Workspace(["m.yaml": okManifest,
                              "d.csv": rows(6), "bad.yaml": "vault: [\n"])
        defer { work.remove() }
        let ok = try await showbatch(["run", "m.yaml", "--emulate", "--metrics", "m/showbatch.prom", "--report", "m/report.json", "--quiet"], in: work.path)
        #expect(ok.status == 0 && ok.stderr == "")
        let metrics = work.read("m/showbatch.prom") ?? ""
        #expect(stable(metrics) == """
        # HELP showbatch_rows Rows the last run wrote (from the journal included), by status.
        # TYPE showbatch_rows gauge
        showbatch_rows{showbatch_job="m.yaml",status="ok"} 6
        showbatch_rows{showbatch_job="m.yaml",status="partial"} 0
        showbatch_rows{showbatch_job="m.yaml",status="failed"} 0
        # HELP showbatch_rows_replayed Rows the last run took from a journal instead of sending them.
        # TYPE showbatch_rows_replayed gauge
        showbatch_rows_replayed{showbatch_job="m.yaml"} 0
        # HELP showbatch_row_errors Rows of the last run's outputs that hold each error code (after --resume, the earlier run's rows too).
        # TYPE showbatch_row_errors gauge
        # HELP showbatch_rows_by_http_status Rows of the last run's outputs, by the HTTP status of their last attempt (after --resume, the earlier run's rows too).
        # TYPE showbatch_rows_by_http_status gauge
        showbatch_rows_by_http_status{showbatch_job="m.yaml",status="200"} 6
        # HELP showbatch_rows_without_answer Rows of the last run's outputs whose last attempt got no HTTP answer (after --resume, the earlier run's rows too).
        # TYPE showbatch_rows_without_answer gauge
        showbatch_rows_without_answer{showbatch_job="m.yaml"} 0
        # HELP showbatch_retries Attempts beyond the first in the last run.
        # TYPE showbatch_retries gauge
        showbatch_retries{showbatch_job="m.yaml"} 0
        # HELP showbatch_rows_unfinished Work items whose request was under way when the last run stopped or was interrupted (not written; --resume sends them).
        # TYPE showbatch_rows_unfinished gauge
        showbatch_rows_unfinished{showbatch_job="m.yaml"} 0
        # HELP showbatch_requests_resent_after_401 Requests the last run sent again because an answer refused their token.
        # TYPE showbatch_requests_resent_after_401 gauge
        showbatch_requests_resent_after_401{showbatch_job="m.yaml"} 0
        # HELP showbatch_requests_resent_after_429 Requests the last run sent again because the endpoint answered 429 (rate limited).
        # TYPE showbatch_requests_resent_after_429 gauge
        showbatch_requests_resent_after_429{showbatch_job="m.yaml"} 0
        # HELP showbatch_token_renewals Access tokens the last run fetched again.
        # TYPE showbatch_token_renewals gauge
        showbatch_token_renewals{showbatch_job="m.yaml"} 0
        # HELP showbatch_answers_429 Answers 429 (rate limited) the last run got, to requests or Vault API calls.
        # TYPE showbatch_answers_429 gauge
        showbatch_answers_429{showbatch_job="m.yaml"} 0
        # HELP showbatch_run_duration_seconds Wall time of the last run.
        # TYPE showbatch_run_duration_seconds gauge
        showbatch_run_duration_seconds{showbatch_job="m.yaml"} T
        # HELP showbatch_run_exit_code Exit code of the last run (0 ok, 1 rows failed, 2 invalid, 3 error, 4 stopped, 5 undelivered, 6 delivery refused, 130 interrupted).
        # TYPE showbatch_run_exit_code gauge
        showbatch_run_exit_code{showbatch_job="m.yaml"} 0
        # HELP showbatch_max_failed_rows Rows not ok the night may have and still be whole (max_failed, of its rows): 0 means one row not ok keeps the night from the processor.
        # TYPE showbatch_max_failed_rows gauge
        showbatch_max_failed_rows{showbatch_job="m.yaml"} 0
        # HELP showbatch_last_run_timestamp_seconds When the last run ended (Unix time).
        # TYPE showbatch_last_run_timestamp_seconds gauge
        showbatch_last_run_timestamp_seconds{showbatch_job="m.yaml"} T
        # HELP showbatch_last_success_timestamp_seconds When a run last ended with exit 0 (every row ok, or within max_failed) (Unix time).
        # TYPE showbatch_last_success_timestamp_seconds gauge
        showbatch_last_success_timestamp_seconds{showbatch_job="m.yaml"} T

        """)
        let permissions = try FileManager.default.attributesOfItem(atPath: work.path + "/m/showbatch.prom")[.posixPermissions] as? Int
        #expect(permissions == 0o644)
        let success = metrics.split(separator: "\n").first { $0.hasPrefix("showbatch_last_success_timestamp_seconds{") }
        let report = LogLine(Substring(work.read("m/report.json") ?? ""))
        #expect(report["outcome"] as? String == "ok" && report["exit_code"] as? Int == 0 && report["rows"] as? Int == 6)
        #expect(report["outputs"] as? [String] == ["out/r.csv"] && report["error"] is NSNull)
        #expect((report["run_id"] as? String)?.count == 16)

        // A manifest that cannot be read: exit 2, and the metrics say so but keep the last success.
        let bad = try await showbatch(["run", "bad.yaml", "--emulate", "--metrics", "m/showbatch.prom", "--report", "m/report.json"], in: work.path)
        #expect(bad.status == 2)
        let after = work.read("m/showbatch.prom") ?? ""
        #expect(after.contains("showbatch_run_exit_code{showbatch_job=\"bad.yaml\"} 2\n"))
        #expect(after.contains("showbatch_rows{showbatch_job=\"bad.yaml\",status=\"ok\"} 0\n"))
        let kept = after.split(separator: "\n").first { $0.hasPrefix("showbatch_last_success_timestamp_seconds{") }
        #expect(kept?.split(separator: " ").last == success?.split(separator: " ").last && kept != nil)
        let failed = LogLine(Substring(work.read("m/report.json") ?? ""))
        #expect(failed["outcome"] as? String == "invalid" && failed["error"] as? String == "the manifest has 1 problem")
        let folder = try FileManager.default.contentsOfDirectory(atPath: work.path + "/m").sorted()
        #expect(folder == ["report.json", "showbatch.prom"])
    }

    /// The circuit breaker's stop has an exit code of its own, in the log, the metrics and the report.
    @Test func aStoppedRunExitsFour() async throws {
        let stopping = """
        vault: tnt1
        concurrency: 2
        circuit: {failed_rows: 3}
        output: {path: r.csv}
        emulator: {fail_rate: 1, fail_status: 401}
        requests: [{name: "r${row.id}", each: {csv: d.csv}, path: /p}]
        """
        let work = Workspace(["m.yaml": stopping, "d.csv": rows(50)])
        defer { work.remove() }
        let result = try await showbatch(["run", "m.yaml", "--emulate", "--metrics", "s.prom", "--report", "s.json"], in: work.path)
        #expect(result.status == 4)
        #expect(result.stderr.hasSuffix("; stopped: 3 rows in a row failed (the last: 1500 http_status: HTTP 401): the failure is not the rows' but the endpoint's or the credentials' (circuit.failed_rows); outputs left as .partial, rerun with --resume once that is fixed\n"))
        #expect(work.exists("r.csv.partial") && work.exists("r.csv.journal") && !work.exists("r.csv"))
        #expect(work.read("s.prom")?.contains("showbatch_run_exit_code{showbatch_job=\"m.yaml\"} 4\n") == true)
        #expect(work.read("s.prom")?.contains("showbatch_last_success_timestamp_seconds") == false)
        let report = LogLine(Substring(work.read("s.json") ?? ""))
        #expect(report["outcome"] as? String == "stopped" && report["exit_code"] as? Int == 4)
        #expect((report["stopped"] as? String)?.hasPrefix("3 rows in a row failed") == true)
        // The rows that were held (the streak) and in flight are counted, not lost: every work item
        // handed out is written or unfinished.
        let unfinished = report["unfinished"] as? Int ?? -1
        #expect(unfinished >= 3 && (report["rows"] as? Int ?? -1) + unfinished <= 50, "\(unfinished) unfinished")
    }
}

/// `--metrics` and `--report` replace their file whole, so they may never name an input or an
/// output's file; one that cannot be written costs neither the other nor the run's rows.
@Suite(.serialized) struct SideFileTests {
    @Test(arguments: [
        (["--metrics", "m.yaml"], "showbatch: error: --metrics m.yaml is the manifest; give it a path of its own"),
        (["--report", "./m.yaml"], "showbatch: error: --report ./m.yaml is the manifest; give it a path of its own"),
        (["--report", "out/r.csv"], "showbatch: error: --report out/r.csv is a file of the output out/r.csv; give it a path of its own"),
        (["--metrics", "out/r.csv.journal"], "showbatch: error: --metrics out/r.csv.journal is a file of the output out/r.csv; give it a path of its own"),
        (["--metrics", "d.csv"], "showbatch: error: --metrics d.csv is the data file d.csv; give it a path of its own"),
        (["--metrics", "x.prom", "--report", "./x.prom"], "showbatch: error: --metrics and --report name one file, ./x.prom; give each its own"),
        (["--metrics", ""], "showbatch: error: --metrics needs the path of a file; got \"\""),
        (["--report", "reports/"], "showbatch: error: --report needs the path of a file; got \"reports/\""),
    ])
    func aSideFileThatIsAnotherFileIsRefused(flags: [String], message: String) async throws {
        let work = Workspace(["m.yaml": okManifest, "d.csv": rows(3)])
        defer { work.remove() }
        let result = try await showbatch(["run", "m.yaml", "--emulate"] + flags, in: work.path)
        #expect(result.status == 2)
        #expect(result.stderr == message + "\nRun 'showbatch help run' for usage.\n")
        #expect(work.read("m.yaml") == okManifest && work.read("d.csv") == rows(3))
        #expect(!work.exists("out/r.csv") && !work.exists("x.prom"))
    }

    /// A manifest that cannot be read (exit 2) still gets its metrics and report, written
    /// without knowing its inputs: they never replace a file showbatch did not write (the data,
    /// the token file, last night's export), only nothing, an empty file or their own.
    @Test func anUnreadableManifestsMetricsReplaceNoOtherFile() async throws {
        let work = Workspace(["bad.yaml": "vault: [\n", "d.csv": rows(3), "token": "s3cret-token\n", "m.prom": "", "r.json": ""])
        defer { work.remove() }
        let refused = try await showbatch(["run", "bad.yaml", "--emulate", "--metrics", "d.csv", "--report", "token"], in: work.path)
        #expect(refused.status == 2)
        let expected = "showbatch: error: --metrics d.csv holds a file that showbatch did not write (a data file? an output?); it is not replaced: give --metrics a path of its own\n"
            + "showbatch: error: --report token holds a file that showbatch did not write (a data file? an output?); it is not replaced: give --report a path of its own\n"
        #expect(refused.stderr.hasSuffix(expected), "\(refused.stderr)")
        #expect(work.read("d.csv") == rows(3) && work.read("token") == "s3cret-token\n")
        // A JSON Lines export whose first column is run_id starts as a report does: not one.
        let export = "{\"run_id\":\"a\",\"card\":\"4111\"}\n{\"run_id\":\"b\",\"card\":\"4222\"}\n"
        work.write("night.jsonl", export)
        let lookalike = try await showbatch(["run", "bad.yaml", "--emulate", "--report", "night.jsonl"], in: work.path)
        #expect(lookalike.status == 2 && lookalike.stderr.contains("--report night.jsonl holds a file that showbatch did not write"))
        #expect(work.read("night.jsonl") == export)
        // Empty files, and then their own, are replaced.
        for _ in 0..<2 {
            let written = try await showbatch(["run", "bad.yaml", "--emulate", "--metrics", "m.prom", "--report", "r.json"], in: work.path)
            #expect(written.status == 2 && !written.stderr.contains("not replaced"))
            #expect(work.read("m.prom")?.contains("showbatch_run_exit_code{showbatch_job=\"bad.yaml\"} 2\n") == true)
            #expect(LogLine(Substring(work.read("r.json") ?? ""))["exit_code"] as? Int == 2)
        }
    }

    @Test func aMetricsFileThatCannotBeWrittenLeavesTheReport() async throws {
        let work = Workspace(["m.yaml": okManifest, "d.csv": rows(3), "target.txt": "kept\n"])
        defer { work.remove() }
        try FileManager.default.createSymbolicLink(atPath: work.path + "/link.prom", withDestinationPath: "target.txt")
        let result = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--metrics", "link.prom", "--report", "r.json"], in: work.path)
        #expect(result.status == 3)
        #expect(result.stderr == "showbatch: error: link.prom is a symbolic link; showbatch never writes through one: cannot write it\n")
        #expect(work.read("target.txt") == "kept\n")
        #expect(LogLine(Substring(work.read("r.json") ?? ""))["outcome"] as? String == "ok")
        #expect(work.exists("out/r.csv"))
    }
}
