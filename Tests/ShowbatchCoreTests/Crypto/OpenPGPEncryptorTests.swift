import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// Bytes handed out in pieces of seeded random sizes (never more than asked for), as rows come.
final class PiecesSource: PlaintextSource {
    private let bytes: [UInt8]
    private var generator: SeededGenerator
    private var position = 0
    private(set) var calls = 0
    /// Thrown once this many bytes have been handed out.
    var failAfter: Int?

    struct Failure: Error, Equatable {}

    init(_ bytes: [UInt8], seed: UInt64) {
        self.bytes = bytes
        generator = SeededGenerator(seed: seed)
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        calls += 1
        if let failAfter, position >= failAfter { throw Failure() }
        let count = min(buffer.count, bytes.count - position, 1 + Int(generator.next() % 20_000))
        bytes.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[position..<(position + count)])) }
        position += count
        return count
    }
}

/// OpenPGP messages made through GPGME from a stream decrypt, with the real gpg, to exactly the
/// bytes streamed; recipient files that cannot be encrypted to are refused in words.
@Suite struct OpenPGPEncryptorTests {
    let keys = GPGFixture.shared

    /// Encrypts `plain` in seeded pieces to `recipients` into a file in `dir`; its path.
    private func encrypt(_ plain: [UInt8], to recipients: [String], armor: Bool = false, in dir: TempDir,
                         name: String = "out.pgp") throws -> (path: String, calls: Int) {
        let encryptor = try OpenPGPEncryptor(recipients: recipients.map { RecipientFile(path: $0) }, armor: armor)
        defer { encryptor.close() }
        let path = dir.path + "/" + name
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        defer { close(fd) }
        let source = PiecesSource(plain, seed: 7)
        let written = try encryptor.encrypt(from: source, to: fd)
        #expect(written == FileManager.default.contents(atPath: path)?.count)
        return (path, source.calls)
    }

