import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
import TestSupport

private let dataManifest = """
vault: tnt1
output: {path: r.csv}
requests: [{name: "r${index}", each: {csv: d.csv}, path: "/p/${row.alias}"}]
"""

/// Rows with aliases `tok_0`…, the line `quoteLine` (1-based, the header is line 1) holding an
/// alias that opens a quote.
private func csv(rows: Int, quoteLine: Int? = nil) -> String {
    "id,alias\n" + (0..<rows).map { $0 + 2 == quoteLine ? "\($0),\"tok_b" : "\($0),tok_\($0)" }.joined(separator: "\n") + "\n"
}

/// Every data file is read through when the manifest is read: a record that cannot end is an
/// error positioned in the data file, and the count is the file's records.
@Suite struct DataFileCountTests {
    @Test func anUnclosedQuoteIsAnErrorWhereTheQuoteOpens() {
        #expect(manifestErrors(dataManifest, files: ["d.csv": csv(rows: 2_000, quoteLine: 1_200)])
                == "d.csv:1200: error: quote opened here is never closed")
    }

    enum Runaway: String, CaseIterable { case overSixteenMiB, overTenThousandLines }

    @Test(arguments: Runaway.allCases)
    func aRecordThatRunsPastItsBoundIsAnError(_ runaway: Runaway) {
        let (file, expected) = switch runaway {
        case .overSixteenMiB:
            ("id,alias\n1,\"" + String(repeating: "x", count: Limits.dataRecord) + "\"\n2,tok_b\n",
             "d.csv:2: error: has a record longer than 16 MiB (the quote opened on line 2 is still open)")
        case .overTenThousandLines:
            // Closed in the end, but over 10,000 lines: 10,001 lines, 2 to 10,002.
            ("id,alias\n1,\"" + String(repeating: "a\n", count: 10_000) + "\"\n2,tok_b\n",
             "d.csv:2: error: quote opened here is not closed within 10000 lines")
        }
        #expect(manifestErrors(dataManifest, files: ["d.csv": file]) == expected)
    }

    /// A quoted field of exactly 10,000 lines is a record like any other.
    @Test func aQuotedFieldOfTenThousandLinesIsARecord() throws {
        let dir = TempDir()
        defer { dir.remove() }
        _ = dir.file("d.csv", "id,alias\n1,\"" + String(repeating: "a\n", count: 9_999) + "\"\n2,tok_b\n")
        let manifest = try loadManifest(dataManifest, in: dir)
        #expect(manifest.requests[0].each?.rows == 2)
    }

    /// The count is what a run reads: failed records are rows, blank lines are not.
    @Test func theCountIsTheFilesRecordsFailedOnesIncluded() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path + "/d.csv"
        let bytes = Array("id,alias\n1,tok_a\n\n2\nx\"y,1\n\"x\"y,1\n\"multi\nline\",2\n".utf8) + [0xFF] + Array(",3\n4,tok_d".utf8)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let manifest = try loadManifest(dataManifest, in: dir)
        var reader = try DataRowReader(kind: .csv, path: path, name: "d.csv")
        var read = 0
        while reader.next() != nil { read += 1 }
        #expect(read == 7)
        #expect(manifest.requests[0].each?.rows == 7)
    }

    @Test func aJSONLinesFileIsCountedAsItIsRead() throws {
        let dir = TempDir()
        defer { dir.remove() }
        _ = dir.file("d.jsonl", "{\"alias\": \"a\"}\n\n  \r\n[1]\n{\"alias\": \"b\"}")
        let manifest = try loadManifest("""
        vault: tnt1
        output: {path: r.csv}
        requests: [{name: "r${index}", each: {jsonl: d.jsonl}, path: "/p/${row.alias}"}]
        """, in: dir)
        #expect(manifest.requests[0].each?.rows == 3)
    }
}

/// A record that fails is exactly one row, whatever is wrong in it: later rows keep their index.
@Suite struct FailedRecordTests {
    func rows(_ bytes: [UInt8]) throws -> [String] {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path + "/d.csv"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        var reader = try DataRowReader(kind: .csv, path: path, name: "d.csv")
        var seen: [String] = []
        while let row = reader.next() {
            switch row {
            case .success(let row): seen.append("\(row.index)@\(row.line):\(row.text("alias") ?? "-")")
            case .failure(let failure):
                let fields = failure.row.map { row in ["id", "alias"].map { row.text($0) ?? "-" }.joined(separator: "|") } ?? "none"
                seen.append("\(failure.index) fails: \(failure.message) [\(fields)]")
            }
        }
        return seen
    }

    static let notUTF8: [(data: [UInt8], expected: [String])] = [
        // Not UTF-8 in the first of two fields: one failed row, not two.
        ([0xFF] + Array(",tok_a\n2,tok_b\n".utf8), ["0 fails: d.csv:2: is not valid UTF-8 [\u{FFFD}|tok_a]", "1@3:tok_b"]),
        // The rest of the line is not a record of its own, to be sent.
        ([0xFF] + Array(",777,tok_FORGED\n2,tok_b\n".utf8), ["0 fails: d.csv:2: is not valid UTF-8 [\u{FFFD}|777]", "1@3:tok_b"]),
        // In a quoted field over two lines, the line is where the record starts.
        (Array("\"a\n".utf8) + [0xFE] + Array("\",tok_a\n2,tok_b\n".utf8), ["0 fails: d.csv:2: is not valid UTF-8 [a\n\u{FFFD}|tok_a]", "1@4:tok_b"]),
    ]

    @Test(arguments: notUTF8)
    func invalidUTF8FailsItsOneRecord(data: [UInt8], expected: [String]) throws {
        #expect(try rows(Array("id,alias\n".utf8) + data) == expected)
    }

    @Test func aWrongFieldCountKeepsTheFieldsItHas() throws {
        #expect(try rows(Array("id,alias\n7\n8,tok_b,x\n9,tok_c\n".utf8)) == [
            "0 fails: d.csv:2: has 1 fields; the header has 2 [7|-]",
            "1 fails: d.csv:3: has 3 fields; the header has 2 [8|tok_b]",
            "2@4:tok_c",
        ])
    }
}
