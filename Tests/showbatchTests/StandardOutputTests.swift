import Foundation
import Testing

/// `--output -` with columns that show no status or error printed a failed row as blanks, which
/// whoever reads the pipe takes for a real row.
@Suite struct StandardOutputTests {
    private static let manifest = """
    vault: tnt1
    emulator: {aliases: {tok_0: "4111111111111111"}}
    output: {path: out/r.csv, columns: [{customer: "C${row.id}"}, pan]}
    requests:
      - {name: "r${row.id}", each: {csv: d.csv}, path: /p, payload: {pan: "${row.alias}"}, labels: {pan: json.pan}}
    """

    @Test func standardOutputNeverWritesAFailedRowAsBlanks() async throws {
        let work = Workspace(["m.yaml": Self.manifest, "d.csv": "id,alias\n1,tok_0\n2,tok_unknown\n3,tok_0\n"])
        defer { work.remove() }
        let run = try await showbatch(["run", "m.yaml", "--emulate", "--output", "-"], in: work.path)
        #expect(run.status == 1)
        #expect(run.stdout == "customer,pan\nC1,4111111111111111\nC3,4111111111111111\n")
    }

    @Test func columnsThatShowAFailureKeepTheFailedRow() async throws {
        let manifest = Self.manifest.replacingOccurrences(of: "pan]}", with: "pan, status]}")
        let work = Workspace(["m.yaml": manifest, "d.csv": "id,alias\n1,tok_0\n2,tok_unknown\n"])
        defer { work.remove() }
        let run = try await showbatch(["run", "m.yaml", "--emulate", "--output", "-"], in: work.path)
        #expect(run.status == 1)
        #expect(run.stdout == "customer,pan,status\nC1,4111111111111111,ok\nC2,,failed\n")
    }
}
