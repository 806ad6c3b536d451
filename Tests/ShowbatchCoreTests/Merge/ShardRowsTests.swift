import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// A shard file's rows are taken byte for byte: records that span lines, CRLF line endings,
/// JSON's separators; a file cut short is refused.
@Suite struct ShardRowsTests {
    private func rows(_ text: String, _ format: OutputFormat) throws -> (head: String, rows: [String]) {
        let path = FileManager.default.temporaryDirectory.path + "/showbatch-shardrows-" + UUID().uuidString
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let source = try #require(try ShardRows(path: path, format: format))
        let head = try source.head()
        var rows: [String] = []
        var row: [UInt8] = []
        while try source.next(into: &row) {
            rows.append(String(decoding: row, as: UTF8.self))
            row.removeAll()
        }
        try source.finish()
        return (String(decoding: head, as: UTF8.self), rows)
    }

    @Test func csvRecordsKeepTheirQuotedLineBreaksAndLineEndings() throws {
        let text = "request,status,a\r\nr1,ok,\"two\r\nlines, \"\"q\"\"\"\r\nr2,ok,\"\n\"\nr3,ok,\r\n"
        let read = try rows(text, .csv)
        #expect(read.head == "request,status,a\r\n")
        #expect(read.rows == ["r1,ok,\"two\r\nlines, \"\"q\"\"\"\r\n", "r2,ok,\"\n\"\n", "r3,ok,\r\n"])
        #expect(read.head + read.rows.joined() == text)
    }

    @Test func csvCellsAreSplitOutsideQuotes() {
        let record = Array("\"a,\"\"b\",c,\r\n".utf8)
        #expect(ShardRows.csvCell(record[...], column: 0).map { String(decoding: $0, as: UTF8.self) } == "\"a,\"\"b\"")
        #expect(ShardRows.csvCell(record[...], column: 1).map { String(decoding: $0, as: UTF8.self) } == "c")
        #expect(ShardRows.csvCell(record[...], column: 2).map { String(decoding: $0, as: UTF8.self) } == "")
        #expect(ShardRows.csvCell(record[...], column: 3) == nil)
    }

    @Test func jsonRowsLoseOnlyTheirSeparators() throws {
        #expect(try rows("[\n{\"request\":\"a\"},\n{\"request\":\"b,\"}\n]\n", .json).rows == ["{\"request\":\"a\"}", "{\"request\":\"b,\"}"])
        #expect(try rows("[]\n", .json).rows == [])
        #expect(try rows("{\"a\":1}\n{\"b\":2}\n", .jsonl).rows == ["{\"a\":1}\n", "{\"b\":2}\n"])
    }

    @Test(arguments: [
        ("request\nr1,\"open\n", OutputFormat.csv, "a quoted cell in its last row is not closed (the file was cut short)"),
        ("request\nr1", .csv, "its last row has no line break (the file was cut short)"),
        ("", .csv, "it is empty, so it has no header"),
        ("[\n{\"a\":1},\n", .json, "it ends before its closing ]"),
        ("[\n{\"a\":1}\n", .json, "it does not end with a line holding ]"),
        ("[\n{\"a\":1}\n]\nmore\n", .json, "something follows its closing ]"),
        ("{\n", .json, "it does not start with a line holding ["),
        ("{\"a\":1}", .jsonl, "its last line has no line break (the file was cut short)"),
    ])
    func filesCutShortOrForeignAreRefused(text: String, format: OutputFormat, reason: String) {
        do {
            _ = try rows(text, format)
            Issue.record("not refused")
        } catch let error as ShardRows.Malformed {
            #expect(error.reason == reason)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}
