import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// A neighbour with a world-writable TMPDIR renamed the private GnuPG home as it appeared and put
/// their own in its place, whose gpg.conf grouped their key with the recipient's: the export was
/// encrypted to them too, and nothing said so. The home is made only where no one else can
/// replace it, checked before each GnuPG call, and what GnuPG wrote is checked for its recipients.
@Suite struct GnuPGHomeTests {
    let keys = GPGFixture.shared

    @Test(arguments: [(0o777 as mode_t, "other users can write it and it has no sticky bit (mode 777), so they could replace the home in it"),
                      (0o1777, nil), (0o700, nil), (0o755, nil)])
    func aHomeIsMadeOnlyWhereNoOneElseCanReplaceIt(mode: mode_t, problem: String?) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let base = dir.path + "/tmp"
        mkdir(base, 0o700)
        chmod(base, mode)
        if let problem {
            #expect(throws: CryptoError(.io, "cannot make a private GnuPG home in \(base): \(problem); set TMPDIR to a folder of your own (mode 0700)")) {
                _ = try GnuPGHome(environment: ["TMPDIR": base])
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: base) == [])
        } else {
            let home = try GnuPGHome(environment: ["TMPDIR": base])
            defer { home.remove() }
            try home.check()
            #expect(FileManager.default.contents(atPath: home.path + "/gpg.conf").map { String(decoding: $0, as: UTF8.self) }?.contains("no-autostart") == true)
        }
    }

    /// An encryptor whose home is then tampered with by `tamper` (given the home's path); what
    /// encrypting says, and the bytes written.
    private func encryptAfter(armor: Bool = false, _ tamper: (String) throws -> Void) throws -> (error: CryptoError?, written: Int) {
        let dir = TempDir()
        defer { dir.remove() }
        let encryptor = try OpenPGPEncryptor(recipients: [RecipientFile(path: keys.alice.file)], armor: armor)
        defer { encryptor.close() }
        let home = try #require(encryptor.home)
        defer { try? FileManager.default.removeItem(atPath: home + ".theirs") }
        try tamper(home)
        let fd = open(dir.path + "/out.pgp", O_WRONLY | O_CREAT | O_EXCL, 0o600)
        defer { close(fd) }
        do {
            try encryptor.encrypt(from: PiecesSource(seededBytes(10_000, seed: 31), seed: 32), to: fd)
            return (nil, Int(lseek(fd, 0, SEEK_END)))
        } catch let error as CryptoError {
            return (error, Int(lseek(fd, 0, SEEK_END)))
        }
    }

    /// The group line a neighbour adds: the recipient's fingerprint stands for Alice and Bob.
    private var groupLine: String { "group \(keys.alice.fingerprint)=\(keys.alice.fingerprint) \(keys.bob.fingerprint)\n" }

    @Test func aHomePutInPlaceOfOursIsRefusedBeforeGnuPGRuns() throws {
        let (error, written) = try encryptAfter { home in
            #expect(rename(home, home + ".theirs") == 0)
            mkdir(home, 0o700)
            _ = FileManager.default.createFile(atPath: home + "/gpg.conf", contents: Data(groupLine.utf8))
        }
        let home = error.map { String($0.message.split(separator: " ")[7]) } ?? "?"
        #expect(error == CryptoError(.io, "the private GnuPG home cannot be trusted: \(home) is no longer the folder showbatch made (it was moved or replaced); nothing is encrypted with it"))
        #expect(written == 0)
    }

    @Test func aGpgConfShowbatchDidNotWriteIsRefused() throws {
        var path = ""
        let (error, written) = try encryptAfter { home in
            path = home
            unlink(home + "/gpg.conf")
            _ = FileManager.default.createFile(atPath: home + "/gpg.conf", contents: Data(groupLine.utf8))
        }
        #expect(error == CryptoError(.io, "the private GnuPG home cannot be trusted: \(path)/gpg.conf is not the one showbatch wrote (another could add recipients); nothing is encrypted with it"))
        #expect(written == 0)
    }

    /// Past the checks (gpg.conf rewritten in place, same size), GnuPG encrypts to Bob as well:
    /// the message's own recipients say so, and it is not used.
    @Test(arguments: [false, true])
    func aRecipientGnuPGWasToldOfBehindOurBackIsRefused(armor: Bool) throws {
        let (error, written) = try encryptAfter(armor: armor) { home in
            GPGFixture.gpg(home, ["--import", keys.bob.file])
            let conf = home + "/gpg.conf"
            let size = try #require(FileManager.default.attributesOfItem(atPath: conf)[.size] as? Int)
            let text = groupLine + "#" + String(repeating: "-", count: max(0, size - groupLine.utf8.count - 2)) + "\n"
            let fd = open(conf, O_WRONLY | O_TRUNC)
            _ = text.utf8CString.dropLast().withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            close(fd)
        }
        let bob = keys.encryptionSubkeyID(of: keys.bob.fingerprint)
        #expect(error == CryptoError(.engine, "the encrypted message cannot be used: it is also encrypted to the key \(bob), which is no recipient's (GnuPG was told so by a setting showbatch did not make, such as a group in a gpg.conf)"))
        #expect(written > 0)
    }

    @Test(arguments: [false, true])
    func aMessagesRecipientsAreReadFromItsFirstPackets(armor: Bool) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let encryptor = try OpenPGPEncryptor(recipients: [RecipientFile(path: keys.alice.file), RecipientFile(path: keys.bob.file)], armor: armor)
        defer { encryptor.close() }
        let path = dir.path + "/out.pgp"
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        try encryptor.encrypt(from: PiecesSource(seededBytes(100_000, seed: 33), seed: 34), to: fd)
        close(fd)
        let message = try #require(FileManager.default.contents(atPath: path)).map { $0 }
        let expected = keys.recipientKeyIDs(path)
        guard case .keys(let ids) = MessageRecipients.read(message, armored: armor) else {
            Issue.record("not read")
            return
        }
        #expect(Set(ids) == expected && ids.count == 2)
        #expect(expected == [keys.encryptionSubkeyID(of: keys.alice.fingerprint), keys.encryptionSubkeyID(of: keys.bob.fingerprint)])
        // Cut short before the encrypted data, it says nothing.
        #expect(MessageRecipients.read(Array(message.prefix(armor ? 100 : 20)), armored: armor) == .unreadable)
        #expect(encryptor.unexpectedRecipients(.keys([ids[0]])) == "it is not encrypted to the recipient \(keys.bob.fingerprint)")
        #expect(encryptor.unexpectedRecipients(.passphrase) == "it can also be opened with a passphrase (GnuPG was told so by a setting showbatch did not make)")
    }
}
