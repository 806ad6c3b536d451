import ShowbatchBasics
import ShowbatchManifest
#if canImport(Glibc)
import Glibc
#endif

/// The bytes of a file showbatch wrote, read back as an unencrypted run writes them: the file's
/// own bytes or, for a sealed file (an encrypted output's `.partial`, a shard of one), the
/// plaintext of its chunks, each handed out only once it has authenticated. With a limit, only
/// that many of those bytes are read (a file read up to a checkpoint, which a sealed file need
/// not have ended at).
///
/// What gunzip (`GunzipReader`) and the row reader (`ShardRows`) read from; the file descriptor
/// is the caller's.
final class StoredBytes {
    /// Why the bytes cannot be read, in words (no byte of them is quoted).
    struct Failure: Error {
        let reason: String
    }

    private let file: FileDescriptor
    private let sealed: SealedReader?
    /// Bytes still to be read; nil: to the end.
    private var left: Int?

    /// Reads the file open at `fd` (read from its current position, or a sealed one from its
    /// start), named `path` in messages; sealed under `key` when one is given.
    init(fd: Int32, path: String, key: DataKey?, limit: Int?) throws(Failure) {
        file = FileDescriptor(borrowing: fd, path: path)
        left = limit
        if let key {
            do {
                sealed = try SealedReader(fd: fd, key: key, name: path)
            } catch {
                throw Failure(reason: Self.withoutName(error.message, path))
            }
        } else {
            sealed = nil
        }
    }

    /// Fills `buffer` with the next bytes; how many (0 at the end, or at the limit).
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(Failure) -> Int {
        let wanted = min(buffer.count, left ?? buffer.count)
        guard wanted > 0 else { return 0 }
        let target = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<wanted])
        let count: Int
        if let sealed {
            do {
                count = try sealed.read(into: target)
            } catch {
                throw Failure(reason: Self.withoutName(error.message, file.path))
            }
        } else {
            do {
                count = try file.read(into: target)
            } catch {
                throw Failure(reason: "it cannot be read: \(error.reason)")
            }
        }
        if let remaining = left { left = remaining - count }
        return count
    }

    /// Zeroes the plaintext a sealed file's reader holds.
    func wipe() { sealed?.wipe() }

    /// A sealed file's message starts with its name, which the caller's message has already.
    private static func withoutName(_ message: String, _ path: String) -> String {
        if message.hasPrefix(path + ": ") { return String(message.dropFirst(path.count + 2)) }
        if message.hasPrefix(path + " ") { return "it " + message.dropFirst(path.count + 1) }
        return message
    }
}
