import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// Runs one request against `server` and returns the CSV row written.
private func row(against baseURL: String) async throws -> String {
    let fixture = RunFixture()
    defer { fixture.dir.remove() }
    let manifest = try fixture.manifest("vault: tnt1\noutput: {path: r.csv}\nretry: {attempts: 1}\ntimeout: 5s\nrequests: [{name: a, path: /p}]\n")
    var options = RunOptions()
    options.baseURLOverride = baseURL
    options.progress = .never
    _ = try await Runner(manifest: manifest, options: options, environment: [:]).run()
    return String((fixture.read("r.csv") ?? "").split(separator: "\n").last ?? "")
}

@Suite(.serialized) struct HostileServerTests {
    /// An answer in another protocol is the Show SDK's 1400, not a network failure.
    @Test func aNonHTTPAnswerIs1400() async throws {
        let server = try RawServer(answer: Array("SSH-2.0-OpenSSH_9.0\r\n".utf8))
        defer { server.stop() }
        #expect(try await row(against: server.baseURL)
            == "a,failed,,1,1400 unexpected_response_type: the answer is not HTTP (curl: Received HTTP/0.9 when not allowed)")
    }

    /// A status line of an HTTP version that does not exist is 1400 too, not a network failure.
    @Test func anUnknownHTTPVersionIs1400() async throws {
        let server = try RawServer(answer: Array("HTTP/3.7 200 OK\r\nContent-Length: 2\r\n\r\n{}".utf8))
        defer { server.stop() }
        let line = try await row(against: server.baseURL)
        #expect(line == "a,failed,,1,1400 unexpected_response_type: the answer is not HTTP (curl: Unsupported HTTP version (3.7) in response)")
    }


    /// Headers too large to read are a failure in words, with curl's own text.
    @Test func aHugeResponseHeaderIsNamed() async throws {
        let server = try RawServer(answer: Array("HTTP/1.1 200 OK\r\nX-Big: \(String(repeating: "a", count: 300_000))\r\nContent-Length: 2\r\n\r\n{}".utf8))
        defer { server.stop() }
        let line = try await row(against: server.baseURL)
        #expect(line == "a,failed,,1,1501 network: the answer could not be read: its headers are too large (over 100 KB) or memory ran out (curl: Out of memory)")
    }

    /// A refused connection names the cause and carries curl's text (host and port).
    @Test func aRefusedConnectionIsNamed() async throws {
        let closed = ClosedPort()
        defer { closed.release() }
        let url = "http://127.0.0.1:\(closed.port)"
        let line = try await row(against: url)
        #expect(line.hasPrefix("a,failed,,1,1501 network: connection refused (curl: Failed to connect to 127.0.0.1 port \(url.split(separator: ":").last!)"), "\(line)")
    }
}
