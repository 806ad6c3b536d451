import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
import TestSupport

/// Files a manifest names: what cannot be read says why, and a merge, which sends nothing, does
/// not need what only sending uses.
@Suite struct ManifestFilesTests {
    @Test(arguments: [
        ("vault: tnt1\nrequests:\n  - {name: a, path: /p, each: {csv: data}}\n",
         "m.yaml:3:37: error: data file \"data\" cannot be read: it is a directory\n    - {name: a, path: /p, each: {csv: data}}\n                                      ^"),
        ("vault: tnt1\ntls: {ca_file: ca.pem}\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:2:16: error: tls.ca_file \"ca.pem\" cannot be read: No such file or directory\n  tls: {ca_file: ca.pem}\n                 ^"),
        ("vault: tnt1\ntls: {ca_file: data}\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:2:16: error: tls.ca_file \"data\" cannot be read: it is a directory\n  tls: {ca_file: data}\n                 ^"),
        ("vault: tnt1\ntls: {ca_path: m.yaml}\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:2:16: error: tls.ca_path \"m.yaml\" cannot be read: it is not a folder\n  tls: {ca_path: m.yaml}\n                 ^"),
        ("vault: tnt1\ntls: {ca_path: certs}\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:2:16: error: tls.ca_path \"certs\" cannot be read: No such file or directory\n  tls: {ca_path: certs}\n                 ^"),
        ("vault: tnt1\nemulator: {aliases: aliases.yaml}\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:2:21: error: emulator.aliases file cannot be read: No such file or directory\n  emulator: {aliases: <redacted>}\n                      ^"),
    ])
    func unreadableFilesSayWhy(text: String, expected: String) {
        #expect(manifestErrors(text, folders: ["data"]) == expected)
    }

    @Test func aManifestThatIsNotARegularFileSaysWhy() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path + "/m.yaml"
        #expect(mkfifo(path, 0o600) == 0)
        #expect(throws: ManifestError.self) { try ManifestLoader.load(path: path, recipients: recipientsUnchecked) }
        do {
            _ = try ManifestLoader.load(path: path, recipients: recipientsUnchecked)
        } catch {
            #expect(error.description == "\(path): error: cannot be read: it is not a regular file (a device, pipe or socket)")
        }
    }

    /// A data file is read more than once (counted, hashed for the journal, streamed): a pipe
    /// (`mkfifo`, /dev/stdin) would hang the run, so it is refused when the manifest is read.
    @Test func aDataFileThatIsAPipeIsRefused() {
        let dir = TempDir()
        defer { dir.remove() }
        #expect(mkfifo(dir.path + "/d.csv", 0o600) == 0)
        _ = dir.file("m.yaml", "vault: tnt1\nrequests:\n  - {name: a, path: /p, each: {csv: d.csv}}\n")
        do {
            _ = try ManifestLoader.load(path: dir.path + "/m.yaml", environment: [:], recipients: recipientsUnchecked)
            Issue.record("a pipe was taken as a data file")
        } catch {
            #expect(error.description.replacingOccurrences(of: dir.path + "/", with: "") ==
                "m.yaml:3:37: error: data file \"d.csv\" cannot be read: it is not a regular file (a device, pipe or socket)\n    - {name: a, path: /p, each: {csv: d.csv}}\n                                      ^")
        }
    }

    /// What only sending uses: header and payload secrets, auth values, TLS files.
    static let sendingNeeds = """
        vault: tnt1
        headers: {Authorization: "Bearer ${REVEAL_TOKEN}"}
        tls: {ca_file: /run/secrets/ca.pem, client_cert: "${CERT}", client_key: key.pem}
        auth: {token_url: "${TOKEN_URL}", client_id: "${CLIENT_ID}", client_secret: "${CLIENT_SECRET}"}
        emulator: {aliases: aliases.yaml}
        requests:
          - {name: a, path: /p, payload: {card: "${CARD}"}}

        """

    @Test func aMergeNeedsNoSecretAndNoTLSFile() throws {
        let manifest = try loadManifest(Self.sendingNeeds, use: .merge)
        #expect(manifest.vault == "tnt1")
        #expect(manifest.auth == nil)
        #expect(manifest.tls.caFile == "/run/secrets/ca.pem")
        #expect(manifest.tls.clientCertificate == nil)
        #expect(manifest.headers.map(\.name) == ["Authorization"])
    }

    @Test func aRunNeedsThemAll() {
        let lines = manifestErrors(Self.sendingNeeds).split(separator: "\n").filter { $0.hasPrefix("m.yaml") }
        #expect(lines == [
            "m.yaml:2:26: error: environment variable REVEAL_TOKEN is not set (used in headers.Authorization)",
            "m.yaml:3:16: error: tls.ca_file \"/run/secrets/ca.pem\" cannot be read: No such file or directory",
            "m.yaml:3:50: error: environment variable CERT is not set (used in tls.client_cert)",
            "m.yaml:3:73: error: tls.client_key \"key.pem\" cannot be read: No such file or directory",
            "m.yaml:4:19: error: environment variable TOKEN_URL is not set (used in auth.token_url)",
            "m.yaml:5:21: error: emulator.aliases file cannot be read: No such file or directory",
            "m.yaml:7:41: error: environment variable CARD is not set (used in request \"a\" payload.card)",
        ])
    }

    /// A merge still needs what names its files and rows: the vault, paths, the output.
    @Test func aMergeStillNeedsWhatNamesItsRows() {
        let text = "vault: \"${VAULT}\"\nrequests: [{name: a, path: /p}]\n"
        #expect(manifestErrors(text, use: .merge) ==
            "m.yaml:1:8: error: environment variable VAULT is not set (used in vault)\n  vault: \"${VAULT}\"\n         ^")
    }
}
