import Foundation
import Synchronization
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import ShowbatchEmulator
import TestSupport

/// Starts showbatch without waiting for it; stdout and stderr go to files in `directory`.
func launch(_ arguments: [String], in directory: String, stdin: FileHandle? = nil,
            environment given: [String: String] = ProcessInfo.processInfo.environment) throws -> Process {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: binary)
    process.arguments = arguments
    process.currentDirectoryURL = URL(fileURLWithPath: directory)
    var environment = given
    environment.removeValue(forKey: "JOB_COMPLETION_INDEX")
    process.environment = environment
    _ = FileManager.default.createFile(atPath: directory + "/.stdout", contents: nil)
    _ = FileManager.default.createFile(atPath: directory + "/.stderr", contents: nil)
    process.standardOutput = FileHandle(forWritingAtPath: directory + "/.stdout")
    process.standardError = FileHandle(forWritingAtPath: directory + "/.stderr")
    process.standardInput = stdin ?? FileHandle.nullDevice
    try process.run()
    return process
}

/// Whether process `pid` has a handler for `signal` (its SigCgt mask in /proc).
func catches(_ signal: Int32, _ pid: Int32) -> Bool {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("SigCgt:") }),
          let mask = UInt64(line.dropFirst("SigCgt:".count).trimmingCharacters(in: .whitespaces), radix: 16) else { return false }
    return mask & (1 << UInt64(signal - 1)) != 0
}

/// Rows of a data file; `latency` on the emulator makes a run last long enough to be cut.
private func crashManifest(_ outputs: String) -> String {
    """
    vault: tnt1
    concurrency: 4
    \(outputs)
    emulator: {aliases: {tok_0: "4000000000000000", tok_1: "4111111111111111", tok_2: "4222222222222222"}, latency: 6ms}
    retry: {attempts: 1}
    requests:
      - {name: head, path: /post, payload: {c: tok_1}, labels: {c: json.c}}
      - name: "r${row.id}"
        each: {csv: d.csv}
        path: /post
        payload: {c: "${row.alias}", id: "${row.id}"}
        labels: {c: {path: json.c, mask: {ranges: [[0, 11]]}}, id: json.id}
      - {name: tail, path: /post, payload: {c: tok_2}, labels: {c: json.c}, \(outputs.contains("jsonl") ? "output: {path: out/tail.csv}" : "method: post")}
    """
}

@Suite(.serialized) struct SafetyEndToEndTests {
    /// Killed (SIGKILL) at seeded moments and resumed, a run writes the same bytes as one that was
    /// never stopped: CSV, JSON, JSON Lines, and requests with outputs of their own.
    @Test(arguments: ["output: {path: out/r.csv}", "output: {path: out/r.json}", "output: {path: out/r.jsonl}", "output: {path: out/r.jsonl}\n# and a second output"])
    func killedAtAnyMomentAndResumedTheBytesAreTheSame(outputs: String) async throws {
        // Every 97th line is malformed (a failed row, the same in every run); tok_3 has no value (partial rows).
        let rows = "id,alias\n" + (0..<700).map { $0 % 97 == 5 ? "\($0)" : "\($0),tok_\($0 % 4)" }.joined(separator: "\n") + "\n"
        let work = Workspace(["m.yaml": crashManifest(outputs), "d.csv": rows])
        defer { work.remove() }
        let files = outputs.contains("second") ? ["out/r.jsonl", "out/tail.csv"] : [String(outputs.split(separator: " ")[2].dropLast())]
        let clean = try await showbatch(["run", "m.yaml", "--emulate", "--quiet"], in: work.path)
        #expect(clean.status == 1)
        let expected = files.map { work.read($0) }
        for file in files {
            try FileManager.default.removeItem(atPath: work.path + "/" + file)
            // The clean run had failed rows, so it kept its journal: this is a new run.
            try? FileManager.default.removeItem(atPath: work.path + "/" + file + ".journal")
        }
        var random = SeededGenerator(seed: UInt64(outputs.count))
        for round in 0..<2 {
            let process = try launch(["run", "m.yaml", "--emulate", "--quiet"] + (round > 0 ? ["--resume"] : []), in: work.path)
            // Killed a seeded while after the run has started writing (however slow the machine),
            // from a thread of its own: a task of a busy test run can be held up for seconds.
            let wait = UInt32(random.unit() * 300_000)
            let partial = work.path + "/" + files[0] + ".partial"
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                Thread {
                    while process.isRunning && !FileManager.default.fileExists(atPath: partial) { usleep(1_000) }
                    usleep(wait)
                    kill(process.processIdentifier, SIGKILL)
                    done.resume()
                }.start()
            }
            await exited(process)
            // The kill landed while the run was writing: it did not end on its own first.
            #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL, "round \(round) ended on its own")
            #expect(!work.exists(files[0]), "round \(round) finished before the kill")
        }
        let resumed = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--resume"], in: work.path)
        #expect(resumed.status == 1, "\(resumed.stderr)")
        #expect(files.map { work.read($0) } == expected)
        for file in files { #expect(!work.exists(file + ".partial")) }
    }

