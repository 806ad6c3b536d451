import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Debian's OpenSSH server (`openssh-server`, which `make test` installs) on 127.0.0.1 with a host
/// key of its own and `internal-sftp`, in a folder of its own: the processor's SFTP server. The
/// client key it takes, and a known hosts file holding its host key, are made beside it.
final class SFTPServer: @unchecked Sendable {
    static let binary = "/usr/sbin/sshd"

    let dir: String
    /// Changes with each start (a server down and back is on a new port, as after a failover).
    private(set) var port: Int
    /// sshd's process id while it runs. Spawned and reaped here, not by Foundation's `Process`,
    /// whose child-exit handler was seen waiting on a long-running sshd (wait4 without WNOHANG)
    /// and so never reaped the showbatch processes the tests start meanwhile.
    private var pid: pid_t?

    /// Where files are uploaded: `uploads/` in the server's folder.
    var uploads: String { dir + "/uploads" }
    /// The `deliver.sftp` URL of `uploads/`.
    var url: String { "sftp://127.0.0.1:\(port)\(uploads)/" }
    var clientKey: String { dir + "/client_key" }
    /// Holds the server's host key for its port.
    var knownHosts: String { dir + "/known_hosts" }
    /// Holds another key for the server's port: the host key is unknown.
    var otherKnownHosts: String { dir + "/other_known_hosts" }
    /// The user the tests run as, whom the server lets in with `clientKey`.
    let user: String

    /// The SFTP subsystem is `Tests/Fixtures/sftp_proxy.py` in front of OpenSSH's sftp-server,
    /// which plays what `control(_:)` asks (a processor, a stall, a dropped session).
    let proxied: Bool
    /// The proxy's control file, its log of requests, and where its processor puts what it takes.
    var controlFile: String { dir + "/control.json" }
    var logFile: String { dir + "/requests.log" }
    var processed: String { dir + "/processed" }

    init(proxied: Bool = false) throws {
        self.proxied = proxied
        try requireTool(Self.binary, package: "openssh-server")
        try requireTool("/usr/bin/ssh-keygen", package: "openssh-client")
        if proxied { try requireTool("/usr/bin/python3", package: "python3") }
        dir = FileManager.default.temporaryDirectory.path + "/showbatch-sshd-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir + "/uploads", withIntermediateDirectories: true)
        user = String(cString: getpwuid(getuid())!.pointee.pw_name)
        port = try freeLoopbackPort()
        for name in ["host_key", "client_key", "other_key"] {
            try SFTPServer.keygen(dir + "/" + name)
        }
        try FileManager.default.copyItem(atPath: dir + "/client_key.pub", toPath: dir + "/authorized_keys")
        if proxied { control([:]) }
        // sshd refuses to start without its privilege separation folder.
        if !FileManager.default.fileExists(atPath: "/run/sshd") {
            try FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        }
        try start()
    }

    /// Starts sshd on a new free port and rewrites the known hosts files for it.
    func start() throws {
        port = try freeLoopbackPort()
        let config = """
        Port \(port)
        ListenAddress 127.0.0.1
        HostKey \(dir)/host_key
        AuthorizedKeysFile \(dir)/authorized_keys
        PasswordAuthentication no
        KbdInteractiveAuthentication no
        UsePAM no
        StrictModes no
        PidFile none
        LogLevel VERBOSE
        Subsystem sftp \(proxied ? "/usr/bin/python3 \(repository)/Tests/Fixtures/sftp_proxy.py \(controlFile)" : "internal-sftp")

        """
        try config.write(toFile: dir + "/sshd_config", atomically: true, encoding: .utf8)
        let hostKey = try String(contentsOfFile: dir + "/host_key.pub", encoding: .utf8).split(separator: " ").prefix(2).joined(separator: " ")
        let otherKey = try String(contentsOfFile: dir + "/other_key.pub", encoding: .utf8).split(separator: " ").prefix(2).joined(separator: " ")
        try "[127.0.0.1]:\(port) \(hostKey)\n".write(toFile: knownHosts, atomically: true, encoding: .utf8)
        try "[127.0.0.1]:\(port) \(otherKey)\n".write(toFile: otherKnownHosts, atomically: true, encoding: .utf8)
        let arguments = [Self.binary, "-D", "-e", "-f", dir + "/sshd_config", "-E", dir + "/sshd.log"]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for fd: Int32 in [0, 1, 2] { posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0) }
        var child: pid_t = 0
        guard posix_spawn(&child, Self.binary, &actions, nil, &argv, environ) == 0 else {
            throw SFTPServerError(message: "cannot start \(Self.binary)")
        }
        pid = child
        // Up to 30 s: a loaded machine starts sshd slowly.
        for _ in 0..<3_000 {
            if acceptsConnections(port) { return }
            var status: Int32 = 0
            if waitpid(child, &status, WNOHANG) == child { pid = nil; break }
            usleep(10_000)
        }
        let log = (try? String(contentsOfFile: dir + "/sshd.log", encoding: .utf8)) ?? ""
        stop()
        throw SFTPServerError(message: "sshd did not start: \(log)")
    }

    struct SFTPServerError: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }

    /// Stops sshd (its folder stays, with what was uploaded).
    func stop() {
        guard let pid else { return }
        kill(pid, SIGTERM)
        var status: Int32 = 0
        for _ in 0..<400 {
            if waitpid(pid, &status, WNOHANG) == pid { self.pid = nil; return }
            usleep(5_000)
        }
        kill(pid, SIGKILL)
        waitpid(pid, &status, 0)
        self.pid = nil
    }

    /// Stops sshd and removes its folder.
    func remove() {
        stop()
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// Sets what the proxy plays from now on (its log and processor folder always named).
    func control(_ settings: [String: Any]) {
        var settings = settings
        settings["log"] = logFile
        settings["processed"] = processed
        let data = try! JSONSerialization.data(withJSONObject: settings)
        try! data.write(to: URL(fileURLWithPath: controlFile + ".new"))
        rename(controlFile + ".new", controlFile)
    }

    /// The requests the proxy saw, one line each (`OPEN path`, `RENAME from to`, `HOLD RENAME`, …).
    var requests: [String] {
        ((try? String(contentsOfFile: logFile, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    /// The files the processor took, by their name when renamed in (each once per take).
    var taken: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: processed)) ?? []).map { name in
            String(name[..<(name.lastIndex(of: ".") ?? name.endIndex)])
        }.sorted()
    }

    /// Waits (at most `seconds`) until the proxy saw a request line that starts with `prefix`,
    /// among those after the first `after`.
    func waitForRequest(_ prefix: String, after: Int = 0, seconds: Double = 60) async throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if requests.dropFirst(after).contains(where: { $0.hasPrefix(prefix) }) { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    /// The names in `uploads/`, sorted, dot files included.
    var uploaded: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: uploads)) ?? []).sorted() }

    private static func keygen(_ path: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ssh-keygen")
        process.arguments = ["-q", "-t", "ed25519", "-N", "", "-f", path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw SFTPServerError(message: "ssh-keygen failed for \(path)") }
    }
}
