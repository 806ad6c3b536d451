import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// The custom hostname check as an unattended job needs it: retried, logged, and never moving
/// traffic to the vault URL silently when the check could not be made.
@Suite struct HostnameCheckTests {
    private static let text = """
    vault: tnt1
    hostname: reveal.example.com
    retry: {attempts: 3, backoff: 10ms}
    output: {path: r.csv}
    requests: [{name: a, path: /p}]

    """

    private static let vaultURL = "https://tnt1.sandbox.verygoodproxy.com"

    @Test func anUnreachableCheckStopsAnUnattendedRunBeforeAnythingIsOpened() async throws {
        let port = ClosedPort()
        defer { port.release() }
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(Self.text)
        var options = RunOptions()
        options.verbose = true
        options.progress = .never
        let log = fixture.log
        let runner = Runner(manifest: manifest, options: options, environment: ["SHOWBATCH_HOSTNAME_CHECK_URL": "http://127.0.0.1:\(port.port)"]) { log.record($0) }
        let summary = try await runner.run()
        // curl's own words name the port and the time it took.
        let refused = "connection refused (curl: Failed to connect to 127.0.0.1 port \(port.port) after N ms: Couldn't connect to server)"
        func steady(_ text: String) -> String { text.replacingOccurrences(of: #"after [0-9]+ ms"#, with: "after N ms", options: .regularExpression) }
        let reason = "the check of hostname reveal.example.com could not be made after 3 attempts (the check failed: \(refused))"
        #expect(summary.stopReason.map(steady) == reason + "; not falling back to \(Self.vaultURL) unattended (set hostname_fallback: true to allow it)")
        #expect(summary.exitCode == .stopped && summary.outputs.isEmpty && summary.rows == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.dir.path) == ["m.yaml"])
        let checkURL = "http://127.0.0.1:\(port.port)/collect-configs/reveal.example.com__tnt1.txt"
        #expect(log.all.map(steady) == (1...3).map { "attempt: GET \(checkURL) \(refused) hostname-check #\($0)" })
        #expect(log.notes.map(steady) == [
            "note: hostname check of reveal.example.com could not be made (the check failed: \(refused)); trying again in 10ms",
            "note: hostname check of reveal.example.com could not be made (the check failed: \(refused)); trying again in 20ms",
        ])
    }

    /// `hostname_fallback: true`, or someone at a terminal, gets the SDKs' fallback with a warning;
    /// `--strict-hostname` stops with exit 3 either way.
    @Test(arguments: ["fallback", "interactive", "strict"])
    func aCheckThatCannotBeMadeFallsBackWhenAllowed(mode: String) async throws {
        let server = try RawServer(answer: Array("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8))
        defer { server.stop() }
        let text = mode == "fallback" ? Self.text + "hostname_fallback: true\n" : Self.text
        let manifest = try loadManifest(text)
        var options = RunOptions()
        options.interactive = mode == "interactive"
        options.strictHostname = mode == "strict"
        let log = EventLog()
        let runner = Runner(manifest: manifest, options: options, environment: ["SHOWBATCH_HOSTNAME_CHECK_URL": server.baseURL]) { log.record($0) }
        let reason = "the check of hostname reveal.example.com could not be made after 3 attempts (the check answered HTTP 503)"
        if mode == "strict" {
            do {
                _ = try await runner.resolveBaseURL()
                Issue.record("the strict check did not stop")
            } catch {
                #expect(error.description == "\(reason); --strict-hostname stops here")
            }
            return
        }
        #expect(try await runner.resolveBaseURL() == .url(Self.vaultURL))
        #expect(log.all == ["warning: \(reason); using \(Self.vaultURL)"])
        #expect(log.notes.count == 2)
    }

    /// An answer that does not name the hostname is definitive: no retry, the SDKs' fallback.
    @Test func aCheckAnsweredWithoutTheNameIsNotRetried() async throws {
        let server = try RawServer(answer: Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}".utf8))
        defer { server.stop() }
        let log = EventLog()
        var options = RunOptions()
        options.verbose = true
        let runner = Runner(manifest: try loadManifest(Self.text), options: options,
                            environment: ["SHOWBATCH_HOSTNAME_CHECK_URL": server.baseURL]) { log.record($0) }
        #expect(try await runner.resolveBaseURL() == .url(Self.vaultURL))
        #expect(log.all == [
            "attempt: GET \(server.baseURL)/collect-configs/reveal.example.com__tnt1.txt 200 hostname-check #1",
            "warning: hostname reveal.example.com is not activated for vault tnt1 (the answer does not name it); using \(Self.vaultURL)",
        ])
    }

    /// `hostname: host:port` (a staging proxy on another port): requests go to https://host:port
    /// and no CNAME check is made, even unattended and with a check URL that cannot answer (which
    /// would stop such a run if it were asked). Against a TLS server on 127.0.0.1.
    @Test func aHostnameWithAPortIsUsedWithoutTheCheck() async throws {
        let tls = try TLSFixture()
        defer { tls.remove() }
        let server = try tls.server("server")
        defer { server.stop() }
        let closed = ClosedPort()
        defer { closed.release() }
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        hostname: https://127.0.0.1:\(server.port)/ignored
        tls: {ca_file: \(tls.path("ca.pem"))}
        output: {path: r.csv}
        requests: [{name: a, path: /post, payload: {card: card-a}, labels: {card: {path: json.card, revealed: optional}}}]
        """)
        #expect(manifest.hostname == "127.0.0.1:\(server.port)")
        #expect(manifest.hostnameCheck && !manifest.hostnameIsChecked)
        #expect(Plan(manifest: manifest).baseURL == "https://127.0.0.1:\(server.port)")
        #expect(Plan(manifest: manifest).hostnameNote == "hostname 127.0.0.1:\(server.port) is used as given (its CNAME activation is checked only on port 443)")
        var options = RunOptions()
        options.progress = .never
        options.verbose = true
        let log = fixture.log
        let runner = Runner(manifest: manifest, options: options, environment: ["SHOWBATCH_HOSTNAME_CHECK_URL": "http://127.0.0.1:\(closed.port)"]) { log.record($0) }
        let summary = try await runner.run()
        #expect(summary.ok == 1 && summary.stopReason == nil)
        #expect(fixture.read("r.csv") == "request,status,http_status,attempts,error,card\na,ok,200,1,,card-a\n")
        #expect(log.notes.contains("note: hostname 127.0.0.1:\(server.port) names a port other than 443, so its CNAME activation is not checked: requests go to https://127.0.0.1:\(server.port)"))
        // The one attempt is the request's: none went to the check.
        #expect(log.all.filter { $0.hasPrefix("attempt:") }.map { $0.replacingOccurrences(of: "\(server.port)", with: "PORT") } == ["attempt: POST https://127.0.0.1:PORT/post 200 a #1"])
    }

    /// `:443` is https's own port: the hostname is checked as without one.
    @Test func port443IsTheDefault() throws {
        let manifest = try loadManifest("vault: tnt1\nhostname: reveal.example.com:443\nrequests: [{name: a, path: /p}]\n")
        #expect(manifest.hostname == "reveal.example.com" && manifest.hostnameIsChecked)
        #expect(Plan(manifest: manifest).baseURL == "https://reveal.example.com")
    }
}
