import Foundation
import Testing
import ShowbatchBasics
import ShowbatchManifest
@testable import ShowbatchEmulator
#if canImport(Glibc)
import Glibc
#endif

/// A plain blocking socket client, so the tests see exactly the bytes the emulator sends.
final class RawClient {
    let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else { throw EmulatorError(message: "connect failed") }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func send(_ text: String) { send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Reads one response (head + Content-Length body); nil when the connection closed first.
    func response() -> (status: Int, headers: [String: String], body: String)? {
        var buffer = pending
        pending = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        func fill() -> Bool {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return false }
            buffer += chunk[0..<count]
            return true
        }
        var headEnd: Int?
        while headEnd == nil {
            if let range = String(decoding: buffer, as: UTF8.self).range(of: "\r\n\r\n") {
                headEnd = String(decoding: buffer, as: UTF8.self)[..<range.upperBound].utf8.count
                break
            }
            guard fill() else { return nil }
        }
        let head = String(decoding: buffer[..<headEnd!], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let status = Int(lines.removeFirst().split(separator: " ")[1])!
        var headers: [String: String] = [:]
        for line in lines where line.contains(":") {
            let parts = line.split(separator: ":", maxSplits: 1)
            headers[parts[0].lowercased()] = parts[1].trimmingCharacters(in: .whitespaces)
        }
        let length = Int(headers["content-length"] ?? "0")!
        while buffer.count - headEnd! < length {
            guard fill() else { return nil }
        }
        pending = Array(buffer[(headEnd! + length)...])
        return (status, headers, String(decoding: buffer[headEnd!..<headEnd! + length], as: UTF8.self))
    }

    private var pending: [UInt8] = []

    /// True when the server closed the connection.
    func closedByServer() -> Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, 0) == 0
    }
}

func post(_ body: String, path: String = "/post", extra: String = "") -> String {
    "POST \(path) HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\(extra)Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
}

func withEmulator(_ configure: (inout EmulatorConfiguration) -> Void = { _ in }, _ body: (Emulator) throws -> Void) throws {
    var configuration = EmulatorConfiguration()
    configuration.aliases = ["tok_a": "4111111111111111", "tok_b": "01/2030"]
    configure(&configuration)
    let emulator = try Emulator(configuration: configuration)
    emulator.start()
    defer { emulator.stop() }
    try body(emulator)
}

@Suite struct EmulatorHTTPTests {
    @Test func bindsLoopbackOnlyOnAFreePort() throws {
        try withEmulator { emulator in
            #expect(emulator.port > 0)
            #expect(emulator.baseURL == "http://127.0.0.1:\(emulator.port)")
        }
    }

