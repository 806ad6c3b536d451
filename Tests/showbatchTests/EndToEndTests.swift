import Foundation
import Synchronization
import Testing
import ShowbatchEmulator

/// The result of running the built `showbatch` executable.
struct Execution {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// The `showbatch` executable built next to the test bundle.
let binary: String = {
    let bundle = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    return (bundle as NSString).deletingLastPathComponent + "/showbatch"
}()

/// Runs showbatch with `arguments` in `directory`; `interruptAfter` sends SIGINT after that long.
func showbatch(_ arguments: [String], in directory: String, environment: [String: String] = [:], shell: Bool = false,
               interrupt: (@Sendable (String) -> Bool)? = nil) async throws -> Execution {
    // On a thread of its own: waiting for a child on the task pool would starve every other test
    // of the pool's few threads (two on a 2-core machine) for as long as the child runs.
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Execution, any Error>) in
        Thread {
            continuation.resume(with: Result {
                try runShowbatch(arguments, in: directory, environment: environment, shell: shell, interrupt: interrupt)
            })
        }.start()
    }
}

/// Waits, without holding a thread of the task pool, until `process` has ended.
func exited(_ process: Process) async {
    while process.isRunning { try? await Task.sleep(for: .milliseconds(5)) }
}

private func runShowbatch(_ arguments: [String], in directory: String, environment: [String: String], shell: Bool,
                          interrupt: (@Sendable (String) -> Bool)?) throws -> Execution {
    let process = Process()
    // With `shell`, the arguments are given to /bin/sh (to set a limit before showbatch starts).
    process.executableURL = URL(fileURLWithPath: shell ? "/bin/sh" : binary)
    process.arguments = arguments
    process.currentDirectoryURL = URL(fileURLWithPath: directory)
    var env = ProcessInfo.processInfo.environment
    env.removeValue(forKey: "JOB_COMPLETION_INDEX")
    for (key, value) in environment { env[key] = value }
    process.environment = env
    let outPipe = Pipe(), errPipe = Pipe()
    process.standardOutput = outPipe
    process.standardError = errPipe
    process.standardInput = FileHandle.nullDevice
    try process.run()
    if let interrupt {
        // Poll the work folder until the condition holds, then interrupt.
        let deadline = Date().addingTimeInterval(30)
        while process.isRunning && Date() < deadline && !interrupt(directory) { usleep(2_000) }
        if process.isRunning { kill(process.processIdentifier, SIGINT) }
    }
    // Both pipes are read at once: a child that fills one while the other is being read to its
    // end would otherwise wait forever.
    let errData = Mutex(Data())
    let errRead = DispatchSemaphore(value: 0)
    Thread {
        let data = errPipe.fileHandleForReading.readDataToEndOfFile()
        errData.withLock { $0 = data }
        errRead.signal()
    }.start()
    let out = outPipe.fileHandleForReading.readDataToEndOfFile()
    errRead.wait()
    let err = errData.withLock { $0 }
    process.waitUntilExit()
    return Execution(status: process.terminationStatus, stdout: String(decoding: out, as: UTF8.self), stderr: String(decoding: err, as: UTF8.self))
}

/// A private work folder with files.
struct Workspace {
    let path: String

    init(_ files: [String: String] = [:]) {
        path = FileManager.default.temporaryDirectory.path + "/showbatch-e2e-" + UUID().uuidString
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        for (name, text) in files { write(name, text) }
    }

    func write(_ name: String, _ text: String) { write(name, Data(text.utf8)) }

    func write(_ name: String, _ data: Data) {
        let full = path + "/" + name
        try! FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try! data.write(to: URL(fileURLWithPath: full))
    }

    func read(_ name: String) -> String? {
        FileManager.default.contents(atPath: path + "/" + name).map { String(decoding: $0, as: UTF8.self) }
    }

    func exists(_ name: String) -> Bool { FileManager.default.fileExists(atPath: path + "/" + name) }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// The repository root (tests run from it under `swift test`).
let repository = FileManager.default.currentDirectoryPath

private let demoManifest = """
vault: tnt1
headers: {Authorization: "Bearer ${SB_TEST_TOKEN}"}
output: {path: out/r.csv}
emulator:
  aliases: {tok_card: "4111111111111111"}
requests:
  - name: one
    path: /post
    payload: {card: tok_card, note: "payload-secret-note"}
    labels: {card: {path: json.card, mask: {ranges: [[0, 11]]}}}
  - name: two
    path: post?x=1
    headers: {X-Request-Id: "2"}
    payload: {card: tok_card}
    labels: {card: json.card, missing: json.nope}
"""

@Suite(.serialized) struct EndToEndTests {
    let env = ["SB_TEST_TOKEN": "sk_header_secret_value"]

