import Foundation
import Testing

private let manifest = """
vault: tnt1
max_failed: 5
output: {path: out/r.csv, rejects: out/bad.csv}
emulator: {aliases: {tok_a: "4111111111111111", tok_b: "4222222222222222", tok_c: "4333333333333333"}}
requests:
  - {name: "r-${index}", each: {csv: d.csv}, path: /post, payload: {c: "${row.alias}"}, labels: {c: json.c}}
"""

@Suite(.serialized) struct DataFileEndToEndTests {
    /// `"tok_b` on line 1,200 of 2,001: `validate`, `plan` and `run` stop at it with exit 2, and
    /// nothing is sent or written.
    @Test func anUnclosedQuoteStopsEveryCommandBeforeAnythingIsSent() async throws {
        let rows = (2...2_001).map { $0 == 1_200 ? "\($0),\"tok_b" : "\($0),tok_a" }.joined(separator: "\n")
        let work = Workspace(["m.yaml": manifest, "d.csv": "id,alias\n" + rows + "\n"])
        defer { work.remove() }
        let validate = try await showbatch(["validate", "m.yaml"], in: work.path)
        #expect(validate.status == 2)
        #expect(validate.stderr == "d.csv:1200: error: quote opened here is never closed\nm.yaml: 1 problem\n")
        let plan = try await showbatch(["plan", "m.yaml"], in: work.path)
        #expect(plan.status == 2)
        #expect(plan.stderr == "d.csv:1200: error: quote opened here is never closed\n")
        let run = try await showbatch(["run", "m.yaml", "--emulate"], in: work.path)
        #expect(run.status == 2)
        #expect(run.stderr == "d.csv:1200: error: quote opened here is never closed\n")
        #expect(!work.exists("out"))
    }

    /// A record with the wrong number of fields, or a field that is not UTF-8, is one failed row:
    /// its rejects row has its line and the fields it has, and later rows keep their index.
    @Test func aFailedRecordIsOneRejectsRowWithItsLineAndFields() async throws {
        let work = Workspace(["m.yaml": manifest])
        defer { work.remove() }
        work.write("d.csv", Data("id,alias\n1,tok_a\n2\n".utf8) + Data([0xFF]) + Data(",tok_b\n4,tok_c,extra\n5,tok_b\n".utf8))
        let run = try await showbatch(["run", "m.yaml", "--emulate"], in: work.path)
        #expect(run.status == 0)
        #expect(work.read("out/r.csv") == """
        request,status,http_status,attempts,error,c
        r-0,ok,200,1,,4111111111111111
        r-4,ok,200,1,,4222222222222222

        """)
        #expect(work.read("out/bad.csv") == """
        request,status,http_status,attempts,error,id,alias
        d.csv:row 1,failed,,0,1490 invalid_row: d.csv:3: has 1 fields; the header has 2,2,
        d.csv:row 2,failed,,0,1490 invalid_row: d.csv:4: is not valid UTF-8,\u{FFFD},tok_b
        d.csv:row 3,failed,,0,1490 invalid_row: d.csv:5: has 3 fields; the header has 2,4,tok_c

        """)
        #expect(run.stderr.contains("showbatch: 5 rows: 2 ok, 0 partial, 3 failed; 0 retries; "))
        for revealed in ["4111111111111111", "4222222222222222", "4333333333333333"] { #expect(!run.stderr.contains(revealed)) }
    }
}