    @Test func revealsAliasesAtAnyDepthAndEchoes() throws {
        try withEmulator { emulator in
            let client = try RawClient(port: emulator.port)
            client.send(post(#"{"a":"tok_a","n":{"l":["tok_b","tok_zzz",1,true,null]}}"#, path: "/post?x=1"))
            let response = try #require(client.response())
            #expect(response.status == 200)
            #expect(response.body == #"{"json":{"a":"4111111111111111","n":{"l":["01/2030","tok_zzz",1,true,null]}},"method":"POST","path":"/post?x=1","headers":{"Host":"x","Content-Type":"application/json","Content-Length":"55"}}"#)
        }
    }

    @Test func keepAliveAndPipelinedRequests() throws {
        try withEmulator { emulator in
            let client = try RawClient(port: emulator.port)
            client.send(post(#"{"a":"tok_a"}"#) + post(#"{"a":"tok_b"}"#) + post(#"{"a":"x"}"#))
            let bodies = (0..<3).compactMap { _ in client.response()?.body }
            try #require(bodies.count == 3)
            #expect(bodies[0].hasPrefix(#"{"json":{"a":"4111111111111111"}"#))
            #expect(bodies[1].hasPrefix(#"{"json":{"a":"01/2030"}"#))
            #expect(bodies[2].hasPrefix(#"{"json":{"a":"x"}"#))
            #expect(emulator.snapshot.requests == 3)
        }
    }

    @Test func sequentialRequestsReuseTheConnection() throws {
        try withEmulator { emulator in
            let client = try RawClient(port: emulator.port)
            for _ in 0..<5 {
                client.send(post(#"{"a":"tok_a"}"#))
                #expect(client.response()?.status == 200)
            }
        }
    }

    @Test func requestsSplitAcrossWrites() throws {
        try withEmulator { emulator in
            let client = try RawClient(port: emulator.port)
            let bytes = Array(post(#"{"a":"tok_a"}"#).utf8)
            for byte in bytes {
                client.send([byte])
            }
            #expect(client.response()?.body.hasPrefix(#"{"json":{"a":"4111111111111111"}"#) == true)
        }
    }

    @Test func chunkedBodies() throws {
        try withEmulator { emulator in
            let client = try RawClient(port: emulator.port)
            client.send("POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n8;ext=1\r\n\"tok_a\"}\r\n0\r\n\r\n")
            #expect(client.response()?.body.hasPrefix(#"{"json":{"a":"4111111111111111"}"#) == true)
        }
    }

    @Test func oversizedHeadersAndBodiesAreRefused() throws {
        try withEmulator({ $0.maxHeaderBytes = 1024; $0.maxBodyBytes = 100 }) { emulator in
            let big = try RawClient(port: emulator.port)
            big.send("GET / HTTP/1.1\r\nX-Big: \(String(repeating: "a", count: 2000))\r\n\r\n")
            #expect(big.response()?.status == 431)
            let body = try RawClient(port: emulator.port)
            body.send("POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n")
            #expect(body.response()?.status == 413)
            #expect(body.closedByServer())
        }
    }

    @Test func notJSONIsABadRequestAndConnectionCloseIsHonoured() throws {
        try withEmulator { emulator in
            let client = try RawClient(port: emulator.port)
            client.send(post("not json", extra: "Connection: close\r\n"))
            let response = try #require(client.response())
            #expect(response.status == 400)
            #expect(response.body == #"{"error":"request body is not JSON"}"#)
            #expect(response.headers["connection"] == "close")
            #expect(client.closedByServer())
        }
    }

    @Test func clientThatDisconnectsMidRequestDoesNotHurtTheServer() throws {
        try withEmulator { emulator in
            do {
                let client = try RawClient(port: emulator.port)
                client.send("POST /p HTTP/1.1\r\nContent-Length: 50\r\n\r\n{\"a\":")
            }
            let next = try RawClient(port: emulator.port)
            next.send(post(#"{"a":"tok_a"}"#))
            #expect(next.response()?.status == 200)
        }
    }

    @Test func hostnameCheckEndpoint() throws {
        try withEmulator({ $0.cnames = ["reveal.example.com": "tnt1"] }) { emulator in
            let client = try RawClient(port: emulator.port)
            client.send("GET /collect-configs/reveal.example.com__tnt1.txt HTTP/1.1\r\nHost: x\r\n\r\n")
            let ok = try #require(client.response())
            #expect(ok.status == 200 && ok.body == "https://reveal.example.com\n")
            client.send("GET /collect-configs/reveal.example.com__other.txt HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(client.response()?.status == 403)
        }
    }
}

@Suite struct EmulatorFaultTests {
    /// The statuses of `count` sequential requests, -1 for a dropped connection.
    func statuses(_ configure: (inout EmulatorConfiguration) -> Void, count: Int = 40) throws -> [Int] {
        var result: [Int] = []
        try withEmulator(configure) { emulator in
            var client = try RawClient(port: emulator.port)
            for _ in 0..<count {
                client.send(post(#"{"a":"tok_a"}"#))
                if let response = client.response() {
                    let valid = (try? JSONParser.parse(Array(response.body.utf8))) != nil
                    result.append(response.status == 200 && !valid ? 299 : response.status)
                } else {
                    result.append(-1)
                    client = try RawClient(port: emulator.port)
                }
            }
        }
        return result
    }

    @Test(arguments: [
        { (c: inout EmulatorConfiguration) in c.faults.failRate = 0.3; c.faults.failStatus = 503 },
        { (c: inout EmulatorConfiguration) in c.faults.dropRate = 0.3 },
        { (c: inout EmulatorConfiguration) in c.faults.malformedRate = 0.3 },
    ] as [@Sendable (inout EmulatorConfiguration) -> Void])
    func faultsRepeatWithTheirSeed(configure: @Sendable (inout EmulatorConfiguration) -> Void) throws {
        let first = try statuses { configure(&$0); $0.faults.seed = 42 }
        let second = try statuses { configure(&$0); $0.faults.seed = 42 }
        let other = try statuses { configure(&$0); $0.faults.seed = 43 }
        #expect(first == second)
        #expect(first != other)
        let faults = first.filter { $0 != 200 }.count
        #expect(faults > 3 && faults < 25)
    }

    @Test func throttleAnswers429WithRetryAfter() throws {
        try withEmulator({ $0.faults.throttle = Rate(count: 2, per: .seconds(60)) }) { emulator in
            let client = try RawClient(port: emulator.port)
            var seen: [Int] = []
            for _ in 0..<4 {
                client.send(post(#"{"a":"tok_a"}"#))
                let response = try #require(client.response())
                seen.append(response.status)
                if response.status == 429 { #expect(response.headers["retry-after"] == "1") }
            }
            #expect(seen == [200, 200, 429, 429])
            #expect(emulator.snapshot.throttled == 2)
        }
    }

    @Test func latencyDelaysAnswers() throws {
        try withEmulator({ $0.faults.latency = .milliseconds(120) }) { emulator in
            let client = try RawClient(port: emulator.port)
            let start = ContinuousClock.now
            client.send(post(#"{"a":"tok_a"}"#))
            #expect(client.response()?.status == 200)
            #expect(ContinuousClock.now - start >= .milliseconds(120))
        }
    }

    @Test func aliasFiles() throws {
        let dir = FileManager.default.temporaryDirectory.path + "/emu-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data("alias,value\ntok_a,\"4111,1111\"\ntok_b,x\n".utf8).write(to: URL(fileURLWithPath: dir + "/a.csv"))
        try Data(#"{"tok_a": "4111", "tok_n": 5}"#.utf8).write(to: URL(fileURLWithPath: dir + "/a.json"))
        try Data("alias,value\ntok_a\n".utf8).write(to: URL(fileURLWithPath: dir + "/bad.csv"))
        #expect(try AliasFile.load(path: dir + "/a.csv") == ["tok_a": "4111,1111", "tok_b": "x"])
        #expect(try AliasFile.load(path: dir + "/a.json") == ["tok_a": "4111", "tok_n": "5"])
        #expect(throws: EmulatorError.self) { try AliasFile.load(path: dir + "/bad.csv") }
        // Without the header line, the first line is an alias like the others, never dropped.
        try Data("tok_a,4111\ntok_b,5555\n".utf8).write(to: URL(fileURLWithPath: dir + "/bare.csv"))
        #expect(try AliasFile.load(path: dir + "/bare.csv") == ["tok_a": "4111", "tok_b": "5555"])
        try Data("Alias, Value\ntok_a,4111\n".utf8).write(to: URL(fileURLWithPath: dir + "/spaced.csv"))
        #expect(try AliasFile.load(path: dir + "/spaced.csv") == ["tok_a": "4111"])
    }
}

@Suite struct FaultSequenceTests {
    func decisions(seed: UInt64) throws -> [Emulator.FaultDecision] {
        var configuration = EmulatorConfiguration()
        configuration.faults.latency = .milliseconds(50)
        configuration.faults.jitter = .milliseconds(20)
        configuration.faults.failRate = 0.2
        configuration.faults.dropRate = 0.1
        configuration.faults.malformedRate = 0.1
        configuration.faults.seed = seed
        let emulator = try Emulator(configuration: configuration)
        defer { emulator.stop() }
        return (0..<200).map { _ in emulator.nextFaults() }
    }

    @Test func everyFaultIncludingJitterRepeatsWithItsSeed() throws {
        let first = try decisions(seed: 11), again = try decisions(seed: 11), other = try decisions(seed: 12)
        #expect(first == again)
        #expect(first != other)
        #expect(first.allSatisfy { $0.delay >= 0.030 && $0.delay <= 0.070 })
        #expect(Set(first.map(\.delay)).count > 150)
        let fails = first.filter(\.fail).count, drops = first.filter(\.drop).count, malformed = first.filter(\.malformed).count
        #expect((20...60).contains(fails) && (5...35).contains(drops) && (5...35).contains(malformed))
    }
}

/// The built-in aliases are the samples' own, so a sample run under `--emulate` reveals every
/// card of its data instead of echoing aliases (which now fail their rows, 1408).
@Suite struct SampleAliasTests {
    private static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    @Test func theBuiltInAliasesHoldTheSampleData() throws {
        let file = try AliasFile.load(path: Self.repository + "/samples/data/emulator-aliases.csv")
        #expect(file.count == 80)
        #expect(EmulatorConfiguration.sampleDataAliases == file)
        for (alias, value) in file { #expect(EmulatorConfiguration.sampleAliases[alias] == value, "\(alias)") }
    }

    @Test func everySampleCardPassesLuhn() throws {
        let cards = EmulatorConfiguration.sampleAliases.values.filter { $0.allSatisfy(\.isNumber) && $0.count >= 13 }
        #expect(cards.count > 40)
        for card in cards { #expect(LabelExpectation.passesLuhn(card), "a sample card fails Luhn") }
    }
}
