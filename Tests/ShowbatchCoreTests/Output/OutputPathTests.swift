import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import ShowbatchEmulator
import TestSupport

private let manifestText = """
vault: tnt1
output: {path: out/r.csv}
emulator: {aliases: {tok: "4111111111111111"}}
requests: [{name: a, path: /p, payload: {c: tok}, labels: {c: json.c}}]
"""

/// Runs `manifest` against its emulator; returns the error (if any) and how many requests the
/// emulator saw.
private func attempt(_ fixture: RunFixture, _ manifest: Manifest, options: RunOptions = RunOptions()) async throws -> (RunError?, Int) {
    let (emulator, options) = try fixture.emulator(for: manifest, options: options)
    defer { emulator.stop() }
    do {
        _ = try await Runner(manifest: manifest, options: options, environment: [:]).run()
        return (nil, emulator.snapshot.requests)
    } catch {
        return (error, emulator.snapshot.requests)
    }
}

@Suite(.serialized) struct OutputPathTests {
    /// A link planted at `OUT.partial` or `OUT.journal` (by another user who wants the rows) is
    /// refused before anything is sent: exit 3, the link's target untouched.
    @Test(arguments: ["out/r.csv.partial", "out/r.csv.journal"])
    func aLinkPlantedAtAWorkingPathIsRefusedAndItsTargetUntouched(link: String) async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(manifestText)
        let target = fixture.dir.file("elsewhere/target.txt", "not yours\n")
        try FileManager.default.createDirectory(atPath: fixture.dir.path + "/out", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: fixture.dir.path + "/" + link, withDestinationPath: target)
        let (error, requests) = try await attempt(fixture, manifest)
        #expect(error?.exitCode == .runtime)
        #expect(error?.description == "\(fixture.dir.path)/\(link) is a symbolic link; showbatch never writes through one: remove it and run again")
        #expect(requests == 0)
        #expect(fixture.read("elsewhere/target.txt") == "not yours\n")
        #expect(!fixture.dir.exists("out/r.csv"))
    }

    /// An output path that is a device or a link (`/dev/null`, `/dev/stdout`) is refused, with a
    /// pointer to `--output -`; nothing is replaced.
    @Test(arguments: ["/dev/null", "/dev/stdout", "link"])
    func anOutputThatIsNotARegularFileIsRefused(output: String) async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(manifestText)
        var path = output
        if output == "link" {
            path = fixture.dir.path + "/r.csv"
            try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: fixture.dir.file("real.csv", "x\n"))
        }
        var options = RunOptions()
        options.output = path
        options.format = .csv
        let (error, requests) = try await attempt(fixture, manifest, options: options)
        #expect(error?.exitCode == .usage)
        let kind = output == "link" || output == "/dev/stdout" ? "a symbolic link" : "not a regular file (a device, pipe or socket)"
        #expect(error?.description == "the output \(path) is \(kind); showbatch writes outputs only as regular files of its own. To write to standard output, use --output -")
        #expect(requests == 0)
        if output == "link" { #expect(fixture.read("real.csv") == "x\n") }
    }

    /// An output that is the manifest or a data file, by any path to it, is refused.
    @Test(arguments: ["m.yaml", "./sub/../m.yaml", "hard-link.yaml", "d.csv"])
    func anOutputThatIsAnInputIsRefused(output: String) async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        requests: [{name: "r${index}", each: {csv: d.csv}, path: /p}]
        """, files: ["d.csv": "id\n1\n", "sub/keep": ""])
        try FileManager.default.linkItem(atPath: fixture.dir.path + "/m.yaml", toPath: fixture.dir.path + "/hard-link.yaml")
        let before = fixture.read("m.yaml")
        var options = RunOptions()
        options.output = fixture.dir.path + "/" + output
        options.format = .csv
        let (error, requests) = try await attempt(fixture, manifest, options: options)
        #expect(error?.exitCode == .usage)
        let what = output == "d.csv" ? "the data file d.csv" : "the manifest"
        #expect(error?.description == "the output \(fixture.dir.path)/\(output) is \(what); writing it would replace the input: choose another output path")
        #expect(requests == 0)
        #expect(fixture.read("m.yaml") == before)
    }

    /// A data file at a path the run would write for an output (its `.partial`, `.journal` or
    /// `.journal.next`, whatever the spelling) is refused before anything is sent, untouched; so
    /// is a journal that is a hard link to an input.
    @Test(arguments: [
        ("out.csv.partial", "out.csv", "out.csv.partial"),
        ("out.csv.journal", "./sub/../out.csv", "./sub/../out.csv.journal"),
        ("out.csv.journal.next", "out.csv", "out.csv.journal.next"),
    ])
    func anOutputWhoseWorkingFileIsAnInputIsRefused(data: String, output: String, written: String) async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        requests: [{name: "r${index}", each: {csv: \(data)}, path: /p}]
        """, files: [data: "id\n1\n", "sub/keep": ""])
        var options = RunOptions()
        options.output = fixture.dir.path + "/" + output
        options.format = .csv
        let (error, requests) = try await attempt(fixture, manifest, options: options)
        #expect(error?.exitCode == .usage)
        #expect(error?.description == "the output \(fixture.dir.path)/\(output) would write \(fixture.dir.path)/\(written), which is the data file \(data); choose another output path")
        #expect(requests == 0)
        #expect(fixture.read(data) == "id\n1\n")
    }

    @Test func aJournalThatIsAHardLinkToAnInputIsRefused() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        requests: [{name: "r${index}", each: {csv: d.csv}, path: /p}]
        """, files: ["d.csv": "id\n1\n"])
        try FileManager.default.linkItem(atPath: fixture.dir.path + "/d.csv", toPath: fixture.dir.path + "/out.csv.journal")
        var options = RunOptions()
        options.output = fixture.dir.path + "/out.csv"
        let (error, requests) = try await attempt(fixture, manifest, options: options)
        #expect(error?.description == "\(fixture.dir.path)/out.csv.journal is the data file d.csv (a hard link to it); remove \(fixture.dir.path)/out.csv.journal and run again")
        #expect(requests == 0)
        #expect(fixture.read("d.csv") == "id\n1\n")
    }

    /// Requests whose outputs are two spellings of one file write one output; an output that is
    /// another's working file is refused.
    @Test func outputsAreComparedByTheFileTheyName() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let same = try fixture.manifest("""
        vault: tnt1
        emulator: {aliases: {tok: "4111111111111111"}}
        requests:
          - {name: a, path: /p, payload: {c: tok}, labels: {c: json.c}, output: {path: out/r.csv}}
          - {name: b, path: /p, payload: {c: tok}, labels: {c: json.c}, output: {path: ./out//r.csv}}
        """, files: ["out/keep": ""])
        let (error, requests) = try await attempt(fixture, same)
        #expect(error == nil && requests == 2)
        #expect(fixture.read("out/r.csv")?.split(separator: "\n").count == 3)
        let clash = try fixture.manifest("""
        vault: tnt1
        requests:
          - {name: a, path: /p, output: {path: out/r.csv}}
          - {name: b, path: /p, output: {path: out/r.csv.journal, format: csv}}
        """)
        let (refused, none) = try await attempt(fixture, clash)
        #expect(refused?.description == "the output \(fixture.dir.path)/out/r.csv.journal would write \(fixture.dir.path)/out/r.csv.journal, which is a file of the output \(fixture.dir.path)/out/r.csv; choose another output path")
        #expect(none == 0)
    }

    /// An output path that is a folder is refused before anything is sent (not after every row).
    @Test func anOutputThatIsADirectoryIsRefusedBeforeSending() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(manifestText)
        try FileManager.default.createDirectory(atPath: fixture.dir.path + "/out/r.csv", withIntermediateDirectories: true)
        let (error, requests) = try await attempt(fixture, manifest)
        #expect(error?.exitCode == .runtime)
        #expect(error?.description == "the output \(fixture.dir.path)/out/r.csv is a directory; give the path of a file")
        #expect(requests == 0)
    }

    /// A regular file left at `.partial` by an earlier run is replaced, not written through: a
    /// hard link to it keeps its old content.
    @Test func aLeftoverPartialFileIsReplacedNotReused() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(manifestText)
        _ = fixture.dir.file("out/r.csv.partial", "old\n")
        try FileManager.default.linkItem(atPath: fixture.dir.path + "/out/r.csv.partial", toPath: fixture.dir.path + "/other.csv")
        let (error, _) = try await attempt(fixture, manifest)
        #expect(error == nil)
        #expect(fixture.read("out/r.csv") == "request,status,http_status,attempts,error,c\na,ok,200,1,,4111111111111111\n")
        #expect(fixture.read("other.csv") == "old\n")
        #expect(fixture.mode("out/r.csv") == 0o600)
    }
}
