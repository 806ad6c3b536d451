import Foundation
import Synchronization
import TestSupport

/// A certificate authority and certificates made with the openssl tool for one test, and a TLS
/// echo server (Tests/Fixtures/tls_echo_server.py) on 127.0.0.1 presenting one of them.
struct TLSFixture {
    let dir: String

    /// Makes a CA, a server certificate for 127.0.0.1, one for another name, one signed by
    /// another CA, and a client certificate.
    init() throws {
        dir = FileManager.default.temporaryDirectory.path + "/showbatch-tls-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=showbatch test CA"])
        try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "other-ca.key", "-out", "other-ca.pem", "-days", "2", "-subj", "/CN=another CA"])
        try certificate("server", san: "IP:127.0.0.1", ca: "ca")
        try certificate("wrong-name", san: "DNS:reveal.example.com", ca: "ca")
        try certificate("untrusted", san: "IP:127.0.0.1", ca: "other-ca")
        try certificate("client", san: "DNS:client", ca: "ca", client: true)
    }

    func path(_ name: String) -> String { dir + "/" + name }

    func remove() { try? FileManager.default.removeItem(atPath: dir) }

    private func certificate(_ name: String, san: String, ca: String, client: Bool = false) throws {
        try openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "\(name).key", "-out", "\(name).csr", "-subj", "/CN=\(name)"])
        try String("subjectAltName=\(san)\nextendedKeyUsage=\(client ? "clientAuth" : "serverAuth")\n").write(toFile: path("\(name).ext"), atomically: true, encoding: .utf8)
        try openssl(["x509", "-req", "-in", "\(name).csr", "-CA", "\(ca).pem", "-CAkey", "\(ca).key", "-CAcreateserial",
                     "-out", "\(name).pem", "-days", "2", "-extfile", "\(name).ext"])
    }

    private func openssl(_ arguments: [String]) throws {
        let process = Process()
        try requireTool("/usr/bin/openssl", package: "openssl")
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: dir)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw POSIXError(.EIO) }
    }

    /// Starts the echo server presenting `certificate` (a name made by `init`).
    func server(_ certificate: String, clientCA: Bool = false) throws -> TLSServer {
        try TLSServer(certificate: path("\(certificate).pem"), key: path("\(certificate).key"), clientCA: clientCA ? path("ca.pem") : nil)
    }
}

/// A running TLS echo server; counts the connections and requests it saw.
final class TLSServer: @unchecked Sendable {
    let port: Int
    private let process = Process()
    private let counts = Mutex((connections: 0, requests: 0))

    var baseURL: String { "https://127.0.0.1:\(port)" }
    /// Connections counted so far; see `settled()`.
    var connections: Int { counts.withLock { $0.connections } }
    /// Requests counted so far; see `settled()`.
    var requests: Int { counts.withLock { $0.requests } }

    /// The counts once the server's stderr has been quiet for 300 ms (its lines arrive after the
    /// answers do).
    func settled() -> (connections: Int, requests: Int) {
        var last = counts.withLock { $0 }
        var quiet = 0
        while quiet < 6 {
            usleep(50_000)
            let now = counts.withLock { $0 }
            quiet = now == last ? quiet + 1 : 0
            last = now
        }
        return last
    }

    init(certificate: String, key: String, clientCA: String?) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        let script = FileManager.default.currentDirectoryPath + "/Tests/Fixtures/tls_echo_server.py"
        process.arguments = ["python3", script, certificate, key] + (clientCA.map { ["--client-ca", $0] } ?? [])
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        var line = Data()
        while !line.contains(0x0A) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { throw POSIXError(.EIO) }
            line.append(chunk)
        }
        port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        Thread { [self] in
            var buffer = ""
            while true {
                let chunk = err.fileHandleForReading.availableData
                if chunk.isEmpty { return }
                buffer += String(decoding: chunk, as: UTF8.self)
                while let newline = buffer.firstIndex(of: "\n") {
                    let word = buffer[..<newline]
                    self.counts.withLock { if word == "connection" { $0.connections += 1 } else if word == "request" { $0.requests += 1 } }
                    buffer = String(buffer[buffer.index(after: newline)...])
                }
            }
        }.start()
    }

    /// Stops the server. Polled, not `waitUntilExit`, which spins a run loop on a task's thread.
    func stop() {
        process.terminate()
        for _ in 0..<400 where process.isRunning { usleep(5_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}
