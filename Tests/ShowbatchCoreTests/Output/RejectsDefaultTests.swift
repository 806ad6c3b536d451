import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// With `rejects`, a row with a label not found went to the processor's file as `C100000,,`.
@Suite struct RejectsDefaultTests {
    private static func manifest(_ extra: String) -> String {
        """
        vault: tnt1
        emulator: {aliases: {tok_0: "4111111111111111", tok_1: "5555555555554444"}}
        output:
          path: out/r.csv
          rejects: out/rejects.csv\(extra)
          columns: [{customer: "C${row.id}"}, pan, exp]
        requests:
          - name: "r${row.id}"
            each: {csv: d.csv}
            path: /p
            payload: {pan: "${row.alias}"}
            labels: {pan: json.pan, exp: json.exp}
        """
    }

    private static let data = "id,alias\n100000,tok_0\n100001,tok_1\n"

    @Test func partialRowsGoToRejectsWhenThereIsARejectsFile() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let summary = try await fixture.run(try fixture.manifest(Self.manifest(""), files: ["d.csv": Self.data]))
        #expect(summary.partial == 2)
        #expect(fixture.read("out/r.csv") == "customer,pan,exp\n")
        #expect(fixture.read("out/rejects.csv") == """
        request,status,http_status,attempts,error,id,alias
        r100000,partial,200,1,1403 field_not_found: label exp: no value at json.exp,100000,tok_0
        r100001,partial,200,1,1403 field_not_found: label exp: no value at json.exp,100001,tok_1

        """)
    }

    @Test func rejectPartialFalseKeepsThemInTheOutput() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        _ = try await fixture.run(try fixture.manifest(Self.manifest("\n  reject_partial: false"), files: ["d.csv": Self.data]))
        #expect(fixture.read("out/r.csv") == "customer,pan,exp\nC100000,4111111111111111,\nC100001,5555555555554444,\n")
        #expect(fixture.read("out/rejects.csv") == "request,status,http_status,attempts,error,id,alias\n")
    }
}

/// `--output -` to a terminal wrote NUL and escape sequences from data rows and messages raw.
@Suite struct TerminalOutputTests {
    @Test(arguments: [
        ("r\u{1B}[2J,ok\n", "r\\u{1B}[2J,ok\n"),
        ("a\u{0}b\tc\n", "a\\u{0}b\tc\n"),
        ("x\r\ny\rz\n", "x\r\ny\\u{D}z\n"),
        ("c1\u{9B}31m\n", "c1\\u{9B}31m\n"),
        ("plain, \"quoted\nline\"\n", "plain, \"quoted\nline\"\n"),
    ])
    func aTerminalNeverGetsRawEscapes(written: String, shown: String) {
        #expect(String(decoding: OutputFile.escapedForTerminal(Array(written.utf8)), as: UTF8.self) == shown)
    }
}
