import Foundation
import ShowbatchBasics
import ShowbatchManifest
#if canImport(Glibc)
import Glibc
#endif

/// Writes binary labels' files on the writer thread, each before the row that names it, so that
/// a checkpoint never counts a row whose file is not on disk.
///
/// A file is written inside the folder of the output its row goes to, and only there: the
/// folders below that one are opened one at a time with `O_NOFOLLOW` (created 0700 when
/// missing), so a link anywhere on the way is refused, whatever it points at. The bytes go to
/// `.NAME.%partial` in the file's folder (`O_CREAT | O_EXCL | O_NOFOLLOW`, mode 0600), are synced
/// and renamed over `NAME`: a reader sees the old file or the new one, and a row written again
/// (`--resume`, `--retry-failed`) replaces its own file. Nothing but a regular file is ever
/// replaced, and never an input of the run or a file of an output. The folders written in are
/// synced before each checkpoint and at the end.
final class LabelFileWriter {
    /// One output's folder.
    private struct Folder {
        /// The output's folder as the run names it (for messages).
        let path: String
        /// The output it belongs to (for messages).
        let output: String
        /// Its canonical path, to compare label files with the run's own files.
        let canonical: String
        /// The open folder; -1 until the first file is written.
        var fd: Int32 = -1
    }

    private var folders: [Folder?]
    /// Canonical paths of the files no label file may replace, with what each is.
    private let protected: [String: String]
    /// Identities of the inputs (a hard link to one is refused too).
    private let inputs: [(what: String, device: UInt64, inode: UInt64)]
    /// Folders written in since the last sync, by output and path below the output's folder.
    private var dirty: Set<DirtyFolder> = []
    /// By target: an encrypted output's encryptor, which its label files are written through.
    private let encryptors: [OpenPGPEncryptor?]

    private struct DirtyFolder: Hashable {
        let target: Int
        let path: [String]
    }

    /// A writer for the outputs at `outputs` (by target; "-" is standard output, which has no
    /// folder), protecting the run's `inputs`, every output's files and `others` (rejects files,
    /// `--metrics`, `--report`).
    init(inputs: [RunInput], outputs: [String], others: [String] = [], encryptors: [OpenPGPEncryptor?] = []) {
        self.encryptors = encryptors
        var protected: [String: String] = [:]
        var identities: [(String, UInt64, UInt64)] = []
        for input in inputs {
            protected[PrivateFile.canonical(input.path)] = input.what
            if let identity = PrivateFile.identity(input.path) { identities.append((input.what, identity.device, identity.inode)) }
        }
        for output in outputs + others where output != "-" {
            for file in SideFile.all(of: output) {
                protected[PrivateFile.canonical(file)] = "a file of the output \(output)"
            }
        }
        self.protected = protected
        self.inputs = identities
        folders = outputs.map { output in
            guard output != "-" else { return nil }
            let parent = (output as NSString).deletingLastPathComponent
            let path = parent.isEmpty ? "." : parent
            return Folder(path: path, output: output, canonical: PrivateFile.canonical(path))
        }
    }

    /// The row of `answer`, its binary labels' files written first. A file that cannot be
    /// written where its path says (a link on the way, something other than a regular file at
    /// its name, an input or an output's file) becomes the label's error 1406 and the row is
    /// partial; a failure of the disk (full, read-only, no permission) ends the run.
    func reveal(_ answer: FinishedRow.Answer, target: Int) throws(RunError) -> ResultRow {
        var (row, files) = answer.revealedWithFiles()
        for file in files {
            if let refusal = try write(file, target: target) {
                let name = row.labels[file.label].name
                row.labels[file.label].value = nil
                row.errors.append(RowError(code: .fileRefused, label: name, message: "label \(name): file \(file.path) \(refusal)"))
                if row.status == .ok { row.status = .partial }
            }
        }
        return row
    }

