import Foundation
import Testing

/// What a neighbour on a shared machine must not get from showbatch's own doing.
@Suite struct SharedMachineTests {
    /// Under `umask 000` the folders showbatch made for outputs, metrics and reports were
    /// `drwxrwxrwx`: anyone could list them and put files in them.
    @Test func foldersShowbatchCreatesArePrivateWhateverTheUmask() async throws {
        let work = Workspace([
            "m.yaml": """
            vault: tnt1
            emulator: {aliases: {tok_0: "4111111111111111"}}
            output: {path: new/deep/out/r.csv, rejects: new/deep/rejects/j.csv}
            requests: [{name: a, path: /p, payload: {c: tok_0}, labels: {c: json.c}}]
            """,
        ])
        defer { work.remove() }
        let run = try await showbatch(["-c", "umask 000; exec \"$0\" run m.yaml --emulate --quiet --metrics m/x/metrics.prom --report r/y/report.json", binary],
                                      in: work.path, shell: true)
        #expect(run.status == 0, "\(run.stderr)")
        for folder in ["new", "new/deep", "new/deep/out", "new/deep/rejects", "m", "m/x", "r", "r/y"] {
            var info = stat()
            #expect(stat(work.path + "/" + folder, &info) == 0, "\(folder)")
            #expect(info.st_mode & 0o7777 == 0o700, "\(folder) is \(String(info.st_mode & 0o7777, radix: 8))")
        }
    }
}

/// A hang-up (the terminal closed, the session of a cron shell ended) killed the run at once with
/// 129: no summary, no metrics or report, an encrypted run's temporary files left behind.
@Suite struct HangUpTests {
    private static let manifest = """
    vault: tnt1
    concurrency: 2
    emulator: {aliases: {tok_0: "4111111111111111"}, latency: 50ms}
    output: {path: out/r.csv}
    requests: [{name: "r${row.id}", each: {csv: d.csv}, path: /p, payload: {c: "${row.alias}"}, labels: {c: json.c}}]
    """
    // Long enough (100 s at most) that a loaded machine still sees it running: the signal ends it.
    private static let data = "id,alias\n" + (0..<4_000).map { "\($0),tok_0" }.joined(separator: "\n") + "\n"

    @Test func aHangUpEndsTheRunAsSIGTERMDoes() async throws {
        let work = Workspace(["m.yaml": Self.manifest, "d.csv": Self.data])
        defer { work.remove() }
        let process = try launch(["run", "m.yaml", "--emulate", "--metrics", "m.prom", "--report", "r.json"], in: work.path)
        let deadline = Date().addingTimeInterval(60)
        while !(work.exists("out/r.csv.journal") && catches(SIGHUP, process.processIdentifier)) && Date() < deadline {
            try await Task.sleep(for: .milliseconds(2))
        }
        kill(process.processIdentifier, SIGHUP)
        await exited(process)
        #expect(process.terminationReason == .exit && process.terminationStatus == 130)
        #expect(work.read(".stderr")?.contains("interrupted: outputs left as .partial, rerun with --resume") == true, "\(work.read(".stderr") ?? "")")
        #expect(work.read("r.json")?.contains("\"exit_code\":130,") == true)
        #expect(work.read("m.prom")?.contains("showbatch_run_exit_code") == true)
        #expect(work.exists("out/r.csv.journal") && !work.exists("out/r.csv"))
    }

    /// `nohup` (a hang-up ignored by whoever started the run) keeps it ignored: the run goes on.
    @Test func anIgnoredHangUpStaysIgnored() async throws {
        let work = Workspace(["m.yaml": Self.manifest.replacingOccurrences(of: "50ms", with: "1ms"), "d.csv": Self.data])
        defer { work.remove() }
        let run = try await showbatch(["-c", "trap '' HUP; \"$0\" run m.yaml --emulate --quiet & pid=$!; sleep 0.2; kill -HUP $pid; wait $pid; echo \"exit $?\"", binary],
                                      in: work.path, shell: true)
        #expect(run.stdout == "exit 0\n", "\(run.stderr)")
        #expect(work.exists("out/r.csv"))
    }
}

/// `--output -` into a pipe whose reader never reads: the write waits, and a signal still ends
/// the run within moments (exit 130), however long the reader would keep it waiting.
@Suite(.serialized) struct BlockedStandardOutputTests {
    @Test(.timeLimit(.minutes(5)), arguments: [SIGTERM, SIGINT])
    func aSignalEndsARunBlockedOnStandardOutput(signal: Int32) async throws {
        let work = Workspace(["m.yaml": """
            vault: tnt1
            concurrency: 8
            emulator: {aliases: {tok_0: "4111111111111111"}}
            output: {path: out/r.csv}
            requests: [{name: "r${row.id}", each: {csv: d.csv}, path: /p, payload: {c: "${row.alias}"}, labels: {c: json.c}}]
            """, "d.csv": "id,alias\n" + (0..<6_000).map { "\($0),tok_0" }.joined(separator: "\n") + "\n"])
        defer { work.remove() }
        let unread = Pipe()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["run", "m.yaml", "--emulate", "--output", "-"]
        process.currentDirectoryURL = URL(fileURLWithPath: work.path)
        _ = FileManager.default.createFile(atPath: work.path + "/.stderr", contents: nil)
        process.standardOutput = unread.fileHandleForWriting
        process.standardError = FileHandle(forWritingAtPath: work.path + "/.stderr")
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try unread.fileHandleForWriting.close()
        // The pipe (64 KiB) is full long before 6,000 rows are written: the writer waits.
        var queued: Int32 = 0
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline {
            if ioctl(unread.fileHandleForReading.fileDescriptor, UInt(FIONREAD), &queued) == 0, queued >= 60_000,
               catches(signal, process.processIdentifier) { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(queued >= 60_000)
        try await Task.sleep(for: .milliseconds(200))
        #expect(process.isRunning)
        kill(process.processIdentifier, signal)
        await exited(process)
        #expect(process.terminationReason == .exit && process.terminationStatus == 130, "\(work.read(".stderr") ?? "")")
        #expect(work.read(".stderr")?.contains("interrupted") == true, "\(work.read(".stderr") ?? "")")
        try unread.fileHandleForReading.close()
    }
}
