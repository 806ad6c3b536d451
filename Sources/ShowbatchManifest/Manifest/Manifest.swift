import Foundation
import ShowbatchBasics
import ShowbatchYAML

/// A validated manifest: everything a run needs, with defaults applied and environment
/// references resolved.
package struct Manifest: Sendable {
    /// The manifest's path as the user gave it.
    package var file: String
    /// The text the manifest was read from, to quote its lines in errors found at run time (the
    /// file may have changed since).
    package var source: SourceFile?
    /// The folder that relative paths in the manifest are resolved against.
    package var directory: String
    /// The manifest format version (1).
    package var version = 1
    /// The vault id.
    package var vault = ""
    /// The environment, such as `sandbox` or `live-eu-1`.
    package var environment = "sandbox"
    /// The data region, when given separately.
    package var dataRegion: String?
    /// The route id (Android SDK `routeId`).
    package var routeID: String?
    /// The normalised custom hostname: a lower-case host, with `:PORT` when a port other than 443
    /// was given.
    package var hostname: String?
    /// Whether the custom hostname's activation is checked before use (never for a hostname with
    /// a port: see `hostnameIsChecked`).
    package var hostnameCheck = true
    /// Local satellite port: requests go to `http://localhost:PORT`.
    package var satellitePort: Int?
    /// `vault_api`: requests reveal their aliases through the Vault API, many a call.
    package var vaultAPI: VaultAPISpec?
    /// Headers sent with every request.
    package var headers: [HeaderField] = []
    /// Requests in flight at once.
    package var concurrency = 8
    /// Requests started per interval across the run.
    package var rateLimit: Rate?
    /// Per-attempt timeout.
    package var timeout: Duration = .seconds(60)
    /// The HTTP client.
    package var transport: TransportKind = .curl
    /// Most connections per host; nil: as many as `concurrency` (over HTTP/2 requests share them).
    package var connections: Int?
    /// Which certificate authorities to trust and the client certificate, if any.
    package var tls = TLSSettings()
    /// Retry policy.
    package var retry = RetryPolicy()
    /// When the run stops or pauses because the failure is not the rows'.
    package var circuit = CircuitPolicy()
    /// Where the bearer token comes from, when the manifest has `auth`.
    package var auth: AuthSpec?
    /// HTTP Basic credentials (`auth: {username, password}`, the Vault API v1's).
    package var basicAuth: BasicCredentials?
    /// Whether a hostname check that could not be made falls back to the vault URL even when no
    /// one is watching (a run not on a terminal otherwise stops).
    package var hostnameFallback = false
    /// Rows not ok a run may end with and still exit 0 (`max_failed`).
    package var maxFailed: FailureAllowance?
    /// How old a journal may be for `--resume=auto` to go on from it (`resume_max_age`).
    package var resumeMaxAge: Duration = .seconds(12 * 3600)
    /// The job's name (`name:`), when given.
    package var name: String?
    /// The metrics' job (`metrics.job`), when given.
    package var metricsJob: String?
    /// The audit trail (`audit.path`, resolved against the manifest's folder), when given.
    package var auditPath: String?
    /// The audit trail's key (`audit.key`, a secret): its chain is then an HMAC chain, which no
    /// one without the key can rewrite.
    package var auditKey: SecretBytes?

    /// The job the metrics are grouped by, whatever path the manifest was given by: `metrics.job`,
    /// else `name`, else the manifest's file name without its folder.
    package var job: String { metricsJob ?? name ?? (file as NSString).lastPathComponent }
    /// Where rows go when neither `--output` nor the request says.
    package var output: OutputSpec?
    /// Aliases for `run --emulate`.
    package var emulator: EmulatorSpec?
    /// The requests, in order.
    package var requests: [RequestSpec] = []
    /// A hash of the manifest's bytes, for telling journals apart.
    package var contentHash: UInt64 = 0
    /// The values of the `${NAME}` references in headers and payloads, and the state key: the
    /// secrets that resolving the manifest put into it (their texts are nowhere in the file).
    package var environmentSecrets: [String] = []
    /// What is valid but likely not meant, positioned like errors; `validate` prints them and
    /// `run` logs them before sending.
    package var warnings: [ManifestWarning] = []
    /// `validate --no-env`: the variables the manifest names that were unset, taken as placeholders.
    package var placeholders: [String] = []

    /// Whether the run asks VGS if the custom hostname is activated: `hostname_check`, and only
    /// for https's own port, since the activation VGS records is for a CNAME on 443; a hostname
    /// with another port (a staging proxy) is used as given.
    package var hostnameIsChecked: Bool {
        hostnameCheck && hostname.map { Endpoint.port(ofHostname: $0) == nil } == true
    }

    /// The vault URL (`https://<vault>.<environment>[-<region>].verygoodproxy.com`), the
    /// satellite URL, or the Vault API's.
    package var vaultURL: String {
        if let satellitePort { return "http://localhost:\(satellitePort)" }
        if let vaultAPI { return vaultAPI.baseURL(vault: vault, environment: environment, dataRegion: dataRegion) }
        return Endpoint.vaultURL(vault: vault, environment: environment, dataRegion: dataRegion, routeID: routeID)
    }
}