    /// Syncs the folders written in since the last sync, so that every renamed file's name is
    /// on disk.
    func sync() throws(RunError) {
        guard !dirty.isEmpty else { return }
        for folder in dirty {
            guard let base = try open(target: folder.target) else { continue }
            var fd = base
            var owned = false
            for name in folder.path {
                let next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                if owned { Glibc.close(fd) }
                // A folder replaced by a link since is not followed: there is nothing of ours to sync.
                guard next >= 0 else {
                    fd = -1
                    break
                }
                fd = next
                owned = true
            }
            guard fd >= 0 else { continue }
            let code = fsync(fd) == 0 ? nil : errno
            if owned { Glibc.close(fd) }
            if let code, code != EINVAL {
                let shown = ([folders[folder.target]!.path] + folder.path).joined(separator: "/")
                throw RunError.runtime(FileError(.sync, .folder, shown, purpose: "of label files for \(folders[folder.target]!.output)", errno: code))
            }
        }
        dirty.removeAll(keepingCapacity: true)
    }

    /// Closes the outputs' folders.
    func close() {
        for index in folders.indices where (folders[index]?.fd ?? -1) >= 0 {
            Glibc.close(folders[index]!.fd)
            folders[index]!.fd = -1
        }
    }

    /// The output folder of `target`, opened once (links to it are followed: a mounted volume
    /// often is one); nil for standard output.
    private func open(target: Int) throws(RunError) -> Int32? {
        guard let folder = folders[target] else { return nil }
        if folder.fd >= 0 { return folder.fd }
        let fd = Glibc.open(folder.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else {
            throw RunError.runtime(FileError(.open, .folder, folder.path, purpose: "of \(folder.output) to write label files", errno: errno))
        }
        folders[target]!.fd = fd
        return fd
    }

    /// Writes `file` below the output's folder; the reason it may not, in words (no value).
    private func write(_ file: PendingLabelFile, target: Int) throws(RunError) -> String? {
        guard let base = try open(target: target), let folder = folders[target] else {
            return "cannot be written: the output is standard output, which has no folder"
        }
        var segments = file.path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        let name = segments.removeLast()
        if let what = protected[(folder.canonical == "/" ? "" : folder.canonical) + "/" + file.path] {
            return "would replace \(what); label files never do"
        }
        func failure(_ code: Int32, _ doing: String) -> RunError {
            RunError.runtime(FileError(.write, .labelFile, "\(folder.path)/\(file.path)", purpose: "for \(folder.output) (\(doing))", errno: code))
        }
        // The folders below the output's, one at a time, never through a link.
        let fd: Int32
        switch try walk(segments, from: base, target: target, failure: failure) {
        case .folder(let opened): fd = opened
        case .refused(let reason): return reason
        }
        defer { if fd != base { Glibc.close(fd) } }
        if let refusal = try replace(name, in: fd, with: file.bytes, target: target, what: "\(folder.path)/\(file.path) for \(folder.output)",
                                     failure: failure) { return refusal }
        dirty.insert(DirtyFolder(target: target, path: segments))
        // Bounded: folders are synced now and then even if no checkpoint comes.
        if dirty.count >= 4096 { try sync() }
        return nil
    }

    /// How a walk down a label file's folders ended.
    private enum Walked {
        /// The innermost folder, open (the caller closes it unless it is the output's own).
        case folder(Int32)
        /// Refused, in words (no value).
        case refused(String)
    }

    /// Opens (and makes) the folders `segments` below `base`, never through a link; a folder
    /// made is marked for syncing.
    private func walk(_ segments: [String], from base: Int32, target: Int,
                      failure: (Int32, String) -> RunError) throws(RunError) -> Walked {
        var fd = base
        var walked: [String] = []
        // The folder open so far is closed unless it is handed back.
        var handedBack = false
        defer { if !handedBack && fd != base { Glibc.close(fd) } }
        for segment in segments {
            var created = false
            if mkdirat(fd, segment, 0o700) == 0 {
                created = true
                dirty.insert(DirtyFolder(target: target, path: walked))
            } else if errno != EEXIST {
                throw failure(errno, "creating its folder")
            }
            let next = openat(fd, segment, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            walked.append(segment)
            guard next >= 0 else {
                let code = errno
                var info = stat()
                if fstatat(fd, segment, &info, AT_SYMLINK_NOFOLLOW) == 0 {
                    if info.st_mode & S_IFMT == S_IFLNK {
                        return .refused("is refused: the folder \(walked.joined(separator: "/")) is a symbolic link (label files are never written through one)")
                    }
                    if info.st_mode & S_IFMT != S_IFDIR {
                        return .refused("is refused: \(walked.joined(separator: "/")) is not a folder")
                    }
                }
                throw failure(code, "opening its folder")
            }
            if created && fchmod(next, 0o700) != 0 {
                let code = errno
                Glibc.close(next)
                throw failure(code, "making its folder private")
            }
            if fd != base { Glibc.close(fd) }
            fd = next
        }
        handedBack = true
        return .folder(fd)
    }

    /// Replaces the regular file `name` in the folder `fd` with `bytes` (an OpenPGP message of
    /// them for an encrypted output), through a temporary file renamed into place; the reason
    /// it may not, in words.
    private func replace(_ name: String, in fd: Int32, with bytes: [UInt8], target: Int, what: String,
                         failure: (Int32, String) -> RunError) throws(RunError) -> String? {
        // Only a regular file is ever replaced, and never an input by another name.
        var info = stat()
        if fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 {
            switch info.st_mode & S_IFMT {
            case S_IFREG:
                if let input = inputs.first(where: { $0.device == UInt64(info.st_dev) && $0.inode == UInt64(info.st_ino) }) {
                    return "would replace \(input.what) (a link to it); label files never do"
                }
            case S_IFLNK: return "is refused: a symbolic link is there (label files are never written through one)"
            case S_IFDIR: return "is refused: a folder is there"
            default: return "is refused: something other than a regular file is there (a device, pipe or socket)"
            }
        }
        // The temporary name is the file's own, so a run killed while writing it leaves a file
        // that the row's next writing replaces; `%` followed by a letter is in no row's path.
        let temporary = "." + name + FileTemplate.temporarySuffix
        if fstatat(fd, temporary, &info, AT_SYMLINK_NOFOLLOW) == 0 && info.st_mode & S_IFMT == S_IFREG {
            unlinkat(fd, temporary, 0)
        }
        let out = openat(fd, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard out >= 0 else {
            if errno == EEXIST { return "is refused: \(temporary), its temporary name, is taken by something other than a file" }
            throw failure(errno, "creating its temporary file")
        }
        // The umask may have taken bits away; the mode is exactly 0600.
        if fchmod(out, 0o600) != 0 {
            let code = errno
            Glibc.close(out)
            unlinkat(fd, temporary, 0)
            throw failure(code, "making its temporary file private")
        }
        var code: Int32?
        if target < encryptors.count, let encryptor = encryptors[target] {
            // An encrypted output's label files are OpenPGP messages too: the bytes go to gpg
            // through a pipe, never to disk in the clear.
            do {
                try encryptor.encrypt(from: BytesSource(bytes), to: out)
            } catch {
                Glibc.close(out)
                unlinkat(fd, temporary, 0)
                throw RunError.runtime(OutputError.encryptionFailed(role: .labelFile, file: what, reason: (error as? CryptoError)?.message ?? "\(error)", kept: nil))
            }
        } else {
            code = bytes.withUnsafeBytes { PrivateFile.writeAll(out, $0) }
        }
        if code == nil && fsync(out) != 0 { code = errno }
        Glibc.close(out)
        if code == nil && renameat(fd, temporary, fd, name) != 0 { code = errno }
        if let code {
            unlinkat(fd, temporary, 0)
            if code == EISDIR || code == ENOTDIR { return "is refused: a folder is there" }
            throw failure(code, "writing it")
        }
        return nil
    }
}

/// Bytes in memory as the plaintext of an OpenPGP message.
private final class BytesSource: PlaintextSource {
    private let bytes: [UInt8]
    private var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let count = min(buffer.count, bytes.count - position)
        guard count > 0 else { return 0 }
        bytes.withUnsafeBytes { source in
            buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[position..<(position + count)]))
        }
        position += count
        return count
    }
}
