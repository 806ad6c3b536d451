import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A night delivered by SFTP with a trigger file. `timeout` well above what a loaded machine
/// takes for a step through the proxy, and far below a stalled server's hold.
private func manifest(timeout: String = "15s") -> String { sftpNightManifest(timeout: timeout) }

/// Night `index`'s date, from 2026-11-01 (past, so never refused as ahead of today).
private func date(_ index: Int) -> String { "2026-11-\(index + 1 < 10 ? "0" : "")\(index + 1)" }

/// The processor's SFTP server played by the proxy: one that takes each file the moment it is
/// renamed in, stalls, and drops sessions. No night reaches it twice.
@Suite(.serialized) struct HostileProcessorTests {
    private func environment(_ server: SFTPServer, knownHosts: String? = nil) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment.merge(["SB_SFTP_URL": server.url, "SB_SFTP_USER": server.user, "SB_SFTP_KEY": server.clientKey,
                           "SB_KNOWN_HOSTS": knownHosts ?? server.knownHosts]) { $1 }
        return environment
    }

    private func run(_ work: Workspace, _ server: SFTPServer, _ arguments: [String]) async throws -> Execution {
        try await showbatch(arguments, in: work.path, environment: environment(server))
    }

    /// Starts a run, waits until the proxy logs `request` (the step it is held at), and kills it.
    private func kill(_ work: Workspace, _ server: SFTPServer, _ arguments: [String], at request: String) async throws {
        let seen = server.requests.count
        let process = try launch(arguments, in: work.path, environment: environment(server))
        let reached = try await server.waitForRequest(request, after: seen)
        Glibc.kill(process.processIdentifier, SIGKILL)
        await exited(process)
        #expect(reached, "\(request) never came: \(work.read(".stderr") ?? "")")
    }

    /// Twenty nights, a kill at each delivery step in turn (during the upload, before the
    /// rename, after it and before its answer, during the trigger file): the processor, which
    /// takes each file at once, gets each night once. Each step is held longer than the run's
    /// timeout, and the timeout is longer than a loaded machine takes to see the hold and kill. A hand-over whose outcome cannot be known
    /// is refused (exit 6) until a person records what the processor says.
    @Test(.timeLimit(.minutes(10))) func aProcessorThatTakesFilesAtOnceGetsEachNightOnce() async throws {
        let work = Workspace(["m.yaml": manifest(timeout: "60s")])
        let server = try SFTPServer(proxied: true)
        defer { work.remove(); server.remove() }
        var names: [String] = []
        for index in 0..<20 {
            let night = date(index)
            work.write("in/customers.csv", "id,alias\n\(index * 2),tok_a\n\(index * 2 + 1),tok_b\n")
            let name = "cards-\(night.replacingOccurrences(of: "-", with: ""))-\(String(format: "%04d", index + 1)).csv"
            names.append(name)
            let arguments = ["run", "m.yaml", "--emulate", "--date", night, "--resume=auto"]
            switch index % 5 {
            case 1:
                server.control(["processor": "take", "hold": ["op": "OPEN", "path": ".part", "seconds": 90]])
                try await kill(work, server, arguments, at: "HOLD OPEN")
            case 2:
                server.control(["processor": "take", "hold": ["op": "RENAME", "seconds": 90, "path": name]])
                try await kill(work, server, arguments, at: "HOLD RENAME")
            case 3:
                // This night's rename only: the session held at the last night's rename wakes
                // (90 s on) and forwards it, and its answer must not be taken for this one's.
                server.control(["processor": "take", "hold": ["op": "RENAME", "seconds": 90, "when": "after", "path": name]])
                try await kill(work, server, arguments, at: "HOLD-AFTER RENAME")
            case 4:
                server.control(["processor": "take", "hold": ["op": "OPEN", "path": ".done", "seconds": 90]])
                try await kill(work, server, arguments, at: "HOLD OPEN")
            default:
                break
            }
            server.control(["processor": "take"])
            let next = try await run(work, server, arguments)
            if index % 5 == 3 {
                // The rename was done and the processor took the file; the answer never came back.
                #expect(next.status == 6, "\(next.stderr)")
                #expect(next.stderr.contains("and neither \(name) nor its upload"), "\(next.stderr)")
                #expect(next.stderr.contains("Ask the processor: if they have it, record it (showbatch deliver m.yaml --date \(night) --mark-delivered); if not, send it again (showbatch deliver m.yaml --date \(night) --send-again)"))
                let marked = try await run(work, server, ["deliver", "m.yaml", "--date", night, "--mark-delivered"])
                #expect(marked.status == 0, "\(marked.stderr)")
                #expect(marked.stderr == "showbatch: out/\(name) is recorded as delivered to \(server.url)\(name), as the processor has it (nothing was sent)\n")
                let after = try await run(work, server, arguments)
                #expect(after.status == 0, "\(after.stderr)")
            } else {
                #expect(next.status == 0, "night \(index): \(next.stderr)")
            }
            // Nothing is revealed again once the night is written.
            #expect(index % 5 == 0 || next.stderr.contains("showbatch: 0 rows: 0 ok"), "night \(index): \(next.stderr)")
            #expect(server.taken == names.sorted(), "night \(index): \(server.taken)")
        }
        // Each night once; the trigger files are what is left in the folder, and no upload (a
        // night recorded by hand, as the processor had it, is given no trigger: nothing is sent).
        #expect(server.taken == names.sorted())
        #expect(server.uploaded.filter { !$0.hasSuffix(".part") } == names.enumerated().filter { $0.offset % 5 != 3 }.map { $0.element + ".done" }.sorted())
        // A held upload's session, given up on, may still create its temporary file once the
        // server wakes (the server's doing); never one of another night, never renamed in.
        let killedUploads = names.enumerated().filter { $0.offset % 5 == 1 }.map { "." + $0.element + "." }
        #expect(server.uploaded.filter { $0.hasSuffix(".part") }.allSatisfy { part in killedUploads.contains { part.hasPrefix($0) } })
        // After a rename, the final name was never opened again.
        for name in names { #expect(!server.requests.contains { $0.hasPrefix("OPEN ") && $0.hasSuffix("/" + name) }) }
    }

    /// A server that holds the rename: the run gives up after `timeout` a try (two tries), long
    /// before the server would answer, and exits 5 with the night kept for the next run.
    @Test(.timeLimit(.minutes(2))) func aStalledServerEndsTheRunWithinItsTimeout() async throws {
        let work = Workspace(["m.yaml": manifest(timeout: "10s"), "in/customers.csv": "id,alias\n1,tok_a\n"])
        let server = try SFTPServer(proxied: true)
        defer { work.remove(); server.remove() }
        server.control(["hold": ["op": "RENAME", "seconds": 90]])
        let stalled = try await run(work, server, ["run", "m.yaml", "--emulate", "--date", date(0)])
        #expect(stalled.status == 5, "\(stalled.stderr)")
        #expect(stalled.stderr.contains("did not answer within 10s"), "\(stalled.stderr)")
        // Both tries were given up on; the ledger knows the rename was asked for.
        #expect(server.requests.filter { $0 == "HOLD RENAME" }.count == 2)
        #expect(work.read("out/.cards-{date}-{seq:4}.csv.sequence")?.contains("\"handing\":{") == true)
        // The server answers again: the next run settles the hand-over, nothing uploaded twice.
        server.control([:])
        let next = try await run(work, server, ["run", "m.yaml", "--emulate", "--date", date(0)])
        #expect(next.status == 0, "\(next.stderr)")
        #expect(server.uploaded == ["cards-20261101-0001.csv", "cards-20261101-0001.csv.done"])
    }

    /// SIGTERM while the server holds an upload's OPEN ends the run at once (130), the night kept.
    @Test(.timeLimit(.minutes(2))) func aSignalDuringAStallEndsTheRun() async throws {
        let work = Workspace(["m.yaml": manifest(timeout: "60s"), "in/customers.csv": "id,alias\n1,tok_a\n"])
        let server = try SFTPServer(proxied: true)
        defer { work.remove(); server.remove() }
        server.control(["hold": ["op": "OPEN", "path": ".part", "seconds": 90]])
        let process = try launch(["run", "m.yaml", "--emulate", "--date", date(0)], in: work.path, environment: environment(server))
        #expect(try await server.waitForRequest("HOLD OPEN"))
        Glibc.kill(process.processIdentifier, SIGTERM)
        // The hold is 90 s and the timeout 60 s: only the signal ends it this soon.
        await exited(process)
        #expect(process.terminationStatus == 130, "\(work.read(".stderr") ?? "")")
        #expect(work.read(".stderr")?.contains("interrupted") == true)
        #expect(server.uploaded.allSatisfy { $0.hasSuffix(".part") })
    }

    /// A `.NAME.part` planted as a link to another file: it is removed, never written through,
    /// and the file is delivered under its name, a regular file.
    @Test func aPlantedPartLinkWritesNothingThroughIt() async throws {
        let work = Workspace(["m.yaml": manifest(), "in/customers.csv": "id,alias\n1,tok_a\n"])
        let server = try SFTPServer()
        defer { work.remove(); server.remove() }
        let name = "cards-20261101-0001.csv"
        let target = server.dir + "/neighbour.txt"
        try "the neighbour's\n".write(toFile: target, atomically: false, encoding: .utf8)
        chmod(target, 0o644)
        symlink(target, server.uploads + "/." + name + ".part")
        symlink(target, server.uploads + "/." + name + ".0123456789abcdef.part")
        let delivered = try await run(work, server, ["run", "m.yaml", "--emulate", "--date", date(0)])
        #expect(delivered.status == 0, "\(delivered.stderr)")
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "the neighbour's\n")
        var info = stat()
        #expect(lstat(target, &info) == 0 && info.st_mode & 0o777 == 0o644)
        #expect(lstat(server.uploads + "/" + name, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG)
        #expect(server.uploaded == [name, name + ".done"])
    }

    /// known_hosts as OpenSSH reads it: lines `ssh-keyscan -H -p` writes (hashed, with the port),
    /// patterns, and `@revoked`, which refuses the key (exit 6, nothing uploaded).
    @Test func knownHostsAreReadAsOpenSSHReadsThem() async throws {
        let work = Workspace(["m.yaml": manifest(), "in/customers.csv": "id,alias\n1,tok_a\n"])
        let server = try SFTPServer()
        defer { work.remove(); server.remove() }
        let hostKey = try String(contentsOfFile: server.dir + "/host_key.pub", encoding: .utf8).split(separator: " ").prefix(2).joined(separator: " ")
        let scanned = try keyscan(port: server.port)
        #expect(scanned.hasPrefix("|1|"))
        let files = [("hashed", scanned),
                     ("pattern", "[127.0.0.?]:\(server.port),!example.com \(hostKey)\n"),
                     ("wildcard", "@cert-authority * \(hostKey)\n[127.*]:* \(hostKey)\n")]
        for (index, (name, text)) in files.enumerated() {
            work.write("kh-\(name)", text)
            let run = try await showbatch(["run", "m.yaml", "--emulate", "--date", date(index), "--allow-repeat"], in: work.path,
                                          environment: environment(server, knownHosts: work.path + "/kh-\(name)"))
            #expect(run.status == 0, "\(name): \(run.stderr)")
        }
        work.write("kh-revoked", "@revoked [127.0.0.1]:\(server.port) \(hostKey)\n" + scanned)
        let revoked = try await showbatch(["run", "m.yaml", "--emulate", "--date", date(3), "--allow-repeat"], in: work.path,
                                          environment: environment(server, knownHosts: work.path + "/kh-revoked"))
        #expect(revoked.status == 6)
        #expect(revoked.stderr.contains("the host key of 127.0.0.1:\(server.port) is revoked (@revoked, line 1)"), "\(revoked.stderr)")
        #expect(!server.uploaded.contains { $0.contains("20261104") })
    }

    /// A full disk on the server: said in so many words, not retried (exit 6), the upload removed.
    @Test func aFullServerDiskIsRefusedOnce() async throws {
        let server = try SFTPServer()
        defer { server.remove() }
        // A small tmpfs as the upload folder (root can mount one, as CI runs).
        guard mount("tmpfs", server.uploads, "tmpfs", 0, "size=64k") == 0 else {
            print("skipped: a full disk needs a tmpfs mount (root): \(String(cString: strerror(errno)))")
            return
        }
        defer { umount(server.uploads) }
        let rows = (0..<10_000).map { "\($0),tok_\($0 % 2 == 0 ? "a" : "b")\n" }.joined()
        let work = Workspace(["m.yaml": manifest(), "in/customers.csv": "id,alias\n" + rows])
        defer { work.remove() }
        let full = try await run(work, server, ["run", "m.yaml", "--emulate", "--date", date(0)])
        #expect(full.status == 6, "\(full.stderr)")
        #expect(full.stderr.contains("no space left on the server's disk"), "\(full.stderr)")
        #expect(!full.stderr.contains("trying again"))
        #expect(server.uploaded.isEmpty)
    }

    private func keyscan(port: Int) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ssh-keyscan")
        process.arguments = ["-H", "-p", String(port), "-t", "ed25519", "127.0.0.1"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}
