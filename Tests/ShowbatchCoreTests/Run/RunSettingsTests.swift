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
        let resolved = try settings("") { $0.baseURLOverride = "http://127.0.0.1:9" }
        #expect(resolved.concurrency == 8 && resolved.connections == 8 && resolved.timeout == .seconds(60))
        #expect(resolved.failureAllowance == nil && resolved.rate == nil && resolved.rateSource == nil)
    }

    /// Against VGS's hosts a run starts at the documented limit of the endpoint it uses, shared
    /// by shards as rate_limit is; rate_limit and --rate win; a local server has none.
    @Test(arguments: [
        ("", nil, Rate(count: 200, per: .seconds(60)), "VGS's documented reveal proxy limit, sandbox"),
        ("environment: live-eu-1\n", nil, Rate(count: 5_000, per: .seconds(60)), "VGS's documented reveal proxy limit, live"),
        ("environment: live\n", 4, Rate(count: 5_000, per: .seconds(240)), "VGS's documented reveal proxy limit, live, this shard's share"),
        ("vault_api: {version: 2}\n", nil, Rate(count: 3_000, per: .seconds(60)), "VGS's documented Vault API limit"),
        ("environment: live\nrate_limit: 10/s\n", nil, Rate(count: 10, per: .seconds(1)), "rate_limit"),
        ("hostname: staging.example.com:8443\n", nil, nil, nil),
        ("hostname: 127.0.0.1\nhostname_check: false\n", nil, nil, nil),
        ("hostname: 10.1.2.3\nhostname_check: false\n", nil, nil, nil),
        ("hostname: localhost\nhostname_check: false\n", nil, nil, nil),
        ("hostname: secure.example.com\n", nil, Rate(count: 200, per: .seconds(60)), "VGS's documented reveal proxy limit, sandbox"),
        ("satellite_port: 9098\n", nil, nil, nil),
    ] as [(String, Int?, Rate?, String?)])
    func theDocumentedRateAgainstVGS(lines: String, shards: Int?, rate: Rate?, source: String?) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let request = lines.contains("vault_api") ? "{name: a, reveal: {card: tok_1}}" : "{name: a, path: /p}"
        let manifest = try loadManifest("vault: tnt1\n\(lines)requests: [\(request)]\n", in: dir)
        var options = RunOptions()
        options.shard = shards.map { Shard(index: 0, count: $0) }
        let resolved = RunSettings(manifest: manifest, options: options)
        #expect(resolved.rate == rate && resolved.rateSource == source)
        options.baseURLOverride = "http://127.0.0.1:9"
        #expect(RunSettings(manifest: manifest, options: options).rate == (source == "rate_limit" ? rate : nil))
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
