import ShowbatchBasics
internal import COpenSSL
import ShowbatchManifest

/// The SHA-256 of a file's bytes, as a delivery record and a night's record keep it.
struct FileDigest: Equatable, Sendable {
    let size: Int
    /// Lowercase hex.
    let sha256: String

    /// Reads `path` (never through a link: it is a file of showbatch's own) in 1 MiB pieces.
    static func of(_ path: String) throws(RunError) -> FileDigest {
        let opened: FileDescriptor?
        do { opened = try FileDescriptor.openOwn(path) } catch { throw RunError.runtime(FileError(.read, path, cause: .reason(error.reason))) }
        guard let file = opened else { throw RunError.runtime(FileError(.read, path, cause: .reason("it is not there"))) }
        guard let context = EVP_MD_CTX_new() else { fatalError("out of memory (EVP_MD_CTX_new)") }
        defer { EVP_MD_CTX_free(context) }
        precondition(EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1, "SHA-256 failed")
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        var size = 0
        while true {
            let count: Int
            do { count = try file.read(into: &chunk) } catch { throw RunError.runtime(FileError(.read, path, cause: .reason(error.reason))) }
            if count == 0 { break }
            size += count
            _ = chunk.withUnsafeBytes { EVP_DigestUpdate(context, $0.baseAddress, count) }
        }
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        precondition(EVP_DigestFinal_ex(context, &digest, &length) == 1 && length == 32, "SHA-256 failed")
        return FileDigest(size: size, sha256: hex(digest))
    }

    /// A SHA-256 fed piece by piece (a file read back from a server).
    final class Stream {
        private let context: OpaquePointer
        private(set) var size = 0

        init() {
            guard let context = EVP_MD_CTX_new() else { fatalError("out of memory (EVP_MD_CTX_new)") }
            precondition(EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1, "SHA-256 failed")
            self.context = context
        }

        deinit { EVP_MD_CTX_free(context) }

        func update(_ bytes: UnsafeRawPointer, _ count: Int) {
            _ = EVP_DigestUpdate(context, bytes, count)
            size += count
        }

        func finish() -> FileDigest {
            var digest = [UInt8](repeating: 0, count: 32)
            var length: UInt32 = 0
            precondition(EVP_DigestFinal_ex(context, &digest, &length) == 1 && length == 32, "SHA-256 failed")
            return FileDigest(size: size, sha256: FileDigest.hex(digest))
        }
    }

    /// The SHA-256 of `bytes`, in lowercase hex.
    static func sha256(_ bytes: [UInt8]) -> String {
        let stream = Stream()
        bytes.withUnsafeBytes { stream.update($0.baseAddress!, $0.count) }
        return stream.finish().sha256
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes { out.append(digits[Int(byte >> 4)]); out.append(digits[Int(byte & 0xF)]) }
        return String(decoding: out, as: UTF8.self)
    }
}
