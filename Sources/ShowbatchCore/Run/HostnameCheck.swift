// The custom hostname check of SPEC 2.2, as the Show SDKs make it.
extension Runner {
    /// The base URL: the override, the satellite, an activated custom hostname, or the vault URL.
    func resolveBaseURL() async throws(RunError) -> String {
        if let override = options.baseURLOverride { return override }
        guard let hostname = manifest.hostname, manifest.satellitePort == nil else { return manifest.vaultURL }
        guard manifest.hostnameCheck else { return "https://\(hostname)" }
        let checkURL = Endpoint.hostnameCheckURL(checkBase: environment["SHOWBATCH_HOSTNAME_CHECK_URL"], host: hostname, vault: manifest.vault)
        let request = PreparedRequest(name: "hostname-check", method: .get, url: checkURL, headers: [], body: nil)
        let result = await transport.send(request, timeout: min(options.timeout ?? manifest.timeout, .seconds(30)))
        let reason: String
        switch result {
        case .response(let status, _, let body) where (200..<300).contains(status):
            if String(decoding: body, as: UTF8.self).contains(hostname) { return "https://\(hostname)" }
            reason = "the answer does not name it"
        case .response(let status, _, _):
            reason = "the check answered HTTP \(status)"
        case .failure(let failure):
            reason = "the check failed (\(Runner.describe(failure)))"
        }
        let message = "hostname \(hostname) is not activated for vault \(manifest.vault) (\(reason))"
        if options.strictHostname { throw RunError.runtime(message + "; --strict-hostname stops here") }
        events(.warning(message + "; using \(manifest.vaultURL)"))
        return manifest.vaultURL
    }

    static func describe(_ failure: TransportFailure) -> String {
        switch failure {
        case .network(let detail): return detail
        case .timeout: return "timeout"
        case .bodyTooLarge(let limit): return "body over \(limit >> 20) MiB"
        case .notHTTP(let detail): return detail
        case .certificate(let detail): return "TLS: \(detail)"
        case .cancelled: return "cancelled"
        }
    }
}
