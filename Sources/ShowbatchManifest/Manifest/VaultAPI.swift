import Foundation
import ShowbatchBasics
import ShowbatchYAML

/// `vault_api`: the night is revealed through VGS's Vault API, up to 20 aliases a call, instead
/// of one reveal-proxy request per row.
package struct VaultAPISpec: Sendable, Equatable {
    /// The API's version: 2 (`/aliases?aliases=…`, OAuth2 bearer tokens) or 1 (`/aliases?q=…`,
    /// HTTP Basic with the vault's access credentials).
    package var version: Int
    /// Aliases a call asks for, 1…20 (the API refuses more than 20 with a 400).
    package var aliasesPerCall = VaultAPISpec.maxAliasesPerCall
    /// v2's `storage` (`PERSISTENT` or `VOLATILE`), when given.
    package var storage: String?

    /// What the API takes in one call.
    package static let maxAliasesPerCall = 20
    /// VGS's token endpoint, for v2's client credentials when `auth.token_url` is not given.
    package static let tokenURL = "https://auth.verygoodsecurity.com/auth/realms/vgs/protocol/openid-connect/token"
    /// Calls a minute VGS documents for the Vault API, per vault.
    package static let callsPerMinute = 3_000

    package init(version: Int) { self.version = version }

    /// The API's base URL by VGS's rules: v2 `https://<vault>.<environment>[-<region>].vault-api.verygoodvault.com`,
    /// v1 `https://api.<environment>[-<region>].verygoodvault.com` (the credentials name the vault).
    package func baseURL(vault: String, environment: String, dataRegion: String?) -> String {
        var environment = environment
        if let dataRegion, !dataRegion.isEmpty { environment += "-" + dataRegion }
        if version == 1 { return "https://api.\(environment.lowercased()).verygoodvault.com" }
        return "https://\(vault.lowercased()).\(environment.lowercased()).vault-api.verygoodvault.com"
    }

    /// The query of a call for `aliases` (each already fit for a URL: `Alias.isValid`).
    package func query(_ aliases: [String]) -> String {
        var text = version == 1 ? "?q=" : "?aliases="
        text += aliases.joined(separator: ",")
        if let storage, version == 2 { text += "&storage=" + storage }
        return text
    }
}

/// One alias of a request's `reveal:`: the label it fills and the alias template (`${row.…}`).
package struct RevealAlias: Sendable {
    /// The label, which is also the output column.
    package var label: String
    /// The alias, usually `${row.COLUMN}`.
    package var alias: Template
    /// Where it is written.
    package var mark: Mark

    /// What makes `alias` unfit for a call: the API's list is comma-separated in a URL, and
    /// VGS's aliases are letters, digits, `_` and `-` (`tok_sandbox_…`, format-preserving
    /// digits). Described in words, without the value; nil when it is fit.
    package static func problem(in alias: String) -> String? {
        if alias.isEmpty { return "is empty" }
        if alias.utf8.count > 256 { return "is \(alias.utf8.count) bytes long (an alias is at most 256)" }
        let fit = alias.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
        }
        return fit ? nil : "has a character an alias cannot have (aliases are letters, digits, _, - and .)"
    }
}

/// `auth: {username, password}`: the Vault API v1's HTTP Basic, with the vault's access credentials.
package struct BasicCredentials: Sendable, Equatable {
    package var username: String
    /// Never printed.
    package var password: String

    package init(username: String, password: String) {
        self.username = username
        self.password = password
    }

    /// The `Authorization` header's value.
    package var headerValue: String {
        "Basic " + Data((username + ":" + password).utf8).base64EncodedString()
    }
}

extension Manifest {
    /// Rows that share a Vault API call (1 for the reveal proxy): as many as the call's aliases
    /// hold for the request that reveals the most.
    package var rowsPerCall: Int {
        guard let vaultAPI else { return 1 }
        let most = requests.map { $0.reveal?.count ?? 1 }.max() ?? 1
        return max(1, vaultAPI.aliasesPerCall / max(1, most))
    }
}
