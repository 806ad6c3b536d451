import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// A data row whose value goes into the path can make a request of megabytes. curl cannot send a
/// request head over 1 MiB, and said it as "the answer's headers are too large"; the `--verbose`
/// line of a long one was as long as its URL.
@Suite struct LongRequestTests {
    private let manifestText = """
        vault: tnt1
        concurrency: 2
        retry: {attempts: 1}
        output: {path: r.csv}
        requests: [{name: "r${row.id}", each: {csv: d.csv}, path: "/p/${row.tail}", labels: {p: path}}]
        """

    @Test func aRequestTooLongToSendFailsAloneUnsent() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let long = String(repeating: "a", count: 3 << 20)
        let manifest = try fixture.manifest(manifestText, files: ["d.csv": "id,tail\n0,x\n1,\(long)\n2,y\n"])
        let (emulator, options) = try fixture.emulator(for: manifest)
        defer { emulator.stop() }
        let summary = try await Runner(manifest: manifest, options: options, environment: [:]).run()
        #expect(summary.ok == 2 && summary.failed == 1)
        #expect(emulator.snapshot.requests == 2)
        let lines = try #require(fixture.read("r.csv")).split(separator: "\n")
        // Its size: the URL and the headers sent with it (Content-Type and vgs-client).
        let prefix = "r1,failed,,0,\"1490 invalid_row: the request's URL and headers come to "
        let suffix = " bytes, more than the 1000000 a request can have before its body: a value from the data row in its path or headers is that long\","
        #expect(lines[2].hasPrefix(prefix) && lines[2].hasSuffix(suffix), "\(lines[2])")
        let size = Int(lines[2].dropFirst(prefix.count).dropLast(suffix.count)) ?? 0
        #expect((0..<100).contains(size - (emulator.baseURL + "/p/" + long).utf8.count))
    }

    @Test func aLongURLIsClippedInItsAttemptLine() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let long = String(repeating: "b", count: 5_000)
        let manifest = try fixture.manifest(manifestText, files: ["d.csv": "id,tail\n0,\(long)\n"])
        var verbose = RunOptions()
        verbose.verbose = true
        let (emulator, options) = try fixture.emulator(for: manifest, options: verbose) { $0.maxHeaderBytes = 64 << 10 }
        defer { emulator.stop() }
        let log = fixture.log
        let summary = try await Runner(manifest: manifest, options: options, environment: [:]) { log.record($0) }.run()
        #expect(summary.ok == 1)
        let url = emulator.baseURL + "/p/" + long
        let shown = String(url.prefix(Limits.loggedURL)) + "… (\(url.utf8.count) bytes)"
        #expect(log.all.filter { $0.hasPrefix("attempt: ") } == ["attempt: POST \(shown) 200 r0 #1"])
    }
}
