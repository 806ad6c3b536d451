import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
import TestSupport

/// `vault_api`, a request's `reveal:` and v1's HTTP Basic, as the decoder reads them.
@Suite struct VaultAPIManifestTests {
    @Test func aRevealRequestIsTheAPIsCall() throws {
        let manifest = try loadManifest("""
        vault: tntAQ8
        environment: live
        data_region: eu-1
        vault_api: {version: 2, aliases_per_call: 10, storage: volatile}
        auth: {client_id: night, client_secret: sk_client_SECRET}
        requests:
          - name: r
            reveal: {card_number: tok_1, exp_date: tok_2}
            labels:
              card_number: {mask: true}
        """)
        #expect(manifest.vaultURL == "https://tntaq8.live-eu-1.vault-api.verygoodvault.com")
        #expect(manifest.vaultAPI == {
            var spec = VaultAPISpec(version: 2)
            spec.aliasesPerCall = 10
            spec.storage = "VOLATILE"
            return spec
        }())
        #expect(manifest.vaultAPI?.query(["a", "b"]) == "?aliases=a,b&storage=VOLATILE")
        guard case .clientCredentials(let credentials)? = manifest.auth?.source else { Issue.record("no client credentials"); return }
        #expect(credentials.tokenURL == VaultAPISpec.tokenURL)
        let request = manifest.requests[0]
        #expect(request.method == .get && request.path.literalText == "/aliases")
        #expect(request.reveal?.map(\.label) == ["card_number", "exp_date"])
        #expect(request.labels.map(\.name) == ["card_number", "exp_date"])
        #expect(request.labels.map(\.path.segments) == [["card_number"], ["exp_date"]])
        #expect(request.labels.allSatisfy(\.fromAlias) && request.labels[0].mask != nil && request.labels[1].mask == nil)
        #expect(manifest.rowsPerCall == 5)
    }

    @Test func versionOneIsHTTPBasic() throws {
        let manifest = try loadManifest("""
        vault: tnt1
        environment: live
        vault_api: {version: 1}
        auth: {username: US1234, password: "${VAULT_PASSWORD}"}
        requests: [{name: r, reveal: {card: tok_1}}]
        """, environment: ["VAULT_PASSWORD": "sk_password_SECRET"])
        #expect(manifest.vaultURL == "https://api.live.verygoodvault.com")
        #expect(manifest.vaultAPI?.query(["a"]) == "?q=a")
        #expect(manifest.auth == nil)
        let headers = manifest.sendHeaders(for: manifest.requests[0])
        #expect(headers.first?.name == "Authorization")
        #expect(headers.first?.value.literalText == "Basic VVMxMjM0OnNrX3Bhc3N3b3JkX1NFQ1JFVA==")
    }

    /// What goes wrong, positioned, with no secret in it.
    @Test(arguments: [
        ("vault_api: {version: 3}\nrequests: [{name: r, reveal: {c: tok_1}}]",
         "m.yaml:2:22: error: vault_api.version must be from 1 to 2; found 3"),
        ("vault_api: {aliases_per_call: 5}\nrequests: [{name: r, reveal: {c: tok_1}}]",
         "m.yaml:2:12: error: missing required key \"version\" in vault_api (1 or 2)"),
        ("vault_api: {version: 2, aliases_per_call: 21}\nrequests: [{name: r, reveal: {c: tok_1}}]",
         "m.yaml:2:43: error: vault_api.aliases_per_call must be from 1 to 20; found 21"),
        ("vault_api: {version: 2, aliases_per_call: 1}\nrequests: [{name: r, reveal: {c: tok_1, d: tok_2}}]",
         "m.yaml:3:44: error: request \"r\" reveals 2 aliases, more than a call takes (vault_api.aliases_per_call: 1)"),
        ("vault_api: {version: 2}\nrequests: [{name: r, path: /p}]",
         "m.yaml:3:12: error: request \"r\" has no reveal; with vault_api every request reveals aliases (reveal: {LABEL: \"${row.COLUMN}\"})"),
        ("requests: [{name: r, reveal: {c: tok_1}}]",
         "m.yaml:2:34: error: request \"r\" has reveal, which needs vault_api at the top level (vault_api: {version: 2})"),
        ("vault_api: {version: 2}\nrequests: [{name: r, reveal: {c: tok_1}, payload: {a: b}}]",
         "m.yaml:3:51: error: request \"r\" has reveal, which takes no payload: the Vault API's call is made from the aliases"),
        ("vault_api: {version: 2}\nrequests: [{name: r, reveal: {c: 'tok 1'}}]",
         "m.yaml:3:34: error: request \"r\" reveal.c: the alias has a character an alias cannot have (aliases are letters, digits, _, - and .)"),
        ("vault_api: {version: 2}\nrequests: [{name: r, reveal: {c: tok_1}, labels: {d: {mask: true}}}]",
         "m.yaml:3:51: error: label \"d\" of request \"r\" is not in its reveal; did you mean \"c\"?"),
        ("vault_api: {version: 2}\nrequests: [{name: r, reveal: {c: tok_1}, labels: {c: {path: data.c}}}]",
         "m.yaml:3:61: error: label \"c\" is revealed from its alias (reveal), so it takes no path"),
        ("vault_api: {version: 2}\nhostname: reveal.example.com\nrequests: [{name: r, reveal: {c: tok_1}}]",
         "m.yaml:3:11: error: hostname is the reveal proxy's; with vault_api requests go to the Vault API's host (--base-url replaces it for a local server)"),
        ("vault_api: {version: 1}\nauth: {client_id: a, client_secret: sk_x_SECRET}\nrequests: [{name: r, reveal: {c: tok_1}}]",
         "m.yaml:3:7: error: vault_api version 1 takes HTTP Basic: auth needs username and password (the vault's access credentials)"),
        ("auth: {username: u, password: sk_x_SECRET}\nrequests: [{name: r, path: /p}]",
         "m.yaml:2:7: error: auth.username and auth.password are HTTP Basic, for vault_api version 1 only; a bearer token comes from token_url or token_file"),
        ("vault_api: {version: 1, storage: VOLATILE}\nrequests: [{name: r, reveal: {c: tok_1}}]",
         "m.yaml:2:34: error: vault_api.storage is version 2's; version 1 reveals persistent aliases only"),
    ])
    func mistakesArePositioned(lines: String, message: String) {
        let errors = manifestErrors("vault: tnt1\n\(lines)\n")
        #expect(errors.split(separator: "\n").first.map(String.init) == message, "\(errors)")
        #expect(!errors.contains("SECRET"))
    }
}
