import Foundation
import Testing
@testable import ShowbatchCore

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

    @Test func rowsComeBackInWorkItemOrder() throws {
        let path = try folder(["m.yaml": manifest,
                               "out/r-shard-0.csv": header + "a,ok,200,1,,1\nc,failed,,3,1502 timeout: no answer,\n",
                               "out/r-shard-1.csv": header + "b,ok,200,1,,\"x\r\ny\"\r\n"])
        defer { try? FileManager.default.removeItem(atPath: path) }
        let loaded = try ManifestLoader.load(path: path + "/m.yaml")
        let summary = try ShardMerge.merge(manifest: loaded, options: MergeOptions(shards: 2))
        #expect(summary == MergeSummary(outputs: [MergedOutput(path: path + "/out/r.csv", rows: 3, unchanged: false)]))
        let merged = try String(contentsOfFile: path + "/out/r.csv", encoding: .utf8)
        #expect(merged == header + "a,ok,200,1,,1\nb,ok,200,1,,\"x\r\ny\"\r\nc,failed,,3,1502 timeout: no answer,\n")
    }

    @Test func anInterruptedMergeWritesNothing() throws {
        let path = try folder(["m.yaml": manifest, "out/r-shard-0.csv": header + "a,ok,200,1,,1\nc,ok,200,1,,3\n",
                               "out/r-shard-1.csv": header + "b,ok,200,1,,2\n"])
        defer { try? FileManager.default.removeItem(atPath: path) }
        let loaded = try ManifestLoader.load(path: path + "/m.yaml")
        let summary = try ShardMerge.merge(manifest: loaded, options: MergeOptions(shards: 2), isCancelled: { true })
        #expect(summary.interrupted && summary.outputs.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: path + "/out/r.csv"))
        #expect(!FileManager.default.fileExists(atPath: path + "/out/r.csv.partial"))
    }
}
