import Foundation
import Testing
import TestSupport
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore

/// A real Prometheus Pushgateway (Debian's prometheus-pushgateway, which `make test` installs) on a
/// free loopback port, in memory only; stopped when the test ends.
private final class Pushgateway: @unchecked Sendable {
    static let binary = "/usr/bin/prometheus-pushgateway"
    let port: Int
    private let process = Process()

    var url: String { "http://127.0.0.1:\(port)" }

    init() throws {
        try requireTool(Self.binary, package: "prometheus-pushgateway")
        port = try freeLoopbackPort()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        // No persistence file: nothing is written outside the test's own process.
        process.arguments = ["--web.listen-address=127.0.0.1:\(port)", "--persistence.file=", "--log.level=error"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Ready when it answers; a bounded wait for start-up, not a timed assertion.
        for _ in 0..<500 {
            if case .success(let answer) = PushClient.send(method: "GET", url: url + "/-/ready", body: nil, timeout: MetricsPush.timeout), answer.status == 200 { return }
            guard process.isRunning else { break }
            usleep(10_000)
        }
        stop()
        throw POSIXError(.ECONNREFUSED)
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    /// The groups the Pushgateway holds (`GET /api/v1/metrics`), by their grouping labels.
    func groups() throws -> [[String: Any]] {
        guard case .success(let answer) = PushClient.send(method: "GET", url: url + "/api/v1/metrics", body: nil, timeout: MetricsPush.timeout), answer.status == 200,
              let object = try JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any],
              let data = object["data"] as? [[String: Any]] else { return [] }
        return data
    }

    /// The group whose grouping labels are `labels`.
    func group(_ labels: [String: String]) throws -> [String: Any]? {
        try groups().first { ($0["labels"] as? [String: String]) == labels }
    }

    /// The samples of `metric` in `group`, as `labels value` lines with the grouping labels left out.
    static func samples(_ metric: String, in group: [String: Any]?) -> [String] {
        let grouping: Set<String> = ["job", "shard", "instance"]
        let metrics = (group?[metric] as? [String: Any])?["metrics"] as? [[String: Any]] ?? []
        return metrics.map { sample in
            let labels = (sample["labels"] as? [String: String] ?? [:]).filter { !grouping.contains($0.key) }
            let text = labels.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
            return "{\(text)} \(sample["value"] as? String ?? "?")"
        }.sorted()
    }
}


private func rows(_ count: Int) -> String {
    "id,alias\n" + (0..<count).map { "\($0),tok_\($0 % 2)" }.joined(separator: "\n") + "\n"
}

/// Every row ok: both aliases are known.
private let okManifest = """
vault: tnt1
output: {path: out/r.csv}
emulator: {aliases: {tok_0: "4000", tok_1: "4111"}}
requests:
  - {name: "r${row.id}", each: {csv: d.csv}, path: /p, payload: {c: "${row.alias}"}, labels: {c: json.c}}
"""

/// tok_1 is unknown and comes back unchanged, which its `expect` refuses: those rows fail (exit 1).
/// Shard 1/2 holds the odd rows, which are all tok_1.
private let failingManifest = """
vault: tnt1
output: {path: out/r.csv}
emulator: {aliases: {tok_0: "4000"}}
requests:
  - {name: "r${row.id}", each: {csv: d.csv}, path: /p, payload: {c: "${row.alias}"}, labels: {c: {path: json.c, expect: {pattern: '\\d+'}}}}
"""

/// `--metrics-push` against a real Pushgateway: the run's metrics arrive in the job's group (the
/// manifest's file name, or its `name` or `metrics.job`), a shard's in the job's and shard's,
/// however the run ends.
@Suite(.serialized) struct MetricsPushTests {
    init() throws {
        try requireTool(Pushgateway.binary, package: "prometheus-pushgateway")
    }

