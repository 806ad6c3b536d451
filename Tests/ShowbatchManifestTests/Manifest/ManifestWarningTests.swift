import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
import TestSupport

/// Warnings: what is valid but likely not meant. `output.columns` without `status` or `error` and
/// without `rejects` writes a failed row as a row of empty values (issue 20, item 5).
@Suite struct ManifestWarningTests {
    /// The rendered warnings of manifest text, the temp folder's path shortened to `m.yaml`.
    private static func rendered(_ text: String) throws -> [String] {
        let dir = TempDir()
        defer { dir.remove() }
        return try loadManifest(text, in: dir).warnings.map { $0.description.replacingOccurrences(of: dir.path + "/", with: "") }
    }

    private static func warnings(_ output: String, requestOutput: String = "") throws -> [String] {
        let text = """
        vault: tnt1
        \(output)
        requests:
          - {name: a, path: /p, labels: {pan: json.pan}\(requestOutput)}

        """
        return try rendered(text)
    }

    private static let blank = "failed rows will be written as rows with empty values: add `status` or `error` to columns, or set `rejects`"

    @Test func columnsWithoutStatusOrErrorOrRejectsWarnAtTheColumnsKey() throws {
        #expect(try Self.warnings("output:\n  path: r.csv\n  columns: [request, pan]") == [
            "m.yaml:4:3: warning: \(Self.blank)\n    columns: [request, pan]\n    ^",
        ])
        #expect(try Self.warnings("output: {path: r.csv, columns: [pan]}") == [
            "m.yaml:2:23: warning: \(Self.blank)\n  output: {path: r.csv, columns: [pan]}\n                        ^",
        ])
    }

    @Test(arguments: [
        "output: {path: r.csv, columns: [pan, status]}",
        "output: {path: r.csv, columns: [pan, {outcome: status}]}",
        "output: {path: r.csv, columns: [pan, error]}",
        "output: {path: r.csv, columns: [pan], rejects: rejects.csv}",
        "output: {path: r.csv}",
    ])
    func noWarningWhenFailedRowsCanBeTold(output: String) throws {
        #expect(try Self.warnings(output) == [])
    }

    /// A request's own output is checked too; an output shared through an alias warns once.
    @Test func requestOutputsAndSharedOutputs() throws {
        // A request's output has the keys of `output`: its path and columns are shown.
        let line = "  - {name: a, path: /p, labels: {pan: json.pan}, output: {path: s.csv, columns: [pan]}}"
        #expect(try Self.warnings("output: {path: r.csv}", requestOutput: ", output: {path: s.csv, columns: [pan]}") == [
            "m.yaml:4:72: warning: \(Self.blank)\n  \(line)\n  \(String(repeating: " ", count: 71))^",
        ])
        let shared = try Self.rendered("""
        vault: tnt1
        requests:
          - {name: a, path: /p, labels: {pan: json.pan}, output: &out {path: s.csv, columns: [pan]}}
          - {name: b, path: /p, labels: {pan: json.pan}, output: *out}

        """)
        #expect(shared == [
            "m.yaml:3:77: warning: \(Self.blank)\n    - {name: a, path: /p, labels: {pan: json.pan}, output: <redacted> {path: s.csv, columns: [pan]}}\n  \(String(repeating: " ", count: 82))^",
        ])
    }

    @Test func aManifestWithErrorsReportsTheErrors() {
        #expect(manifestErrors("vault: tnt1\ntimeout: soon\noutput: {path: r.csv, columns: [pan]}\nrequests: [{name: a, path: /p, labels: {pan: json.pan}}]\n")
            == "m.yaml:2:10: error: timeout must be a positive duration such as 500ms, 30s or 2m; found \"soon\"\n  timeout: soon\n           ^")
    }
}