    @Test func versionAndHelp() async throws {
        let version = try await showbatch(["--version"], in: repository)
        #expect(version.status == 0 && version.stdout == "showbatch 0.1.0\n")
        let help = try await showbatch(["help", "run"], in: repository)
        #expect(help.status == 0 && help.stdout.hasPrefix("usage: showbatch run MANIFEST [options]\n"))
        let bad = try await showbatch(["rnu"], in: repository)
        #expect(bad.status == 2 && bad.stderr == "showbatch: error: unknown command \"rnu\"; did you mean \"run\"?\nRun 'showbatch help' for usage.\n")
    }

    @Test func validateTheSamples() async throws {
        let result = try await showbatch(["validate", "samples/nightly-card-export.yaml", "samples/nightly-rows.yaml", "samples/vault-api-night.yaml"],
                                         in: repository, environment: ["VGS_CLIENT_SECRET": "any"])
        #expect(result.stderr == "")
        #expect(result.status == 0)
        #expect(result.stdout == """
        samples/nightly-card-export.yaml: ok (3 requests)
        samples/nightly-rows.yaml: ok (1 request, 40 data rows)
        samples/vault-api-night.yaml: ok (1 request, 40 data rows; 40 rows, 80 aliases: 4 Vault API calls of up to 20 aliases)

        """)
    }

    @Test func theDemoPrintsRevealedRows() async throws {
        let work = Workspace()
        defer { work.remove() }
        let result = try await showbatch(["run", repository + "/samples/nightly-card-export.yaml", "--emulate", "--output", "-"], in: work.path)
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("request,status,http_status,attempts,error,card_number,last4,exp_date,holder,wallet_json\ncustomer-1001,ok,200,1,,4111 1111 1111 1111,************1111,12/2030,Ada Lovelace,\n"))
        #expect(result.stdout.split(separator: "\n").count == 4)
    }

    /// The Vault API sample runs on the emulator as its first lines say: 40 rows in 4 calls.
    @Test func theVaultAPISampleRunsOnTheEmulator() async throws {
        let work = Workspace(["m.yaml": try String(contentsOfFile: repository + "/samples/vault-api-night.yaml", encoding: .utf8)])
        defer { work.remove() }
        try FileManager.default.createDirectory(atPath: work.path + "/data", withIntermediateDirectories: true)
        for name in ["customers.csv", "emulator-aliases.csv"] {
            try FileManager.default.copyItem(atPath: repository + "/samples/data/" + name, toPath: work.path + "/data/" + name)
        }
        let run = try await showbatch(["run", "m.yaml", "--emulate", "--date", "2026-12-04", "--progress", "never"], in: work.path,
                                      environment: ["VGS_CLIENT_SECRET": "any"])
        #expect(run.status == 0, "\(run.stderr)")
        // 80 aliases in 4 calls, or a few more when a loaded machine feeds rows slower than a call
        // waits for them.
        let calls = run.stderr.firstMatch(of: /; (\d+) Vault API calls;/).flatMap { Int($0.1) }
        #expect(run.stderr.contains("40 rows: 40 ok, 0 partial, 0 failed") && (4...8).contains(calls ?? 0), "\(run.stderr)")
        let lines = try #require(work.read("out/vault-api-cards-20261204.csv")).split(separator: "\n")
        #expect(lines.count == 41 && lines[0] == "customer,card_number,exp_date" && lines[1] == "1001,4206423017203686,02/2033")
        #expect(work.read("out/vault-api-cards-20261204.rejects.csv") == "request,status,http_status,attempts,error,id,card_alias,exp_alias\n")
    }

    /// The README's quick-start manifest validates, and runs locally as it says.
    @Test func theReadmeExampleValidates() async throws {
        let readme = try String(contentsOfFile: repository + "/README.md", encoding: .utf8)
        let start = try #require(readme.range(of: "```yaml\n"))
        let end = try #require(readme.range(of: "```\n", range: start.upperBound..<readme.endIndex))
        let work = Workspace(["m.yaml": String(readme[start.upperBound..<end.lowerBound]),
                              "data/customers.csv": "id,card_alias,exp_alias\n1,tok_card_1,tok_exp_1\n"])
        defer { work.remove() }
        let result = try await showbatch(["validate", "m.yaml"], in: work.path, environment: ["REVEAL_TOKEN": "t"])
        #expect(result.stderr == "")
        #expect(result.stdout == "m.yaml: ok (1 request, 1 data row)\n")
        let run = try await showbatch(["run", "m.yaml", "--emulate", "--date", "2026-12-04"], in: work.path, environment: ["REVEAL_TOKEN": "t"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(work.read("out/cards-20261204.csv") == "customer,card_number,exp_date\n1,4111111111111111,12/2030\n")
    }

    @Test func validateReportsAllProblemsOfAllFiles() async throws {
        let work = Workspace(["a.yaml": "vault: tnt1\nenvironment: sandox\nconcurency: 2\nrequests: [{name: a, path: /p}]\n",
                              "b.yaml": minimalValid])
        defer { work.remove() }
        let result = try await showbatch(["validate", "a.yaml", "b.yaml"], in: work.path)
        #expect(result.status == 2)
        #expect(result.stdout == "b.yaml: ok (1 request)\n")
        #expect(result.stderr == """
        a.yaml:2:14: error: environment "sandox" is not valid; expected sandbox, live or live-<region>
          environment: sandox
                       ^
        a.yaml:3:1: error: unknown key "concurency" in the manifest; did you mean "concurrency"?
          concurency: <redacted>
          ^
        a.yaml: 2 problems

        """)
    }

    @Test func planPrintsURLsAndRedactsHeaders() async throws {
        let work = Workspace(["m.yaml": demoManifest, "d.csv": "id\n1\n2\n3\n4\n5\n"])
        defer { work.remove() }
        let text = try await showbatch(["plan", "m.yaml"], in: work.path, environment: env)
        #expect(text.status == 0)
        #expect(text.stdout == """
        base_url: https://tnt1.sandbox.verygoodproxy.com
        POST https://tnt1.sandbox.verygoodproxy.com/post one
        POST https://tnt1.sandbox.verygoodproxy.com/post?x=1 two
        pace: 200/m (VGS's documented reveal proxy limit, sandbox; not under --emulate or --base-url)
        headers: Authorization: <secret>, Content-Type: application/json, vgs-client: source=showbatch&medium=vgs-show&content=0.1.0
        output: out/r.csv (columns: request, status, http_status, attempts, error, card, missing)

        """)
        work.write("h.yaml", "vault: tnt1\nenvironment: live\ndata_region: eu-1\nhostname: https://reveal.example.com/\nrequests:\n  - {name: \"r-${row.id}\", each: {csv: d.csv}, path: \"/reveal/${row.id}\", method: get}\n")
        let data = try await showbatch(["plan", "h.yaml"], in: work.path)
        #expect(data.stdout == """
        base_url: https://reveal.example.com
        GET https://reveal.example.com/reveal/1 r-1
        GET https://reveal.example.com/reveal/2 r-2
        GET https://reveal.example.com/reveal/3 r-3
        ... request 1: 5 rows from d.csv (first 3 shown)
        note: hostname reveal.example.com is checked at run time; if it is not activated, requests go to https://tnt1.live-eu-1.verygoodproxy.com
        pace: 5000/m (VGS's documented reveal proxy limit, live; not under --emulate or --base-url)
        headers: vgs-client: source=showbatch&medium=vgs-show&content=0.1.0
        data: d.csv: 5 rows (request 1)

        """)
        let json = try await showbatch(["plan", "m.yaml", "--format", "json"], in: work.path, environment: env)
        #expect(json.stdout.hasPrefix(#"{"base_url":"https://tnt1.sandbox.verygoodproxy.com","requests":[{"name":"one","method":"POST","url":"https://tnt1.sandbox.verygoodproxy.com/post","headers":{"Authorization":"<secret>","Content-Type":"application/json","#))
        #expect(!json.stdout.contains("sk_header_secret_value") && !text.stdout.contains("sk_header_secret_value"))
    }

    @Test func runWithTheBuiltInEmulator() async throws {
        let work = Workspace(["m.yaml": demoManifest])
        defer { work.remove() }
        let result = try await showbatch(["run", "m.yaml", "--emulate", "--verbose"], in: work.path, environment: env)
        #expect(result.status == 1)  // "two" is partial: json.nope is missing
        #expect(work.read("out/r.csv") == """
        request,status,http_status,attempts,error,card,missing
        one,ok,200,1,,************1111,
        two,partial,200,1,1403 field_not_found: label missing: no value at json.nope,4111111111111111,

        """)
        let permissions = try FileManager.default.attributesOfItem(atPath: work.path + "/out/r.csv")[.posixPermissions] as? Int
        #expect(permissions == 0o600)
        #expect(result.stderr.contains("POST http://127.0.0.1:"))
        #expect(result.stderr.hasSuffix("wrote out/r.csv\nshowbatch: 1403 field_not_found: 1 row, the first: label missing: no value at json.nope\n"))
        for secret in ["sk_header_secret_value", "4111111111111111", "payload-secret-note", "tok_card"] {
            #expect(!result.stderr.contains(secret))
        }
    }

    @Test func jsonLogsAndStandardOutput() async throws {
        let work = Workspace(["m.yaml": demoManifest])
        defer { work.remove() }
        let result = try await showbatch(["run", "m.yaml", "--emulate", "--output", "-", "--format", "jsonl", "--log-format", "json", "--verbose"], in: work.path, environment: env)
        #expect(result.status == 1)
        #expect(result.stdout.split(separator: "\n").count == 2)
        #expect(result.stdout.hasPrefix(#"{"request":"one","status":"ok","http_status":200,"attempts":1,"labels":{"card":"************1111"},"errors":[]}"#))
        let events = result.stderr.split(separator: "\n").map(LogLine.init)
        #expect(events.map(\.event) == ["run_started", "attempt", "attempt", "summary"])
        #expect(events.allSatisfy { $0.text.hasPrefix(#"{"ts":""#) && $0.text.contains(#"","level":""#) })
        #expect(events.last?.text.contains(#""event":"summary","run_id":""#) == true)
        #expect(events.last?.text.contains(#""rows":2,"ok":1,"partial":1,"failed":0,"retries":0"#) == true)
        #expect(!result.stderr.contains("sk_header_secret_value") && !result.stderr.contains("payload-secret-note"))
        #expect(!work.exists("out/r.csv"))
    }

    @Test func usageAndRuntimeFailuresHaveTheirExitCodes() async throws {
        let work = Workspace(["noout.yaml": "vault: tnt1\nrequests: [{name: a, path: /p}]\n", "m.yaml": demoManifest, "blocker": "a file"])
        defer { work.remove() }
        let noOutput = try await showbatch(["run", "noout.yaml", "--emulate"], in: work.path)
        #expect(noOutput.status == 2)
        #expect(noOutput.stderr == "noout.yaml:2:12: error: request 1 has no output: give --output PATH, or add output: to the manifest or the request\n  requests: [{name: a, path: /p}]\n             ^\n")
        let unwritable = try await showbatch(["run", "m.yaml", "--emulate", "--output", "blocker/r.csv"], in: work.path, environment: env)
        #expect(unwritable.status == 3)
        #expect(unwritable.stderr == "showbatch: error: cannot create the folder blocker for blocker/r.csv: Not a directory\n")
        let unset = try await showbatch(["run", "m.yaml", "--emulate"], in: work.path)
        #expect(unset.status == 2)
        #expect(unset.stderr.hasPrefix("m.yaml:2:26: error: environment variable SB_TEST_TOKEN is not set (used in headers.Authorization)\n  headers: {Authorization: <redacted>}\n"))
        let shard = try await showbatch(["run", "m.yaml", "--shard", "auto/3"], in: work.path, environment: env)
        #expect(shard.status == 2)
        #expect(shard.stderr == "showbatch: error: --shard auto/3 needs JOB_COMPLETION_INDEX, which is not set (it is set in Kubernetes Indexed Jobs)\nRun 'showbatch help run' for usage.\n")
    }

    @Test func strictHostnameCheckExitsThree() async throws {
        let emulator = try Emulator(configuration: EmulatorConfiguration())
        emulator.start()
        defer { emulator.stop() }
        let work = Workspace(["m.yaml": "vault: tnt1\nhostname: reveal.example.com\noutput: {path: r.csv}\nrequests: [{name: a, path: /p}]\n"])
        defer { work.remove() }
        let result = try await showbatch(["run", "m.yaml", "--strict-hostname"], in: work.path,
                                   environment: ["SHOWBATCH_HOSTNAME_CHECK_URL": emulator.baseURL])
        #expect(result.status == 3)
        #expect(result.stderr == "showbatch: error: hostname reveal.example.com is not activated for vault tnt1 (the check answered HTTP 403); --strict-hostname stops here\n")
        #expect(!work.exists("r.csv"))
    }

    @Test func interruptedRunExits130AndResumes() async throws {
        let rows = (0..<400).map { "\($0),tok_\($0 % 3)" }.joined(separator: "\n")
        let manifest = """
        vault: tnt1
        concurrency: 4
        output: {path: out/r.csv}
        emulator: {aliases: {tok_0: "4000", tok_1: "4111", tok_2: "4222"}, latency: 20ms}
        requests:
          - {name: "r-${row.id}", each: {csv: d.csv}, path: /p, payload: {c: "${row.alias}"}, labels: {c: json.c}}
        """
        let work = Workspace(["m.yaml": manifest, "d.csv": "id,alias\n" + rows + "\n"])
        defer { work.remove() }
        // 400 answers at 20 ms over 4 connections take at least 2 s. Interrupt 300 ms after the
        // journal appears: the run has started (signals are handled) and has written some rows.
        let seen = Mutex<Date?>(nil)
        let interrupted = try await showbatch(["run", "m.yaml", "--emulate"], in: work.path) { folder in
            guard FileManager.default.fileExists(atPath: folder + "/out/r.csv.journal") else { return false }
            let first = seen.withLock { value in
                if value == nil { value = Date() }
                return value!
            }
            return Date().timeIntervalSince(first) > 0.3
        }
        #expect(interrupted.status == 130)
        #expect(interrupted.stderr.contains("interrupted: outputs left as .partial, rerun with --resume"))
        #expect(!work.exists("out/r.csv"))
        #expect(work.exists("out/r.csv.journal"))
        let resumed = try await showbatch(["run", "m.yaml", "--emulate", "--resume"], in: work.path)
        #expect(resumed.status == 0)
        #expect(resumed.stderr.contains("from the journal"))
        let expected = "request,status,http_status,attempts,error,c\n" + (0..<400).map { "r-\($0),ok,200,1,,\(["4000", "4111", "4222"][$0 % 3])\n" }.joined()
        #expect(work.read("out/r.csv") == expected)
        #expect(!work.exists("out/r.csv.journal"))
    }

    @Test func hostileManifestsEndInExitTwo() async throws {
        let work = Workspace()
        defer { work.remove() }
        work.write("empty.yaml", "")
        work.write("binary.yaml", Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31) }))
        work.write("tabs.yaml", "vault: tnt1\nrequests:\n\t- name: a\n")
        work.write("utf8.yaml", Data([0x76, 0x61, 0x75, 0x6C, 0x74, 0x3A, 0x20, 0xC3, 0x28, 0x0A]))
        work.write("deep.yaml", String(repeating: "[", count: 20_000) + String(repeating: "]", count: 20_000))
        var big = "vault: tnt1\nrequests:\n"
        while big.utf8.count < 10_000_000 { big += "  - {name: \"\(big.utf8.count)\", path: /p, payload: {a: b}}\n" }
        work.write("big.yaml", big + "  - oops: [\n")
        try FileManager.default.createDirectory(atPath: work.path + "/dir.yaml", withIntermediateDirectories: true)
        let expectations = [
            ("empty.yaml", "empty.yaml: error: the file is empty; expected a YAML mapping\n"),
            ("binary.yaml", "binary.yaml:1:1: error: control characters are not allowed; the manifest must be UTF-8 text\n"),
            ("tabs.yaml", "tabs.yaml:3:1: error: while scanning for the next token: found character that cannot start any token (tabs cannot indent YAML; use spaces)\n"),
            ("utf8.yaml", "utf8.yaml:1:9: error: invalid trailing UTF-8 octet; the manifest must be UTF-8 text\n  <redacted>\n  ^\n"),
            ("deep.yaml", "deep.yaml:1:257: error: nesting is deeper than 256 levels\n"),
            ("missing.yaml", "missing.yaml: error: no such file\n"),
            ("dir.yaml", "dir.yaml: error: is a directory; expected a manifest file\n"),
        ]
        for (file, prefix) in expectations {
            let result = try await showbatch(["validate", file], in: work.path)
            #expect(result.status == 2, "\(file)")
            #expect(result.stderr.hasPrefix(prefix), "\(file): \(result.stderr.prefix(300))")
        }
        let bigResult = try await showbatch(["validate", "big.yaml"], in: work.path)
        #expect(bigResult.status == 2)
        #expect(bigResult.stderr.contains("error: while parsing a flow node: did not find expected node content"))
    }
}

private let minimalValid = "vault: tnt1\nrequests: [{name: a, path: /p}]\n"
