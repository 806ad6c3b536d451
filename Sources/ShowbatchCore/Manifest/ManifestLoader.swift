import Foundation
import ShowbatchYAML

/// Reads and validates manifests, collecting every problem it finds.
package enum ManifestLoader {

    /// Reads `path` (relative to the current folder) and validates it.
    package static func load(path: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws(ManifestError) -> Manifest {
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
        guard let bytes = readWholeFile(path, limit: Limits.manifestFile) else {
            throw ManifestError([Diagnostic(file: path, message: "cannot be read")])
        }
        let directory = (path as NSString).deletingLastPathComponent
        return try load(source: SourceFile(name: path, bytes: bytes), directory: directory.isEmpty ? "." : directory, environment: environment)
    }

    /// Manifests from this size up decode their requests on a second thread while parsing.
    static let concurrentDecodingThreshold = 1 << 20

    /// Validates manifest text; relative paths are resolved against `directory`.
    package static func load(source: SourceFile, directory: String, environment: [String: String]) throws(ManifestError) -> Manifest {
        try load(source: source, directory: directory, environment: environment, concurrentFrom: concurrentDecodingThreshold)
    }

    /// Validates manifest text, decoding requests concurrently when the source has at least
    /// `concurrentFrom` bytes (tests force either way; the results are the same).
    static func load(source: SourceFile, directory: String, environment: [String: String],
                     concurrentFrom threshold: Int) throws(ManifestError) -> Manifest {
        var decoder = ManifestDecoder(source: source, directory: directory, environment: environment)
        let concurrent = source.bytes.count >= threshold ? ConcurrentRequestDecoder(decoder: decoder, bytes: source.bytes) : nil
        let root: Node
        do {
            root = try YAMLParser.parseDocument(source, stream: concurrent?.stream, isSecret: ManifestSecrets.isSecret).root
        } catch {
            _ = concurrent?.finish()
            throw ManifestError([error.diagnostic])
        }
        if let (list, requests, items, problems, hash) = concurrent?.finish() {
            decoder.contentHash = hash
            if let list { decoder.predecoded = (list, requests, items, problems) }
        }
        var manifest = decoder.decode(root)
        if !decoder.problems.isEmpty {
            throw ManifestError(decoder.diagnostics(root))
        }
        manifest.warnings = decoder.renderedWarnings(root)
        return manifest
    }
}

/// The bytes of a file of at most `limit` bytes, read straight into an array: no `Data` and no
/// copy of a manifest that can be tens of megabytes.
func readWholeFile(_ path: String, limit: Int) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0 else { return nil }
    // One byte more than the size shows a file that grew while being read; it is read again whole.
    let capacity = min(limit, Int(info.st_size)) + 1
    var failed = false
    let bytes = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
        count = 0
        while count < capacity {
            let read = Glibc.read(fd, buffer.baseAddress! + count, capacity - count)
            if read < 0 && errno == EINTR { continue }
            if read < 0 { failed = true }
            if read <= 0 { break }
            count += read
        }
    }
    if failed { return nil }
    if bytes.count == capacity {
        guard let data = FileManager.default.contents(atPath: path), data.count <= limit else { return nil }
        return Array(data)
    }
    return bytes
}
