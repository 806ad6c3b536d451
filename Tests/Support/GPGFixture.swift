import Foundation
import Synchronization

/// OpenPGP keys made once per test run with the real gpg (ed25519/cv25519, no passphrase), their
/// public keys exported to files, and decryption with their secret keys. Two GnuPG homes: the
/// main one holds Alice's secret key and every odd key; Bob's holds only his, so a message both
/// can decrypt is shown to be decryptable by each. gpg-agent is stopped after every use, and the
/// homes are removed when the test process exits.
package final class GPGFixture: Sendable {
    /// A key made for the tests: its fingerprint and its exported public key file.
    package struct Key: Sendable {
        package let fingerprint: String
        package let file: String
    }

    package static let shared = GPGFixture()

    /// Where the key files are.
    package let folder: String
    private let mainHome: String
    private let bobHome: String
    package let alice: Key
    package let bob: Key
    /// ed25519, signing only: no encryption subkey.
    package let signOnly: Key
    /// Made on 2020-01-01, expired on 2020-01-02.
    package let expired: Key
    /// Made now, expiring in 10 days.
    package let expiringSoon: Key
    /// A valid signing key whose only encryption subkey expired on 2020-01-02.
    package let expiredSubkey: Key
    /// Revoked with the revocation certificate gpg made along with it.
    package let revoked: Key
    /// Alice's key and Bob's in one file.
    package let twoKeys: String
    /// Alice's secret key, armored.
    package let aliceSecret: String
    /// Alice's secret key, binary.
    package let aliceSecretBinary: String
    /// Alice's public key, binary.
    package let aliceBinary: String
    /// Our signing key (ed25519, signing only), its secret key protected by `signerPassphrase`.
    package let signer: Key
    /// The signing key's secret key, armored.
    package let signerSecret: String
    package static let signerPassphrase = "correct horse battery"
    /// The secret key of `expiringSoon` (no passphrase), armored.
    package let expiringSoonSecret: String
    /// Serializes decryption: each starts gpg-agent in a home, and stops it after.
    private let agentLock = Mutex(())

    private init() {
        let base = FileManager.default.temporaryDirectory.path + "/showbatch-gpg-" + UUID().uuidString.prefix(8)
        folder = base + "/keys"
        mainHome = base + "/main"
        bobHome = base + "/bob"
        for path in [folder, mainHome, bobHome] {
            try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                     attributes: [.posixPermissions: 0o700])
        }
        GPGFixture.removeAtExit(base)
        let main = mainHome, bob = bobHome, folder = folder

        func generate(_ home: String, _ uid: String, _ algorithm: String, _ usage: String, _ expiry: String,
                      fakedTime: Bool = false) -> String {
            var arguments = ["--status-fd", "1", "--quick-gen-key", uid, algorithm, usage, expiry]
            if fakedTime { arguments = ["--faked-system-time", "20200101T000000!"] + arguments }
            let result = GPGFixture.gpg(home, arguments)
            let line = String(decoding: result.output, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix("[GNUPG:] KEY_CREATED") }
            return String(line!.split(separator: " ").last!)
        }
        func export(_ home: String, _ fingerprints: [String], _ name: String, armor: Bool = true) -> String {
            let path = folder + "/" + name
            _ = GPGFixture.gpg(home, (armor ? ["--armor"] : []) + ["--output", path, "--export"] + fingerprints)
            return path
        }

        let aliceFingerprint = generate(main, "Alice <alice@example.test>", "future-default", "default", "never")
        alice = Key(fingerprint: aliceFingerprint, file: export(main, [aliceFingerprint], "alice.asc"))
        let bobFingerprint = generate(bob, "Bob <bob@example.test>", "future-default", "default", "never")
        self.bob = Key(fingerprint: bobFingerprint, file: export(bob, [bobFingerprint], "bob.asc"))
        let signOnlyFingerprint = generate(main, "Signer <signer@example.test>", "ed25519", "sign", "never")
        signOnly = Key(fingerprint: signOnlyFingerprint, file: export(main, [signOnlyFingerprint], "sign-only.asc"))
        let expiredFingerprint = generate(main, "Old <old@example.test>", "future-default", "default", "1d", fakedTime: true)
        expired = Key(fingerprint: expiredFingerprint, file: export(main, [expiredFingerprint], "expired.asc"))
        let soonFingerprint = generate(main, "Soon <soon@example.test>", "future-default", "default", "10d")
        expiringSoon = Key(fingerprint: soonFingerprint, file: export(main, [soonFingerprint], "expiring-soon.asc"))
        let subFingerprint = generate(main, "Sub <sub@example.test>", "ed25519", "sign", "never", fakedTime: true)
        _ = GPGFixture.gpg(main, ["--faked-system-time", "20200101T000000!", "--quick-add-key", subFingerprint, "cv25519", "encr", "1d"])
        expiredSubkey = Key(fingerprint: subFingerprint, file: export(main, [subFingerprint], "expired-subkey.asc"))
        let revokedFingerprint = generate(main, "Gone <gone@example.test>", "future-default", "default", "never")
        let certificate = try! String(contentsOfFile: main + "/openpgp-revocs.d/\(revokedFingerprint).rev", encoding: .utf8)
        let certificateFile = base + "/revoke.asc"
        try! certificate.replacingOccurrences(of: ":-----BEGIN", with: "-----BEGIN").write(toFile: certificateFile, atomically: true, encoding: .utf8)
        _ = GPGFixture.gpg(main, ["--import", certificateFile])
        revoked = Key(fingerprint: revokedFingerprint, file: export(main, [revokedFingerprint], "revoked.asc"))
        _ = GPGFixture.gpg(main, ["--import", self.bob.file])
        twoKeys = export(main, [aliceFingerprint, bobFingerprint], "two-keys.asc")
        aliceSecret = folder + "/alice-secret.asc"
        _ = GPGFixture.gpg(main, ["--armor", "--output", aliceSecret, "--export-secret-keys", aliceFingerprint])
        aliceSecretBinary = folder + "/alice-secret.gpg"
        _ = GPGFixture.gpg(main, ["--output", aliceSecretBinary, "--export-secret-keys", aliceFingerprint])
        aliceBinary = export(main, [aliceFingerprint], "alice.gpg", armor: false)
        let signerFingerprint = String(String(decoding: GPGFixture.gpg(main, ["--status-fd", "1", "--quick-gen-key", "Merchant <merchant@example.test>", "ed25519", "sign", "never"],
                                                                      passphrase: GPGFixture.signerPassphrase).output, as: UTF8.self)
            .split(separator: "\n").first { $0.hasPrefix("[GNUPG:] KEY_CREATED") }!.split(separator: " ").last!)
        signer = Key(fingerprint: signerFingerprint, file: export(main, [signerFingerprint], "merchant.asc"))
        signerSecret = folder + "/merchant-secret.asc"
        _ = GPGFixture.gpg(main, ["--armor", "--output", signerSecret, "--export-secret-keys", signerFingerprint], passphrase: GPGFixture.signerPassphrase)
        expiringSoonSecret = folder + "/expiring-soon-secret.asc"
        _ = GPGFixture.gpg(main, ["--armor", "--output", expiringSoonSecret, "--export-secret-keys", soonFingerprint])
        for home in [main, bob] { GPGFixture.stopAgent(home) }
    }

    /// Whose secret key decrypts.
    package enum Holder: Sendable { case alice, bob }

    /// The plaintext of the OpenPGP message in `file`, decrypted by `holder`'s secret key; nil
    /// when gpg cannot decrypt it.
    package func decrypt(_ file: String, as holder: Holder = .alice) -> [UInt8]? {
        let home = holder == .alice ? mainHome : bobHome
        return agentLock.withLock { _ in
            defer { GPGFixture.stopAgent(home) }
            let result = GPGFixture.gpg(home, ["--decrypt", "--output", "-", file], check: false)
            return result.status == 0 ? result.output : nil
        }
    }

    /// The plaintext of the OpenPGP message in `file`, decrypted by Alice, and the fingerprint of
    /// the key whose good signature it holds (nil when none); nil when gpg cannot decrypt it.
    package func decryptVerifying(_ file: String) -> (plain: [UInt8], signedBy: String?)? {
        agentLock.withLock { _ in
            defer { GPGFixture.stopAgent(mainHome) }
            let plain = mainHome + "/verified-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: plain) }
            let result = GPGFixture.gpg(mainHome, ["--status-fd", "1", "--output", plain, "--decrypt", file], check: false)
            guard result.status == 0, let bytes = FileManager.default.contents(atPath: plain) else { return nil }
            let status = String(decoding: result.output, as: UTF8.self).split(separator: "\n")
            let good = status.contains { $0.hasPrefix("[GNUPG:] GOODSIG ") }
            let valid = status.first { $0.hasPrefix("[GNUPG:] VALIDSIG ") }.map { String($0.split(separator: " ")[2]) }
            return ([UInt8](bytes), good ? valid : nil)
        }
    }

    /// The key ids gpg lists as recipients of the message in `file` (no key needed).
    package func recipientKeyIDs(_ file: String) -> Set<String> {
        let result = GPGFixture.gpg(mainHome, ["--list-packets", "--list-only", file], check: false)
        let text = String(decoding: result.output, as: UTF8.self)
        var ids: Set<String> = []
        for line in text.split(separator: "\n") where line.contains(":pubkey enc packet:") {
            if let range = line.range(of: "keyid ") {
                ids.insert(String(line[range.upperBound...].prefix(16)))
            }
        }
        return ids
    }

    /// The id of `fingerprint`'s encryption subkey.
    package func encryptionSubkeyID(of fingerprint: String) -> String {
        let result = GPGFixture.gpg(mainHome, ["--with-colons", "--list-keys", fingerprint])
        let line = String(decoding: result.output, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix("sub:") }!
        return String(line.split(separator: ":", omittingEmptySubsequences: false)[4])
    }

    /// Runs gpg in batch mode with `passphrase` (none by default); its standard output and exit status.
    @discardableResult
    package static func gpg(_ home: String, _ arguments: [String], check: Bool = true, passphrase: String = "") -> (status: Int32, output: [UInt8]) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/gpg")
        process.arguments = ["--homedir", home, "--batch", "--yes", "--quiet", "--pinentry-mode", "loopback", "--passphrase", passphrase] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try! process.run()
        let bytes = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        if check { precondition(process.terminationStatus == 0, "gpg \(arguments.first ?? "") failed") }
        return (process.terminationStatus, [UInt8](bytes))
    }

    package static func stopAgent(_ home: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/gpgconf")
        process.arguments = ["--homedir", home, "--kill", "all"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try! process.run()
        process.waitUntilExit()
    }

    private static func removeAtExit(_ base: String) {
        folderToRemove.withLock { $0 = base }
        atexit {
            if let base = GPGFixture.folderToRemove.withLock({ $0 }) {
                for home in ["main", "bob"] { GPGFixture.stopAgent(base + "/" + home) }
                try? FileManager.default.removeItem(atPath: base)
            }
        }
    }

    private static let folderToRemove = Mutex<String?>(nil)
}

/// Whether a process runs whose command line mentions `text` (a GnuPG home: a daemon left
/// running for it).
package func processMentions(_ text: String) -> Bool {
    let own = String(getpid())
    for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] where entry.allSatisfy(\.isNumber) && entry != own {
        guard let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { continue }
        if String(decoding: data, as: UTF8.self).contains(text) { return true }
    }
    return false
}
