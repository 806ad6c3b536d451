import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// A flag wins over the manifest, the manifest over the default; the job's rate is shared by
/// its shards.
@Suite struct RunSettingsTests {
    private func settings(_ manifestLines: String, _ configure: (inout RunOptions) -> Void = { _ in }) throws -> RunSettings {
        let dir = TempDir()
        defer { dir.remove() }
        let manifest = try loadManifest("vault: tnt1\n\(manifestLines)requests: [{name: a, path: /p}]\n", in: dir)
        var options = RunOptions()
        configure(&options)
        return RunSettings(manifest: manifest, options: options)
    }

    @Test func defaultsWhenNeitherSays() throws {
        let resolved = try settings("")
        #expect(resolved.concurrency == 8 && resolved.connections == 8 && resolved.timeout == .seconds(60))
        #expect(resolved.failureAllowance == nil && resolved.rate == nil)
    }

    @Test func theManifestOverTheDefaults() throws {
        let resolved = try settings("concurrency: 20\ntimeout: 5s\nmax_failed: 1%\nrate_limit: 100/s\n")
        #expect(resolved.concurrency == 20 && resolved.connections == 20 && resolved.timeout == .seconds(5))
        #expect(resolved.failureAllowance == .percent(1) && resolved.rate == Rate(count: 100, per: .seconds(1)))
    }

    @Test func aFlagOverTheManifest() throws {
        let resolved = try settings("concurrency: 20\nconnections: 4\ntimeout: 5s\nmax_failed: 1%\nrate_limit: 100/s\n") {
            $0.concurrency = 3
            $0.connections = 2
            $0.timeout = .seconds(9)
            $0.maxFailed = .count(7)
            $0.rate = Rate(count: 5, per: .seconds(1))
            $0.shard = Shard(index: 0, count: 4)
        }
        #expect(resolved.concurrency == 3 && resolved.connections == 2 && resolved.timeout == .seconds(9))
        #expect(resolved.failureAllowance == .count(7) && resolved.rate == Rate(count: 5, per: .seconds(1)))
    }

    @Test(arguments: [(nil, Rate(count: 100, per: .seconds(1))), (1, Rate(count: 100, per: .seconds(1))), (4, Rate(count: 100, per: .seconds(4)))] as [(Int?, Rate)])
    func theManifestsRateIsTheJobsSharedByItsShards(shards: Int?, rate: Rate) throws {
        let resolved = try settings("concurrency: 6\nrate_limit: 100/s\n") { options in
            options.shard = shards.map { Shard(index: 0, count: $0) }
        }
        #expect(resolved.rate == rate && resolved.connections == 6)
    }
}
