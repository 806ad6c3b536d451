import Foundation
import ShowbatchBasics

/// The URL rules of the VGS Show SDKs: the vault URL from vault, environment and data region, the
/// route, the custom hostname and the sandbox-only satellite port.
package enum Endpoint {
    /// True for a vault id of letters and digits.
    package static func isValidVault(_ vault: String) -> Bool {
        !vault.isEmpty && vault.unicodeScalars.allSatisfy(isAlphanumericASCII)
    }

    /// True for `sandbox` or `live`, optionally followed by `-region` parts, in any case.
    package static func isValidEnvironment(_ environment: String) -> Bool {
        let lower = environment.lowercased()
        let rest: Substring
        if lower.hasPrefix("sandbox") {
            rest = lower.dropFirst(7)
        } else if lower.hasPrefix("live") {
            rest = lower.dropFirst(4)
        } else {
            return false
        }
        if rest.isEmpty { return true }
        guard rest.hasPrefix("-") else { return false }
        return isDashedWords(rest.dropFirst())
    }

    /// True when the environment already names a region (`live-eu-1`).
    package static func environmentHasRegion(_ environment: String) -> Bool {
        environment.contains("-")
    }

    /// True for a data region or route id such as `eu-1` or `ua0505`.
    package static func isValidRegion(_ region: String) -> Bool {
        isDashedWords(Substring(region))
    }

    /// The vault URL: `https://<vault>[-<route>].<environment>[-<region>].verygoodproxy.com`, lower-cased.
    package static func vaultURL(vault: String, environment: String, dataRegion: String?, routeID: String?) -> String {
        var host = vault
        if let routeID, !routeID.isEmpty { host += "-" + routeID }
        host += "." + environment
        if let dataRegion, !dataRegion.isEmpty { host += "-" + dataRegion }
        return "https://" + host.lowercased() + ".verygoodproxy.com"
    }

    /// Why a hostname is refused.
    package enum HostnameProblem: Error, Equatable, Sendable {
        case empty, httpScheme, port, invalid
    }

    /// Normalises a custom hostname to a lower-case host, with `:PORT` when it names a port other
    /// than https's 443 (a staging proxy on another port); `:443` is the same as no port.
    package static func normalizeHostname(_ raw: String) throws(HostnameProblem) -> String {
        var text = Substring(raw.trimmingCharacters(in: .whitespaces))
        if text.lowercased().hasPrefix("http://") { throw .httpScheme }
        if text.lowercased().hasPrefix("https://") { text = text.dropFirst(8) }
        if let cut = text.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) { text = text[..<cut] }
        var port: Int?
        if let colon = text.lastIndex(of: ":") {
            let digits = text[text.index(after: colon)...]
            // At most five digits: the range check below cannot overflow.
            guard !digits.isEmpty, digits.count <= 5, digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                  let number = Int(digits), (1...65535).contains(number) else { throw .port }
            port = number == 443 ? nil : number
            text = text[..<colon]
        }
        let host = text.lowercased()
        if host.isEmpty { throw .empty }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        for label in labels {
            guard !label.isEmpty, label.first != "-", label.last != "-",
                  label.unicodeScalars.allSatisfy({ isAlphanumericASCII($0) || $0 == "-" }) else {
                throw .invalid
            }
        }
        return port.map { "\(host):\($0)" } ?? host
    }

    /// The port of a normalised hostname, when it has one (never 443).
    package static func port(ofHostname hostname: String) -> Int? {
        guard let colon = hostname.lastIndex(of: ":") else { return nil }
        return Int(hostname[hostname.index(after: colon)...])
    }

    /// The request URL: base URL, one `/`, then the path without its leading slashes.
    package static func requestURL(base: String, path: String) -> String {
        let trimmedBase = base.hasSuffix("/") ? String(base.dropLast()) : base
        return trimmedBase + "/" + path.drop { $0 == "/" }
    }

    /// The address of the CNAME activation file the SDKs fetch for a custom hostname.
    package static func hostnameCheckURL(checkBase: String?, host: String, vault: String) -> String {
        let base = checkBase ?? "https://js.verygoodvault.com"
        return requestURL(base: base, path: "collect-configs/\(host)__\(vault).txt")
    }

    /// True when every byte of `url` is an unreserved, reserved or `%` URL character, so it
    /// needs no further parsing to be known valid.
    package static func isPlainURL(_ url: String) -> Bool {
        withUTF8(of: url) { bytes in bytes.allSatisfy { plainURLBytes[Int($0)] } }
    }

    /// Which bytes a URL holds as they are: letters, digits and RFC 3986's other characters.
    private static let plainURLBytes: [Bool] = (0..<256).map { byte in
        switch UInt8(byte) {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "-._~:/?#[]@!$&'()*+,;=%".utf8.contains(UInt8(byte))
        }
    }

    static func isAlphanumericASCII(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
    }

    private static func isDashedWords(_ text: Substring) -> Bool {
        guard !text.isEmpty else { return false }
        return text.split(separator: "-", omittingEmptySubsequences: false).allSatisfy { word in
            !word.isEmpty && word.unicodeScalars.allSatisfy(isAlphanumericASCII)
        }
    }
}
