import Foundation
import ShowbatchBasics
import ShowbatchYAML

/// What a manifest is loaded for.
package enum ManifestUse: Sendable {
    /// Validating or planning: everything a run needs must be there.
    case reveal
    /// Running: as `reveal`, but the recipients' keys are checked when the run loads them (once,
    /// not twice: each check runs gpg), positioned all the same.
    case run
    /// Merging shards' files: nothing is sent, so the values only sending uses (header, payload
    /// and auth secrets, TLS and emulator files) may be absent where the merge runs.
    case merge
    /// `validate --no-env`: a manifest checked without its environment (in CI): an unset
    /// `${NAME}` is a placeholder, not a problem; nothing is read that only a run reads.
    case check
}

/// Reads and validates manifests, collecting every problem it finds.
package enum ManifestLoader {

    /// Reads `path` (relative to the current folder) and validates it; `recipients` checks the
    /// encrypted outputs' key files (the engine's GnuPG: this layer reads no keys).
    package static func load(path: String, environment: [String: String] = ProcessInfo.processInfo.environment,
                             use: ManifestUse = .reveal, recipients: @escaping RecipientCheck,
                             signing: SigningCheck? = nil) throws(ManifestError) -> Manifest {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw ManifestError([Diagnostic(file: path, message: "no such file")])
        }
        if isDirectory.boolValue {
            throw ManifestError([Diagnostic(file: path, message: "is a directory; expected a manifest file")])
        }
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        if size > Limits.manifestFile {
            throw ManifestError([Diagnostic(file: path, message: "is \(size >> 20) MiB; manifests are limited to \(Limits.manifestFile >> 20) MiB")])
        }
        let bytes: [UInt8]
        do {
            bytes = try readWholeFile(path, limit: Limits.manifestFile)
        } catch {
            throw ManifestError([Diagnostic(file: path, message: "cannot be read: \(error.reason)")])
        }
        let directory = (path as NSString).deletingLastPathComponent
        return try load(source: SourceFile(name: path, bytes: bytes), directory: directory.isEmpty ? "." : directory,
                        environment: environment, use: use, recipients: recipients, signing: signing)
    }

    /// Manifests from this size up decode their requests on a second thread while parsing.
    package static let concurrentDecodingThreshold = 1 << 20

    /// Validates manifest text; relative paths are resolved against `directory`.
    package static func load(source: SourceFile, directory: String, environment: [String: String],
                             use: ManifestUse = .reveal, recipients: @escaping RecipientCheck,
                             signing: SigningCheck? = nil) throws(ManifestError) -> Manifest {
        try load(source: source, directory: directory, environment: environment, use: use,
                 concurrentFrom: concurrentDecodingThreshold, recipients: recipients, signing: signing)
    }

    /// Validates manifest text, decoding requests concurrently when the source has at least
    /// `concurrentFrom` bytes (tests force either way; the results are the same).
    package static func load(source: SourceFile, directory: String, environment: [String: String], use: ManifestUse = .reveal,
                             concurrentFrom threshold: Int, recipients: @escaping RecipientCheck,
                             signing: SigningCheck? = nil) throws(ManifestError) -> Manifest {
        var decoder = ManifestDecoder(source: source, directory: directory, environment: environment, use: use,
                                      checkRecipients: recipients)
        decoder.checkSigning = signing
        let concurrent = source.bytes.count >= threshold ? ConcurrentRequestDecoder(decoder: decoder, bytes: source.bytes) : nil
        let root: Node
        do {
            root = try YAMLParser.parseDocument(source, stream: concurrent?.stream, isSecret: ManifestSecrets.isSecret,
                                               showsValue: ManifestSecrets.showsValue).root
        } catch {
            _ = concurrent?.finish()
            throw ManifestError([error.diagnostic])
        }
        if let concurrent {
            let (list, requests, items, problems, hash) = concurrent.finish()
            decoder.contentHash = hash
            if let list { decoder.predecoded = (list, requests, items, problems) }
            decoder.environmentSecrets.formUnion(concurrent.environmentSecrets)
        }
        var manifest = decoder.decode(root)
        manifest.source = source
        manifest.environmentSecrets = decoder.environmentSecrets.sorted()
        let dataProblems = countDataFiles(&manifest)
        if !decoder.problems.isEmpty || !dataProblems.isEmpty {
            throw ManifestError(decoder.diagnostics(root) + dataProblems)
        }
        manifest.warnings = decoder.renderedWarnings(root)
        return manifest
    }
}

/// The bytes of a file of at most `limit` bytes, read straight into an array: no `Data` and no
/// copy of a manifest that can be tens of megabytes.
func readWholeFile(_ path: String, limit: Int) throws(FileReadError) -> [UInt8] {
    let file = try FileDescriptor.openInput(path)
    // One byte more than the size shows a file that grew while being read; it is read on to the limit.
    let size = file.stamp()?.size ?? 0
    var bytes = [UInt8](repeating: 0, count: min(limit, size) + 1)
    var count = 0
    while count < bytes.count {
        let read = try file.read(into: &bytes, from: count)
        if read == 0 { break }
        count += read
    }
    // It grew: read on in chunks until the end or the limit.
    while count == bytes.count {
        guard count <= limit else { throw FileReadError(path: path, reason: "it is over \(limit) bytes") }
        bytes += repeatElement(0, count: 1 << 16)
        while count < bytes.count {
            let read = try file.read(into: &bytes, from: count)
            if read == 0 { break }
            count += read
        }
    }
    bytes.removeSubrange(count...)
    return bytes
}
