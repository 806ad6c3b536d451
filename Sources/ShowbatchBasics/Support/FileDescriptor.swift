import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Why a file cannot be read, in words that name the file and the reason (the system's text).
package struct FileReadError: Error, Sendable, Equatable, CustomStringConvertible {
    package let path: String
    /// The reason, such as "No such file or directory" or "it is a directory".
    package let reason: String
    /// The file is not to be trusted as showbatch's own (`reason` says why, naming it).
    package var untrusted = false

    package init(path: String, reason: String, untrusted: Bool = false) {
        self.path = path
        self.reason = reason
        self.untrusted = untrusted
    }

    package var description: String { untrusted ? reason : "\(path) cannot be read: \(reason)" }
}

/// An open file descriptor, closed when the last reference goes (unless borrowed), and the one
/// read loop every reader uses: interrupted reads are made again, short reads continue, and a
/// limit bounds memory.
package final class FileDescriptor {
    package let raw: Int32
    /// The path it was opened by, for messages.
    package let path: String
    private let owned: Bool

    /// Takes `raw`, which is closed with this value.
    package init(raw: Int32, path: String) {
        self.raw = raw
        self.path = path
        owned = true
    }

    /// Reads through `raw`, which its owner keeps and closes.
    package init(borrowing raw: Int32, path: String) {
        self.raw = raw
        self.path = path
        owned = false
    }

    deinit { if owned { close(raw) } }

    /// Opens a file showbatch reads (a manifest, data, a token, a key): links are followed, as
    /// Kubernetes mounts Secrets and ConfigMaps through them; only a regular file is read.
    package static func openInput(_ path: String) throws(FileReadError) -> FileDescriptor {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw FileReadError(path: path, reason: describeErrno(errno)) }
        let file = FileDescriptor(raw: fd, path: path)
        try file.requireRegular()
        // Reads block: a regular file never makes them wait long.
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return file
    }

    /// Opens a regular file without following a link at its name (files of showbatch's own, such
    /// as a journal); nil when there is nothing there. A file another user could have planted or
    /// can change is refused (`PrivateFile.untrusted`).
    package static func openOwn(_ path: String) throws(FileReadError) -> FileDescriptor? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw FileReadError(path: path, reason: errno == ELOOP ? "it is a symbolic link, which showbatch never follows to its own files" : describeErrno(errno))
        }
        let file = FileDescriptor(raw: fd, path: path)
        try file.requireRegular()
        var info = stat()
        if fstat(fd, &info) == 0, let problem = PrivateFile.untrusted(info, path) {
            throw FileReadError(path: path, reason: problem, untrusted: true)
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return file
    }

    /// Why a manifest's file or folder cannot be read, in the system's words; nil when it can.
    /// Opening it is the check (`access` would answer for the real user, not the one running).
    package static func unreadable(_ path: String, folder: Bool = false) -> String? {
        if folder {
            let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard fd >= 0 else { return errno == ENOTDIR ? "it is not a folder" : describeErrno(errno) }
            close(fd)
            return nil
        }
        do {
            _ = try openInput(path)
            return nil
        } catch {
            return error.reason
        }
    }

    private func requireRegular() throws(FileReadError) {
        var info = stat()
        guard fstat(raw, &info) == 0 else { throw FileReadError(path: path, reason: describeErrno(errno)) }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return
        case S_IFDIR: throw FileReadError(path: path, reason: "it is a directory")
        default: throw FileReadError(path: path, reason: "it is not a regular file (a device, pipe or socket)")
        }
    }

    /// Reads into `buffer` from the current position; 0 at the end of the file.
    package func read(into buffer: UnsafeMutableRawBufferPointer) throws(FileReadError) -> Int {
        while true {
            let count = Glibc.read(raw, buffer.baseAddress, buffer.count)
            if count >= 0 { return count }
            if errno == EINTR { continue }
            throw FileReadError(path: path, reason: describeErrno(errno))
        }
    }

    /// Reads into `bytes` from `start` to its end; how many (0 at the end of the file).
    package func read(into bytes: inout [UInt8], from start: Int = 0) throws(FileReadError) -> Int {
        while true {
            let count = bytes.withUnsafeMutableBytes { Glibc.read(raw, $0.baseAddress! + start, $0.count - start) }
            if count >= 0 { return count }
            if errno == EINTR { continue }
            throw FileReadError(path: path, reason: describeErrno(errno))
        }
    }

    /// Reads into `bytes` from `start` to its end at `offset` in the file, or fewer bytes at the
    /// end of the file; how many.
    package func read(into bytes: inout [UInt8], from start: Int = 0, at offset: Int) throws(FileReadError) -> Int {
        var failure: FileReadError?
        let done = bytes.withUnsafeMutableBytes { buffer -> Int in
            do throws(FileReadError) {
                return try read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[start...]), at: offset)
            } catch {
                failure = error
                return 0
            }
        }
        if let failure { throw failure }
        return done
    }

    /// Reads `buffer.count` bytes at `offset`, or fewer at the end of the file.
    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(FileReadError) -> Int {
        var done = 0
        while done < buffer.count {
            let count = pread(raw, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
            if count < 0 {
                if errno == EINTR { continue }
                throw FileReadError(path: path, reason: describeErrno(errno))
            }
            if count == 0 { break }
            done += count
        }
        return done
    }

    /// Everything from the current position to the end; a file longer than `limit` bytes is
    /// refused without reading it whole.
    package func readAll(limit: Int) throws(FileReadError) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = try read(into: &chunk)
            if count == 0 { return bytes }
            guard bytes.count + count <= limit else {
                throw FileReadError(path: path, reason: "it is over \(limit) bytes")
            }
            bytes.append(contentsOf: chunk[0..<count])
        }
    }

    /// The file's identity and size, as `stat` gives them now.
    package func stamp() -> FileStamp? {
        var info = stat()
        guard fstat(raw, &info) == 0 else { return nil }
        return FileStamp(info)
    }
}

/// What tells one version of a file from another: which file (device and inode), its size and
/// when it was last changed.
package struct FileStamp: Equatable, Sendable {
    package let device: UInt64
    package let inode: UInt64
    package let size: Int
    package let modified: Int

    package init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int(info.st_size)
        modified = Int(info.st_mtim.tv_sec) * 1_000_000_000 + Int(info.st_mtim.tv_nsec)
    }

    /// The stamp of what `path` leads to now (links followed); nil when nothing is there.
    package static func of(_ path: String) -> FileStamp? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return FileStamp(info)
    }
}
