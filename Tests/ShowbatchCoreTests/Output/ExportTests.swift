import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// Data rows for the export tests: every third lacks `alias`, so it cannot be sent (a 1490 row).
private func jsonlRows(_ count: Int) -> String {
    (0..<count).map { index in
        index % 3 == 2 ? "{\"id\": \(index), \"amount\": \"-\(index).50\"}" : "{\"id\": \(index), \"alias\": \"tok_\(index % 2)\", \"amount\": \"-\(index).50\"}"
    }.joined(separator: "\n") + "\n"
}

/// The bytes `gzip -dc` makes of `path` (the tool a reader of the export has), or nil when it fails.
private func gunzip(_ path: String) throws -> String? {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/gzip")
    process.arguments = ["-dc", path]
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return process.terminationStatus == 0 ? String(decoding: data, as: UTF8.self) : nil
}

/// Exports shaped for a processor: columns, rejects, CSV dialects, gzip (issue 14).
@Suite struct ExportTests {
    /// A gzip output with failed rows on both sides of a flush resumes: its failed rows are
    /// recorded in the order of the file (they were placed by compressed and plain bytes mixed,
    /// which went backwards after a flush, and every resume was refused or started afresh).
    @Test func aGzipOutputWithFailedRowsResumes() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        // Every 50th data row has no id: its request cannot be made, and its row fails.
        let data = (0..<10_000).map { $0 % 50 == 3 ? "{}" : "{\"id\": \($0)}" }.joined(separator: "\n") + "\n"
        let text = """
            vault: tnt1
            concurrency: 8
            output: {path: out/r.jsonl.gz}
            requests: [{name: "r${index}", each: {jsonl: d.jsonl}, path: "/p/${row.id}", labels: {p: path}}]
            """
        let manifest = try fixture.manifest(text, files: ["d.jsonl": data])
        _ = try await fixture.run(manifest)
        let whole = try #require(try gunzip(fixture.dir.path + "/out/r.jsonl.gz"))
        try FileManager.default.removeItem(atPath: fixture.dir.path + "/out")
        let (emulator, interrupted, baseOptions) = try await fixture.interruptedRun(manifest, after: 9_000)
        defer { emulator.stop() }
        #expect(interrupted.interrupted && interrupted.rows > 4_096 && interrupted.failed >= 80)
        var options = baseOptions
        options.resume = true
        let resumed = try await Runner(manifest: manifest, options: options, environment: [:]).run()
        #expect(resumed.replayed > 4_096 && resumed.rows == 10_000 && resumed.failed == 200)
        #expect(try gunzip(fixture.dir.path + "/out/r.jsonl.gz") == whole)
    }

    private static let columnsManifest = """
    vault: tnt1
    emulator: {aliases: {tok_0: "4000000000000002", tok_1: "4111111111111111"}}
    output:
      path: out/r.FORMAT
      columns:
        - {customer: "${row.id}"}
        - card
        - {pan_last4: last4}
        - status
        - {outcome: status}
        - {line: "${index}/${request}"}
        - {amount: "${row.amount}"}
        - {batch: "nightly-${BATCH}"}
    requests:
      - name: "r${row.id}"
        each: {jsonl: d.jsonl}
        path: /p
        payload: {c: "${row.alias}"}
        labels: {card: json.c, last4: {path: json.c, transform: [{regex: "^.*(\\\\d{4})$", template: "$1"}]}}
    """

    @Test func columnsTakeDataRowValuesLabelsAndRenamesInOrder() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(Self.columnsManifest.replacingOccurrences(of: "FORMAT", with: "csv"),
                                            files: ["d.jsonl": jsonlRows(4)], environment: ["BATCH": "7"])
        let summary = try await fixture.run(manifest)
        #expect(summary.rows == 4 && summary.ok == 3 && summary.failed == 1)
        #expect(fixture.read("out/r.csv") == """
        customer,card,pan_last4,status,outcome,line,amount,batch
        0,4000000000000002,0002,ok,ok,0/r0,-0.50,nightly-7
        1,4111111111111111,1111,ok,ok,1/r1,-1.50,nightly-7
        2,,,failed,failed,2/r2,-2.50,nightly-7
        3,4111111111111111,1111,ok,ok,3/r3,-3.50,nightly-7

        """)
    }

    @Test func columnsMakeFlatJSONObjects() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let text = Self.columnsManifest.replacingOccurrences(of: "FORMAT", with: "jsonl")
            .replacingOccurrences(of: "    - {outcome: status}\n", with: "    - http_status\n    - attempts\n    - error\n")
        let manifest = try fixture.manifest(text, files: ["d.jsonl": jsonlRows(3)], environment: ["BATCH": "7"])
        _ = try await fixture.run(manifest)
        #expect(fixture.read("out/r.jsonl") == """
        {"customer":"0","card":"4000000000000002","pan_last4":"0002","status":"ok","http_status":200,"attempts":1,"error":null,"line":"0/r0","amount":"-0.50","batch":"nightly-7"}
        {"customer":"1","card":"4111111111111111","pan_last4":"1111","status":"ok","http_status":200,"attempts":1,"error":null,"line":"1/r1","amount":"-1.50","batch":"nightly-7"}
        {"customer":"2","card":null,"pan_last4":null,"status":"failed","http_status":null,"attempts":0,"error":"1490 invalid_row: d.jsonl:3: row has no \\"alias\\" column","line":"2/r2","amount":"-2.50","batch":"nightly-7"}

        """)
    }

    private static let rejectsManifest = """
    vault: tnt1
    concurrency: 4
    emulator: {aliases: {tok_0: "4000000000000002", tok_1: "4111111111111111"}, latency: 1ms}
    output:
      path: out/r.csv
      rejects: out/rejects.csv
      reject_partial: true
      csv: {escape_formulas: true}
    requests:
      - {name: "r${row.id}", each: {jsonl: d.jsonl}, path: /p, payload: {c: "${row.alias}"}, labels: {card: json.c}}
      - {name: lone, path: /p, payload: {c: tok_0}, labels: {card: json.nope}}
    """

    @Test func failedAndPartialRowsGoToTheRejectsFile() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(Self.rejectsManifest, files: ["d.jsonl": jsonlRows(6)])
        let summary = try await fixture.run(manifest)
        #expect(summary.rows == 7 && summary.ok == 4 && summary.partial == 1 && summary.failed == 2)
        #expect(fixture.read("out/r.csv") == """
        request,status,http_status,attempts,error,card
        r0,ok,200,1,,4000000000000002
        r1,ok,200,1,,4111111111111111
        r3,ok,200,1,,4111111111111111
        r4,ok,200,1,,4000000000000002

        """)
        #expect(fixture.read("out/rejects.csv") == """
        request,status,http_status,attempts,error,id,alias
        r2,failed,,0,"1490 invalid_row: d.jsonl:3: row has no ""alias"" column",2,
        r5,failed,,0,"1490 invalid_row: d.jsonl:6: row has no ""alias"" column",5,
        lone,partial,200,1,1403 field_not_found: label card: no value at json.nope,,

        """)
        #expect(fixture.mode("out/rejects.csv") == 0o600)
        #expect(!fixture.dir.exists("out/rejects.csv.partial"))
    }

    /// A run interrupted at any moment and resumed writes both files as an uninterrupted run does.
    @Test(arguments: [5, 40, 170])
    func anInterruptedRunWithRejectsResumesToIdenticalFiles(after: Int) async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(Self.rejectsManifest, files: ["d.jsonl": jsonlRows(300)])
        _ = try await fixture.run(manifest)
        let baseline = (try #require(fixture.read("out/r.csv")), try #require(fixture.read("out/rejects.csv")))
        for name in ["out/r.csv", "out/rejects.csv", "out/r.csv.journal"] { try? FileManager.default.removeItem(atPath: fixture.dir.path + "/" + name) }

        let (emulator, interrupted, baseOptions) = try await fixture.interruptedRun(manifest, after: after)
        defer { emulator.stop() }
        #expect(interrupted.interrupted)
        #expect(fixture.dir.exists("out/r.csv.partial") && fixture.dir.exists("out/rejects.csv.partial"))
        var options = baseOptions
        options.resume = true
        let resumed = try await Runner(manifest: manifest, options: options, environment: [:]).run()
        #expect(!resumed.interrupted && resumed.rows == 301)
        #expect(fixture.read("out/r.csv") == baseline.0)
        #expect(fixture.read("out/rejects.csv") == baseline.1)
        #expect(!fixture.dir.exists("out/r.csv.partial") && !fixture.dir.exists("out/rejects.csv.partial"))
    }

    @Test func aDialectReachesTheFile() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        emulator: {aliases: {tok_0: "=4000;2"}}
        output: {path: r.txt, format: csv, csv: {delimiter: ";", line_ending: crlf, header: false, quote: all, escape_formulas: true}}
        requests: [{name: "-5", path: /p, payload: {c: tok_0}, labels: {card: json.c}}]
        """)
        _ = try await fixture.run(manifest)
        #expect(fixture.read("r.txt") == "\"-5\";\"ok\";\"200\";\"1\";\"\";\"'=4000;2\"\r\n")
    }

    /// The journal knows the layout: a resumed run with other columns is refused.
    @Test func aJournalOfOtherColumnsIsRefused() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(Self.rejectsManifest, files: ["d.jsonl": jsonlRows(300)])
        let (emulator, _, baseOptions) = try await fixture.interruptedRun(manifest, after: 20)
        defer { emulator.stop() }
        let other = try fixture.manifest(Self.rejectsManifest.replacingOccurrences(of: "escape_formulas: true", with: "delimiter: \";\""),
                                         files: ["d.jsonl": jsonlRows(300)])
        var options = baseOptions
        options.resume = true
        do {
            _ = try await Runner(manifest: other, options: options, environment: [:]).run()
            Issue.record("expected a refusal")
        } catch {
            #expect(error.description.contains("journal"), "\(error)")
        }
    }

    @Test(arguments: [
        ("output: {path: r.csv, columns: [request, cardd]}",
         "m.yaml:2:42: error: output.columns[1] \"cardd\" is neither a label nor a fixed column (request, status, http_status, attempts, error); did you mean \"card\"? its labels are card"),
        ("output: {path: r.csv, columns: [card, {card: status}]}",
         "m.yaml:2:39: error: output.columns names the column \"card\" twice (items 0 and 1)"),
        ("output: {path: r.csv, columns: []}", "m.yaml:2:32: error: output.columns is empty; list at least one column"),
        ("output: {path: r.csv, columns: [{a: 1, b: 2}]}",
         "m.yaml:2:33: error: output.columns[0] must be a column name or {NAME: TEMPLATE} with one key; found a mapping"),
        ("output: {path: r.csv, columns: [{a: \"${row.x\"}]}",
         "m.yaml:2:37: error: output.columns[0].a: \"${\" is not closed by \"}\" (write $${ for a literal ${)"),
        ("output: {path: r.csv, csv: {delimiter: \"::\"}}", "m.yaml:2:40: error: output.csv.delimiter must be \",\", \";\", \"|\" or tab; found \"::\""),
        ("output: {path: r.csv, csv: {line_ending: cr}}", "m.yaml:2:42: error: output.csv.line_ending must be lf or crlf; found \"cr\""),
        ("output: {path: r.csv, csv: {quote: some}}", "m.yaml:2:36: error: output.csv.quote must be minimal or all; found \"some\""),
        ("output: {path: r.csv, reject_partial: true}", "m.yaml:2:39: error: output.reject_partial needs output.rejects"),
        ("output: {path: r.csv, rejects: r.csv}", "m.yaml:2:32: error: output.rejects must be another file than output.path"),
    ])
    func outputSettingsAreCheckedWhereTheyAreWritten(output: String, expected: String) {
        let text = "vault: tnt1\n\(output)\nrequests: [{name: a, path: /p, labels: {card: json.c}}]\n"
        #expect(manifestErrors(text).components(separatedBy: "\n").first == expected)
    }

    /// A `.gz` output is the plain output through gzip, also when the run was interrupted and
    /// resumed (each checkpoint ends a gzip member; resume cuts back to one and starts another).
    @Test(arguments: ["csv", "json", "jsonl"], [0, 9, 100])
    func gzipOutputsDecompressToThePlainBytes(format: String, interruptAfter: Int) async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let text = Self.rejectsManifest.replacingOccurrences(of: "      rejects: out/rejects.csv\n      reject_partial: true\n", with: "")
        let plain = try fixture.manifest(text.replacingOccurrences(of: "out/r.csv", with: "out/r.\(format)"), files: ["d.jsonl": jsonlRows(200)])
        _ = try await fixture.run(plain)
        let expected = try #require(fixture.read("out/r.\(format)"))
        let gzipped = try fixture.manifest(text.replacingOccurrences(of: "out/r.csv", with: "out/r.\(format).gz"), files: ["d.jsonl": jsonlRows(200)])
        if interruptAfter == 0 {
            _ = try await fixture.run(gzipped)
        } else {
            let (emulator, interrupted, baseOptions) = try await fixture.interruptedRun(gzipped, after: interruptAfter)
            defer { emulator.stop() }
            #expect(interrupted.interrupted)
            var options = baseOptions
            options.resume = true
            let resumed = try await Runner(manifest: gzipped, options: options, environment: [:]).run()
            #expect(resumed.rows == 201 && !resumed.interrupted)
        }
        #expect(try gunzip(fixture.dir.path + "/out/r.\(format).gz") == expected)
        #expect(fixture.mode("out/r.\(format).gz") == 0o600)
        #expect(!fixture.dir.exists("out/r.\(format).gz.partial"))
        // Failed rows keep the journal, and a gzip file is rewritten from it: its failed rows
        // (none of which can be sent) fail again, and its rows stay as they were.
        var options = RunOptions()
        options.retryFailed = true
        let retried = try await fixture.run(gzipped, options: options)
        #expect(retried.rows == 201 && retried.failed == 66)
        #expect(try gunzip(fixture.dir.path + "/out/r.\(format).gz") == expected)
    }

    /// A JSON output whose first rows go to the rejects file is still one valid array, also when
    /// resumed; and a label file may not be the rejects file.
    @Test(arguments: [0, 30])
    func aJSONOutputWhoseFirstRowsAreRejectedIsValid(interruptAfter: Int) async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let rows = "{\"id\": 0}\n{\"id\": 1}\n" + (2..<120).map { "{\"id\": \($0), \"alias\": \"tok_0\"}" }.joined(separator: "\n") + "\n"
        let text = Self.rejectsManifest.replacingOccurrences(of: "out/r.csv", with: "out/r.json").replacingOccurrences(of: "out/rejects.csv", with: "out/rejects.json")
        let manifest = try fixture.manifest(text, files: ["d.jsonl": rows])
        if interruptAfter == 0 {
            _ = try await fixture.run(manifest)
        } else {
            let (emulator, _, baseOptions) = try await fixture.interruptedRun(manifest, after: interruptAfter)
            defer { emulator.stop() }
            var options = baseOptions
            options.resume = true
            _ = try await Runner(manifest: manifest, options: options, environment: [:]).run()
        }
        for name in ["out/r.json", "out/rejects.json"] {
            let data = try #require(FileManager.default.contents(atPath: fixture.dir.path + "/" + name))
            let rows = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]], "\(name)")
            #expect(rows.count == (name == "out/r.json" ? 118 : 3))
        }
        #expect(fixture.read("out/r.json")?.hasPrefix("[\n{\"request\":\"r2\",") == true)
    }

    /// An output or rejects path through a folder that does not exist yet is still compared with
    /// the inputs: `new/../d.jsonl` is the data file.
    @Test(arguments: ["output: {path: \"nd/../d.jsonl\", format: jsonl}", "output: {path: r.csv, rejects: \"nd/../m.yaml\", format: csv}"])
    func aPathThroughAMissingFolderIsStillAnInput(output: String) async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("vault: tnt1\n\(output)\nrequests: [{name: \"r${row.id}\", each: {jsonl: d.jsonl}, path: /p}]\n",
                                            files: ["d.jsonl": jsonlRows(2)])
        do {
            _ = try await fixture.run(manifest)
            Issue.record("expected a refusal")
        } catch {
            let text = (error as? RunError)?.description ?? ""
            #expect(text.hasSuffix(output.contains("rejects") ? "/nd/../m.yaml is the manifest; writing it would replace the input: choose another output path"
                                                              : "/nd/../d.jsonl is the data file d.jsonl; writing it would replace the input: choose another output path"), "\(text)")
        }
        #expect(fixture.read("d.jsonl") == jsonlRows(2))
        #expect(!fixture.dir.exists("nd"))
    }
}
