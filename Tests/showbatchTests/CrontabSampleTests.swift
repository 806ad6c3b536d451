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
        #expect(try sh(command) == 0)
        let skipped = work.read("log/nightly.log") ?? ""
        #expect(skipped.hasSuffix("\"level\":\"warning\",\"event\":\"skipped\",\"message\":\"the previous run still holds \(work.path)/lock/showbatch-nightly.lock: this night was not started (exit 75)\"}\n"), "\(skipped)")
    }
}
