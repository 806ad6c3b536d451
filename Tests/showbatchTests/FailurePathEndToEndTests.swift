import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite(.serialized) struct FailurePathEndToEndTests {
    /// SIGTERM while the run waits for another process's lock on a journal ends it at once with
    /// 130, not after the wait with "another showbatch run is writing".
    ///
    /// The signal answers the wait's note, which crosses showbatch's stderr thread, a pipe and
    /// this test's reader thread first; a loaded machine can hold that up for seconds, beyond the
    /// 5 s wait. `SHOWBATCH_TEST_LOCK_TRIES` (`Journal.lockTries`) makes the wait 5 min here, so
    /// only a signal ends it; the note and the path it takes are the same.
    @Test func sigtermWhileWaitingForAJournalLockExits130() async throws {
        let work = Workspace(["m.yaml": """
        vault: tnt1
        output: {path: out/r.csv}
        requests: [{name: a, path: /post, payload: {c: tok_sandbox_abc}, labels: {c: json.c}}]
        """, "out/r.csv.journal": ""])
        defer { work.remove() }
        let held = open(work.path + "/out/r.csv.journal", O_RDWR)
        defer { close(held) }
        try #require(flock(held, LOCK_EX) == 0)
        let child = try Child(["run", "m.yaml", "--emulate", "--log-format", "json"], in: work.path,
                              environment: ["SHOWBATCH_TEST_LOCK_TRIES": "15000"],
                              signal: ("is locked by another process: waiting up to 5 s for it", SIGTERM))
        let (status, _) = await child.finish()
        try #require(child.signalled, "no lock wait was seen: \(child.errors)")
        #expect(child.errors.contains("is locked by another process: waiting up to 5 s for it"))
        #expect(status == 130)
        #expect(!child.errors.contains("another showbatch run is writing"))
        #expect(!work.exists("out/r.csv") && !work.exists("out/r.csv.partial"))
    }

    /// Rows to standard output read by a slow reader (nothing read for 7 s): the writer waits,
    /// the curl loop does not, so no request in flight runs into its 3 s timeout (more than a
    /// loaded machine takes to answer, less than the stall).
    @Test func aSlowReaderOfStandardOutputTimesNoRequestOut() async throws {
        let rows = "id\n" + (0..<20_000).map(String.init).joined(separator: "\n") + "\n"
        let work = Workspace(["m.yaml": """
        vault: tnt1
        concurrency: 16
        timeout: 3s
        retry: {attempts: 1}
        emulator: {latency: 1ms}
        requests: [{name: "r${row.id}", each: {csv: d.csv}, path: /p, labels: {p: path}}]
        """, "d.csv": rows])
        defer { work.remove() }
        let child = try Child(["run", "m.yaml", "--emulate", "--output", "-"], in: work.path)
        try await Task.sleep(for: .seconds(7))
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
        #expect(result.stderr == "showbatch: error: \(flag) needs file outputs; standard output is not resumable\n")
    }
}

extension FailurePathEndToEndTests {
    /// --verbose while nobody reads standard error (a stalled log shipper): attempt lines are
    /// written by a thread of their own, so no request waits for the reader and none times out;
    /// the run ends with every row, and the process exits although its stderr is never read.
    @Test(.timeLimit(.minutes(3))) func aStalledStandardErrorHoldsNoRequest() async throws {
        let rows = "id\n" + (0..<3_000).map(String.init).joined(separator: "\n") + "\n"
        let work = Workspace(["m.yaml": """
        vault: tnt1
        concurrency: 8
        timeout: 10s
        retry: {attempts: 1}
        emulator: {latency: 1ms}
        output: {path: r.csv}
        requests: [{name: "r${row.id}", each: {csv: d.csv}, path: /p, labels: {p: path}}]
        """, "d.csv": rows])
        defer { work.remove() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["run", "m.yaml", "--emulate", "--verbose"]
        process.currentDirectoryURL = URL(fileURLWithPath: work.path)
        let unread = Pipe()
        process.standardError = unread
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        await exited(process)
        #expect(process.terminationStatus == 0)
        let written = (work.read("r.csv") ?? "").split(separator: "\n").dropFirst()
        #expect(written.count == 3_000 && written.allSatisfy { $0.contains(",ok,200,") })
        try unread.fileHandleForReading.close()
    }
}

/// A TCP listener on 127.0.0.1 that accepts connections and never answers (a Pushgateway hung).
final class SilentListener: @unchecked Sendable {
    let port: Int
    private let fd: Int32

