import Foundation
import Testing

/// Manifest warnings on the command line: `validate` prints them and still exits 0; `run` logs
/// them before it sends anything (issue 20, item 5).
@Suite struct ManifestWarningEndToEndTests {
    private static let manifest = """
    vault: tnt1
    emulator: {aliases: {tok_0: "4111111111111111"}}
    output:
      path: out/r.csv
      columns: [request, pan]
    requests:
      - {name: a, path: /p, payload: {pan: tok_0}, labels: {pan: json.pan}}

    """

    private static let message = "failed rows will be written as rows with empty values: add `status` or `error` to columns, or set `rejects`"

    @Test func validatePrintsTheWarningAndExitsZero() async throws {
        let work = Workspace(["m.yaml": Self.manifest])
        defer { work.remove() }
        let result = try await showbatch(["validate", "m.yaml"], in: work.path)
        #expect(result.status == 0)
        #expect(result.stdout == "m.yaml: ok (1 request, 1 warning)\n")
        #expect(result.stderr == "m.yaml:5:3: warning: \(Self.message)\n    columns: [request, pan]\n    ^\n")
    }

    @Test func runLogsTheWarningBeforeSending() async throws {
        let work = Workspace(["m.yaml": Self.manifest])
        defer { work.remove() }
        let text = try await showbatch(["run", "m.yaml", "--emulate"], in: work.path)
        #expect(text.status == 0)
        let lines = text.stderr.split(separator: "\n").map(String.init)
        #expect(lines.first == "showbatch: warning: m.yaml:5:3: \(Self.message)")
        #expect(lines.count == 2 && lines[1].hasPrefix("showbatch: 1 rows: 1 ok"))
        let json = try await showbatch(["run", "m.yaml", "--emulate", "--log-format", "json"], in: work.path)
        let events = json.stderr.split(separator: "\n").map(LogLine.init)
        #expect(events.map(\.event) == ["warning", "run_started", "summary"])
        #expect(events.first?.level == "warning")
        #expect(events.first?["message"] as? String == "m.yaml:5:3: \(Self.message)")
    }
}
