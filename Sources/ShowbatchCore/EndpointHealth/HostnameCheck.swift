import Foundation
import ShowbatchBasics
import ShowbatchManifest

// The custom hostname check (before a custom hostname is used, `https://<hostname>` must answer
// with the vault's host, or requests go to the vault URL), as the Show SDKs make it, and as a job nobody watches
// needs it: retried, logged, and not silently moved to another host.
extension Runner {
    /// Where requests go, or why the run must not start.
    enum BaseURL: Equatable {
        case url(String)
        /// The check could not be made and the run is unattended without `hostname_fallback`.
        case stop(String)
    }

    /// The base URL: the override, the satellite, an activated custom hostname, or the vault URL.
    func resolveBaseURL() async throws(RunError) -> BaseURL {
        if let override = options.baseURLOverride { return .url(override) }
        guard let hostname = manifest.hostname, manifest.satellitePort == nil else { return .url(manifest.vaultURL) }
        guard manifest.hostnameCheck else { return .url("https://\(hostname)") }
        guard manifest.hostnameIsChecked else {
            events(.note("hostname \(hostname) names a port other than 443, so its CNAME activation is not checked: requests go to https://\(hostname)"))
            return .url("https://\(hostname)")
        }
        let checkURL = Endpoint.hostnameCheckURL(checkBase: environment["SHOWBATCH_HOSTNAME_CHECK_URL"], host: hostname, vault: manifest.vault)
        let request = PreparedRequest(name: "hostname-check", method: .get, url: checkURL, headers: [], body: nil)
        let timeout = min(settings.timeout, .seconds(30))
        let policy = manifest.retry.forOneServiceRequest
        let attempts = policy.attempts
        var reason = ""
        var definitive = false
        for attempt in 1...attempts {
            let started = ContinuousClock.now
            let result = await transport.send(request, timeout: timeout)
            if Task.isCancelled { return .url(manifest.vaultURL) }  // the run is interrupted; nothing is said
            if options.verbose {
                events(.attempt(AttemptRecord(request, attempt: attempt, result: result, duration: ContinuousClock.now - started)))
            }
            switch result {
            case .response(let status, _, let body) where (200..<300).contains(status):
                if String(decoding: body, as: UTF8.self).contains(hostname) {
                    events(.note("hostname \(hostname) is activated for vault \(manifest.vault): requests go to https://\(hostname)"))
                    return .url("https://\(hostname)")
                }
                reason = "the answer does not name it"
                definitive = true
            case .response(let status, _, _) where !policy.retries(status: status):
                reason = "the check answered HTTP \(status)"
                definitive = true
            case .response(let status, _, _):
                reason = "the check answered HTTP \(status)"
            case .failure(let failure):
                reason = "the check failed: \(failure.words)"
            }
            if definitive || attempt == attempts { break }
            let delay = policy.backoff.longest(after: attempt)
            events(.note("hostname check of \(hostname) could not be made (\(reason)); trying again in \(Units.text(delay))"))
            try? await Task.sleep(for: delay)
            if Task.isCancelled { return .url(manifest.vaultURL) }
        }
        if definitive {
            // The SDKs' rule: a hostname that is not activated falls back to the vault URL.
            let problem = HostnameProblem.notActivated(hostname: hostname, vault: manifest.vault, reason: reason)
            if options.strictHostname { throw RunError.runtime(HostnameStrictStop(problem: problem)) }
            let message = problem.description
            events(.warning(message + "; using \(manifest.vaultURL)"))
            return .url(manifest.vaultURL)
        }
        let problem = HostnameProblem.notChecked(hostname: hostname, attempts: attempts, reason: reason)
        if options.strictHostname { throw RunError.runtime(HostnameStrictStop(problem: problem)) }
        let message = problem.description
        if options.interactive || manifest.hostnameFallback {
            events(.warning(message + "; using \(manifest.vaultURL)"))
            return .url(manifest.vaultURL)
        }
        // Unattended, traffic is not moved to a host an egress allow-list may not permit.
        return .stop(message + "; not falling back to \(manifest.vaultURL) unattended (set hostname_fallback: true to allow it)")
    }

}

/// What the hostname check found when it did not say yes.
enum HostnameProblem: Sendable, CustomStringConvertible {
    /// The check answered: the hostname is not the vault's.
    case notActivated(hostname: String, vault: String, reason: String)
    /// The check got no answer it could use in `attempts` attempts.
    case notChecked(hostname: String, attempts: Int, reason: String)

    var description: String {
        switch self {
        case .notActivated(let hostname, let vault, let reason):
            return "hostname \(hostname) is not activated for vault \(vault) (\(reason))"
        case .notChecked(let hostname, let attempts, let reason):
            return "the check of hostname \(hostname) could not be made after \(attempts) attempt\(attempts == 1 ? "" : "s") (\(reason))"
        }
    }
}

/// `--strict-hostname` stops the run where the check did not say yes.
struct HostnameStrictStop: RunProblem {
    let problem: HostnameProblem

    var description: String { problem.description + "; --strict-hostname stops here" }

    func redacted(_ redact: (String) -> String) -> HostnameStrictStop {
        switch problem {
        case .notActivated(let hostname, let vault, let reason):
            return HostnameStrictStop(problem: .notActivated(hostname: redact(hostname), vault: redact(vault), reason: redact(reason)))
        case .notChecked(let hostname, let attempts, let reason):
            return HostnameStrictStop(problem: .notChecked(hostname: redact(hostname), attempts: attempts, reason: redact(reason)))
        }
    }
}
