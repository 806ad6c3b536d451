import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

private func rows(_ count: Int) -> String {
    "id\n" + (0..<count).map(String.init).joined(separator: "\n") + "\n"
}

/// A manifest of `count` rows posted to the server under test, with `tls` settings.
private func manifestText(tls: String, count: Int = 20, attempts: Int = 3) -> String {
    """
    vault: tnt1
    concurrency: 4
    timeout: 5s
    retry: {attempts: \(attempts), backoff: 1ms}
    \(tls)
    output: {path: r.csv}
    requests: [{name: "r${row.id}", each: {csv: d.csv}, path: /post, payload: {card: "card-${row.id}"}, labels: {card: {path: json.card, revealed: optional}}}]
    """
}

/// Runs `manifest` against `server` with the curl transport; the run's environment is `environment`.
private func run(_ fixture: RunFixture, _ manifest: Manifest, against server: TLSServer,
                 environment: [String: String] = [:]) async throws -> RunSummary {
    var options = RunOptions()
    options.baseURLOverride = server.baseURL
    options.progress = .never
    let log = fixture.log
    return try await Runner(manifest: manifest, options: options, environment: environment) { log.record($0) }.run()
}

/// HTTPS against a TLS server the test starts on 127.0.0.1 with certificates it makes (openssl):
/// trust comes from `tls` or the usual environment variables, and a certificate problem stops the
/// run at once, named, without a retry.
@Suite(.serialized) struct HTTPSTests {
    @Test(arguments: ["tls: {ca_file: CA}", "tls: {ca_path: CADIR}", "env: CURL_CA_BUNDLE", "env: SSL_CERT_FILE", "env: SSL_CERT_DIR"])
    func aServerTrustedThroughTheGivenCAIsRevealedFrom(trust: String) async throws {
        let tls = try TLSFixture()
        defer { tls.remove() }
        let server = try tls.server("server")
        defer { server.stop() }
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        // A CA folder as OpenSSL reads one: the certificate under its subject hash.
        let caDir = fixture.dir.path + "/cas"
        try FileManager.default.createDirectory(atPath: caDir, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: tls.path("ca.pem"), toPath: caDir + "/" + (try subjectHash(tls.path("ca.pem"))) + ".0")
        // Whole words only: a temporary path can hold "CA" itself.
        let section = trust == "tls: {ca_file: CA}" ? "tls: {ca_file: \(tls.path("ca.pem"))}"
            : trust == "tls: {ca_path: CADIR}" ? "tls: {ca_path: \(caDir)}" : ""
        var environment: [String: String] = [:]
        switch trust {
        case "env: CURL_CA_BUNDLE": environment["CURL_CA_BUNDLE"] = tls.path("ca.pem")
        case "env: SSL_CERT_FILE": environment["SSL_CERT_FILE"] = tls.path("ca.pem")
        case "env: SSL_CERT_DIR": environment["SSL_CERT_DIR"] = caDir
        default: break
        }
        let manifest = try fixture.manifest(manifestText(tls: section), files: ["d.csv": rows(20)])
        let summary = try await run(fixture, manifest, against: server, environment: environment)
        #expect(summary.ok == 20 && summary.failed == 0 && summary.stopReason == nil)
        let lines = try #require(fixture.read("r.csv")).split(separator: "\n")
        #expect(lines.count == 21)
        #expect(lines[1] == "r0,ok,200,1,,card-0")
        let counts = server.settled()
        #expect(counts.requests == 20)
        // Four transfers at a time over HTTP/1.1: at most one connection each, kept alive.
        #expect(counts.connections <= 4, "\(counts.connections) connections")
    }

    /// A certificate no CA given vouches for stops the run at once: one line naming the cause,
    /// no retry, nothing written as a failed row, the journal kept for --resume.
    @Test func anUntrustedCertificateStopsTheRunAtOnceWithItsCause() async throws {
        let tls = try TLSFixture()
        defer { tls.remove() }
        let server = try tls.server("untrusted")
        defer { server.stop() }
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(manifestText(tls: "tls: {ca_file: \(tls.path("ca.pem"))}", count: 500), files: ["d.csv": rows(500)])
        let summary = try await run(fixture, manifest, against: server)
        #expect(summary.stopReason == "TLS: the server's certificate is not trusted, has expired or does not name the host (curl: SSL certificate problem: unable to get local issuer certificate)")
        #expect(summary.retries == 0)
        let counts = server.settled()
        #expect(counts.requests == 0)
        // The transfers already in flight when the first one failed, and no more.
        #expect(counts.connections <= 4, "\(counts.connections) connections")
        #expect(fixture.dir.exists("r.csv.journal") && fixture.dir.exists("r.csv.partial") && !fixture.dir.exists("r.csv"))
    }

    /// A certificate for another name says so, in curl's words.
    @Test func aCertificateForAnotherNameIsNamed() async throws {
        let tls = try TLSFixture()
        defer { tls.remove() }
        let server = try tls.server("wrong-name")
        defer { server.stop() }
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(manifestText(tls: "tls: {ca_file: \(tls.path("ca.pem"))}"), files: ["d.csv": rows(20)])
        let summary = try await run(fixture, manifest, against: server)
        #expect(summary.stopReason == "TLS: the server's certificate is not trusted, has expired or does not name the host (curl: SSL: no alternative certificate subject name matches target host name '127.0.0.1')")
        #expect(server.settled().requests == 0)
    }

    /// Mutual TLS: a server that requires a client certificate gets the one the manifest names;
    /// without one, the handshake is refused and the run stops. When the server's close overtakes
    /// its alert (it resets the connection with the request unread), nothing says why: that
    /// attempt is a lost connection, failed like any other (1501), and an attempt that reads the
    /// alert stops the run.
    @Test(arguments: [true, false])
    func aClientCertificateIsPresentedWhenGiven(given: Bool) async throws {
        let tls = try TLSFixture()
        defer { tls.remove() }
        let server = try tls.server("server", clientCA: true)
        defer { server.stop() }
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let client = given ? ", client_cert: \(tls.path("client.pem")), client_key: \(tls.path("client.key"))" : ""
        let manifest = try fixture.manifest(manifestText(tls: "tls: {ca_file: \(tls.path("ca.pem"))\(client)}\ncircuit: {outage_after: 0}", count: 10, attempts: 1),
                                            files: ["d.csv": rows(10)])
        let summary = try await run(fixture, manifest, against: server)
        let requests = server.settled().requests
        if given {
            #expect(summary.ok == 10 && summary.stopReason == nil)
            #expect(requests == 10)
        } else {
            #expect(summary.ok == 0 && requests == 0)
            // curl's own words carry the OpenSSL version: the part before them is ours, exactly.
            if let reason = summary.stopReason {
                #expect(reason.hasPrefix("TLS: the server refused the TLS handshake: it wants a client certificate, or does not trust the one given (curl: "))
                #expect(reason.hasSuffix("alert certificate required, errno 0)"), "\(reason)")
            } else {
                let lines = try #require(fixture.read("r.csv")).split(separator: "\n").dropFirst()
                #expect(lines.count == 10 && lines.allSatisfy { $0.contains(",failed,,1,1501 network: connection lost (curl: ") }, "\(lines)")
            }
            #expect(summary.retries == 0)
        }
    }
}

/// OpenSSL's subject hash of a certificate, the name it looks a CA up by in a folder.
private func subjectHash(_ certificate: String) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
    process.arguments = ["x509", "-hash", "-noout", "-in", certificate]
    let out = Pipe()
    process.standardOutput = out
    try process.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}
