import Foundation
import Synchronization
import Testing
@testable import ShowbatchCore
import ShowbatchEmulator

@Suite struct JournalLockTests {
    @Test func aSecondRunOnTheSameOutputIsRefused() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("vault: tnt1\noutput: {path: r.csv}\nrequests: [{name: a, path: /p}]\n")
        // An overlapping run holds the journal.
        let holder = try Journal(output: fixture.dir.path + "/r.csv", header: "x", resume: false)
        do {
            _ = try await fixture.run(manifest)
            Issue.record("expected a refusal")
        } catch let error as RunError {
            #expect(error.description == "another showbatch run is writing \(fixture.dir.path)/r.csv (its journal \(fixture.dir.path)/r.csv.journal is locked)")
        }
        holder.close()
        #expect(try await fixture.run(manifest).ok == 1)
    }

    @Test func aJournalTornInsideItsIdentityLineStartsOver() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("vault: tnt1\noutput: {path: r.csv}\nrequests: [{name: a, path: /p}]\n")
        _ = fixture.dir.file("r.csv.journal", "{\"showbatch_jour")
        var options = RunOptions()
        options.resume = true
        #expect(try await fixture.run(manifest, options: options).ok == 1)
        #expect(fixture.read("r.csv") == "request,status,http_status,attempts,error\na,ok,200,1,\n")
    }
}

@Suite struct JournalEncodingTests {
    static let rows: [(ResultRow, String)] = [
        (ResultRow(ordinal: 7, request: "r-7", status: .ok, httpStatus: 200, attempts: 1,
                   labels: [("card", "4111 1111"), ("missing", nil)], errors: []),
         #"{"o":7,"r":"r-7","s":"ok","h":200,"a":1,"l":[["card","4111 1111"],["missing",null]],"e":[]}"#),
        (ResultRow(ordinal: 0, request: "quote \" back \\ tab \t nl \n", status: .failed, httpStatus: nil, attempts: 3,
                   labels: [], errors: [RowError(code: .timeout, label: nil, message: "no answer within 1s"),
                                        RowError(code: .fieldNotFound, label: "x\u{1}", message: "label x: no value")]),
         #"{"o":0,"r":"quote \" back \\ tab \t nl \n","s":"failed","h":null,"a":3,"l":[],"e":[[1502,null,"no answer within 1s"],[1403,"x\u0001","label x: no value"]]}"#),
    ]

    /// Journal lines are written straight into the buffer; they must stay the JSON the reader parses.
    @Test(arguments: 0..<rows.count)
    func linesAreCompactJSONThatReadsBack(index: Int) throws {
        let (row, expected) = Self.rows[index]
        var out: [UInt8] = []
        Journal.encode(row, to: &out)
        #expect(String(decoding: out, as: UTF8.self) == expected)
        let back = try #require(Journal.decode(out))
        #expect(back.ordinal == row.ordinal && back.request == row.request && back.status == row.status)
        #expect(back.httpStatus == row.httpStatus && back.attempts == row.attempts)
        #expect(back.labels.map(\.name) == row.labels.map(\.name) && back.labels.map(\.value) == row.labels.map(\.value))
        #expect(back.errors == row.errors)
    }
}
