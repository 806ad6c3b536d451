import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// nginx (Debian's nginx-light, which `make test` installs) on 127.0.0.1 with TLS and HTTP/2,
/// answering every request with a fixed JSON body, in a folder of its own: a real HTTP/2 server
/// with its own connection policy (`keepalive_requests` sends GOAWAY after that many requests).
final class NginxServer: @unchecked Sendable {
    let port: Int
    let dir: String
    private let process = Process()

    var baseURL: String { "https://127.0.0.1:\(port)" }

    init(certificate: String, key: String, keepaliveRequests: Int, body: String) throws {
        dir = FileManager.default.temporaryDirectory.path + "/showbatch-nginx-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir + "/tmp", withIntermediateDirectories: true)
        port = try freeLoopbackPort()
        let escaped = body.replacingOccurrences(of: "'", with: "\\'")
        let config = """
        daemon off;
        master_process off;
        worker_processes 1;
        pid \(dir)/nginx.pid;
        error_log \(dir)/error.log warn;
        events { worker_connections 1024; }
        http {
            access_log off;
            client_body_temp_path \(dir)/tmp/body;
            proxy_temp_path \(dir)/tmp/proxy;
            fastcgi_temp_path \(dir)/tmp/fastcgi;
            uwsgi_temp_path \(dir)/tmp/uwsgi;
            scgi_temp_path \(dir)/tmp/scgi;
            keepalive_requests \(keepaliveRequests);
            server {
                listen 127.0.0.1:\(port) ssl http2;
                ssl_certificate \(certificate);
                ssl_certificate_key \(key);
                location / {
                    default_type application/json;
                    return 200 '\(escaped)';
                }
            }
        }
        """
        try config.write(toFile: dir + "/nginx.conf", atomically: true, encoding: .utf8)
        try requireTool("/usr/sbin/nginx", package: "nginx-light")
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        process.arguments = ["-p", dir, "-c", dir + "/nginx.conf", "-e", dir + "/error.log"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Ready once it accepts a connection.
        for _ in 0..<400 {
            if acceptsConnections(port) { return }
            guard process.isRunning else { break }
            usleep(10_000)
        }
        let log = (try? String(contentsOfFile: dir + "/error.log", encoding: .utf8)) ?? ""
        stop()
        throw NginxError(message: "nginx did not start: \(log)")
    }

    struct NginxError: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }

    /// Stops nginx and removes its folder.
    func stop() {
        if process.isRunning { process.terminate() }
        for _ in 0..<400 where process.isRunning { usleep(5_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(atPath: dir)
    }
}