    /// A key that expires within `encrypt.warn_expiry` is said on every run, with its day; one
    /// that never expires is not listed, and its expiry is a metric.
    @Test func aKeyExpiringSoonIsAWarningAndAMetric() throws {
        let keys = GPGFixture.shared
        let encryptor = try OpenPGPEncryptor(recipients: [RecipientFile(path: keys.expiringSoon.file, name: "keys/soon.asc"), RecipientFile(path: keys.alice.file)])
        defer { encryptor.close() }
        let expires = try #require(encryptor.expiries[keys.expiringSoon.fingerprint])
        #expect(encryptor.expiries.count == 1)
        let now = Date(timeIntervalSince1970: Double(expires) - 9.5 * 86_400)
        let day = Timestamp.rfc3339(Date(timeIntervalSince1970: Double(expires))).prefix(10)
        #expect(encryptor.expiryWarnings(within: 30, for: "out/c.csv.pgp", now: now) == [
            "the recipient key \(keys.expiringSoon.fingerprint) of out/c.csv.pgp expires on \(day) (in 9 days; encrypt.warn_expiry is 30d): get the processor's new public key before then",
        ])
        #expect(encryptor.expiryWarnings(within: 7, for: "out/c.csv.pgp", now: now).isEmpty)
        #expect(encryptor.expiryWarnings(within: 0, for: "out/c.csv.pgp", now: now).isEmpty)
        var summary = RunSummary()
        summary.keyExpiries = encryptor.expiries
        let metrics = RunReport(runID: "r", manifest: "m.yaml", shard: nil, started: Date(), ended: Date(), exitCode: .ok, summary: summary, error: nil).prometheus(previous: nil)
        #expect(metrics.contains("# TYPE showbatch_key_expiry_timestamp_seconds gauge\nshowbatch_key_expiry_timestamp_seconds{showbatch_job=\"m.yaml\",fingerprint=\"\(keys.expiringSoon.fingerprint)\"} \(expires)\n"))
    }

    @Test func aMultiMegabyteStreamDecryptsToExactlyItsBytes() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let plain = seededBytes(3 << 20, seed: 11)
        let (path, calls) = try encrypt(plain, to: [keys.alice.file], in: dir)
        // Pulled in many pieces, as a stream is.
        #expect(calls > 300)
        let message = try #require(FileManager.default.contents(atPath: path))
        // Binary OpenPGP (a public-key encrypted session key packet first), not the plaintext.
        #expect(message.first.map { $0 & 0x80 != 0 } == true)
        #expect(keys.decrypt(path) == plain)
    }

    @Test func everyRecipientCanDecrypt() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let plain = seededBytes(200_000, seed: 12)
        let path = try encrypt(plain, to: [keys.alice.file, keys.bob.file, keys.alice.file], in: dir).path
        #expect(keys.recipientKeyIDs(path) == [keys.encryptionSubkeyID(of: keys.alice.fingerprint),
                                                keys.encryptionSubkeyID(of: keys.bob.fingerprint)])
        #expect(keys.decrypt(path, as: .alice) == plain)
        #expect(keys.decrypt(path, as: .bob) == plain)
    }

    @Test func armoredOutputAndABinaryKeyFile() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let plain = Array("request,status,pan\nr1,ok,4111111111111111\n".utf8)
        let path = try encrypt(plain, to: [keys.aliceBinary], armor: true, in: dir).path
        let text = try #require(FileManager.default.contents(atPath: path)).map { $0 }
        #expect(String(decoding: text, as: UTF8.self).hasPrefix("-----BEGIN PGP MESSAGE-----\n"))
        #expect(String(decoding: text, as: UTF8.self).hasSuffix("-----END PGP MESSAGE-----\n"))
        #expect(keys.decrypt(path) == plain)
        let empty = try encrypt([], to: [keys.alice.file], in: dir, name: "empty.pgp").path
        #expect(keys.decrypt(empty) == [])
    }

    @Test func aSealedFileIsUnsealedStraightIntoGnuPG() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let key = DataKey.random()
        let plain = seededBytes(2_500_000, seed: 13)
        let sealedPath = dir.path + "/rows.partial"
        let sealedFD = open(sealedPath, O_RDWR | O_CREAT | O_EXCL, 0o600)
        let writer = try SealedWriter.create(fd: sealedFD, key: key, name: "rows.partial")
        var start = 0
        var generator = SeededGenerator(seed: 14)
        while start < plain.count {
            let end = min(plain.count, start + 1 + Int(generator.next() % 400_000))
            try writer.append(Array(plain[start..<end]))
            start = end
        }
        try writer.finish()
        lseek(sealedFD, 0, SEEK_SET)
        let reader = try SealedReader(fd: sealedFD, key: key, name: "rows.partial")
        let encryptor = try OpenPGPEncryptor(recipients: [RecipientFile(path: keys.alice.file)])
        let path = dir.path + "/out.pgp"
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        try encryptor.encrypt(from: reader, to: fd)
        close(fd)
        close(sealedFD)
        encryptor.close()
        #expect(keys.decrypt(path) == plain)
    }

    @Test func aSourceErrorIsThrownAsItIs() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let encryptor = try OpenPGPEncryptor(recipients: [RecipientFile(path: keys.alice.file)])
        defer { encryptor.close() }
        let fd = open(dir.path + "/out.pgp", O_WRONLY | O_CREAT | O_EXCL, 0o600)
        defer { close(fd) }
        let source = PiecesSource(seededBytes(500_000, seed: 15), seed: 16)
        source.failAfter = 100_000
        #expect(throws: PiecesSource.Failure()) { try encryptor.encrypt(from: source, to: fd) }
        // The encryptor works on after a failed message.
        let again = open(dir.path + "/again.pgp", O_WRONLY | O_CREAT | O_EXCL, 0o600)
        defer { close(again) }
        try encryptor.encrypt(from: PiecesSource([1, 2, 3], seed: 1), to: again)
        #expect(keys.decrypt(dir.path + "/again.pgp") == [1, 2, 3])
    }

    @Test func anOutputThatCannotBeWrittenIsReported() throws {
        let encryptor = try OpenPGPEncryptor(recipients: [RecipientFile(path: keys.alice.file)])
        defer { encryptor.close() }
        let fd = open("/dev/null", O_RDONLY)
        defer { close(fd) }
        #expect(throws: CryptoError(.io, "cannot write the encrypted output: Bad file descriptor")) {
            try encryptor.encrypt(from: PiecesSource(seededBytes(100_000, seed: 17), seed: 18), to: fd)
        }
    }

    @Test func thePrivateHomeIsRemovedAndNoDaemonIsLeft() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let encryptor = try OpenPGPEncryptor(recipients: [RecipientFile(path: keys.alice.file), RecipientFile(path: keys.bob.file)])
        let home = try #require(encryptor.home)
        var info = stat()
        #expect(stat(home, &info) == 0 && info.st_mode & 0o777 == 0o700)
        #expect(encryptor.fingerprints == [keys.alice.fingerprint, keys.bob.fingerprint])
        let fd = open(dir.path + "/out.pgp", O_WRONLY | O_CREAT | O_EXCL, 0o600)
        try encryptor.encrypt(from: PiecesSource(seededBytes(10_000, seed: 19), seed: 20), to: fd)
        close(fd)
        #expect(!processMentions(home))
        let entries = try FileManager.default.contentsOfDirectory(atPath: home)
        #expect(entries.filter { $0.hasPrefix("S.") } == [])
        encryptor.close()
        #expect(!FileManager.default.fileExists(atPath: home))
        #expect(encryptor.home == nil)
    }

    /// Each refusal names the file and says why; the fingerprints are the fixture's.
    @Test func recipientsThatCannotBeEncryptedToAreRefusedInWords() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let keys = self.keys
        let notAKey = dir.file("notes.txt", "these are not the keys you are looking for\n")
        let empty = dir.file("empty.asc", "")
        let cases: [(String, String)] = [
            (keys.signOnly.file, "\(keys.signOnly.file): the key \(keys.signOnly.fingerprint) cannot encrypt: it has no encryption subkey (a signing-only key?)"),
            (keys.expired.file, "\(keys.expired.file): the key \(keys.expired.fingerprint) expired on 2020-01-02"),
            (keys.expiredSubkey.file, "\(keys.expiredSubkey.file): the key \(keys.expiredSubkey.fingerprint) has no encryption subkey that is still valid (each has expired or is revoked)"),
            (keys.revoked.file, "\(keys.revoked.file): the key \(keys.revoked.fingerprint) is revoked"),
            (keys.aliceSecret, "\(keys.aliceSecret) holds a secret key: give the recipient's public key only (gpg --armor --export)"),
            (keys.aliceSecretBinary, "\(keys.aliceSecretBinary) holds a secret key: give the recipient's public key only (gpg --armor --export)"),
            (keys.twoKeys, "\(keys.twoKeys) holds 2 keys: give each recipient's public key in a file of its own"),
            (notAKey, "\(notAKey) holds no OpenPGP key (it is not an armored or binary OpenPGP public key)"),
            (empty, "\(empty) is empty: it holds no OpenPGP key"),
            (dir.path + "/missing.asc", "\(dir.path)/missing.asc cannot be read: No such file or directory"),
            (dir.path, "\(dir.path) is a directory, not a key file"),
        ]
        for (file, message) in cases {
            #expect(throws: CryptoError(.recipient, message)) {
                try OpenPGPEncryptor(recipients: [RecipientFile(path: keys.alice.file), RecipientFile(path: file)])
            }
        }
        let problems = OpenPGPEncryptor.validate(
            [keys.alice.file, keys.signOnly.file, keys.bob.file, dir.path + "/missing.asc"].map { RecipientFile(path: $0, name: "keys/" + ($0 as NSString).lastPathComponent) })
        #expect(problems == [
            RecipientProblem(index: 1, refusal: CryptoError(.recipient, "keys/sign-only.asc: the key \(keys.signOnly.fingerprint) cannot encrypt: it has no encryption subkey (a signing-only key?)")),
            RecipientProblem(index: 3, refusal: CryptoError(.recipient, "keys/missing.asc cannot be read: No such file or directory")),
        ])
        #expect(OpenPGPEncryptor.validate([RecipientFile(path: keys.alice.file), RecipientFile(path: keys.bob.file)]) == [])
        #expect(throws: CryptoError(.recipient, "there is no recipient to encrypt to")) { try OpenPGPEncryptor(recipients: []) }
    }
}
