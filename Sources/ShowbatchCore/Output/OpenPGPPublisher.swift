import ShowbatchBasics
import ShowbatchManifest
#if canImport(Glibc)
import Glibc
#endif

/// Puts an encrypted output in place: its sealed `.partial` is unsealed chunk by chunk straight
/// into GnuPG, whose OpenPGP message goes to `<path>.encrypting` (created 0600, never through a
/// link), is synced and renamed to `path`; the sealed file is then removed. No plaintext byte
/// touches the disk: it goes from the sealed file's chunks, each authenticated first, through a
/// pipe to gpg.
enum OpenPGPPublisher {
    /// Publishes the finished sealed file open at `fd` (named `partial`, sealed under `key`) as
    /// `path`, encrypted by `encryptor`. `isCancelled` is asked between chunks: a cancelled
    /// publication removes its `.encrypting` file and leaves the sealed one, to be finished by
    /// `--resume`. With `keepingSealed`, the sealed file stays once the message is in place.
    static func publish(sealed fd: Int32, partial: String, key: DataKey, to path: String,
                        encryptor: OpenPGPEncryptor, isCancelled: @escaping () -> Bool, keepingSealed: Bool = false,
                        around lines: (head: [UInt8], tail: [UInt8])? = nil) throws(RunError) {
        try makeMessage(sealed: fd, partial: partial, key: key, for: path, encryptor: encryptor, isCancelled: isCancelled, around: lines)
        try place(path, partial: partial, keepingSealed: keepingSealed)
    }

    /// Makes `<path>.encrypting`, the OpenPGP message of the sealed file open at `fd` (between
    /// the header and trailer `lines`, when the output has them), and syncs it; on failure it is
    /// removed, and the sealed file kept.
    static func makeMessage(sealed fd: Int32, partial: String, key: DataKey, for path: String,
                            encryptor: OpenPGPEncryptor, isCancelled: @escaping () -> Bool,
                            around lines: (head: [UInt8], tail: [UInt8])? = nil) throws(RunError) {
        let temporary = SideFile.encrypting.of(path)
        let out = try PrivateFile.create(temporary, for: path)
        let source: CancellableSource
        do {
            source = CancellableSource(reader: try SealedReader(fd: fd, key: key, name: partial), isCancelled: isCancelled,
                                       head: lines?.head ?? [], tail: lines?.tail ?? [])
        } catch {
            close(out)
            unlink(temporary)
            throw RunError.runtime(OutputError.encryptionFailed(role: nil, file: path, reason: error.message, kept: nil))
        }
        defer { source.reader.wipe() }
        do {
            try encryptor.encrypt(from: source, to: out)
            guard fdatasync(out) == 0 else { throw CryptoError(.io, "cannot write \(temporary): \(describeErrno(errno))") }
        } catch {
            close(out)
            unlink(temporary)
            if error is Cancelled { throw RunError.runtime(OutputError.encryptionInterrupted(path: path, kept: partial)) }
            throw RunError.runtime(OutputError.encryptionFailed(role: nil, file: path, reason: (error as? CryptoError)?.message ?? "\(error)", kept: partial))
        }
        close(out)
    }

    /// Renames `<path>.encrypting` to `path` and removes the sealed file it was made from (unless
    /// `keepingSealed`).
    static func place(_ path: String, partial: String, keepingSealed: Bool = false) throws(RunError) {
        let temporary = SideFile.encrypting.of(path)
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw RunError.runtime(FileError(.rename(to: path), temporary, errno: code))
        }
        if !keepingSealed { unlink(partial) }
    }

    /// The publication was cancelled (SIGINT, SIGTERM).
    struct Cancelled: Error {}

    /// A sealed file's plaintext between `head` and `tail`, read until the publication is cancelled.
    private final class CancellableSource: PlaintextSource {
        let reader: SealedReader
        let isCancelled: () -> Bool
        private var head: ArraySlice<UInt8>
        private var tail: ArraySlice<UInt8>
        private var rowsDone = false

        init(reader: SealedReader, isCancelled: @escaping () -> Bool, head: [UInt8], tail: [UInt8]) {
            self.reader = reader
            self.isCancelled = isCancelled
            self.head = head[...]
            self.tail = tail[...]
        }

        func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            if isCancelled() { throw Cancelled() }
            if !head.isEmpty { return Self.take(&head, into: buffer) }
            if !rowsDone {
                let count = try reader.read(into: buffer)
                if count > 0 { return count }
                rowsDone = true
            }
            return Self.take(&tail, into: buffer)
        }

        private static func take(_ bytes: inout ArraySlice<UInt8>, into buffer: UnsafeMutableRawBufferPointer) -> Int {
            let count = min(bytes.count, buffer.count)
            guard count > 0 else { return 0 }
            buffer.copyBytes(from: bytes.prefix(count))
            bytes = bytes.dropFirst(count)
            return count
        }
    }
}