    init() throws {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(socketFD, 16) == 0 else { throw POSIXError(.EADDRNOTAVAIL) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socketFD, $0, &length) } }
        fd = socketFD
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread { [fd] in
            // Connections are taken and held open, unanswered, until the listener closes.
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 { return }
            }
        }.start()
    }

    func stop() { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }
}

extension FailurePathEndToEndTests {
    /// SIGTERM while the metrics are pushed to a Pushgateway that never answers: the push is
    /// given up at once, not waited out over its tries, and the run's own code (0) stands: its
    /// files are written, and a scheduler must not retry it as an interrupted run.
    @Test(.timeLimit(.minutes(1))) func anInterruptDuringTheMetricsPushEndsIt() async throws {
        let listener = try SilentListener()
        defer { listener.stop() }
        let work = Workspace(["m.yaml": """
        vault: tnt1
        output: {path: r.csv}
        requests: [{name: a, path: /p}]
        """])
        defer { work.remove() }
        let child = try Child(["run", "m.yaml", "--emulate", "--metrics-push", "http://127.0.0.1:\(listener.port)"], in: work.path,
                              signal: (trigger: "showbatch: 1 rows", number: SIGTERM))
        let (status, _) = await child.finish()
        #expect(status == 0, "\(child.errors)")
        #expect(child.errors.hasSuffix("showbatch: error: interrupted while pushing the metrics to the Pushgateway: they were not pushed\n"), "\(child.errors)")
        #expect(work.exists("r.csv"))
    }
}

extension FailurePathEndToEndTests {
    /// SIGTERM while the run waits for another run's lock before anything is sent: the night
    /// ledger's (another run numbers its night) or the audit trail's (its run_started entry). The
    /// wait ends, nothing is sent or numbered, and the run is interrupted (130) at once, not
    /// refused as a lock held too long (3) after its 30 s.
    @Test(.timeLimit(.minutes(1)), arguments: [
        ("out/c-${run.date}-${run.seq:4}.csv", "out/.c-{date}-{seq:4}.csv.sequence.lock", [String]()),
        ("out/c.csv", "audit.jsonl", ["--audit", "audit.jsonl"]),
    ])
    func aSignalWhileWaitingForALockBeforeSendingIsAnInterrupt(output: String, lock: String, flags: [String]) async throws {
        let work = Workspace(["m.yaml": """
        vault: tnt1
        output: {path: "\(output)"}
        requests: [{name: a, path: /p}]
        """])
        defer { work.remove() }
        mkdir(work.path + "/out", 0o700)
        let lockPath = work.path + "/" + lock
        let held = open(lockPath, O_RDWR | O_CREAT, 0o600)
        defer { close(held) }
        #expect(flock(held, LOCK_EX) == 0)
        // The run has the lock's file open only while it waits for the lock: then the signal.
        let child = try Child(["run", "m.yaml", "--emulate", "--date", "2026-12-01"] + flags, in: work.path,
                              signalWhen: (condition: { pid in holdsOpen(lockPath, pid) }, number: SIGTERM))
        let (status, _) = await child.finish()
        #expect(child.signalled)
        #expect(status == 130, "\(child.errors)")
        #expect(child.errors == "showbatch: 0 rows: 0 ok, 0 partial, 0 failed; 0 retries; 0ms, 0.0 requests/s; interrupted before any output was opened\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: work.path + "/out").filter { !$0.hasPrefix(".") } == [])
    }
}

/// Whether process `pid` holds `path` open (read from /proc).
private func holdsOpen(_ path: String, _ pid: Int32) -> Bool {
    let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
    return fds.contains { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")) == path }
}
