import ShowbatchBasics

/// The 32-byte key that wraps a run's data key in its journal (`output.encrypt.state_key`), so
/// `--resume` can unwrap it.
package struct StateKey: Sendable, CustomStringConvertible {
    /// AES-256: 32 bytes.
    package static let byteCount = 32
    package let secret: SecretBytes

    /// The key written as `text`: base64 of exactly 32 bytes (`openssl rand -base64 32`), padded
    /// or not, with white space around it allowed (a value read from a file ends in a line break).
    package init(parsing text: String) throws(StateKeyError) {
        let hint = "make one with `openssl rand -base64 32`"
        var utf8 = Array(text.utf8)
        defer { utf8.withUnsafeMutableBytes { wipe($0) } }
        guard let secret = decodeBase64Secret(utf8) else {
            throw StateKeyError("the state key is not base64 text; \(hint)")
        }
        guard secret.count == Self.byteCount else {
            let what = secret.count == 0 ? "empty" : secret.count == 1 ? "1 byte long" : "\(secret.count) bytes long"
            throw StateKeyError("the state key is \(what), not 32 bytes; \(hint)")
        }
        self.secret = secret
    }

    /// Never the key: only that there is one.
    package var description: String { "StateKey(hidden)" }
}

/// Why a state key's text is not a key.
package struct StateKeyError: Error, Sendable, Equatable {
    /// What is wrong with it, never the text.
    package let message: String

    package init(_ message: String) { self.message = message }
}