    /// An ok run, then a run of the same manifest and shard with failed rows: the group is replaced,
    /// and it keeps the last success time of the ok run, as `--metrics` keeps it in its file.
    @Test func okAndFailedRunsArePushedToTheirGroup() async throws {
        let gateway = try Pushgateway()
        defer { gateway.stop() }
        let work = Workspace(["jobs/nightly.yaml": okManifest, "jobs/d.csv": rows(6)])
        defer { work.remove() }
        let flags = ["--emulate", "--quiet", "--shard", "1/2", "--metrics-push", gateway.url + "/"]
        let ok = try await showbatch(["run", "jobs/nightly.yaml"] + flags, in: work.path)
        #expect(ok.status == 0 && ok.stderr == "")
        // The job is the manifest's file name; the shard has a `/`, which goes in the Pushgateway's base64 form.
        let labels = ["job": "nightly.yaml", "shard": "1/2"]
        let first = try gateway.group(labels)
        let held = try gateway.groups().map { $0["labels"] ?? "?" }
        #expect(first != nil, "groups: \(held)")
        #expect(Pushgateway.samples("showbatch_rows", in: first) == ["{status=failed} 0", "{status=ok} 3", "{status=partial} 0"])
        #expect(Pushgateway.samples("showbatch_run_exit_code", in: first) == ["{} 0"])
        #expect(Pushgateway.samples("showbatch_rows_by_http_status", in: first) == ["{status=200} 3"])
        let success = Pushgateway.samples("showbatch_last_success_timestamp_seconds", in: first)
        #expect(success.count == 1)
        // Every series the metrics file has is pushed.
        for metric in ["showbatch_rows_replayed", "showbatch_rows_without_answer", "showbatch_retries", "showbatch_run_duration_seconds",
                       "showbatch_last_run_timestamp_seconds"] {
            #expect(Pushgateway.samples(metric, in: first).count == 1, "\(metric)")
        }

        work.write("jobs/nightly.yaml", failingManifest)
        let failed = try await showbatch(["run", "jobs/nightly.yaml"] + flags, in: work.path)
        #expect(failed.status == 1)
        let second = try gateway.group(labels)
        #expect(Pushgateway.samples("showbatch_run_exit_code", in: second) == ["{} 1"])
        #expect(Pushgateway.samples("showbatch_rows", in: second) == ["{status=failed} 3", "{status=ok} 0", "{status=partial} 0"])
        #expect(Pushgateway.samples("showbatch_row_errors", in: second) == ["{code=1408,kind=not_revealed} 3"])
        // The Pushgateway writes numbers its own way; the time is the same.
        func seconds(_ lines: [String]) -> [Double] { lines.compactMap { $0.split(separator: " ").last.flatMap { Double($0) } } }
        let kept = seconds(Pushgateway.samples("showbatch_last_success_timestamp_seconds", in: second))
        #expect(kept.count == 1 && abs((kept.first ?? 0) - (seconds(success).first ?? -1)) < 0.001)
        #expect(try gateway.groups().count == 1)
    }

    /// A run that SIGINT or SIGTERM interrupts (130) is pushed too: only a signal that comes
    /// after it, while the push is made, gives the push up.
    @Test func anInterruptedRunIsPushed() async throws {
        let gateway = try Pushgateway()
        defer { gateway.stop() }
        let slow = okManifest.replacingOccurrences(of: "emulator: {", with: "concurrency: 2\nemulator: {latency: 20ms, ")
        let work = Workspace(["m.yaml": slow, "d.csv": rows(400)])
        defer { work.remove() }
        let result = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--metrics-push", gateway.url], in: work.path) { folder in
            ((try? FileManager.default.attributesOfItem(atPath: folder + "/out/r.csv.partial")[.size] as? Int) ?? 0) > 0
        }
        #expect(result.status == 130, "\(result.stderr)")
        #expect(!result.stderr.contains("not pushed"), "\(result.stderr)")
        let group = try gateway.group(["job": "m.yaml"])
        #expect(Pushgateway.samples("showbatch_run_exit_code", in: group) == ["{} 130"])
    }

