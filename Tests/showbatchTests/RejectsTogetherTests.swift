import Foundation
import Testing

/// An output and its rejects file are one night: a failure while writing or renaming either names
/// the journal that is kept (the output's: a rejects file has none), and they are never left one
/// final and one `.partial`.
@Suite struct RejectsTogetherTests {
    /// Every other row fails (an alias the emulator does not know comes back unchanged).
    private static func night(rows: Int, latency: String = "0ms") -> [String: String] {
        ["m.yaml": """
            vault: tnt1
            concurrency: 8
            output: {path: out/r.csv, rejects: out/bad.csv}
            emulator: {aliases: {tok_1: "4111111111111111"}, latency: \(latency)}
            requests: [{name: "r${row.id}", each: {csv: d.csv}, path: /post, payload: {card: "${row.alias}"}, labels: {card: json.card}}]
            """,
         "d.csv": "id,alias\n" + (0..<rows).map { "\($0),\($0 % 2 == 0 ? "tok_1" : "tok_unknown\($0)")" }.joined(separator: "\n") + "\n"]
    }

    @Test func aFailedRejectsWriteNamesTheOutputsJournal() async throws {
        let work = Workspace(Self.night(rows: 1_500))
        defer { work.remove() }
        let result = try await showbatch(["-c", "ulimit -f 64; exec \"$0\" run m.yaml --emulate", binary], in: work.path, shell: true)
        #expect(result.status == 3)
        #expect(result.stderr.hasSuffix("""
            showbatch: error: cannot write out/bad.csv.partial: File too large; the journal out/r.csv.journal is kept, so the run can go on with --resume once that is fixed

            """), "\(result.stderr)")
        #expect(!result.stderr.contains("bad.csv.journal"))
        #expect(work.exists("out/r.csv.journal") && !work.exists("out/bad.csv.journal"))
        let resumed = try await showbatch(["run", "m.yaml", "--emulate", "--resume", "--max-failed", "100%"], in: work.path)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(work.read("out/r.csv")?.split(separator: "\n").count == 751)
        #expect(work.read("out/bad.csv")?.split(separator: "\n").count == 751)
    }

    /// The output cannot be renamed into place (a folder appeared at its path): the rejects file,
    /// renamed just before it, goes back to its `.partial`, and --resume finishes both.
    @Test(.timeLimit(.minutes(1))) func anOutputThatCannotBeRenamedTakesItsRejectsBack() async throws {
        let work = Workspace(Self.night(rows: 400, latency: "5ms"))
        defer { work.remove() }
        let result = try await showbatch(["run", "m.yaml", "--emulate"], in: work.path) { folder in
            if FileManager.default.fileExists(atPath: folder + "/out/r.csv.partial") {
                try? FileManager.default.createDirectory(atPath: folder + "/out/r.csv/held", withIntermediateDirectories: true)
            }
            return false
        }
        #expect(result.status == 3)
        #expect(result.stderr.hasSuffix("showbatch: error: cannot rename out/r.csv.partial to out/r.csv: Is a directory; the journal out/r.csv.journal is kept, so the run can go on with --resume once that is fixed\n"), "\(result.stderr)")
        #expect(!work.exists("out/bad.csv") && work.exists("out/bad.csv.partial") && work.exists("out/r.csv.partial"))
        try FileManager.default.removeItem(atPath: work.path + "/out/r.csv")
        let resumed = try await showbatch(["run", "m.yaml", "--emulate", "--resume", "--max-failed", "100%"], in: work.path)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(work.read("out/r.csv")?.split(separator: "\n").count == 201)
        #expect(work.read("out/bad.csv")?.split(separator: "\n").count == 201)
        #expect(!work.exists("out/bad.csv.partial") && !work.exists("out/r.csv.partial"))
    }
}
