import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// A data key wrapped under the state key, as text for a journal line, so a resumed run can go on
/// sealing the same file without the journal ever holding the key in the clear.
///
/// The text is base64 (standard, padded) of 61 bytes:
///
///     version (1 byte, 1) ‖ nonce (12 random bytes) ‖ AES-256-GCM(data key) (32) ‖ tag (16)
///
/// under the state key, with associated data `"showbatch data key" ‖ version ‖ context`: the
/// context (the caller's choice, e.g. the output's path) ties the wrapped key to its use, and a
/// key unwrapped in another context fails as a wrong state key does.
package enum KeyWrap {
    /// The one version there is.
    static let version: UInt8 = 1
    private static let size = 1 + AESGCM.nonceSize + DataKey.byteCount + AESGCM.tagSize

    /// `key` wrapped under `stateKey` for `context`: 84 characters of base64.
    package static func wrap(_ key: DataKey, under stateKey: StateKey, context: [UInt8] = []) -> String {
        var wrapped = [UInt8](repeating: 0, count: size)
        wrapped[0] = version
        wrapped.withUnsafeMutableBytes { out in
            fillRandom(UnsafeMutableRawBufferPointer(rebasing: out[1..<(1 + AESGCM.nonceSize)]))
            let nonce = UnsafeRawBufferPointer(rebasing: out[1..<(1 + AESGCM.nonceSize)])
            let body = UnsafeMutableRawBufferPointer(rebasing: out[(1 + AESGCM.nonceSize)..<(size - AESGCM.tagSize)])
            let tag = UnsafeMutableRawBufferPointer(rebasing: out[(size - AESGCM.tagSize)...])
            associatedData(context).withUnsafeBytes { aad in
                key.secret.withBytes { plaintext in
                    AESGCM(key: stateKey.secret, .seal).seal(nonce: nonce, aad: aad, plaintext: plaintext, into: body, tag: tag)
                }
            }
        }
        return Data(wrapped).base64EncodedString()
    }

    /// The data key `text` holds, unwrapped under `stateKey` for `context`.
    package static func unwrap(_ text: String, under stateKey: StateKey, context: [UInt8] = []) throws(CryptoError) -> DataKey {
        guard let wrapped = decodeBase64Secret(Array(text.utf8)), wrapped.count == size else {
            throw CryptoError(.wrappedKey, "the wrapped data key is damaged (it is not \((size + 2) / 3 * 4) characters of base64)")
        }
        let found = wrapped.withBytes { $0[0] }
        guard found == version else {
            throw CryptoError(.wrappedKey, "the wrapped data key is of version \(found), which this showbatch cannot read")
        }
        let key = SecretBytes(count: DataKey.byteCount)
        let opened = wrapped.withBytes { input in
            key.withMutableBytes { plaintext in
                associatedData(context).withUnsafeBytes { aad in
                    AESGCM(key: stateKey.secret, .open).open(
                        nonce: UnsafeRawBufferPointer(rebasing: input[1..<(1 + AESGCM.nonceSize)]),
                        aad: aad,
                        ciphertext: UnsafeRawBufferPointer(rebasing: input[(1 + AESGCM.nonceSize)..<(size - AESGCM.tagSize)]),
                        into: plaintext,
                        tag: UnsafeRawBufferPointer(rebasing: input[(size - AESGCM.tagSize)...]))
                }
            }
        }
        guard opened else {
            throw CryptoError(.wrappedKey, "the state key does not unwrap the data key: it is not the state key the run started with, or the wrapped key was changed")
        }
        return DataKey(secret: key)
    }

    private static func associatedData(_ context: [UInt8]) -> [UInt8] {
        Array("showbatch data key".utf8) + [version] + context
    }
}
