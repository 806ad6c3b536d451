import Foundation
import Testing
import TestSupport

/// The crontab sample's line, run as shipped by `/bin/sh` (as cron runs it) on this machine: its
/// paths moved into a work folder, `showbatch` a wrapper that adds `--emulate`, the manifest the
/// Kubernetes sample's with the test's processor key and sshd. The night is revealed, encrypted
/// and delivered with exit 0; a night that finds the lock held writes a line saying it skipped.
@Suite(.serialized) struct CrontabSampleTests {
    /// The command of the crontab line: what follows its five time fields and its user.
    private static func command() throws -> String {
        let text = try String(contentsOfFile: repository + "/samples/kubernetes/crontab", encoding: .utf8)
        let line = try #require(text.split(separator: "\n").first { !$0.hasPrefix("#") && !$0.trimmingCharacters(in: .whitespaces).isEmpty })
        var rest = Substring(line)
        for _ in 0..<6 {
            rest = rest.drop { $0 != " " }.drop { $0 == " " }
        }
        return String(rest)
    }

    /// A host laid out as the crontab expects it, in `work`.
    private func host(_ work: Workspace, _ server: SFTPServer) throws -> String {
        let config = try String(contentsOfFile: repository + "/samples/kubernetes/config.yaml", encoding: .utf8)
        let block = config.components(separatedBy: "  manifest.yaml: |\n")[1]
        let lines = block.split(separator: "\n", omittingEmptySubsequences: false).prefix { $0.hasPrefix("    ") || $0.isEmpty }
        let manifest = lines.map { String($0.dropFirst(min(4, $0.count))) }.joined(separator: "\n")
            .replacingOccurrences(of: "/data/", with: work.path + "/data/")
            .replacingOccurrences(of: "/keys/", with: work.path + "/keys/")
            .replacingOccurrences(of: "sftp://sftp.processor.example:22/uploads/", with: server.url)
            .replacingOccurrences(of: "user: acme-merchant", with: "user: \(server.user)")
            .replacingOccurrences(of: "/secrets/sftp/id_ed25519", with: server.clientKey)
            .replacingOccurrences(of: "/config/known_hosts", with: server.knownHosts)
            .replacingOccurrences(of: "/etc/showbatch/", with: work.path + "/etc/showbatch/")
        work.write("etc/showbatch/manifest.yaml", manifest)
        work.write("etc/showbatch/secrets/token", "not-a-real-token\n")
        work.write("etc/showbatch/secrets/state-key", Data(repeating: 3, count: 32).base64EncodedString() + "\n")
        work.write("keys/processor.asc", try String(contentsOfFile: GPGFixture.shared.alice.file, encoding: .utf8))
        work.write("data/in/customers.csv", try String(contentsOfFile: repository + "/samples/data/customers.csv", encoding: .utf8))
        work.write("bin/showbatch", "#!/bin/sh\nexec \"\(binary)\" \"$@\" --emulate\n")
        chmod(work.path + "/bin/showbatch", 0o755)
        for folder in ["lock", "log", "data/out"] {
            try FileManager.default.createDirectory(atPath: work.path + "/" + folder, withIntermediateDirectories: true)
        }
        return try Self.command()
            .replacingOccurrences(of: "/usr/local/bin/showbatch", with: work.path + "/bin/showbatch")
            .replacingOccurrences(of: "/etc/showbatch/", with: work.path + "/etc/showbatch/")
            .replacingOccurrences(of: "/run/lock/", with: work.path + "/lock/")
            .replacingOccurrences(of: "/var/log/showbatch/", with: work.path + "/log/")
    }