    /// An invalid manifest (exit 2) is pushed too, to the group of its file name.
    @Test func anInvalidManifestIsPushed() async throws {
        let gateway = try Pushgateway()
        defer { gateway.stop() }
        let work = Workspace(["bad.yaml": "vault: [\n"])
        defer { work.remove() }
        let result = try await showbatch(["run", "bad.yaml", "--emulate", "--metrics-push", gateway.url], in: work.path)
        #expect(result.status == 2)
        let group = try gateway.group(["job": "bad.yaml"])
        #expect(Pushgateway.samples("showbatch_run_exit_code", in: group) == ["{} 2"])
        #expect(Pushgateway.samples("showbatch_rows", in: group) == ["{status=failed} 0", "{status=ok} 0", "{status=partial} 0"])
        #expect(Pushgateway.samples("showbatch_last_success_timestamp_seconds", in: group) == [])
    }

    /// Three spellings of one manifest's path are one job: a run by hand refreshes the group the
    /// scheduled run pushes, and `name:` names the job instead of the file.
    @Test func onePathSpelledThreeWaysIsOneGroup() async throws {
        let gateway = try Pushgateway()
        defer { gateway.stop() }
        let work = Workspace(["jobs/m.yaml": okManifest, "jobs/d.csv": rows(2)])
        defer { work.remove() }
        for path in ["jobs/m.yaml", "./jobs/m.yaml", work.path + "/jobs/m.yaml"] {
            let run = try await showbatch(["run", path, "--emulate", "--quiet", "--metrics-push", gateway.url], in: work.path)
            #expect(run.status == 0, "\(run.stderr)")
        }
        #expect(try gateway.groups().compactMap { $0["labels"] as? [String: String] } == [["job": "m.yaml"]])
        work.write("jobs/m.yaml", "name: nightly-cards\n" + okManifest)
        let named = try await showbatch(["run", "jobs/m.yaml", "--emulate", "--quiet", "--metrics-push", gateway.url], in: work.path)
        #expect(named.status == 0)
        #expect(try gateway.group(["job": "nightly-cards"]) != nil)
    }

