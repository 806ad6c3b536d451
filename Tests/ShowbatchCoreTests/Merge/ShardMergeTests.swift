import Foundation
import Synchronization
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// The library side of `merge`: rows are taken in work-item order from shard (ordinal mod N); an
/// interrupted merge leaves nothing behind.
@Suite struct ShardMergeTests {
    private let manifest = """
    vault: tnt1
    output: {path: out/r.csv}
    requests:
      - {name: a, path: /p, labels: {v: json.v}}
      - {name: b, path: /p, labels: {v: json.v}}
      - {name: c, path: /p, labels: {v: json.v}}
    """
    private let header = "request,status,http_status,attempts,error,v\n"

    private func folder(_ files: [String: String]) throws -> String {
        let path = FileManager.default.temporaryDirectory.path + "/showbatch-merge-" + UUID().uuidString
        for (name, text) in files {
            try FileManager.default.createDirectory(atPath: ((path + "/" + name) as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            try Data(text.utf8).write(to: URL(fileURLWithPath: path + "/" + name))
        }
        return path
    }

    /// Writes beside each shard file the identity its run leaves (as a forger could, too: the
    /// rows are still checked against the manifest).
    private func identify(_ path: String, shards: Int) throws {
        let manifest = try ManifestLoader.load(path: path + "/m.yaml")
        for index in 0..<shards {
            let planner = try OutputPlanner(manifest: manifest, output: nil, format: nil, shard: Shard(index: index, count: shards))
            let target = planner.targets[0]
            let bytes = Array(try #require(FileManager.default.contents(atPath: target.path)))
            let rows = bytes.filter { $0 == 0x0A }.count - 1
            let run = planner.journalIdentity(of: target, dataHash: try manifest.dataHash(), shard: Shard(index: index, count: shards))
            let checkpoint = Journal.Checkpoint(ordinal: 0, offset: bytes.count, counts: RowCounts(rows: rows, ok: rows, partial: 0, failed: 0),
                                                hash: fnv1a(bytes))
            try ShardIdentity(run: run, checkpoint: checkpoint).write(beside: target.path)
        }
    }

    /// A merge that begins a second before midnight and ends after it merges, reports and
    /// audits the night it began with: its clock is read once.
    @Test func aMergeAcrossMidnightIsOfTheNightItBeganWith() throws {
        let path = try folder(["m.yaml": manifest,
                               "out/r-shard-0.csv": header + "a,ok,200,1,,1\nc,ok,200,1,,3\n",
                               "out/r-shard-1.csv": header + "b,ok,200,1,,2\n"])
        defer { try? FileManager.default.removeItem(atPath: path) }
        try identify(path, shards: 2)
        let loaded = try ManifestLoader.load(path: path + "/m.yaml")
        // A second before midnight (local time, as the night is read) on 2026-12-01, then five
        // seconds after it at every later read.
        var parts = tm()
        (parts.tm_year, parts.tm_mon, parts.tm_mday, parts.tm_isdst) = (126, 11, 2, -1)
        let midnight = mktime(&parts)
        let reads = Mutex(0)
        let clock = NightClock {
            reads.withLock { count in
                count += 1
                return count == 1 ? midnight - 1 : midnight + 5
            }
        }
        var options = MergeOptions(shards: 2)
        options.audit = path + "/audit.log"
        options.runID = "0123456789abcdef"
        let summary = try ShardMerge.merge(manifest: loaded, options: options, clock: clock)
        #expect(reads.withLock { $0 } == 1)
        #expect(summary.night == NightDate(parsing: "2026-12-01"))
        #expect(summary.runSummary(elapsed: .seconds(1)).night == NightDate(parsing: "2026-12-01"))
        let trail = try String(contentsOfFile: path + "/audit.log", encoding: .utf8)
        #expect(trail.components(separatedBy: "\"night\":\"2026-12-01\"").count == 3)
        #expect(!trail.contains("2026-12-02"))
    }

    @Test func rowsComeBackInWorkItemOrder() throws {
        let path = try folder(["m.yaml": manifest,
                               "out/r-shard-0.csv": header + "a,ok,200,1,,1\nc,failed,,3,1502 timeout: no answer,\n",
                               "out/r-shard-1.csv": header + "b,ok,200,1,,\"x\r\ny\"\r\n"])
        defer { try? FileManager.default.removeItem(atPath: path) }
        try identify(path, shards: 2)
        let loaded = try ManifestLoader.load(path: path + "/m.yaml")
        // Noon on 2026-12-01, whatever the time zone: the merge's night is that day.
        let summary = try ShardMerge.merge(manifest: loaded, options: MergeOptions(shards: 2), clock: NightClock { 1_796_126_400 })
        var expected = MergeSummary(outputs: [MergedOutput(path: path + "/out/r.csv", rows: 3, unchanged: false)])
        expected.rows = 4
        expected.ok = 4
        expected.night = NightDate(parsing: "2026-12-01")
        #expect(summary == expected)
        let merged = try String(contentsOfFile: path + "/out/r.csv", encoding: .utf8)
        #expect(merged == header + "a,ok,200,1,,1\nb,ok,200,1,,\"x\r\ny\"\r\nc,failed,,3,1502 timeout: no answer,\n")
    }

    /// Rows not where the manifest has them are refused even when a forged identity says the
    /// shard is this manifest's.
    @Test func rowsOfOtherWorkItemsAreRefusedWhateverTheIdentitySays() throws {
        let path = try folder(["m.yaml": manifest,
                               "out/r-shard-0.csv": header + "c,ok,200,1,,3\na,ok,200,1,,1\n",
                               "out/r-shard-1.csv": header + "b,ok,200,1,,2\n"])
        defer { try? FileManager.default.removeItem(atPath: path) }
        try identify(path, shards: 2)
        let loaded = try ManifestLoader.load(path: path + "/m.yaml")
        #expect(throws: RunError.self) { try ShardMerge.merge(manifest: loaded, options: MergeOptions(shards: 2)) }
        do {
            _ = try ShardMerge.merge(manifest: loaded, options: MergeOptions(shards: 2))
        } catch {
            #expect(error.description == "cannot merge \(path)/out/r.csv: its shard 0/2, \(path)/out/r-shard-0.csv, is not of this manifest: its row 1 is not of the request this manifest has at that place (request 1, work item 0 counting from 0); was it written by another manifest, or did a data file change since?")
        }
        #expect(!FileManager.default.fileExists(atPath: path + "/out/r.csv"))
    }

    /// A merge's error is cleared of the manifest's secrets, as a run's: here a header's value
    /// that the output's path also holds.
    @Test func aMergesErrorHidesTheManifestsSecrets() throws {
        let path = try folder(["m.yaml": """
            vault: tnt1
            headers: {X-Key: "${KEY}"}
            output: {path: "out/${KEY}.csv"}
            requests: [{name: a, path: /p, labels: {v: json.v}}]
            """])
        defer { try? FileManager.default.removeItem(atPath: path) }
        let loaded = try ManifestLoader.load(path: path + "/m.yaml", environment: ["KEY": "k3y-s3cr3t-value"])
        do {
            _ = try ShardMerge.merge(manifest: loaded, options: MergeOptions(shards: 2))
            Issue.record("merged without its shards")
        } catch {
            #expect(!error.description.contains("k3y-s3cr3t-value") && error.description.contains("<redacted>"))
        }
    }

    @Test func anInterruptedMergeWritesNothing() throws {
        let path = try folder(["m.yaml": manifest, "out/r-shard-0.csv": header + "a,ok,200,1,,1\nc,ok,200,1,,3\n",
                               "out/r-shard-1.csv": header + "b,ok,200,1,,2\n"])
        defer { try? FileManager.default.removeItem(atPath: path) }
        try identify(path, shards: 2)
        let loaded = try ManifestLoader.load(path: path + "/m.yaml")
        let summary = try ShardMerge.merge(manifest: loaded, options: MergeOptions(shards: 2), isCancelled: { true })
        #expect(summary.interrupted && summary.outputs.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: path + "/out/r.csv"))
        #expect(!FileManager.default.fileExists(atPath: path + "/out/r.csv.partial"))
    }
}
