import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import ShowbatchEmulator
import TestSupport

/// A run killed while it puts its finished files in place (after the journal records the end):
/// the next `--resume` finishes the job from what is on disk, whichever step was done.
@Suite(.serialized) struct InterruptedCommitTests {
    private let manifestText = """
    vault: tnt1
    retry: {attempts: 1}
    output: {path: out/r.csv, rejects: out/bad.csv}
    requests: [{name: "r${row.id}", each: {csv: d.csv}, path: "/p/${row.id}", labels: {p: path}}]
    """

    private func rows(_ count: Int) -> String { "id\n" + (0..<count).map(String.init).joined(separator: "\n") + "\n" }

    /// The rejects file is put in place first, then the output: a run stopped between the two
    /// leaves the rejects file in place and the output as `.partial`. `--resume` places the output
    /// and leaves both files as the finished run wrote them.
    @Test func stoppedBetweenTheRejectsFileAndTheOutput() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(manifestText, files: ["d.csv": rows(60)])
        let failing: (inout EmulatorConfiguration) -> Void = {
            $0.faults.failPaths = ["/p/7", "/p/30"]
            $0.faults.failStatus = 400
        }
        let finished = try await fixture.run(manifest, configure: failing)
        #expect(finished.exitCode == .rowsFailed)
        let output = try #require(fixture.read("out/r.csv"))
        let rejects = try #require(fixture.read("out/bad.csv"))
        // As a run killed after the rejects file's rename and before the output's leaves it.
        let base = fixture.dir.path + "/out/"
        #expect(rename(base + "r.csv", base + "r.csv.partial") == 0)
        var options = RunOptions()
        options.resume = true
        let resumed = try await fixture.run(manifest, options: options, configure: failing)
        #expect(resumed.stopReason == nil && resumed.exitCode == .rowsFailed)
        #expect(fixture.read("out/r.csv") == output && fixture.read("out/bad.csv") == rejects)
        #expect(!fixture.dir.exists("out/r.csv.partial"))
    }

    /// A shard killed after its output's rename, before its identity was written (as an older
    /// run could be): `--resume` writes the identity, so that merge takes the shard.
    @Test func aShardWithoutItsIdentityGetsOneOnResume() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(manifestText, files: ["d.csv": rows(40)])
        let failing: (inout EmulatorConfiguration) -> Void = {
            $0.faults.failPaths = ["/p/2"]
            $0.faults.failStatus = 400
        }
        var options = RunOptions()
        for index in 0..<2 {
            options.shard = Shard(index: index, count: 2)
            options.resume = false
            _ = try await fixture.run(manifest, options: options, configure: failing)
        }
        let identity = fixture.dir.path + "/out/r-shard-0.csv.identity"
        let written = try #require(fixture.read("out/r-shard-0.csv.identity"))
        #expect(unlink(identity) == 0)
        options.shard = Shard(index: 0, count: 2)
        options.resume = true
        let resumed = try await fixture.run(manifest, options: options, configure: failing)
        #expect(resumed.exitCode == .rowsFailed)
        #expect(fixture.read("out/r-shard-0.csv.identity") == written)
        let merged = try ShardMerge.merge(manifest: manifest, options: MergeOptions(shards: 2))
        #expect(merged.outputs.map(\.rows) == [39])
    }
}