    private func sh(_ command: String) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    @Test func theLineRunsTheNightAsShipped() async throws {
        let work = Workspace()
        let server = try SFTPServer()
        defer { work.remove(); server.remove() }
        let command = try host(work, server)
        #expect(try sh(command) == 0)
        let log = work.read("log/nightly.log") ?? ""
        #expect(log.contains("\"event\":\"summary\"") && log.hasSuffix("exit 0\n"), "\(log)")
        // Delivered: the night's file, named for its date, and its trigger.
        #expect(server.uploaded.count == 2 && server.uploaded.allSatisfy { $0.hasPrefix("customers-revealed-") }, "\(server.uploaded)")

        // The previous night still holds the lock: this one is skipped, and the log says so.
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/flock")
        holder.arguments = [work.path + "/lock/showbatch-nightly.lock", "sleep", "30"]
        try holder.run()
        defer { holder.terminate() }
        for _ in 0..<200 where try sh("flock -n \(work.path)/lock/showbatch-nightly.lock true") == 0 { usleep(10_000) }
        #expect(try sh(command) == 75)
        let skipped = work.read("log/nightly.log") ?? ""
        #expect(skipped.hasSuffix("\"level\":\"warning\",\"event\":\"skipped\",\"message\":\"the previous run still holds \(work.path)/lock/showbatch-nightly.lock: this night was not started (exit 75)\"}\n"), "\(skipped)")
    }

    /// A `showbatch` that exits with `code` and counts its runs, for the line's own logic.
    /// `held`: the stand-in goes on until the file `release` appears (a run the test ends).
    private func stand(in work: Workspace, exiting code: Int32, held: Bool = false) throws -> String {
        let server = try SFTPServer()
        defer { server.remove() }
        let command = try host(work, server).replacingOccurrences(of: "sleep 600", with: "sleep 0")
        // Bounded (2 minutes, or its folder gone), so that a test process that dies first leaves
        // no stand-in looping.
        let wait = held ? "i=0; while [ ! -e \(work.path)/release ] && [ -d \(work.path) ] && [ $i -lt 2400 ]; do sleep 0.05; i=$((i+1)); done\n" : ""
        work.write("bin/showbatch", "#!/bin/sh\necho \"$*\" >> \(work.path)/calls\n\(wait)exit \(code)\n")
        return command
    }

    /// What a retry fixes is tried three times in all (a full disk, an outage, a server down, a
    /// kill, a SIGTERM); what it cannot fix is tried once: rows failed, the manifest, and the
    /// delivery refused for what only a person fixes (exit 6: retrying only delays its page).
    @Test(arguments: [(0, 1), (1, 1), (2, 1), (3, 3), (4, 3), (5, 3), (6, 1), (130, 3), (137, 3)] as [(Int32, Int)])
    func theLineRetriesOnlyWhatARetryFixes(code: Int32, tries: Int) throws {
        let work = Workspace()
        defer { work.remove() }
        let command = try stand(in: work, exiting: code)
        #expect(try sh(command) == code)
        let calls = (work.read("calls") ?? "").split(separator: "\n")
        #expect(calls.count == tries)
        #expect(calls.allSatisfy { $0.hasPrefix("run \(work.path)/etc/showbatch/manifest.yaml --date yesterday --resume=auto") }, "\(calls)")
        #expect(work.read("log/nightly.log") == String(repeating: "exit \(code)\n", count: tries))
    }

    /// A killed `flock` leaves the run it started holding the lock (the lock is the open file the
    /// run inherited): the next night's line skips while that run goes on, and starts after it.
    @Test func aKilledFlockLeavesTheRunHoldingTheLock() throws {
        let work = Workspace()
        defer { work.remove() }
        let command = try stand(in: work, exiting: 0, held: true)
        // Whatever happens, the stand-in ends before its folder goes.
        defer { work.write("release", "") }
        let night = Process()
        night.executableURL = URL(fileURLWithPath: "/bin/sh")
        night.arguments = ["-c", command]
        try night.run()
        defer { night.terminate() }
        let lock = work.path + "/lock/showbatch-nightly.lock"
        for _ in 0..<6_000 where work.read("calls") == nil { usleep(10_000) }
        #expect(work.read("calls") != nil)
        // The flock of the line, killed as an operator or the OOM killer would.
        #expect(try sh("pkill -KILL -f '^flock -n -E 75 \(lock) '") == 0)
        #expect(try sh("flock -n \(lock) true") == 1)
        #expect(try sh(command) == 75)
        #expect((work.read("log/nightly.log") ?? "").contains("\"event\":\"skipped\""))
        #expect(work.read("calls")?.split(separator: "\n").count == 1)
        work.write("release", "")
        night.waitUntilExit()
        for _ in 0..<6_000 where try sh("flock -n \(lock) true") != 0 { usleep(10_000) }
        #expect(try sh("flock -n \(lock) true") == 0)
    }
}
