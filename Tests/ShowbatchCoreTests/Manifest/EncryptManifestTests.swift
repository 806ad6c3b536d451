import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// `output.encrypt` as `validate` sees it: recipients that cannot be encrypted to, a state key
/// that is not 32 bytes, and names that do not say what a file holds are positioned errors; the
/// state key is never shown.
@Suite struct EncryptManifestTests {
    /// The fixture's key files, as files of the manifest's folder.
    private var keyFiles: [String: String] {
        let keys = GPGFixture.shared
        var files: [String: String] = [:]
        for (name, path) in [("alice.asc", keys.alice.file), ("sign-only.asc", keys.signOnly.file), ("expired.asc", keys.expired.file),
                             ("secret.asc", keys.aliceSecret)] {
            files["keys/" + name] = try? String(contentsOfFile: path, encoding: .utf8)
        }
        return files
    }

    private let key = "c3RhdGUga2V5IG9mIGV4YWN0bHkgMzIgYnl0ZXMgISE="

    @Test func aValidSectionDecodes() throws {
        let dir = TempDir()
        defer { dir.remove() }
        for (name, text) in keyFiles { _ = dir.file(name, text) }
        let manifest = try loadManifest("""
            vault: tnt1
            output: {path: out/cards.csv.asc, encrypt: {recipients: [keys/alice.asc], state_key: "${K}", armor: true}}
            requests: [{name: a, path: /p}]
            """, in: dir, environment: ["K": key])
        let spec = try #require(manifest.output?.encrypt)
        #expect(spec.recipients == [RecipientFile(path: dir.path + "/keys/alice.asc", name: "keys/alice.asc")])
        #expect(spec.armor && spec.stateKey != nil)
        #expect("\(spec)" == "EncryptSpec(recipients: [\"keys/alice.asc\"], stateKey: hidden, armor: true)")
        #expect(manifest.output?.resolvedFormat == .csv)
    }

    @Test(arguments: [
        ("out/rows.jsonl.gz.pgp", OutputFormat.jsonl, true), ("out/rows.json.asc", .json, false), ("OUT/R.CSV.GPG", .csv, false),
    ])
    func theFormatComesFromTheExtensionBeforeTheMessages(path: String, format: OutputFormat, gzip: Bool) {
        #expect(OutputFormat.fromExtension(path) == format)
        #expect(OutputFormat.isGzipPath(path) == gzip)
        #expect(OutputFormat.isOpenPGPPath(path))
    }

