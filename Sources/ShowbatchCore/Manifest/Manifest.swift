import Foundation

/// A validated manifest: everything a run needs, with defaults applied and environment
/// references resolved.
public struct Manifest: Sendable {
    /// The manifest's path as the user gave it.
    public var file: String
    /// The folder that relative paths in the manifest are resolved against.
    public var directory: String
    /// The manifest format version (1).
    public var version = 1
    /// The vault id.
    public var vault = ""
    /// The environment, such as `sandbox` or `live-eu-1`.
    public var environment = "sandbox"
    /// The data region, when given separately.
    public var dataRegion: String?
    /// The route id (Android SDK `routeId`).
    public var routeID: String?
    /// The normalised custom hostname.
    public var hostname: String?
    /// Whether the custom hostname's activation is checked before use.
    public var hostnameCheck = true
    /// Local satellite port: requests go to `http://localhost:PORT`.
    public var satellitePort: Int?
    /// Headers sent with every request.
    package var headers: [HeaderField] = []
    /// Requests in flight at once.
    public var concurrency = 8
    /// Requests started per interval across the run.
    public var rateLimit: Rate?
    /// Per-attempt timeout.
    public var timeout: Duration = .seconds(60)
    /// The HTTP client.
    public var transport: TransportKind = .curl
    /// Retry policy.
    public var retry = RetryPolicy()
    /// Where rows go when neither `--output` nor the request says.
    public var output: OutputSpec?
    /// Aliases for `run --emulate`.
    public var emulator: EmulatorSpec?
    /// The requests, in order.
    package var requests: [RequestSpec] = []
    /// A hash of the manifest's bytes, for telling journals apart.
    package var contentHash: UInt64 = 0

    /// The vault URL of SPEC 2.1 (or the satellite URL).
    public var vaultURL: String {
        if let satellitePort { return "http://localhost:\(satellitePort)" }
        return Endpoint.vaultURL(vault: vault, environment: environment, dataRegion: dataRegion, routeID: routeID)
    }
}
