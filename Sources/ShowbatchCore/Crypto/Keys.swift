import ShowbatchBasics
internal import COpenSSL
import ShowbatchManifest

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

