import ShowbatchBasics
internal import COpenSSL

/// Memory for key material or decrypted bytes, zeroed before it is freed (OPENSSL_cleanse, which
/// the compiler cannot drop as a dead store). Best effort: Swift may have copied bytes that passed
/// through a `String` or an `Array` elsewhere, so secrets are written straight into this memory.
package final class SecretBytes: @unchecked Sendable {
    private let storage: UnsafeMutableRawBufferPointer

    /// `count` zero bytes.
    init(count: Int) {
        storage = .allocate(byteCount: max(count, 1), alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        self.count = count
    }

    /// How many bytes it holds.
    let count: Int

    deinit {
        wipe(storage)
        storage.deallocate()
    }

    /// Reads the bytes; they must not escape `body`.
    func withBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeRawBufferPointer(rebasing: storage[0..<count]))
    }

    /// Writes the bytes; only while the value is being made (it is shared once made).
    func withMutableBytes<Result>(_ body: (UnsafeMutableRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeMutableRawBufferPointer(rebasing: storage[0..<count]))
    }

    /// Whether `other` holds the same bytes, in time that does not depend on where they differ.
    func matches(_ other: SecretBytes) -> Bool {
        guard count == other.count else { return false }
        return withBytes { mine in
            other.withBytes { theirs in CRYPTO_memcmp(mine.baseAddress, theirs.baseAddress, count) == 0 }
        }
    }
}

/// Zeroes `bytes` in a way the compiler keeps.
func wipe(_ bytes: UnsafeMutableRawBufferPointer) {
    guard let base = bytes.baseAddress, bytes.count > 0 else { return }
    OPENSSL_cleanse(base, bytes.count)
}

/// Fills `bytes` from OpenSSL's generator (seeded by the kernel's getrandom).
func fillRandom(_ bytes: UnsafeMutableRawBufferPointer) {
    guard let base = bytes.baseAddress, bytes.count > 0 else { return }
    // RAND_bytes fails only when the kernel gives no entropy at all; nothing sealed is safe then.
    precondition(RAND_bytes(base.assumingMemoryBound(to: UInt8.self), Int32(bytes.count)) == 1,
                 "the system's random number generator failed")
}

/// `count` random bytes that are not secret (nonces, file ids).
func randomBytes(_ count: Int) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    bytes.withUnsafeMutableBytes { fillRandom($0) }
    return bytes
}

/// The 32-byte AES-256 key that seals one file's chunks. Random, never written in the clear: it
/// lives in memory, or in a journal wrapped under the state key (`KeyWrap`).
package struct DataKey: Sendable, CustomStringConvertible {
    /// AES-256: 32 bytes.
    package static let byteCount = 32
    let secret: SecretBytes

    init(secret: SecretBytes) {
        precondition(secret.count == Self.byteCount)
        self.secret = secret
    }

    /// A new key from the system's generator.
    package static func random() -> DataKey {
        let secret = SecretBytes(count: byteCount)
        secret.withMutableBytes { fillRandom($0) }
        return DataKey(secret: secret)
    }

    /// Whether `other` is the same key (constant time).
    package func matches(_ other: DataKey) -> Bool { secret.matches(other.secret) }

    /// What a journal or a shard's identity records for the FNV-1a `hash` of this key's
    /// plaintext: a MAC of it (HMAC-SHA256 under a key of its own drawn from this one, cut to 64
    /// bits). The plain running hash would give the rows away: its state after one checkpoint and
    /// the next let anyone try card numbers offline until one fits the bytes between them.
    func journalTag(_ hash: UInt64) -> UInt64 {
        let tagKey = hmacSHA256(key: secret, Array("showbatch journal hash v1".utf8))
        let digest = hmacSHA256(key: tagKey, withUnsafeBytes(of: hash.bigEndian) { Array($0) })
        return digest.withBytes { bytes in bytes.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
    }

    /// Never the key: only that there is one.
    package var description: String { "DataKey(hidden)" }
}

/// The 32-byte key that wraps a run's data key in its journal (`output.encrypt.state_key`), so
/// `--resume` can unwrap it.
package struct StateKey: Sendable, CustomStringConvertible {
    /// AES-256: 32 bytes.
    package static let byteCount = 32
    let secret: SecretBytes

    /// The key written as `text`: base64 of exactly 32 bytes (`openssl rand -base64 32`), padded
    /// or not, with white space around it allowed (a value read from a file ends in a line break).
    package init(parsing text: String) throws(CryptoError) {
        let hint = "make one with `openssl rand -base64 32`"
        var utf8 = Array(text.utf8)
        defer { utf8.withUnsafeMutableBytes { wipe($0) } }
        guard let secret = decodeBase64Secret(utf8) else {
            throw CryptoError(.stateKey, "the state key is not base64 text; \(hint)")
        }
        guard secret.count == Self.byteCount else {
            let what = secret.count == 0 ? "empty" : secret.count == 1 ? "1 byte long" : "\(secret.count) bytes long"
            throw CryptoError(.stateKey, "the state key is \(what), not 32 bytes; \(hint)")
        }
        self.secret = secret
    }

    /// Never the key: only that there is one.
    package var description: String { "StateKey(hidden)" }
}

/// The bytes of base64 `text` (standard alphabet; padding optional; white space around it
/// ignored), decoded straight into secret memory; nil when it is not base64.
func decodeBase64Secret(_ text: [UInt8]) -> SecretBytes? {
    func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D }
    var start = 0
    var end = text.count
    while start < end && isSpace(text[start]) { start += 1 }
    while end > start && isSpace(text[end - 1]) { end -= 1 }
    var padding = 0
    while end > start && text[end - 1] == UInt8(ascii: "=") && padding < 2 {
        end -= 1
        padding += 1
    }
    let digits = end - start
    // With padding, the text is whole groups of 4; without, a last group of 1 cannot happen.
    if padding > 0 && (digits + padding) % 4 != 0 { return nil }
    if digits % 4 == 1 { return nil }
    let secret = SecretBytes(count: digits / 4 * 3 + max(digits % 4 - 1, 0))
    let ok = secret.withMutableBytes { out -> Bool in
        var accumulator: UInt32 = 0
        var bits = 0
        var written = 0
        for index in start..<end {
            let c = text[index]
            let value: UInt32
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(c - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(c - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(c - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "+"): value = 62
            case UInt8(ascii: "/"): value = 63
            default: return false
            }
            accumulator = (accumulator << 6) | value
            bits += 6
            if bits >= 8 {
                bits -= 8
                out[written] = UInt8(truncatingIfNeeded: accumulator >> UInt32(bits))
                written += 1
            }
        }
        accumulator = 0
        return true
    }
    return ok ? secret : nil
}
