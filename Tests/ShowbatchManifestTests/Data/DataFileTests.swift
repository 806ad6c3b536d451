import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
import TestSupport

@Suite struct DataFileTests {
    func records(_ text: String, bytes: [UInt8]? = nil) throws -> [String] {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path + "/d.csv"
        try Data(bytes ?? Array(text.utf8)).write(to: URL(fileURLWithPath: path))
        var reader = try CSVRecordReader(path: path, name: "d.csv")
        var out: [String] = []
        while true {
            do {
                guard let record = try reader.next() else { break }
                out.append("\(record.line):" + record.fields.joined(separator: "|"))
            } catch {
                out.append("error \(error)")
            }
        }
        return out
    }

    @Test(arguments: [
        ("a,b\n1,2\n", ["1:a|b", "2:1|2"]),
        ("a,b\r\n1,2\r\n", ["1:a|b", "2:1|2"]),
        ("a,b\n1,2", ["1:a|b", "2:1|2"]),
        ("a,b\n\"x,y\",\"he said \"\"hi\"\"\"\n", ["1:a|b", "2:x,y|he said \"hi\""]),
        ("a,b\n\"multi\nline\",2\n3,4\n", ["1:a|b", "2:multi\nline|2", "4:3|4"]),
        ("a,b\n\n1,2\n", ["1:a|b", "3:1|2"]),
        ("a,b\n,\n", ["1:a|b", "2:|"]),
        ("a,b\nx\"y,1\n2,3\n", ["1:a|b", "error d.csv:2: has a quote inside an unquoted field", "3:2|3"]),
        ("a,b\n\"x\"y,1\n2,3\n", ["1:a|b", "error d.csv:2: has text after a closing quote", "3:2|3"]),
        ("a,b\n\"open,1\n", ["1:a|b", "error d.csv:2: quote opened here is never closed"]),
    ])
    func csvRecords(text: String, expected: [String]) throws {
        #expect(try records(text) == expected)
    }

    @Test func manyBlankLinesDoNotExhaustTheStack() throws {
        #expect(try records("id\n" + String(repeating: "\n", count: 1_000_000) + "7\n") == ["1:id", "1000002:7"])
    }

    @Test func byteOrderMarkIsSkipped() throws {
        #expect(try records("", bytes: [0xEF, 0xBB, 0xBF] + Array("id\n1\n".utf8)) == ["1:id", "2:1"])
    }

    @Test func rowsBecomeValuesOrFailures() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let csv = dir.file("d.csv", "id,alias\n1,tok_a\n2\n3,tok_c\n")
        var reader = try DataRowReader(kind: .csv, path: csv, name: "d.csv")
        var seen: [String] = []
        while let row = reader.next() {
            switch row {
            case .success(let row): seen.append("\(row.index)@\(row.line):\(row.text("alias") ?? "-")")
            case .failure(let failure): seen.append("\(failure.index) fails: \(failure.message)")
            }
        }
        #expect(seen == ["0@2:tok_a", "1 fails: d.csv:3: has 1 fields; the header has 2", "2@4:tok_c"])

        let jsonl = dir.file("d.jsonl", "{\"n\": 5, \"s\": \"x\"}\n\n   \n[1]\n{\"n\": true}\r\n")
        var lines = try DataRowReader(kind: .jsonl, path: jsonl, name: "d.jsonl")
        seen = []
        while let row = lines.next() {
            switch row {
            case .success(let row): seen.append("\(row.index)@\(row.line):\(row.text("n") ?? "-")")
            case .failure(let failure): seen.append("\(failure.index) fails: \(failure.message)")
            }
        }
        #expect(seen == ["0@1:5", "1 fails: d.jsonl:4: is not a JSON object", "2@5:true"])
    }
}

/// A CSV record longer than `Limits.dataRecord` (an unclosed quote in a large file, a runaway
/// line) ends the reading of that file: memory stays bounded. A JSON line that long fails alone.
@Suite struct DataRecordLimitTests {
    func rows(kind: DataRowReader.Kind, _ text: String) throws -> [String] {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.file(kind == .csv ? "d.csv" : "d.jsonl", text)
        var reader = try DataRowReader(kind: kind, path: path, name: kind == .csv ? "d.csv" : "d.jsonl")
        defer { reader.close() }
        var seen: [String] = []
        while let row = reader.next() {
            switch row {
            case .success(let row): seen.append("\(row.index)@\(row.line)")
            case .failure(let failure): seen.append("\(failure.index) fails: \(failure.message)")
            }
        }
        return seen
    }

    @Test func aCSVRecordPastTheLimitEndsTheFile() throws {
        let long = String(repeating: "x", count: Limits.dataRecord)
        #expect(try rows(kind: .csv, "id\n1\n\"\(long)\n2\n3\n") == [
            "0@2", "1 fails: d.csv:3: has a record longer than 16 MiB (the quote opened on line 3 is still open)",
        ])
        // One byte under the limit is a record like any other.
        #expect(try rows(kind: .csv, "id\n" + String(long.dropFirst(2)) + "\n2\n") == ["0@2", "1@3"])
    }

    /// Its end is the next line break: the lines after it are rows as before.
    @Test func aJSONLinePastTheLimitFailsAlone() throws {
        let long = String(repeating: "x", count: Limits.dataRecord)
        #expect(try rows(kind: .jsonl, "{\"id\": 1}\n\(long)x\n{\"id\": 2}\n{\"id\": 3}\n") == [
            "0@1", "1 fails: d.jsonl:2: has a line longer than 16 MiB", "2@3", "3@4",
        ])
    }
}

@Suite struct DataFileEdgeTests {
    /// A JSON Lines file may start with a byte-order mark, as a CSV file may.
    @Test func aJSONLinesFileMayStartWithAByteOrderMark() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path + "/d.jsonl"
        try Data([0xEF, 0xBB, 0xBF] + Array("{\"n\": 1}\n{\"n\": 2}\n".utf8)).write(to: URL(fileURLWithPath: path))
        var reader = try DataRowReader(kind: .jsonl, path: path, name: "d.jsonl")
        var values: [String] = []
        while let row = reader.next() {
            switch row {
            case .success(let row): values.append(row.text("n") ?? "-")
            case .failure(let failure): values.append("failed: \(failure.message)")
            }
        }
        #expect(values == ["1", "2"])
    }
}
