import Foundation
import Synchronization
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import ShowbatchEmulator
import TestSupport

private func rowsFile(_ count: Int) -> String {
    "id,alias\n" + (0..<count).map { "\($0),tok_\($0 % 7)" }.joined(separator: "\n") + "\n"
}

private let batchManifest = """
vault: tnt1
concurrency: 8
output: {path: out/rows.csv}
emulator:
  aliases: {tok_0: "4000000000000000", tok_1: "4111111111111111", tok_2: "4222222222222222", tok_3: "4333333333333333", tok_4: "4444444444444444", tok_5: "4555555555555555", tok_6: "4666666666666666"}
  latency: 1ms±1ms
  seed: 9
requests:
  - name: header-check
    path: /post
    payload: {card: tok_1}
    labels: {card: json.card}
  - name: "row-${row.id}"
    each: {csv: data/rows.csv}
    path: "/reveal/${index}"
    payload: {card: "${row.alias}", id: "${row.id}"}
    labels:
      card: {path: json.card, mask: {ranges: [[0, 11]]}}
      path: path
"""

@Suite(.serialized) struct BatchTests {
    @Test func eachRowIsOneRequestInOrder() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(batchManifest, files: ["data/rows.csv": rowsFile(500)])
        let summary = try await fixture.run(manifest)
        #expect(summary.rows == 501 && summary.ok == 501)
        let lines = try #require(fixture.read("out/rows.csv")).split(separator: "\n")
        #expect(lines[0] == "request,status,http_status,attempts,error,card,path")
        #expect(lines[1] == "header-check,ok,200,1,,4111111111111111,")
        #expect(lines[2] == "row-0,ok,200,1,,************0000,/reveal/0")
        #expect(lines[3] == "row-1,ok,200,1,,************1111,/reveal/1")
        #expect(lines[9] == "row-7,ok,200,1,,************0000,/reveal/7")
        #expect(lines[501] == "row-499,ok,200,1,,************2222,/reveal/499")
        #expect(lines.count == 502)
    }

    @Test func jsonLinesKeepValueTypesAndMalformedRowsFailAlone() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        output: {path: r.jsonl}
        requests:
          - name: "n-${index}"
            each: {jsonl: d.jsonl}
            path: /p
            payload: {n: "${row.n}", s: "x${row.n}"}
            labels: {n: {path: json.n, revealed: optional}, s: {path: json.s, revealed: optional}}
        """, files: ["d.jsonl": "{\"n\": 42}\nnot json\n{\"n\": \"a\"}\n{\"m\": 1}\n"])
        let summary = try await fixture.run(manifest)
        #expect(summary.ok == 2 && summary.failed == 2)
        #expect(fixture.read("r.jsonl") == """
        {"request":"n-0","status":"ok","http_status":200,"attempts":1,"labels":{"n":"42","s":"x42"},"errors":[]}
        {"request":"d.jsonl:row 1","status":"failed","http_status":null,"attempts":0,"labels":{"n":null,"s":null},"errors":[{"code":1490,"kind":"invalid_row","message":"d.jsonl:2: is not a JSON object"}]}
        {"request":"n-2","status":"ok","http_status":200,"attempts":1,"labels":{"n":"a","s":"xa"},"errors":[]}
        {"request":"n-3","status":"failed","http_status":null,"attempts":0,"labels":{"n":null,"s":null},"errors":[{"code":1490,"kind":"invalid_row","message":"d.jsonl:4: row has no \\"n\\" column"}]}

        """)
    }

    @Test func rowValuesThatAURLCannotHoldArePercentEncoded() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        output: {path: r.csv}
        requests:
          - {name: "r${index}", each: {csv: d.csv}, path: "/r/${row.id}?q=${row.id}", method: get, labels: {path: path}}
        """, files: ["d.csv": "id\nplain-1\na b\ncafé\n"])
        _ = try await fixture.run(manifest)
        #expect(fixture.read("r.csv") == """
        request,status,http_status,attempts,error,path
        r0,ok,200,1,,/r/plain-1?q=plain-1
        r1,ok,200,1,,/r/a%20b?q=a%20b
        r2,ok,200,1,,/r/caf%C3%A9?q=caf%C3%A9

        """)
    }

    /// Headers from a row go with that row only; fixed headers (whose built form the curl
    /// transport keeps) go with every request.
    @Test func headersFromRowsGoWithTheirRow() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        concurrency: 4
        output: {path: r.csv}
        headers: {X-Team: reveal}
        requests:
          - {name: "r${index}", each: {csv: d.csv}, path: /post, headers: {X-Row: "row ${row.id}"}, payload: {c: tok},
             labels: {row: headers.X-Row, team: headers.X-Team}}
          - {name: fixed, path: /post, payload: {c: tok}, labels: {row: headers.X-Row, team: headers.X-Team}}
        """, files: ["d.csv": "id\n" + (0..<40).map(String.init).joined(separator: "\n") + "\n"])
        let preparer = RequestPreparer(manifest: manifest, baseURL: "http://127.0.0.1")
        let fixedFlags = WorkItemSequence(manifest: manifest).map { item -> Bool in
            guard case .success(let request) = preparer.prepare(item) else { return false }
            return request.fixedHeaders
        }
        #expect(fixedFlags == Array(repeating: false, count: 40) + [true])
        _ = try await fixture.run(manifest)
        let expected = ["request,status,http_status,attempts,error,row,team"]
            + (0..<40).map { "r\($0),ok,200,1,,row \($0),reveal" } + ["fixed,partial,200,1,1403 field_not_found: label row: no value at headers.X-Row,,reveal", ""]
        #expect(fixture.read("r.csv") == expected.joined(separator: "\n"))
    }

    @Test func eachRequestWritesToItsOwnOutputWithItsOwnColumns() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        output: {path: main.csv}
        emulator: {aliases: {tok_x: "1", tok_y: "2", tok_z: "3"}}
        requests:
          - {name: a, path: /p, payload: {x: tok_x}, labels: {x: json.x}}
          - {name: b, path: /p, payload: {y: tok_y}, labels: {y: json.y}, output: {path: side.json}}
          - {name: c, path: /p, payload: {z: tok_z}, labels: {z: json.z}}
        """)
        _ = try await fixture.run(manifest)
        #expect(fixture.read("main.csv") == "request,status,http_status,attempts,error,x,z\na,ok,200,1,,1,\nc,ok,200,1,,,3\n")
        #expect(fixture.read("side.json") == "[\n{\"request\":\"b\",\"status\":\"ok\",\"http_status\":200,\"attempts\":1,\"labels\":{\"y\":\"2\"},\"errors\":[]}\n]\n")
    }

    @Test(arguments: [7, 60, 233, 480])
    func interruptedRunsResumeToIdenticalFiles(interruptAfter: Int) async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(batchManifest, files: ["data/rows.csv": rowsFile(500)])
        _ = try await fixture.run(manifest)
        let baseline = try #require(fixture.read("out/rows.csv"))
        try FileManager.default.removeItem(atPath: fixture.dir.path + "/out/rows.csv")

        let (emulator, interrupted, baseOptions) = try await fixture.interruptedRun(manifest, after: interruptAfter)
        defer { emulator.stop() }
        var options = baseOptions
        #expect(interrupted.interrupted)
        #expect(!fixture.dir.exists("out/rows.csv"))
        #expect(fixture.dir.exists("out/rows.csv.partial"))
        #expect(fixture.dir.exists("out/rows.csv.journal"))
        #expect(fixture.mode("out/rows.csv.journal") == 0o600)

        // A torn last line (a crash mid-write) is dropped on resume.
        let journal = try FileHandle(forWritingTo: URL(fileURLWithPath: fixture.dir.path + "/out/rows.csv.journal"))
        try journal.seekToEnd()
        try journal.write(contentsOf: Data("{\"o\":99".utf8))
        try journal.close()

        options.resume = true
        let resumed = try await Runner(manifest: manifest, options: options, environment: [:]).run()
        #expect(!resumed.interrupted)
        #expect(resumed.rows == 501)
        #expect(resumed.replayed == interrupted.rows)
        #expect(fixture.read("out/rows.csv") == baseline)
        #expect(!fixture.dir.exists("out/rows.csv.journal"))
        #expect(!fixture.dir.exists("out/rows.csv.partial"))
    }

    @Test func aJournalOfAnotherManifestIsRefused() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        _ = fixture.dir.file("r.csv.journal", "{\"showbatch_journal\":1,\"manifest\":\"deadbeef\"}\n")
        let manifest = try fixture.manifest("vault: tnt1\noutput: {path: r.csv}\nrequests: [{name: a, path: /p}]\n")
        var options = RunOptions()
        options.resume = true
        do {
            _ = try await fixture.run(manifest, options: options)
            Issue.record("expected a refusal")
        } catch let error as RunError {
            guard error.exitCode == .usage else { Issue.record("expected a usage error"); return }
            #expect(error.description == "the journal \(fixture.dir.path)/r.csv.journal does not match this run: it was written by another version of showbatch (journal format 1); remove it to start over, or run without --resume")
        }
        // Without --resume the stale journal is replaced and the run goes on.
        let summary = try await fixture.run(manifest)
        #expect(summary.ok == 1)
    }

    @Test func aJournalIsRefusedWhenItsDataFileChanged() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(batchManifest, files: ["data/rows.csv": rowsFile(20)])
        let (emulator, interrupted, baseOptions) = try await fixture.interruptedRun(manifest, after: 10)
        defer { emulator.stop() }
        #expect(interrupted.interrupted)
        var options = baseOptions
        _ = fixture.dir.file("data/rows.csv", rowsFile(21))
        options.resume = true
        await #expect(throws: RunError.self) { try await Runner(manifest: manifest, options: options, environment: [:]).run() }
    }

    @Test func shardsPartitionTheRowsExactly() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(batchManifest, files: ["data/rows.csv": rowsFile(100)])
        _ = try await fixture.run(manifest)
        let all = try #require(fixture.read("out/rows.csv")).split(separator: "\n").dropFirst()
        var union: [Substring] = []
        for index in 0..<3 {
            var options = RunOptions()
            options.shard = Shard(index: index, count: 3)
            let summary = try await fixture.run(manifest, options: options)
            #expect(summary.outputs == [fixture.dir.path + "/out/rows-shard-\(index).csv"])
            let rows = try #require(fixture.read("out/rows-shard-\(index).csv")).split(separator: "\n")
            #expect(rows.first == "request,status,http_status,attempts,error,card,path")
            #expect(Array(rows.dropFirst()) == all.enumerated().filter { $0.offset % 3 == index }.map(\.element))
            union += rows.dropFirst()
        }
        #expect(union.sorted() == all.sorted())
    }

    @Test(arguments: [("out/{shard}/r.csv", 2, 5, "out/2/r.csv"), ("r.csv", 1, 1, "r.csv"), ("r.tar.gz", 0, 2, "r.tar-shard-0.gz"),
                      ("dir.v1/r", 1, 2, "dir.v1/r-shard-1")])
    func shardPaths(path: String, index: Int, count: Int, expected: String) {
        #expect(Shard(index: index, count: count).path(path) == expected)
    }

    @Test func shardSpecs() throws {
        #expect(try Shard.parse("2/5", environment: [:]).get() == Shard(index: 2, count: 5))
        #expect(try Shard.parse("auto/4", environment: ["JOB_COMPLETION_INDEX": "3"]).get() == Shard(index: 3, count: 4))
        guard case .failure(let error) = Shard.parse("5/5", environment: [:]) else { Issue.record("expected failure"); return }
        #expect(error.message == "shard index 5 is out of range for 5 shards; expected 0 to 4")
        guard case .failure(let auto) = Shard.parse("auto/4", environment: [:]) else { Issue.record("expected failure"); return }
        #expect(auto.message == "--shard auto/4 needs JOB_COMPLETION_INDEX, which is not set (it is set in Kubernetes Indexed Jobs)")
    }

    @Test func failFastStopsAtTheFirstFailedRow() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let requests = (0..<10).map { "  - {name: r\($0), path: /p}" }.joined(separator: "\n")
        let manifest = try fixture.manifest("vault: tnt1\nconcurrency: 1\nretry: {attempts: 1}\noutput: {path: r.csv}\nemulator: {fail_rate: 1}\nrequests:\n\(requests)\n")
        var options = RunOptions()
        options.failFast = true
        let summary = try await fixture.run(manifest, options: options)
        #expect(summary.rows == 1 && summary.failed == 1 && summary.skipped == 9)
        #expect(fixture.read("r.csv") == "request,status,http_status,attempts,error\nr0,failed,500,1,1500 http_status: HTTP 500\n")
    }
}

@Suite(.serialized) struct RowValueSafetyTests {
    /// A data row's value in a path is one segment, percent-encoded: it cannot walk up with `..`,
    /// add a query or a fragment, or smuggle an escape; the manifest's own `/` and `?` keep their
    /// meaning, and --verbose shows the URL that was sent.
    @Test
    func rowValuesInAPathAreOneEncodedSegment() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        concurrency: 1
        output: {path: r.csv}
        requests:
          - {name: "r${index}", each: {jsonl: d.jsonl}, path: "/r/${row.v}/end?q=${row.v}", method: get, labels: {path: path}}
        """, files: ["d.jsonl": [#"{"v": "../../admin"}"#, #"{"v": "a/b?x=1#f"}"#, #"{"v": "%41"}"#, #"{"v": ".."}"#,
                                 #"{"v": "."}"#, #"{"v": "ü ok"}"#, #"{"v": "plain-1.2_~"}"#].joined(separator: "\n") + "\n"])
        var options = RunOptions()
        options.verbose = true
        _ = try await fixture.run(manifest, options: options)
        let sent = [
            "/r/..%2F..%2Fadmin/end?q=..%2F..%2Fadmin", "/r/a%2Fb%3Fx%3D1%23f/end?q=a%2Fb%3Fx%3D1%23f", "/r/%2541/end?q=%2541",
            "/r/%2E%2E/end?q=%2E%2E", "/r/%2E/end?q=%2E", "/r/%C3%BC%20ok/end?q=%C3%BC%20ok", "/r/plain-1.2_~/end?q=plain-1.2_~",
        ]
        #expect(fixture.read("r.csv") == "request,status,http_status,attempts,error,path\n"
            + sent.enumerated().map { "r\($0.offset),ok,200,1,,\($0.element)\n" }.joined())
        let urls = fixture.log.all.filter { $0.hasPrefix("attempt: GET ") }.map { $0.split(separator: " ")[2] }
        #expect(urls.map { String($0.drop { $0 != "/" }.dropFirst(2).drop { $0 != "/" }) } == sent)
    }

    /// A header value from a data row with a control character in it is a 1490 row; it is not sent.
    @Test func aControlCharacterInAHeaderFromARowFailsThatRow() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        output: {path: r.csv}
        requests:
          - {name: "r${index}", each: {jsonl: d.jsonl}, path: /p, headers: {X-Row: "${row.h}"}, labels: {h: headers.X-Row}}
        """, files: ["d.jsonl": #"{"h": "fine"}"# + "\n" + #"{"h": "a\u0000b"}"# + "\n" + #"{"h": "\u001b[31m"}"# + "\n" + #"{"h": "tab\tok"}"# + "\n"])
        _ = try await fixture.run(manifest)
        #expect(fixture.read("r.csv") == """
        request,status,http_status,attempts,error,h
        r0,ok,200,1,,fine
        r1,failed,,0,1490 invalid_row: header X-Row value from the data row contains a control character (byte 0x00),
        r2,failed,,0,1490 invalid_row: header X-Row value from the data row contains a control character (byte 0x1B),
        r3,ok,200,1,,tab\tok

        """)
    }
}
