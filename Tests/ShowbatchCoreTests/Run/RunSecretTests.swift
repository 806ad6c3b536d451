import Synchronization
import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// The run's secrets never leave it in words: one redactor clears every event, stop reason and
/// error of the client secret, the header values and each token.
@Suite(.serialized) struct RunSecretTests {
    /// A token endpoint that echoes the client secret as its OAuth error code: the stop reason
    /// (and so stderr and the report) says <redacted>.
    @Test func aTokenEndpointEchoingTheSecretIsRedacted() async throws {
        let secret = "hunter_two_secret"
        let body = #"{"error":"\#(secret)"}"#
        let server = try RawServer(answer: Array("HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)".utf8))
        defer { server.stop() }
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        circuit: {max_pause: 2s}
        auth: {token_url: "\(server.baseURL)/token", client_id: showbatch, client_secret: "${SECRET}"}
        output: {path: r.csv}
        requests: [{name: a, path: /p}]
        """, environment: ["SECRET": secret])
        var options = RunOptions()
        options.progress = .never
        let log = fixture.log
        let summary = try await Runner(manifest: manifest, options: options, environment: [:]) { log.record($0) }.run()
        #expect(summary.stopReason == "the token endpoint refused the client credentials: HTTP 401 (<redacted>)")
        #expect(!(log.all + log.notes).contains { $0.contains(secret) })
    }

    /// Header values (from ${ENV} or written out) echoed in a message are hidden too: here a
    /// server whose redirect names the request's token in its URL reaches the verbose log.
    @Test func headerValuesInMessagesAreRedacted() throws {
        let manifest = try! loadManifest("""
        vault: tnt1
        headers: {Authorization: "Bearer ${TOKEN}", X-Api-Key: plain-api-key-1234}
        requests: [{name: a, path: /p}]
        """, environment: ["TOKEN": "sk_live_abcdef123456"])
        let redactor = Redactor(manifest: manifest)
        #expect(redactor.redact("refused sk_live_abcdef123456 and plain-api-key-1234 (Bearer sk_live_abcdef123456)")
                == "refused <redacted> and <redacted> (<redacted>)")
        redactor.add("emu-token-7")
        #expect(redactor.redact(.note("renewed emu-token-7")).text == "note: renewed <redacted>")
        #expect(redactor.redact(RunError.runtime(FileError(.read, "x", cause: .reason("emu-token-7")))).description == "cannot read x: <redacted>")
        #expect(redactor.redact(RunError.runtime(RecordsError.pushFailed(address: "h", reason: "HTTP 401 emu-token-7"))).description
                == "cannot push the metrics to h: HTTP 401 <redacted>")
        // A typed problem's fields nested in records are cleared too: a night's file name comes
        // from a template, its server's folder from the manifest.
        let date = try #require(NightDate(parsing: "2026-12-01"))
        var night = NightRecord(date: date, seq: 3, data: "", deliver: true)
        night.file = "cards-emu-token-7.csv"
        night.delivery = NightRecord.Delivery(to: "sftp://h/emu-token-7/", file: night.file, size: 1, sha256: "", at: "t")
        let refusals: [NightRefusal] = [.retryDelivered(path: "out/emu-token-7.csv", night), .outOfOrder(date, latest: night), .repeated(date, of: night)]
        for refusal in refusals {
            let said = redactor.redact(RunError.usage(refusal)).description
            #expect(!said.contains("emu-token-7") && said.contains("<redacted>"), "\(refusal)")
        }
    }

    /// --metrics and --report never replace a file the run reads: the token file, the CA file,
    /// the client certificate and key (each refused before anything is sent).
    @Test(arguments: ["token", "ca", "cert", "key"]) func sideFilesNeverReplaceAnInput(input: String) async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        for name in ["token", "ca.pem", "client.pem", "client.key"] { _ = fixture.dir.file(name, "x\n") }
        let manifest = try fixture.manifest("""
        vault: tnt1
        auth: {token_file: token}
        tls: {ca_file: ca.pem, client_cert: client.pem, client_key: client.key}
        output: {path: r.csv}
        requests: [{name: a, path: /p}]
        """)
        let file = ["token": "token", "ca": "ca.pem", "cert": "client.pem", "key": "client.key"][input]!
        let what = ["token": "the token file", "ca": "the CA file", "cert": "the client certificate", "key": "the client key"][input]!
        var options = RunOptions()
        options.sideFiles = ["--report": fixture.dir.path + "/" + file]
        let error = await #expect(throws: RunError.self) { try await fixture.run(manifest, options: options) }
        #expect(error?.description == "--report \(fixture.dir.path)/\(file) is \(what); give it a path of its own")
        #expect(fixture.read(file) == "x\n")
    }
}

/// A bearer token is never in a header set a transport keeps: requests that carry one are sent
/// as not fixed, so curl builds their header list for that request alone and frees it with the
/// transfer (it used to keep up to 16 lists, each holding a token, until the run ended).
@Suite struct CredentialHeaderTests {
    @Test func requestsWithATokenAreNeverKeptByTheTransport() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        concurrency: 4
        auth: {token_url: "http://127.0.0.1:1/oauth/token", client_id: showbatch, client_secret: "${SECRET}"}
        output: {path: r.csv}
        requests: [{name: "r${row.id}", each: {csv: d.csv}, path: /p, labels: {p: path}}]
        """, files: ["d.csv": "id\n" + (0..<40).map(String.init).joined(separator: "\n") + "\n"], environment: ["SECRET": "s3cr3t"])
        let (emulator, pointed) = try fixture.emulator(for: manifest) {
            var auth = EmulatorAuth()
            auth.tokenUses = 7
            $0.auth = auth
        }
        defer { emulator.stop() }
        var options = pointed
        options.tokenURLOverride = emulator.baseURL + "/oauth/token"
        let recording = RecordingTransport(inner: CurlTransport(maxConnections: 4))
        let summary = try await Runner(manifest: manifest, options: options, transport: recording, environment: [:]).run()
        #expect(summary.ok == 40 && summary.tokenRenewals > 0)
        let sent = recording.sent.withLock { $0 }
        #expect(sent.count >= 40 && sent.allSatisfy { $0.hasToken && !$0.fixed }, "\(sent.filter { !$0.hasToken || $0.fixed }.count) kept")
        // Without a token, the same requests' headers are fixed (kept and shared).
        var plain = PreparedRequest(name: "r", method: .post, url: "http://127.0.0.1/p", headers: [("X", "1")], body: nil, fixedHeaders: true)
        #expect(plain.fixedHeaders)
        plain.setCredential("Authorization", "Bearer t")
        #expect(!plain.fixedHeaders && plain.headers.map(\.name) == ["X", "Authorization"])
    }
}

/// Records whether each request carried a bearer token and was marked fixed.
final class RecordingTransport: Transport, Sendable {
    let inner: any Transport
    let sent = Mutex<[(hasToken: Bool, fixed: Bool)]>([])
    init(inner: any Transport) { self.inner = inner }
    var executor: (any TaskExecutor)? { inner.executor }
    func send(_ request: PreparedRequest, timeout: Duration) async -> TransportResult {
        let hasToken = request.headers.contains { $0.name.lowercased() == "authorization" && $0.value.hasPrefix("Bearer ") }
        if !request.url.hasSuffix("/oauth/token") { sent.withLock { $0.append((hasToken, request.fixedHeaders)) } }
        return await inner.send(request, timeout: timeout)
    }
}

private extension RunEvent {
    var text: String {
        switch self {
        case .note(let text): return "note: " + text
        case .warning(let text): return "warning: " + text
        default: return ""
        }
    }
}
