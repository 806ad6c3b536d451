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
    /// The normalised custom hostname: a lower-case host, with `:PORT` when a port other than 443
    /// was given.
    public var hostname: String?
    /// Whether the custom hostname's activation is checked before use (never for a hostname with
    /// a port: see `hostnameIsChecked`).
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
    /// Most connections per host; nil: as many as `concurrency` (over HTTP/2 requests share them).
    public var connections: Int?
    /// Which certificate authorities to trust and the client certificate, if any.
    public var tls = TLSSettings()
    /// Retry policy.
    public var retry = RetryPolicy()
    /// When the run stops or pauses because the failure is not the rows'.
    public var circuit = CircuitPolicy()
    /// Where the bearer token comes from, when the manifest has `auth`.
    public var auth: AuthSpec?
    /// Whether a hostname check that could not be made falls back to the vault URL even when no
    /// one is watching (a run not on a terminal otherwise stops).
    public var hostnameFallback = false
    /// How old a journal may be for `--resume=auto` to go on from it (`resume_max_age`).
    public var resumeMaxAge: Duration = .seconds(12 * 3600)
    /// Where rows go when neither `--output` nor the request says.
    public var output: OutputSpec?
    /// Aliases for `run --emulate`.
    public var emulator: EmulatorSpec?
    /// The requests, in order.
    package var requests: [RequestSpec] = []
    /// A hash of the manifest's bytes, for telling journals apart.
    package var contentHash: UInt64 = 0
    /// What is valid but likely not meant, positioned like errors; `validate` prints them and
    /// `run` logs them before sending.
    public var warnings: [ManifestWarning] = []

    /// Whether the run asks VGS if the custom hostname is activated: `hostname_check`, and only
    /// for https's own port, since the activation VGS records is for a CNAME on 443; a hostname
    /// with another port (a staging proxy) is used as given.
    public var hostnameIsChecked: Bool {
        hostnameCheck && hostname.map { Endpoint.port(ofHostname: $0) == nil } == true
    }

        /// The vault URL of SPEC 2.1 (or the satellite URL).
    public var vaultURL: String {
        if let satellitePort { return "http://localhost:\(satellitePort)" }
        return Endpoint.vaultURL(vault: vault, environment: environment, dataRegion: dataRegion, routeID: routeID)
    }
}
