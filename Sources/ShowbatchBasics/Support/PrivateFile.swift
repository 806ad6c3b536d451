import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Files that hold revealed data, or say where it is: outputs, their `.partial` files and
/// journals. They are never reached through a link and are never anything but regular files:
/// created with `O_EXCL | O_NOFOLLOW` (after removing only a regular file that was there) with
/// mode 0600, or opened with `O_NOFOLLOW` and checked. A link planted at one of these paths is
/// refused, and its target is never touched.
package enum PrivateFile {
    /// What is at a path, the last link not followed.
    package enum Existing: Equatable {
        case none
        case regular(device: UInt64, inode: UInt64, size: Int)
        case directory
        case link
        /// A device, pipe or socket.
        case other
    }

    /// What is at `path`, without following a link.
    package static func inspect(_ path: String) -> Existing {
        var info = stat()
        guard lstat(path, &info) == 0 else { return .none }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return .regular(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int(info.st_size))
        case S_IFDIR: return .directory
        case S_IFLNK: return .link
        default: return .other
        }
    }

    /// The identity of the file `path` leads to (links followed), to tell whether two paths are
    /// one file.
    package static func identity(_ path: String) -> (device: UInt64, inode: UInt64)? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return (UInt64(info.st_dev), UInt64(info.st_ino))
    }

    /// One spelling for every path to a file, existing or not: absolute, with the links and `.`
    /// and `..` of its existing folders resolved (`out/r.csv`, `./out//r.csv` and a linked
    /// folder's path to it are one). The part that does not exist yet is taken as written.
    package static func canonical(_ path: String) -> String {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var tail: [Substring] = []
        var head = Substring(absolute)
        while true {
            let resolved = String(head).withCString { realpath($0, nil) }
            if let resolved {
                defer { free(resolved) }
                var parts = String(cString: resolved).split(separator: "/")
                for part in tail.reversed() {
                    switch part {
                    case ".": continue
                    case "..": if !parts.isEmpty { parts.removeLast() }
                    default: parts.append(part)
                    }
                }
                return "/" + parts.joined(separator: "/")
            }
            guard let slash = head.lastIndex(of: "/") else { return absolute }
            let part = head[head.index(after: slash)...]
            if !part.isEmpty { tail.append(part) }
            head = slash == head.startIndex ? "/" : head[..<slash]
        }
    }

    /// Replaces the file at `path` with `bytes` at once (a reader sees the old file or the new
    /// one, never a part): written to a hidden file beside it, synced, renamed over it. Never
    /// through a link; a folder or device at `path` is refused. `syncingFolder`: the folder is
    /// synced after the rename too, so that the new file is there after a power loss (a record
    /// that decides what is sent next).
    package static func replaceAtomically(_ path: String, with bytes: [UInt8], mode: mode_t, syncingFolder: Bool = false) throws(RunError) {
        if let found = found(path) { throw RunError.runtime(PathRefusal(path, found, .cannotWrite)) }
        try makeParent(of: path, for: path)
        let slash = path.lastIndex(of: "/")
        let folder = slash.map { String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        let temporary = (folder.isEmpty ? "" : folder + "/") + "." + name + ".tmp-\(getpid())"
        if case .regular = inspect(temporary) { unlink(temporary) }
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else {
            let code = errno
            throw RunError.runtime(FileError(.write, path, errno: code))
        }
        var code: Int32? = fchmod(fd, mode) == 0 ? nil : errno
        if code == nil { code = bytes.withUnsafeBytes { writeAll(fd, $0) } }
        if code == nil && fsync(fd) != 0 { code = errno }
        close(fd)
        if code == nil && rename(temporary, path) != 0 { code = errno }
        if let code {
            unlink(temporary)
            throw RunError.runtime(FileError(.write, path, errno: code))
        }
        if syncingFolder {
            let directory = open(folder.isEmpty ? "/" : folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard directory >= 0 else { return }
            defer { close(directory) }
            if fsync(directory) != 0 && errno != EINVAL {
                throw RunError.runtime(FileError(.syncFolder, path, errno: errno))
            }
        }
    }

    /// The text of the regular file at `path` (never through a link), or nil.
    package static func readText(_ path: String, limit: Int = 1 << 20) -> String? {
        guard let file = try? FileDescriptor.openOwn(path), let bytes = try? file.readAll(limit: limit) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Why `path` cannot be one of a run's files, in words; nil when it can (absent or regular).
    package static func refusal(_ path: String) -> String? { found(path).map { PathRefusal(path, $0, .cannotWrite).finding } }

    /// What is at `path` that keeps it from being one of a run's files; nil when nothing does.
    package static func found(_ path: String) -> PathRefusal.Found? {
        switch inspect(path) {
        case .none, .regular: return nil
        case .directory: return .directory
        case .link: return .link
        case .other: return .special
        }
    }

    /// Creates `path` afresh with mode 0600, creating its folders; a regular file there is
    /// replaced, anything else refused. Errors name `output`, the path the user knows.
    package static func create(_ path: String, for output: String) throws(RunError) -> Int32 {
        try makeParent(of: path, for: output)
        switch inspect(path) {
        case .none: break
        case .regular:
            // Another user's file in its place is a sign of a neighbour at work: said, not removed.
            try requireTrusted(path, replacing: true)
            unlink(path)
        default: throw RunError.runtime(PathRefusal(path, found(path) ?? .notRegular, .removeAndRunAgain))
        }
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let code = errno
            throw RunError.runtime(FileError(.create, path, purpose: "for \(output)", errno: code))
        }
        try makePrivate(fd, path)
        return fd
    }

    /// Creates `path` with mode 0600 only if nothing is there (creating its folders); nil when a
    /// file appeared there first (another run created it). Errors name `output`.
    package static func createNew(_ path: String, for output: String) throws(RunError) -> Int32? {
        try makeParent(of: path, for: output)
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            // Kept before anything else is asked of the system: `inspect` sets errno too, and an
            // unwritable folder (EACCES) must not be told as a missing file (ENOENT).
            let code = errno
            if code == EEXIST, case .regular = inspect(path) { return nil }
            if let found = found(path) { throw RunError.runtime(PathRefusal(path, found, .removeAndRunAgain)) }
            throw RunError.runtime(FileError(.create, path, purpose: "for \(output)", errno: code))
        }
        try makePrivate(fd, path)
        return fd
    }

    /// Opens the regular file at `path` for reading and writing, without following a link; nil
    /// when there is none.
    package static func openExisting(_ path: String, for output: String) throws(RunError) -> Int32? {
        if let found = found(path) { throw RunError.runtime(PathRefusal(path, found, .removeAndRunAgain)) }
        let fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR { return nil }
            throw RunError.runtime(FileError(.open, path, purpose: "for \(output)", errno: code))
        }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw RunError.runtime(PathRefusal(path, .notRegular, .removeAndRunAgain))
        }
        if let problem = untrustedFile(info, path) {
            close(fd)
            throw RunError.runtime(problem)
        }
        do throws(RunError) {
            try makePrivate(fd, path)
        } catch {
            close(fd)
            throw error
        }
        return fd
    }

    /// Opens a regular file of showbatch's own for reading only, without following a link; nil
    /// when there is none (or something else is there). A file another user could have planted
    /// is refused.
    package static func openForReading(_ path: String) throws(RunError) -> Int32? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            return nil
        }
        if let problem = untrustedFile(info, path) {
            close(fd)
            throw RunError.runtime(problem)
        }
        return fd
    }

    /// Mode exactly 0600 (the umask may have taken bits away, an earlier run's file may have
    /// others); a change refused (a file of another user's) is said, never passed over.
    private static func makePrivate(_ fd: Int32, _ path: String) throws(RunError) {
        guard fchmod(fd, 0o600) != 0 else { return }
        let code = errno
        throw RunError.runtime(FileError(.makePrivate, path, errno: code))
    }

    /// Why the file `info` describes is not to be trusted as one of showbatch's own, in words
    /// that name it and its owner; nil when it is. Another user's file, one with a second name (a
    /// hard link, which can be in anyone's folder) or one others can write could hold what a
    /// neighbour put there, or take what showbatch writes. A group that the running user is in
    /// may write (Kubernetes gives a volume's files to the pod's `fsGroup`). `replacing`: the file
    /// is only to be removed and made afresh, which needs it to be the running user's, no more.
    package static func untrusted(_ info: stat, _ path: String, replacing: Bool = false) -> String? {
        untrustedFile(info, path, replacing: replacing)?.description
    }

    /// `untrusted`, as the refusal it is.
    package static func untrustedFile(_ info: stat, _ path: String, replacing: Bool = false) -> PathRefusal? {
        let found: PathRefusal.Found
        if info.st_uid != geteuid() {
            found = .otherUsers(owner: userName(info.st_uid), runner: userName(geteuid()))
        } else if replacing {
            return nil
        } else if info.st_nlink > 1 {
            found = .links(Int(info.st_nlink))
        } else if writableByOthers(info) {
            found = .writableByOthers(mode: UInt32(info.st_mode & 0o7777))
        } else {
            return nil
        }
        return PathRefusal(path, found, .untrustedFile)
    }

    /// Refuses the file at `path` (never through a link) when it is not to be trusted
    /// (`untrusted`); nothing there, or something other than a regular file, passes here.
    package static func requireTrusted(_ path: String, replacing: Bool = false) throws(RunError) {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return }
        if let problem = untrustedFile(info, path, replacing: replacing) { throw RunError.runtime(problem) }
    }

    /// Refuses `folder` (links followed, as a mounted volume's may be one) when another user can
    /// replace the files in it: its owner, not root and not the running user, always can; so can
    /// anyone who can write it, unless its sticky bit keeps each file its owner's (as in /tmp). A
    /// group the running user is in may write it. A folder not there yet is made 0700.
    package static func requireTrustedFolder(_ folder: String, for path: String) throws(RunError) {
        switch replaceableBy(folder) {
        case nil: return
        case .owner(let uid)?:
            throw RunError.runtime(PathRefusal(path, .folderOwned(folder: folder, owner: userName(uid)), .useAFolderOfYourOwn))
        case .writable(let mode)?:
            throw RunError.runtime(PathRefusal(path, .folderWritable(folder: folder, mode: UInt32(mode)), .useAFolderOfYourOwn))
        }
    }

    /// Who other than the running user could replace the files in a folder.
    package enum Replacer: Equatable {
        /// Its owner, neither root nor the running user.
        case owner(uid_t)
        /// Anyone who can write it: it has no sticky bit to keep each file its owner's (`mode`).
        case writable(mode_t)
    }

    /// Who could replace the files in `folder` (links followed, as a mounted volume's may be
    /// one); nil when no other user could, or when it is not there or no folder.
    package static func replaceableBy(_ folder: String) -> Replacer? {
        var info = stat()
        guard stat(folder, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return nil }
        if info.st_uid != geteuid() && info.st_uid != 0 { return .owner(info.st_uid) }
        if info.st_mode & 0o1000 == 0 && writableByOthers(info) { return .writable(info.st_mode & 0o7777) }
        return nil
    }

    /// Whether users other than the running one can write what `info` describes: anyone, or a
    /// group the running user is not in.
    private static func writableByOthers(_ info: stat) -> Bool {
        info.st_mode & 0o002 != 0 || (info.st_mode & 0o020 != 0 && !inOwnGroups(info.st_gid))
    }

    /// A user in words: name and uid, or the uid alone.
    package static func userName(_ uid: uid_t) -> String {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        if getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, result != nil, let name = entry.pw_name {
            return "\(String(cString: name)) (uid \(uid))"
        }
        return "uid \(uid)"
    }

    private static func inOwnGroups(_ gid: gid_t) -> Bool {
        if gid == getegid() { return true }
        let count = getgroups(0, nil)
        guard count > 0 else { return false }
        var groups = [gid_t](repeating: 0, count: Int(count))
        let got = getgroups(count, &groups)
        return got > 0 && groups.prefix(Int(got)).contains(gid)
    }

    package static func makeParent(of path: String, for output: String) throws(RunError) {
        let parent = (path as NSString).deletingLastPathComponent
        guard !parent.isEmpty else { return }
        if let code = makeFolders(parent) {
            throw RunError.runtime(FileError(.create, .folder, parent, purpose: "for \(output)", errno: code))
        }
    }

    /// Creates `folder` and the folders it is in that are missing, mode 0700; the errno of the
    /// call that failed.
    private static func makeFolders(_ folder: String) -> Int32? {
        var info = stat()
        if stat(folder, &info) == 0 { return info.st_mode & S_IFMT == S_IFDIR ? nil : ENOTDIR }
        // The folder it is in, by its last slash (NSString's deletingLastPathComponent traps on
        // some one-character names).
        if let slash = folder.lastIndex(of: "/"), slash != folder.startIndex,
           let code = makeFolders(String(folder[..<slash])) { return code }
        // 0700 whatever the umask: a folder of revealed files is no one else's to list or write.
        if mkdir(folder, 0o700) == 0 { return nil }
        let code = errno
        // Made meanwhile by another process.
        if code == EEXIST, stat(folder, &info) == 0, info.st_mode & S_IFMT == S_IFDIR { return nil }
        return code
    }

    /// Why the regular file at `path` cannot be opened for reading, in words: what is there
    /// instead, or the system's own text.
    package static func readingProblem(_ path: String) -> String {
        if let refusal = refusal(path) { return refusal }
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return describeErrno(errno) }
        close(fd)
        return "it changed while being opened"
    }

    /// Writes all of `bytes` to `fd`; the errno of a failure.
    /// Whether `fd` is a regular file (a write to it never waits for a reader).
    package static func isRegular(_ fd: Int32) -> Bool {
        var info = stat()
        return fstat(fd, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
    }

    /// How a write that can be given up ended.
    package enum WriteOutcome: Equatable {
        case written
        case abandoned
        case failed(Int32)
    }

    /// Writes all of `bytes` to a pipe, socket or terminal, waiting for room at most 100 ms at a
    /// time and giving up once `abandoned` is set: a blocked write is a wait, and a signal ends
    /// every wait. Each write is at most `PIPE_BUF` bytes, which a pipe that has room takes
    /// without blocking.
    package static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, unless abandoned: borrowing Atomic<Bool>) -> WriteOutcome {
        var offset = 0
        while offset < bytes.count {
            if abandoned.load(ordering: .relaxed) { return .abandoned }
            var ready = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let polled = poll(&ready, 1, 100)
            if polled < 0 {
                if errno == EINTR { continue }
                return .failed(errno)
            }
            if polled == 0 { continue }
            let written = Glibc.write(fd, bytes.baseAddress! + offset, min(bytes.count - offset, Int(PIPE_BUF)))
            if written < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                return .failed(errno)
            }
            offset += written
        }
        return .written
    }

    package static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                return errno
            }
            offset += written
        }
        return nil
    }
}
