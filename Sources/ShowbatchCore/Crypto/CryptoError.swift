import ShowbatchBasics
import ShowbatchManifest

/// What went wrong in the Crypto layer, in words: recipients' keys, wrapped data
/// keys, sealed files, GnuPG. A message never holds key material or plaintext; callers position
/// it (a manifest setting, a file) and render it.
package struct CryptoError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Which part refused, so a caller can tell a user's setting from a damaged file.
    package enum Kind: Sendable, Equatable {
        /// A recipient's key file: missing, not a key, a secret key, one that cannot encrypt.
        case recipient
        /// A wrapped data key: damaged, or not opened by the state key given.
        case wrappedKey
        /// A sealed file: not one, cut short, reordered, changed, appended to, another key's.
        case sealedFile
        /// GPGME or GnuPG: missing, too old, or an operation that failed.
        case engine
        /// Reading or writing a file descriptor.
        case io
    }

    /// Which part refused.
    package let kind: Kind
    /// The reason, for people.
    package let message: String

    /// A refusal of `kind` that says `message`.
    package init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// The message.
    package var description: String { message }

    /// GnuPG that cannot run or a file this machine cannot make: the machine's to fix (exit 3),
    /// not a setting of the manifest (2).
    package var isThisMachine: Bool { kind == .engine || kind == .io }
}
