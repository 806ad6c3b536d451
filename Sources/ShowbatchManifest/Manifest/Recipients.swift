/// A recipient's public key file (`output.encrypt.recipients`).
package struct RecipientFile: Sendable, Equatable {
    /// Where to read it.
    package let path: String
    /// How messages name it (the path as the manifest writes it).
    package let name: String
    /// The fingerprints its key must have one of (`encrypt.fingerprints`; uppercase hex, no
    /// spaces); nil: not pinned.
    package var pinned: [String]?

    /// The key file at `path`, named `name` (default: the path) in messages.
    package init(path: String, name: String? = nil, pinned: [String]? = nil) {
        self.path = path
        self.name = name ?? path
        self.pinned = pinned
    }

    /// A fingerprint as `gpg --fingerprint` prints it (`5CB3 3E01 …`) or as hex, in the form keys
    /// are compared in (uppercase, no spaces); nil when it is not 40 or 64 hex digits.
    package static func normalizedFingerprint(_ text: String) -> String? {
        let hex = text.uppercased().filter { $0 != " " }
        guard hex.count == 40 || hex.count == 64, hex.allSatisfy({ $0.isHexDigit }) else { return nil }
        return hex
    }
}

/// Why one recipient file cannot be encrypted to.
package struct RecipientProblem: Error, Sendable, Equatable {
    /// Its place in the list given.
    package let index: Int
    /// The refusal, naming the file.
    package let message: String
    /// This machine cannot check it (no GnuPG, no folder for its home): not the manifest's fault.
    package let isThisMachine: Bool

    package init(index: Int, message: String, isThisMachine: Bool = false) {
        self.index = index
        self.message = message
        self.isThisMachine = isThisMachine
    }
}

/// Checks recipients' key files as encrypting to them would, returning every problem in order.
/// The manifest model reads no keys itself: OpenPGP lives in the engine, which passes this in.
package typealias RecipientCheck = @Sendable ([RecipientFile]) -> [RecipientProblem]

/// Tries a signing key as a run will (its passphrase unlocks it, it can sign now): why it cannot,
/// or nil. The engine's GnuPG; this layer reads no keys.
package typealias SigningCheck = @Sendable (SignSpec) -> String?