    /// The merge pushes to the job's group, as an unsharded run does: a merge that fails is seen
    /// failing there, while the shards' groups say they succeeded; its last success is kept.
    /// A night whose delivery failed (exit 5) and that a person then delivers by hand: the
    /// delivery pushes into the night's group, and its exit 0 and success time clear the alerts
    /// at once; its report says what was delivered.
    @Test func aHandDeliveryIsPushedToTheNightsGroup() async throws {
        let gateway = try Pushgateway()
        let server = try SFTPServer()
        let work = Workspace(["m.yaml": """
        vault: tnt1
        output:
          path: "out/c-${run.date}.csv"
          deliver: {sftp: "${SB_SFTP_URL}", user: "${SB_SFTP_USER}", key_file: "${SB_SFTP_KEY}", known_hosts: "${SB_KNOWN_HOSTS}"}
        emulator: {aliases: {tok_0: "4111111111111111", tok_1: "4111111111111111", tok_2: "4111111111111111", tok_3: "4111111111111111"}}
        requests: [{name: "r${row.id}", each: {csv: d.csv}, path: /post, payload: {c: "${row.alias}"}, labels: {card: json.c}}]
        """, "d.csv": rows(4)])
        defer { gateway.stop(); server.remove(); work.remove() }
        func environment() -> [String: String] {
            ["SB_SFTP_URL": server.url, "SB_SFTP_USER": server.user, "SB_SFTP_KEY": server.clientKey, "SB_KNOWN_HOSTS": server.knownHosts]
        }
        server.stop()
        let run = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--date", "2026-11-20", "--metrics-push", gateway.url],
                                      in: work.path, environment: environment())
        #expect(run.status == 5)
        #expect(Pushgateway.samples("showbatch_run_exit_code", in: try gateway.group(["job": "m.yaml"])) == ["{} 5"])
        try server.start()
        // Back, on a new port (as after a failover).
        let deliver = try await showbatch(["deliver", "m.yaml", "--date", "2026-11-20", "--metrics-push", gateway.url, "--report", "deliver.json"],
                                          in: work.path, environment: environment())
        #expect(deliver.status == 0, "\(deliver.stderr)")
        let group = try gateway.group(["job": "m.yaml"])
        #expect(Pushgateway.samples("showbatch_run_exit_code", in: group) == ["{} 0"])
        #expect(Pushgateway.samples("showbatch_rows", in: group) == ["{status=failed} 0", "{status=ok} 4", "{status=partial} 0"])
        #expect(Pushgateway.samples("showbatch_last_success_timestamp_seconds", in: group).count == 1)
        let report = try #require(work.read("deliver.json"))
        #expect(report.contains("\"exit_code\":0") && report.contains("\"result\":\"delivered\""), "\(report)")
    }

    @Test func aMergeIsPushedToTheJobsGroup() async throws {
        let gateway = try Pushgateway()
        defer { gateway.stop() }
        let work = Workspace(["m.yaml": okManifest, "d.csv": rows(4)])
        defer { work.remove() }
        for shard in 0..<2 {
            let run = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--shard", "\(shard)/2", "--metrics-push", gateway.url], in: work.path)
            #expect(run.status == 0)
        }
        let merge = try await showbatch(["merge", "m.yaml", "--shards", "2", "--quiet", "--metrics-push", gateway.url, "--keep-shards"], in: work.path)
        #expect(merge.status == 0, "\(merge.stderr)")
        let merged = try gateway.group(["job": "m.yaml"])
        #expect(Pushgateway.samples("showbatch_run_exit_code", in: merged) == ["{} 0"])
        #expect(Pushgateway.samples("showbatch_rows", in: merged) == ["{status=failed} 0", "{status=ok} 4", "{status=partial} 0"])
        let success = Pushgateway.samples("showbatch_last_success_timestamp_seconds", in: merged)
        #expect(success.count == 1)
        // The data file changed after the shards ran: the merge refuses (exit 2), and says so there.
        work.write("d.csv", rows(5))
        let failed = try await showbatch(["merge", "m.yaml", "--shards", "2", "--metrics-push", gateway.url, "--report", "merge.json"], in: work.path)
        #expect(failed.status == 2)
        let after = try gateway.group(["job": "m.yaml"])
        #expect(Pushgateway.samples("showbatch_run_exit_code", in: after) == ["{} 2"])
        #expect(Pushgateway.samples("showbatch_last_success_timestamp_seconds", in: after) == success)
        #expect(work.read("merge.json")?.contains("\"exit_code\":2") == true)
        for shard in ["0/2", "1/2"] {
            #expect(Pushgateway.samples("showbatch_run_exit_code", in: try gateway.group(["job": "m.yaml", "shard": shard])) == ["{} 0"])
        }
    }

    /// A push that cannot be made is a warning and the run's own code stands (a Job that saw 3
    /// would run the finished night again); the rows are written all the same.
    @Test func aPushThatFailsIsAWarning() async throws {
        let gateway = try Pushgateway()
        let url = gateway.url
        gateway.stop()  // nothing listens there now
        let work = Workspace(["m.yaml": okManifest, "d.csv": rows(2), "bad.yaml": "vault: [\n"])
        defer { work.remove() }
        let ok = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--metrics-push", url], in: work.path)
        #expect(ok.status == 0)
        let port = url.split(separator: ":").last ?? ""
        let steady = ok.stderr.replacingOccurrences(of: #"after [0-9]+ ms"#, with: "after N ms", options: .regularExpression)
        #expect(steady == "showbatch: warning: cannot push the metrics to \(url): connection refused (curl: Failed to connect to 127.0.0.1 port \(port) after N ms: Couldn't connect to server); the run's exit code stands\n")
        #expect(work.exists("out/r.csv"))
        let bad = try await showbatch(["run", "bad.yaml", "--emulate", "--metrics-push", url], in: work.path)
        #expect(bad.status == 2)
    }

    /// A Pushgateway address with a token in its path is quoted by its scheme and host only.
    @Test func aPushWarningNeverQuotesTheURLsPath() async throws {
        let gateway = try Pushgateway()
        let url = gateway.url
        gateway.stop()  // nothing listens there now
        let work = Workspace(["m.yaml": okManifest, "d.csv": rows(2)])
        defer { work.remove() }
        let result = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--metrics-push", url + "/push/sbtestPUSHTOKEN"], in: work.path)
        #expect(result.status == 0)
        #expect(result.stderr.hasPrefix("showbatch: warning: cannot push the metrics to \(url): connection refused"))
        #expect(!result.stderr.contains("sbtestPUSHTOKEN"))
    }
}
