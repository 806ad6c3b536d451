import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// What a run's flags and its manifest decide together, resolved once, so that each has one
/// owner: a flag wins over the manifest, the manifest over the default.
struct RunSettings: Sendable, Equatable {
    /// Requests in flight at once (`--concurrency`, `concurrency`).
    let concurrency: Int
    /// Connections the transport may open (`--connections`, `connections`, else the concurrency).
    let connections: Int
    /// How long one attempt may take (`--timeout`, `timeout`).
    let timeout: Duration
    /// The rows that are not ok a run may end with and still exit 0 (`--max-failed`, `max_failed`).
    let failureAllowance: FailureAllowance?
    /// The rate this process keeps: `--rate`, else the manifest's `rate_limit`, which is the whole
    /// job's, so a shard of N keeps a share of it.
    let rate: Rate?
    /// Where `rate` comes from, in words (nil without one): the flag, the manifest, or VGS's
    /// documented limit for the endpoint the run sends to.
    let rateSource: String?

    init(manifest: Manifest, options: RunOptions) {
        concurrency = options.concurrency ?? manifest.concurrency
        connections = options.connections ?? manifest.connections ?? concurrency
        timeout = options.timeout ?? manifest.timeout
        failureAllowance = options.maxFailed ?? manifest.maxFailed
        let shares = options.shard.map(\.count) ?? 1
        if let rate = options.rate {
            self.rate = rate
            rateSource = "--rate"
        } else if let rate = manifest.rateLimit {
            self.rate = shares > 1 ? rate.share(of: shares) : rate
            rateSource = shares > 1 ? "rate_limit, this shard's share" : "rate_limit"
        } else if options.baseURLOverride == nil, let (documented, what) = RunSettings.documentedRate(manifest) {
            self.rate = shares > 1 ? documented.share(of: shares) : documented
            rateSource = shares > 1 ? "\(what), this shard's share" : what
        } else {
            rate = nil
            rateSource = nil
        }
    }

    /// VGS's documented limit for the endpoint `manifest` sends to, per vault: the Vault API's
    /// 3,000 calls a minute, the reveal proxy's 5,000 requests a minute live and 200 in sandbox
    /// (per client address, which Kubernetes pods behind one NAT share). None for a satellite, a
    /// hostname with a port (a staging proxy) or one that is an IP address or localhost (VGS
    /// activates only DNS names, CNAMEs of its own): not VGS's.
    static func documentedRate(_ manifest: Manifest) -> (Rate, String)? {
        if manifest.satellitePort != nil { return nil }
        if let hostname = manifest.hostname, Endpoint.port(ofHostname: hostname) != nil || namesNoVGSHost(hostname) { return nil }
        if manifest.vaultAPI != nil {
            return (Rate(count: VaultAPISpec.callsPerMinute, per: .seconds(60)), "VGS's documented Vault API limit")
        }
        let live = manifest.environment.lowercased().hasPrefix("live")
        return (Rate(count: live ? 5_000 : 200, per: .seconds(60)), "VGS's documented reveal proxy limit, \(live ? "live" : "sandbox")")
    }

    /// An IP address (IPv4, or IPv6 in brackets) or localhost: a host VGS does not serve as a
    /// custom hostname.
    static func namesNoVGSHost(_ hostname: String) -> Bool {
        let host = hostname.lowercased()
        if host == "localhost" || host.hasSuffix(".localhost") || host.hasPrefix("[") { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { !$0.isEmpty && $0.count <= 3 && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }
    }
}
