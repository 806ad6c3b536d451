import Foundation
import ShowbatchBasics
import ShowbatchManifest
import ShowbatchYAML

extension ManifestLoader {
    /// Reads `path` (relative to the current folder) and validates it, the recipients' keys
    /// checked by GnuPG.
    package static func load(path: String, environment: [String: String] = ProcessInfo.processInfo.environment,
                             use: ManifestUse = .reveal) throws(ManifestError) -> Manifest {
        try load(path: path, environment: environment, use: use, recipients: OpenPGPEncryptor.validate, signing: OpenPGPEncryptor.checkSigning)
    }

    /// Validates manifest text, the recipients' keys checked by GnuPG; relative paths are
    /// resolved against `directory`.
    package static func load(source: SourceFile, directory: String, environment: [String: String],
                             use: ManifestUse = .reveal) throws(ManifestError) -> Manifest {
        try load(source: source, directory: directory, environment: environment, use: use, recipients: OpenPGPEncryptor.validate,
                 signing: OpenPGPEncryptor.checkSigning)
    }

    /// As `load(source:directory:environment:use:)`, decoding requests concurrently from
    /// `threshold` bytes (tests force either way).
    static func load(source: SourceFile, directory: String, environment: [String: String], use: ManifestUse = .reveal,
                     concurrentFrom threshold: Int) throws(ManifestError) -> Manifest {
        try load(source: source, directory: directory, environment: environment, use: use, concurrentFrom: threshold,
                 recipients: OpenPGPEncryptor.validate)
    }
}
