import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import ShowbatchEmulator
import TestSupport

@Suite struct TransportTests {
    func make(maxBodyBytes: Int = Limits.responseBody) -> any Transport {
        CurlTransport(maxConnections: 4, maxBodyBytes: maxBodyBytes)
    }

    func emulator(_ configure: (inout EmulatorConfiguration) -> Void = { _ in }) throws -> Emulator {
        var configuration = EmulatorConfiguration()
        configuration.aliases = ["tok": "4111"]
        configure(&configuration)
        let emulator = try Emulator(configuration: configuration)
        emulator.start()
        return emulator
    }

    @Test(arguments: HTTPMethod.allCases)
    func methodsHeadersAndBodies(method: HTTPMethod) async throws {
        let server = try emulator()
        defer { server.stop() }
        let body: [UInt8]? = method == .get ? nil : Array(#"{"c":"tok"}"#.utf8)
        let request = PreparedRequest(name: "r", method: method, url: server.baseURL + "/p?q=1",
                                      headers: [("X-Id", "7"), ("Content-Type", "application/json")], body: body)
        guard case .response(let status, let headers, let received) = await make().send(request, timeout: .seconds(10)) else {
            Issue.record("expected a response")
            return
        }
        #expect(status == 200)
        // curl keeps only the headers the engine reads.
        #expect(headers.isEmpty)
        let json = try JSONParser.parse(received)
        #expect(json["method"] == .string(method.rawValue))
        #expect(json["path"] == .string("/p?q=1"))
        #expect(json["json"] == (method == .get ? .null : .object([JSONMember("c", .string("4111"))])))
        guard case .object(let echoed)? = json["headers"] else { Issue.record("no headers"); return }
        #expect(echoed.contains { $0.key.lowercased() == "x-id" && $0.value == .string("7") })
    }

    /// One transport sends requests of every shape in turn: curl reuses its handle for each, and
    /// nothing of one request (method, body, headers) may carry over to the next. With fixed
    /// headers curl also reuses header lists: only an identical request may get one.
    @Test(arguments: [false, true])
    func requestsInTurnDoNotInheritFromEachOther(fixed: Bool) async throws {
        let server = try emulator()
        defer { server.stop() }
        let transport = make()
        let json = [("Content-Type", "application/json")]
        let sequence: [(HTTPMethod, [(String, String)], String?)] = [
            (.post, json + [("X-A", "1")], #"{"c":"tok"}"#), (.get, [], nil), (.put, [], nil), (.delete, [("X-B", "2")], nil),
            (.post, [], nil), (.patch, json, #"{"d":"tok"}"#), (.get, [], nil), (.post, json + [("X-A", "1")], #"{"c":"tok"}"#),
            (.post, json, #"{"c":"tok"}"#), (.post, [], nil), (.put, [], nil),
        ]
        for (method, headers, body) in sequence {
            let request = PreparedRequest(name: "r", method: method, url: server.baseURL + "/p", headers: headers,
                                          body: body.map { Array($0.utf8) }, fixedHeaders: fixed)
            guard case .response(200, _, let received) = await transport.send(request, timeout: .seconds(10)) else {
                Issue.record("expected a 200 for \(method)")
                continue
            }
            let echo = try JSONParser.parse(received)
            #expect(echo["method"] == .string(method.rawValue))
            let expectedJSON: JSONValue = body.map { _ in .object([JSONMember(method == .post ? "c" : "d", .string("4111"))]) } ?? .null
            #expect(echo["json"] == expectedJSON, "\(method)")
            guard case .object(let echoed)? = echo["headers"] else { Issue.record("no headers"); continue }
            let names = Set(echoed.map { $0.key.lowercased() })
            for other in ["x-a", "x-b"] where !headers.contains(where: { $0.0.lowercased() == other }) {
                #expect(!names.contains(other), "\(method) carried \(other) over")
            }
            if body == nil { #expect(!names.contains("transfer-encoding") && !names.contains("content-type"), "\(method)") }
            for (name, _) in headers { #expect(names.contains(name.lowercased()), "\(method) lost \(name)") }
        }
    }

    /// A POST without a payload sends an empty body: never standard input, never a form.
    @Test
    func postWithoutPayloadSendsNothing() async throws {
        let server = try emulator()
        defer { server.stop() }
        let request = PreparedRequest(name: "r", method: .post, url: server.baseURL + "/p", headers: [], body: nil)
        guard case .response(let status, _, let received) = await make().send(request, timeout: .seconds(10)) else {
            Issue.record("expected a response")
            return
        }
        #expect(status == 200)
        let json = try JSONParser.parse(received)
        guard case .object(let echoed)? = json["headers"] else { Issue.record("no headers"); return }
        let names = echoed.map { $0.key.lowercased() }
        #expect(!names.contains("transfer-encoding"))
        #expect(!names.contains("content-type"))
        #expect(echoed.first { $0.key.lowercased() == "content-length" }.map { $0.value == .string("0") } ?? true)
        #expect(json["method"] == .string("POST"))
    }

    @Test
    func bodiesOverTheLimitAreRefused() async throws {
        let server = try emulator()
        defer { server.stop() }
        let request = PreparedRequest(name: "r", method: .post, url: server.baseURL + "/p", headers: [], body: Array(#"{"c":"tok"}"#.utf8))
        guard case .failure(let failure) = await make(maxBodyBytes: 20).send(request, timeout: .seconds(10)) else {
            Issue.record("expected a failure")
            return
        }
        #expect(failure == .bodyTooLarge(20))
    }

    @Test
    func refusedConnectionsAndTimeouts() async throws {
        // A port bound but not listening refuses connections, and no other test can take it meanwhile.
        let closed = ClosedPort()
        defer { closed.release() }
        let url = "http://127.0.0.1:\(closed.port)"
        let refused = await make().send(PreparedRequest(name: "r", method: .get, url: url + "/p", headers: [], body: nil), timeout: .seconds(5))
        guard case .failure(.network) = refused else { Issue.record("expected a network failure, got \(refused)"); return }
        let slow = try emulator { $0.faults.latency = .seconds(3) }
        defer { slow.stop() }
        let timedOut = await make().send(PreparedRequest(name: "r", method: .get, url: slow.baseURL + "/p", headers: [], body: nil), timeout: .milliseconds(150))
        guard case .failure(.timeout) = timedOut else { Issue.record("expected a timeout, got \(timedOut)"); return }
    }
}

/// A loopback port that is bound but not listening: connecting to it is refused, and while it is
/// held no other server (of a test running at the same time) can take it.
struct ClosedPort {
    let fd: Int32
    let port: Int

    init() {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: actual.sin_port))
    }

    func release() { close(fd) }
}