    /// The cases are there, wherever the tests run from.
    @Test func theSecretLeakCasesAreThere() {
        #expect(fixtureCases("secret-leaks").count == 39)
    }

    /// No secret reaches validate, plan or run (text or JSON logs), whatever the error.
    @Test(arguments: fixtureCases("secret-leaks"))
    func noSecretReachesAnyCommand(file: String) async throws {
        let work = Workspace(["m.yaml": try String(contentsOfFile: file, encoding: .utf8)])
        defer { work.remove() }
        for arguments in [["validate", "m.yaml"], ["plan", "m.yaml"], ["plan", "m.yaml", "--format", "json"],
                          ["run", "m.yaml", "--emulate", "--output", "-"], ["run", "m.yaml", "--emulate", "--log-format", "json", "--output", "-"]] {
            let result = try await showbatch(arguments, in: work.path)
            #expect(result.status == 2)
            // A run's id is 16 random hex digits, which may hold "4111": it is no secret.
            let stderr = result.stderr.replacingOccurrences(of: #""run_id":"[0-9a-f]{16}""#, with: "", options: .regularExpression)
            for secret in ["sk_", "4111", "4222", "4333", "4555"] {
                #expect(!stderr.contains(secret) && !result.stdout.contains(secret), "\(arguments): \(secret)")
            }
        }
    }

    /// A data row's name with a line break or an escape sequence cannot forge a log line or drive
    /// the terminal: --verbose and the summary escape it.
    @Test func controlCharactersFromDataAreEscapedWhenPrinted() async throws {
        let work = Workspace(["m.yaml": """
        vault: tnt1
        output: {path: r.csv}
        requests: [{name: "${row.n}", each: {jsonl: d.jsonl}, path: /p}]
        """, "d.jsonl": #"{"n": "evil\nshowbatch: 0 rows failed \u001b[2J"}"# + "\n"])
        defer { work.remove() }
        let result = try await showbatch(["run", "m.yaml", "--emulate", "--verbose"], in: work.path)
        #expect(result.status == 0)
        let attempt = try #require(result.stderr.split(separator: "\n").first { $0.hasPrefix("POST ") })
        #expect(attempt.hasSuffix(#" evil\nshowbatch: 0 rows failed \u{1B}[2J (attempt 1)"#))
        #expect(!result.stderr.contains("\u{1B}"))
        #expect(result.stderr.split(separator: "\n").count == 2)
    }

    /// SIGINT while the manifest is being read ends the process at once with 130: nothing was
    /// sent or opened. (A 12 MB manifest takes a good part of a second to read, more in a debug
    /// build.)
    ///
    /// The read cannot be made to block: showbatch reads a manifest (and any input) only when it
    /// is a regular file, so a FIFO the test holds open is refused ("it is not a regular file"),
    /// through a link too. The moment is aimed at from a thread of the test's own (`Child`),
    /// which looks for the handler in /proc every millisecond and signals as soon as it is there:
    /// a task polling on the shared pool, which a loaded machine can hold up for seconds, could
    /// get to it after the read had ended.
    @Test func anInterruptWhileTheManifestLoadsExits130() async throws {
        var big = "vault: tnt1\noutput: {path: out/r.csv}\nrequests:\n"
        while big.utf8.count < 12_000_000 { big += "  - {name: \"n\(big.utf8.count)\", path: /p, payload: {a: b}, labels: {a: json.a}}\n" }
        let work = Workspace(["m.yaml": big])
        defer { work.remove() }
        // Once the process catches SIGINT (its first act), it is reading the manifest.
        let child = try Child(["run", "m.yaml", "--emulate"], in: work.path,
                              signalWhen: (condition: { pid in catches(SIGINT, pid) }, number: SIGINT))
        let (status, _) = await child.finish()
        try #require(child.signalled, "the process ended before it was seen to catch SIGINT: \(child.errors)")
        #expect(child.process.terminationReason == .exit && status == 130)
        #expect(child.errors == "showbatch: interrupted before anything was sent\n")
        #expect(!work.exists("out"))
    }

    /// A signal as a manifest that takes a while to read turns out invalid: one finisher decides,
    /// the signal (130) or the manifest's error (2), and the report is written once, by it,
    /// saying that code; no temporary file is left. Signals at seeded moments around the end of
    /// the read provoke both orders.
    @Test func aSignalAsTheManifestFailsHasOneFinisher() async throws {
        var big = "vault: tnt1\noutput: {path: out/r.csv}\nrequests:\n"
        while big.utf8.count < 3_000_000 { big += "  - {name: \"n\(big.utf8.count)\", path: /p, payload: {a: b}, labels: {a: json.a}}\n" }
        big += "  - {name: last, path: /p, method: fetch}\n"
        let work = Workspace(["m.yaml": big])
        defer { work.remove() }
        // How long a read takes here, to aim the signals at its end.
        let began = Date()
        let first = try launch(["run", "m.yaml", "--report", "r.json"], in: work.path)
        await exited(first)
        #expect(first.terminationStatus == 2)
        let reading = Date().timeIntervalSince(began)
        var random = SeededGenerator(seed: 26)
        var codes: Set<Int32> = []
        for round in 0..<5 {
            try? FileManager.default.removeItem(atPath: work.path + "/r.json")
            let process = try launch(["run", "m.yaml", "--report", "r.json"], in: work.path)
            let deadline = Date().addingTimeInterval(30)
            while !catches(SIGTERM, process.processIdentifier) && Date() < deadline { try await Task.sleep(for: .milliseconds(1)) }
            try await Task.sleep(for: .milliseconds(Int(reading * 1000 * (0.6 + 0.5 * random.unit()))))
            kill(process.processIdentifier, SIGTERM)
            await exited(process)
            let code = process.terminationStatus
            codes.insert(code)
            #expect(process.terminationReason == .exit && (code == 2 || code == 130), "round \(round): \(code)")
            let report = try #require(work.read("r.json"), "round \(round): no report")
            #expect(report.contains("\"exit_code\":\(code),"), "round \(round): exit \(code), report \(report)")
            let left = try FileManager.default.contentsOfDirectory(atPath: work.path).filter { $0 != "m.yaml" && $0 != "r.json" && !$0.hasPrefix(".std") }
            #expect(left.isEmpty, "round \(round): \(left)")
        }
        // Not a requirement of the engine, but the point of the test: both finishers were met.
        if codes.count < 2 { print("aSignalAsTheManifestFailsHasOneFinisher met only exit \(codes)") }
    }

    /// The rows of a big data file are counted once, when the manifest is read (a signal then
    /// ends the process at once, nothing opened): the run does not read the file again for the
    /// progress line's count, which `run_started` has at once, and SIGTERM once the outputs are
    /// open ends the run as interrupted (130).
    @Test func theRowsAreCountedOnceAndAnInterruptExits130() async throws {
        let chunk = (0..<10_000).map(String.init).joined(separator: "\n") + "\n"
        let rows = "id\n" + String(repeating: chunk, count: 150)
        let work = Workspace(["m.yaml": "vault: tnt1\noutput: {path: out/r.csv}\nrequests: [{name: \"r${row.id}\", each: {csv: d.csv}, path: /p}]\n",
                              "d.csv": rows])
        defer { work.remove() }
        let process = try launch(["run", "m.yaml", "--emulate", "--log-format", "json"], in: work.path)
        // Wait until the run has opened its outputs (the journal appears), then interrupt.
        let deadline = Date().addingTimeInterval(30)
        while !work.exists("out/r.csv.journal") && Date() < deadline { try await Task.sleep(for: .milliseconds(2)) }
        kill(process.processIdentifier, SIGTERM)
        await exited(process)
        #expect(process.terminationStatus == 130)
        let stderr = work.read(".stderr") ?? ""
        #expect(stderr.contains(#""event":"run_started""#) && stderr.contains(#""rows":1500000"#))
        #expect(stderr.contains(#""event":"summary""#) && stderr.contains(#""exit_code":130"#))
        #expect(work.read("out/r.csv.partial")?.hasPrefix("request,status,http_status,attempts,error\n") == true)
        #expect(work.exists("out/r.csv.journal") && !work.exists("out/r.csv"))
    }

    /// A reader that goes away (broken pipe) is one line in words, not a raw error.
    @Test func aBrokenPipeIsOneLineInWords() async throws {
        let work = Workspace(["m.yaml": "vault: tnt1\nrequests: [{name: \"r${row.id}\", each: {csv: d.csv}, path: /p, labels: {p: path}}]\n",
                              "d.csv": "id\n" + (0..<20_000).map(String.init).joined(separator: "\n") + "\n"])
        defer { work.remove() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["run", "m.yaml", "--emulate", "--output", "-"]
        process.currentDirectoryURL = URL(fileURLWithPath: work.path)
        let pipe = Pipe()
        let errors = Pipe()
        process.standardOutput = pipe
        process.standardError = errors
        try process.run()
        // Read a little, then go away.
        _ = pipe.fileHandleForReading.readData(ofLength: 100)
        try pipe.fileHandleForReading.close()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        await exited(process)
        #expect(process.terminationStatus == 3)
        #expect(stderr == "showbatch: error: cannot write to standard output: Broken pipe (whatever reads the output has gone away); the rows after it were not written\n")
    }

    /// validate and plan whose output cannot be written whole (a full disk) end with exit 3 and
    /// say so: a truncated plan is no answer.
    @Test(arguments: [["validate", "m.yaml"], ["plan", "m.yaml"], ["plan", "m.yaml", "--format", "json"]])
    func anOutputThatCannotBeWrittenIsExit3(arguments: [String]) async throws {
        let work = Workspace(["m.yaml": "vault: tnt1\nrequests: [{name: a, path: /p}]\n"])
        defer { work.remove() }
        let result = try await showbatch(["-c", "exec \"$0\" \"$@\" > /dev/full", binary] + arguments, in: work.path, shell: true)
        #expect(result.status == 3)
        #expect(result.stderr == "showbatch: error: cannot write to standard output (No space left on device); what it shows is not whole\n")
    }

    /// Without a pipe for the signal handler (no file descriptor left) a SIGTERM would end the
    /// process with no cleanup: showbatch refuses to start instead, exit 3.
    @Test func noSignalPipeIsExit3() async throws {
        let work = Workspace(["m.yaml": "vault: tnt1\noutput: {path: r.csv}\nrequests: [{name: a, path: /p}]\n"])
        defer { work.remove() }
        let result = try await showbatch(["-c", "ulimit -n 4; exec \"$0\" run m.yaml --emulate", binary], in: work.path, shell: true)
        #expect(result.status == 3)
        #expect(result.stderr == "showbatch: error: cannot set up the handling of SIGINT and SIGTERM (pipe: Too many open files); nothing was done\n")
        #expect(!work.exists("r.csv") && !work.exists("r.csv.partial"))
    }

    /// A write that fails (here: past a file-size limit, as a full disk would) says which file,
    /// what happened and that the journal is kept; the run can go on with --resume.
    @Test func aFailedWriteSaysWhichFileAndThatTheJournalIsKept() async throws {
        let work = Workspace(["m.yaml": "vault: tnt1\noutput: {path: out/r.csv}\nrequests: [{name: \"r${row.id}\", each: {csv: d.csv}, path: /p, labels: {p: path}}]\n",
                              "d.csv": "id\n" + (0..<5_000).map(String.init).joined(separator: "\n") + "\n"])
        defer { work.remove() }
        let result = try await showbatch(["-c", "ulimit -f 64; exec \"$0\" run m.yaml --emulate", binary], in: work.path, shell: true)
        #expect(result.status == 3)
        // The last checkpoint, made as the run gives the output up, fails too, and says so.
        #expect(result.stderr == """
            showbatch: warning: the last checkpoint could not be written (out/r.csv.partial was not written whole; the journal out/r.csv.journal is kept, so the run can go on with --resume); --resume goes on from the one before it and sends the rows after it again
            showbatch: error: cannot write out/r.csv.partial: File too large; the journal out/r.csv.journal is kept, so the run can go on with --resume once that is fixed

            """, "\(result.stderr)")
        #expect(work.exists("out/r.csv.journal"))
        let resumed = try await showbatch(["run", "m.yaml", "--emulate", "--resume"], in: work.path)
        #expect(resumed.status == 0)
        #expect(work.read("out/r.csv")?.split(separator: "\n").count == 5_001)
    }

    /// --retry-failed works per shard: each shard's failed rows are sent again into its own file.
    @Test func retryFailedWorksPerShard() async throws {
        let manifest = { (rate: String) in
            "vault: tnt1\nconcurrency: 1\nretry: {attempts: 1}\noutput: {path: out/r.csv}\nemulator: {fail_rate: \(rate), seed: 3}\nrequests: [{name: \"r${row.id}\", each: {csv: d.csv}, path: /p, labels: {p: path}}]\n"
        }
        let work = Workspace(["m.yaml": manifest("0"), "d.csv": "id\n" + (0..<30).map(String.init).joined(separator: "\n") + "\n"])
        defer { work.remove() }
        var expected: [String?] = []
        for index in 0..<2 {
            #expect(try await showbatch(["run", "m.yaml", "--emulate", "--shard", "\(index)/2"], in: work.path).status == 0)
            expected.append(work.read("out/r-shard-\(index).csv"))
        }
        work.write("m.yaml", manifest("0.4"))
        for index in 0..<2 {
            #expect(try await showbatch(["run", "m.yaml", "--emulate", "--shard", "\(index)/2"], in: work.path).status == 1)
        }
        work.write("m.yaml", manifest("0"))
        for index in 0..<2 {
            let retry = try await showbatch(["run", "m.yaml", "--emulate", "--shard", "\(index)/2", "--retry-failed"], in: work.path)
            #expect(retry.status == 0, "\(retry.stderr)")
            #expect(work.read("out/r-shard-\(index).csv") == expected[index])
            #expect(!work.exists("out/r-shard-\(index).csv.journal"))
        }
    }
}
