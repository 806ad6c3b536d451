import ShowbatchBasics
internal import COpenSSL
import ShowbatchManifest

/// AES-256-GCM through OpenSSL's EVP interface: one context keyed once, then one message per
/// call with its own 12-byte nonce. One direction per context (sealing or opening), as EVP wants.
final class AESGCM {
    /// GCM's 96-bit nonce.
    static let nonceSize = 12
    /// The full 128-bit tag.
    static let tagSize = 16

    enum Direction { case seal, open }

    private let context: OpaquePointer
    private let direction: Direction

    /// A context for `key` (copied into OpenSSL's key schedule, which EVP_CIPHER_CTX_free
    /// cleanses).
    init(key: SecretBytes, _ direction: Direction) {
        precondition(key.count == 32)
        guard let context = EVP_CIPHER_CTX_new() else { fatalError("out of memory (EVP_CIPHER_CTX_new)") }
        self.context = context
        self.direction = direction
        let status = key.withBytes { key in
            let keyBytes = key.baseAddress!.assumingMemoryBound(to: UInt8.self)
            return direction == .seal
                ? EVP_EncryptInit_ex(context, EVP_aes_256_gcm(), nil, keyBytes, nil)
                : EVP_DecryptInit_ex(context, EVP_aes_256_gcm(), nil, keyBytes, nil)
        }
        precondition(status == 1, "AES-256-GCM is not available in this OpenSSL")
    }

    deinit { EVP_CIPHER_CTX_free(context) }

    /// Encrypts `plaintext` into `ciphertext` (same size; they may be the same memory) and writes
    /// the tag that authenticates both and `aad`.
    func seal(nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, plaintext: UnsafeRawBufferPointer,
              into ciphertext: UnsafeMutableRawBufferPointer, tag: UnsafeMutableRawBufferPointer) {
        precondition(direction == .seal && nonce.count == Self.nonceSize && tag.count == Self.tagSize)
        precondition(ciphertext.count == plaintext.count && plaintext.count <= Int(Int32.max))
        var produced: Int32 = 0
        var ok = EVP_EncryptInit_ex(context, nil, nil, nil, bytes(nonce)) == 1
        if ok && aad.count > 0 {
            ok = EVP_EncryptUpdate(context, nil, &produced, bytes(aad), Int32(aad.count)) == 1
        }
        if ok && plaintext.count > 0 {
            ok = EVP_EncryptUpdate(context, mutableBytes(ciphertext), &produced, bytes(plaintext), Int32(plaintext.count)) == 1
        }
        var scratch = [UInt8](repeating: 0, count: 16)
        if ok { ok = EVP_EncryptFinal_ex(context, &scratch, &produced) == 1 }
        if ok { ok = EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(Self.tagSize), tag.baseAddress) == 1 }
        // These fail only on misuse (a wrong size), which the preconditions rule out.
        precondition(ok, "AES-256-GCM sealing failed")
    }

    /// Decrypts `ciphertext` into `plaintext` (same size; they may be the same memory); false, with
    /// `plaintext` zeroed, when `tag` does not authenticate it and `aad` under this key and nonce.
    func open(nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, ciphertext: UnsafeRawBufferPointer,
              into plaintext: UnsafeMutableRawBufferPointer, tag: UnsafeRawBufferPointer) -> Bool {
        precondition(direction == .open && nonce.count == Self.nonceSize && tag.count == Self.tagSize)
        precondition(ciphertext.count == plaintext.count && ciphertext.count <= Int(Int32.max))
        var produced: Int32 = 0
        var ok = EVP_DecryptInit_ex(context, nil, nil, nil, bytes(nonce)) == 1
        if ok && aad.count > 0 {
            ok = EVP_DecryptUpdate(context, nil, &produced, bytes(aad), Int32(aad.count)) == 1
        }
        if ok && ciphertext.count > 0 {
            ok = EVP_DecryptUpdate(context, mutableBytes(plaintext), &produced, bytes(ciphertext), Int32(ciphertext.count)) == 1
        }
        if ok {
            ok = EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(Self.tagSize),
                                     UnsafeMutableRawPointer(mutating: tag.baseAddress)) == 1
        }
        var scratch = [UInt8](repeating: 0, count: 16)
        if ok { ok = EVP_DecryptFinal_ex(context, &scratch, &produced) == 1 }
        // Bytes that did not authenticate are nobody's to read.
        if !ok { wipe(plaintext) }
        return ok
    }

    private func bytes(_ buffer: UnsafeRawBufferPointer) -> UnsafePointer<UInt8>? {
        buffer.baseAddress?.assumingMemoryBound(to: UInt8.self)
    }

    private func mutableBytes(_ buffer: UnsafeMutableRawBufferPointer) -> UnsafeMutablePointer<UInt8>? {
        buffer.baseAddress?.assumingMemoryBound(to: UInt8.self)
    }
}

/// HMAC-SHA256 under `key` of `message`, in secret memory (it is used as a key).
func hmacSHA256(key: SecretBytes, _ message: [UInt8]) -> SecretBytes {
    let digest = SecretBytes(count: 32)
    var length: UInt32 = 0
    let result = key.withBytes { key in
        message.withUnsafeBytes { message in
            digest.withMutableBytes { out in
                HMAC(EVP_sha256(), key.baseAddress, Int32(key.count),
                     message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count,
                     out.baseAddress?.assumingMemoryBound(to: UInt8.self), &length)
            }
        }
    }
    precondition(result != nil && length == 32, "HMAC-SHA256 failed")
    return digest
}

/// HMAC-SHA1 under `key` of `message`: how OpenSSH hashes a host name in known_hosts
/// (`|1|salt|hash`). Public data only (a host name), so plain memory.
func hmacSHA1(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
    var digest = [UInt8](repeating: 0, count: 20)
    var length: UInt32 = 0
    let result = key.withUnsafeBytes { key in
        message.withUnsafeBytes { message in
            digest.withUnsafeMutableBytes { out in
                HMAC(EVP_sha1(), key.baseAddress, Int32(key.count),
                     message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count,
                     out.baseAddress?.assumingMemoryBound(to: UInt8.self), &length)
            }
        }
    }
    precondition(result != nil && length == 20, "HMAC-SHA1 failed")
    return digest
}