    @Test func everyProblemIsPositioned() {
        let fingerprints = GPGFixture.shared
        let text = """
            vault: tnt1
            output:
              path: out/cards.csv
              rejects: out/bad.csv
              encrypt:
                recipients: [keys/alice.asc, keys/sign-only.asc, keys/secret.asc, keys/missing.asc]
                state_key: "${K}"
            requests:
              - name: a
                path: /p
                labels: {doc: {path: json.doc, decode: base64, file: "docs/${row.id}.pdf"}}
                each: {csv: d.csv}
              - name: b
                path: /p
                output: {path: out/plain.csv.gpg}

            """
        let errors = manifestErrors(text, environment: ["K": "c2hvcnQ="], files: keyFiles.merging(["d.csv": "id\n1\n"]) { $1 })
        #expect(errors.split(separator: "\n").filter { $0.hasPrefix("m.yaml") } == [
            "m.yaml:3:9: error: output.path must end in .pgp, .gpg or .asc: the output is encrypted (output.encrypt)",
            "m.yaml:4:12: error: output.rejects must end in .pgp, .gpg or .asc: rejected rows are encrypted with the output",
            "m.yaml:6:34: error: output.encrypt.recipients[1]: keys/sign-only.asc: the key \(fingerprints.signOnly.fingerprint) cannot encrypt: it has no encryption subkey (a signing-only key?)",
            "m.yaml:6:54: error: output.encrypt.recipients[2]: keys/secret.asc holds a secret key: give the recipient's public key only (gpg --armor --export)",
            "m.yaml:6:71: error: output.encrypt.recipients[3]: keys/missing.asc cannot be read: No such file or directory",
            "m.yaml:7:16: error: output.encrypt.state_key: the state key is 5 bytes long, not 32 bytes; make one with `openssl rand -base64 32`",
            "m.yaml:11:58: error: label \"doc\" file must end in .pgp, .gpg or .asc: its output is encrypted (output.encrypt), and so are its label files",
            "m.yaml:15:20: error: request \"b\" output.path ends in .gpg but the output is not encrypted; add request \"b\" output.encrypt with the recipients, or name the file for what it holds",
        ])
        // The state key's line is quoted without it.
        #expect(errors.contains("      state_key: <redacted>\n"))
        #expect(!errors.contains("c2hvcnQ"))
    }

    /// Pinned recipients: a key file holding another key than the pinned fingerprints is refused;
    /// the pinned key passes, written as `gpg --fingerprint` prints it.
    @Test func pinnedFingerprintsRefuseASwappedKey() throws {
        let alice = GPGFixture.shared.alice.fingerprint
        let spaced = stride(from: 0, to: alice.count, by: 4).map { start -> String in
            let from = alice.index(alice.startIndex, offsetBy: start)
            return String(alice[from..<alice.index(from, offsetBy: 4)])
        }.joined(separator: " ")
        let other = String(repeating: "AB12", count: 10)
        func text(_ pins: String) -> String {
            "vault: tnt1\noutput: {path: out/c.csv.pgp, encrypt: {recipients: [keys/alice.asc], fingerprints: [\(pins)]}}\nrequests: [{name: a, path: /p}]\n"
        }
        #expect(manifestErrors(text("\"\(spaced.lowercased())\""), files: keyFiles) == "")
        #expect(manifestErrors(text(other), files: keyFiles).split(separator: "\n").first.map(String.init)
                == "m.yaml:2:54: error: output.encrypt.recipients[0]: keys/alice.asc holds the key \(alice), which is not one of encrypt.fingerprints (\(other)): a key file swapped for another key is not encrypted to")
        #expect(manifestErrors(text("nope"), files: keyFiles).split(separator: "\n").first.map(String.init)
                == "m.yaml:2:86: error: output.encrypt.fingerprints[0] must be a key's fingerprint: 40 hex digits (gpg --fingerprint), spaces allowed")
        // A run refuses it too, before anything is sent.
        let dir = TempDir()
        defer { dir.remove() }
        for (name, content) in keyFiles { _ = dir.file(name, content) }
        let manifest = try loadManifest(text(other), in: dir, use: .run)
        #expect(throws: CryptoError.self) { try OpenPGPEncryptor(recipients: manifest.output!.encrypt!.recipients) }
    }

    /// An output path names a file: one ending in a space or a line break would look like another
    /// (`p.pgp ` is not a message), one ending in `/` or `.` names a folder.
    @Test(arguments: [("out/p.csv.pgp ", "a space or a control character"), ("out/p.csv\\t", "a space or a control character"),
                      ("out/", "/"), ("out/p.csv.", "a dot")])
    func anOutputPathNamesAFile(path: String, end: String) {
        let errors = manifestErrors("vault: tnt1\noutput: {path: \"\(path)\"}\nrequests: [{name: a, path: /p}]\n", files: keyFiles)
        #expect(errors.split(separator: "\n").first.map(String.init) == "m.yaml:2:16: error: output.path must name a file, not end in \(end)")
    }

    /// `.asc` names an armored message, `.pgp` and `.gpg` a binary one.
    @Test func anArmoredNameWithoutArmorIsRefused() {
        let errors = manifestErrors("vault: tnt1\noutput: {path: out/c.csv.asc, encrypt: {recipients: [keys/alice.asc]}}\nrequests: [{name: a, path: /p}]\n", files: keyFiles)
        #expect(errors.split(separator: "\n").first.map(String.init)
                == "m.yaml:2:16: error: output.path ends in .asc, the name of an armored message, but output.encrypt.armor is not true; set armor: true, or name the file .pgp")
    }

    @Test(arguments: [
        ("encrypt: {state_key: x}", "m.yaml:2:40: error: missing required key \"recipients\" in output.encrypt"),
        ("encrypt: {recipients: []}", "m.yaml:2:53: error: output.encrypt.recipients is empty; list the public key file of at least one recipient"),
        ("encrypt: {recipients: keys/alice.asc}", "m.yaml:2:53: error: output.encrypt.recipients must be a list of public key files; found a string"),
        ("encrypt: {recipients: [keys/alice.asc], armour: true}", "m.yaml:2:71: error: unknown key \"armour\" in output.encrypt; did you mean \"armor\"?"),
        ("encrypt: {recipients: [keys/alice.asc], armor: true}", "m.yaml:2:16: error: output.path ends in .pgp but output.encrypt.armor is true: an armored message is named .asc"),
    ])
    func aSectionThatIsNotOne(section: String, expected: String) {
        let errors = manifestErrors("vault: tnt1\noutput: {path: out/c.csv.pgp, \(section)}\nrequests: [{name: a, path: /p}]\n", files: keyFiles)
        #expect(errors.split(separator: "\n").first.map(String.init) == expected)
    }
}
