import Foundation
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A showbatch process whose stdout and stderr the test reads as it likes.
private final class Child: @unchecked Sendable {
    let process = Process()
    let stdout = Pipe()
    let stderr = Pipe()
    private let errText = Mutex("")

    /// Starts showbatch; when its stderr first holds `trigger`, the thread reading stderr sends
    /// `signal` at once (not a task, which a busy test run may hold up for seconds).
    init(_ arguments: [String], in directory: String, signal: (trigger: String, number: Int32)? = nil) throws {
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "JOB_COMPLETION_INDEX")
        process.environment = environment
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let pid = process.processIdentifier
        Thread { [self] in
            var signalled = false
            while true {
                let chunk = stderr.fileHandleForReading.availableData
                if chunk.isEmpty { return }
                let text = errText.withLock { text -> String in
                    text += String(decoding: chunk, as: UTF8.self)
                    return text
                }
                if let signal, !signalled, text.contains(signal.trigger) {
                    signalled = true
                    kill(pid, signal.number)
                }
            }
        }.start()
    }

    var errors: String { errText.withLock { $0 } }

    /// Reads stdout to its end on a thread of its own, then waits for the exit.
    func finish() async -> (status: Int32, stdout: String) {
        let out = await withCheckedContinuation { (continuation: CheckedContinuation<Data, Never>) in
            Thread { [stdout] in continuation.resume(returning: stdout.fileHandleForReading.readDataToEndOfFile()) }.start()
        }
        await exited(process)
        return (process.terminationStatus, String(decoding: out, as: UTF8.self))
    }
}

@Suite(.serialized) struct FailurePathEndToEndTests {
    /// SIGTERM while the run waits for another process's lock on a journal ends it at once with
    /// 130, not after the wait with "another showbatch run is writing".
    @Test func sigtermWhileWaitingForAJournalLockExits130() async throws {
        let work = Workspace(["m.yaml": """
        vault: tnt1
        output: {path: out/r.csv}
        requests: [{name: a, path: /post, payload: {c: tok_sandbox_abc}, labels: {c: json.c}}]
        """, "out/r.csv.journal": ""])
        defer { work.remove() }
        let held = open(work.path + "/out/r.csv.journal", O_RDWR)
        defer { close(held) }
        #expect(flock(held, LOCK_EX) == 0)
        let child = try Child(["run", "m.yaml", "--emulate", "--log-format", "json"], in: work.path,
                              signal: ("is locked by another process: waiting up to 5 s for it", SIGTERM))
        let (status, _) = await child.finish()
        #expect(child.errors.contains("is locked by another process: waiting up to 5 s for it"))
        #expect(status == 130)
        #expect(!child.errors.contains("another showbatch run is writing"))
        #expect(!work.exists("out/r.csv") && !work.exists("out/r.csv.partial"))
    }

    /// Rows to standard output read by a slow reader (nothing read for 3 s): the writer waits,
    /// the curl loop does not, so no request in flight runs into its 1 s timeout.
    @Test func aSlowReaderOfStandardOutputTimesNoRequestOut() async throws {
        let rows = "id\n" + (0..<20_000).map(String.init).joined(separator: "\n") + "\n"
        let work = Workspace(["m.yaml": """
        vault: tnt1
        concurrency: 16
        timeout: 1s
        retry: {attempts: 1}
        emulator: {latency: 1ms}
        requests: [{name: "r${row.id}", each: {csv: d.csv}, path: /p, labels: {p: path}}]
        """, "d.csv": rows])
        defer { work.remove() }
        let child = try Child(["run", "m.yaml", "--emulate", "--output", "-"], in: work.path)
        try await Task.sleep(for: .seconds(3))
        let (status, out) = await child.finish()
        #expect(status == 0, "\(child.errors)")
        let lines = out.split(separator: "\n")
        #expect(lines.count == 20_001)
        #expect(!out.contains("1502 timeout"))
    }

    /// Standard output cannot be resumed nor rewritten, whether `--output -` or the manifest says
    /// so: one check, in the run, with one message (exit 2, nothing sent).
    @Test(arguments: [(["--resume", "--output", "-"], "--resume"), (["--retry-failed", "--output", "-"], "--retry-failed"),
                      (["--resume"], "--resume")])
    func standardOutputIsNotResumable(flags: [String], flag: String) async throws {
        let work = Workspace(["m.yaml": """
        vault: tnt1
        output: {path: "-", format: csv}
        requests: [{name: a, path: /post, payload: {c: tok_sandbox_abc}, labels: {c: json.c}}]
        """])
        defer { work.remove() }
        let result = try await showbatch(["run", "m.yaml", "--emulate"] + flags, in: work.path)
        #expect(result.status == 2)
        #expect(result.stderr == "showbatch: error: \(flag) needs file outputs; standard output is not resumable\nRun 'showbatch help run' for usage.\n")
    }
}
