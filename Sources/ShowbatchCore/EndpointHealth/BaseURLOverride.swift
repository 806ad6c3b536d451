import ShowbatchBasics
import ShowbatchManifest

/// `--base-url URL`: every request of a manifest goes there instead of the vault's URL, to test a
/// real manifest against a local server. Plain `http://` only to a loopback address
/// (127.0.0.0/8, `[::1]`): card data never crosses a network in the clear; anything else must be
/// `https://`. No user, password, query or fragment (what is in a URL ends up in logs).
package enum BaseURLOverride {
    /// Why `url` cannot be the base URL, or nil; `url` without a trailing `/` when it can.
    package static func check(_ url: String) -> Result<String, FailureText> {
        let example = "such as http://127.0.0.1:8080 or https://staging.example.com"
        if url.contains("@") { return .failure(FailureText("--base-url must not hold a user or password: give the server's address, \(example)")) }
        if url.contains("?") || url.contains("#") { return .failure(FailureText("--base-url must not have a query or fragment, \(example)")) }
        if url.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value >= 0x7F }) {
            return .failure(FailureText("--base-url must be a URL without spaces or control characters, \(example)"))
        }
        let lower = url.lowercased()
        guard let scheme = ["http://", "https://"].first(where: { lower.hasPrefix($0) }) else {
            return .failure(FailureText("--base-url must be an http:// (loopback only) or https:// URL, \(example); got \"\(TerminalText.escaped(url))\""))
        }
        let authority = url.dropFirst(scheme.count).prefix { $0 != "/" }
        var host = authority
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return .failure(FailureText("--base-url has an unclosed [ in its host")) }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let rest = authority[authority.index(after: close)...]
            if !rest.isEmpty, !(rest.hasPrefix(":") && rest.dropFirst().allSatisfy(\.isNumber) && rest.count > 1) {
                return .failure(FailureText("--base-url has an invalid port"))
            }
        } else if let colon = authority.lastIndex(of: ":") {
            let port = authority[authority.index(after: colon)...]
            guard !port.isEmpty, port.allSatisfy(\.isNumber), let number = Int(port), (1...65535).contains(number) else {
                return .failure(FailureText("--base-url has an invalid port"))
            }
            host = authority[..<colon]
        }
        if host.isEmpty { return .failure(FailureText("--base-url needs a host, \(example)")) }
        if scheme == "http://" && !isLoopback(host) {
            return .failure(FailureText("--base-url http://\(TerminalText.escaped(String(host))) would send card data in the clear over a network: plain http:// is for a loopback address only (127.0.0.0/8, [::1]); use https://"))
        }
        var trimmed = Substring(url)
        while trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        return .success(String(trimmed))
    }

    /// 127.0.0.0/8 written as an IPv4 address, or `::1`.
    static func isLoopback(_ host: Substring) -> Bool {
        if host == "::1" || host.lowercased() == "0:0:0:0:0:0:0:1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts.allSatisfy({ !$0.isEmpty && $0.count <= 3 && $0.allSatisfy(\.isNumber) && Int($0)! <= 255 }) else { return false }
        return parts[0] == "127"
    }
}
