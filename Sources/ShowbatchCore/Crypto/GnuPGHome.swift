import Foundation
import ShowbatchBasics
import ShowbatchManifest
#if canImport(Glibc)
import Glibc
#endif

/// A private GnuPG home for one run: a new folder (mode 0700) holding only the recipients'
/// public keys and a gpg.conf showbatch wrote, made in a TMPDIR where no other user can rename
/// it or put another in its place. GnuPG is given the folder by its path, so the folder is held
/// open and checked before each GnuPG call: still at its path (same device and inode), still this
/// user's and private, and its gpg.conf still the file written here (a `group` line in another
/// would add a recipient).
final class GnuPGHome {
    let path: String
    private let fd: Int32
    private let folder: (device: UInt64, inode: UInt64)
    private let conf: (device: UInt64, inode: UInt64, size: Int)

    /// The file in a private home that names the process it belongs to.
    static let ownerFile = "showbatch.pid"
    /// gpg-agent runs for it (a secret key signs): stopped whenever the home is removed.
    private let agent: Bool
    private static func confText(agent: Bool) -> String {
        (agent ? "# showbatch's private GnuPG home, for one run: recipients' public keys and our signing key.\n"
               : "# showbatch's private GnuPG home, for one run: recipients' public keys only.\nno-autostart\n") + confRest
    }
    private static let confRest = """
        no-greeting
        no-permission-warning
        no-auto-key-retrieve
        no-random-seed-file

        """

    /// Makes a new home in `TMPDIR` (or `/tmp`), which no other user may be able to replace it in.
    /// With `agent`, gpg-agent may start for it (a secret key is used only through one), taking
    /// passphrases through loopback pinentry only.
    init(environment: [String: String] = ProcessInfo.processInfo.environment, agent: Bool = false) throws(CryptoError) {
        self.agent = agent
        let base = environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        if let problem = Self.unsafeBase(base) {
            throw CryptoError(.io, "cannot make a private GnuPG home in \(base): \(problem); set TMPDIR to a folder of your own (mode 0700)")
        }
        Self.removeAbandoned(in: base)
        var template = Array((base + "/showbatch-gnupg-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer in
            mkdtemp(buffer.baseAddress!).map { String(cString: $0) }
        }
        guard let path = made else {
            throw CryptoError(.io, "cannot make a private GnuPG home in \(base): \(describeErrno(errno))")
        }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        var info = stat()
        // mkdtemp makes it 0700 whatever the umask; what is held must be that folder, still ours.
        guard fd >= 0, fstat(fd, &info) == 0, info.st_uid == geteuid(), info.st_mode & 0o777 == 0o700 else {
            if fd >= 0 { Glibc.close(fd) }
            throw CryptoError(.io, "cannot make a private GnuPG home in \(base): \(path) was replaced as it was made")
        }
        self.path = path
        self.fd = fd
        folder = (UInt64(info.st_dev), UInt64(info.st_ino))
        do throws(CryptoError) {
            try Self.writeNew(fd, "gpg.conf", Self.confText(agent: agent), in: path)
            // A fixed S2K count spares the agent its calibration (a second and more on a slow
            // machine) when it first stores the imported key: in this home only, removed with it.
            // No passphrase is cached: a run killed before it could stop the agent leaves no
            // key unlocked in it.
            if agent {
                try Self.writeNew(fd, "gpg-agent.conf", "allow-loopback-pinentry\nno-allow-external-cache\ns2k-count 65536\ndefault-cache-ttl 0\nmax-cache-ttl 0\n",
                                  in: path)
            }
            try Self.writeNew(fd, Self.ownerFile, "\(getpid())\n", in: path)
            var written = stat()
            guard fstatat(fd, "gpg.conf", &written, AT_SYMLINK_NOFOLLOW) == 0 else {
                throw CryptoError(.io, "cannot set up a private GnuPG home: \(path)/gpg.conf: \(describeErrno(errno))")
            }
            conf = (UInt64(written.st_dev), UInt64(written.st_ino), Int(written.st_size))
        } catch {
            Glibc.close(fd)
            Self.remove(path)
            throw error
        }
    }

    deinit { Glibc.close(fd) }

    /// Refuses to go on when the home is not the one made here, or its gpg.conf not the one
    /// written here: before every GnuPG call.
    func check() throws(CryptoError) {
        var held = stat(), atPath = stat(), written = stat()
        let problem: String?
        if fstat(fd, &held) != 0 || lstat(path, &atPath) != 0 || held.st_dev != atPath.st_dev || held.st_ino != atPath.st_ino
            || UInt64(held.st_dev) != folder.device || UInt64(held.st_ino) != folder.inode {
            problem = "\(path) is no longer the folder showbatch made (it was moved or replaced)"
        } else if held.st_uid != geteuid() || held.st_mode & 0o077 != 0 {
            problem = "\(path) is no longer private (mode \(String(held.st_mode & 0o7777, radix: 8)), owner uid \(held.st_uid))"
        } else if fstatat(fd, "gpg.conf", &written, AT_SYMLINK_NOFOLLOW) != 0 || UInt64(written.st_dev) != conf.device
                    || UInt64(written.st_ino) != conf.inode || Int(written.st_size) != conf.size || written.st_nlink != 1 {
            problem = "\(path)/gpg.conf is not the one showbatch wrote (another could add recipients)"
        } else {
            problem = nil
        }
        if let problem {
            throw CryptoError(.io, "the private GnuPG home cannot be trusted: \(problem); nothing is encrypted with it")
        }
    }

    /// Removes the home (stopping any daemon that runs for it). Idempotent.
    func remove() { Self.remove(path, stoppingAgent: agent) }

    /// Why `base` cannot hold a private home, or nil: another user (root aside) owns it, or others
    /// can write it without the sticky bit, so they could rename the home and put their own there.
    /// (A folder that is not there, or is no folder, is told by mkdtemp, in the system's words.)
    static func unsafeBase(_ base: String) -> String? {
        switch PrivateFile.replaceableBy(base) {
        case nil: return nil
        case .owner(let uid)?: return "it belongs to \(PrivateFile.userName(uid)), who could replace the home in it"
        case .writable(let mode)?: return "other users can write it and it has no sticky bit (mode \(String(mode, radix: 8))), so they could replace the home in it"
        }
    }

    /// Writes `text` to a new file `name` in the folder `fd` (never over one that is there).
    private static func writeNew(_ fd: Int32, _ name: String, _ text: String, in path: String) throws(CryptoError) {
        let file = openat(fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard file >= 0 else {
            throw CryptoError(.io, "cannot set up a private GnuPG home: \(path)/\(name): \(describeErrno(errno))")
        }
        defer { Glibc.close(file) }
        let bytes = Array(text.utf8)
        if let code = bytes.withUnsafeBytes({ PrivateFile.writeAll(file, $0) }) {
            throw CryptoError(.io, "cannot set up a private GnuPG home: \(path)/\(name): \(describeErrno(code))")
        }
    }

    /// Removes the private homes in `base` that runs killed before they could remove them
    /// (SIGKILL, OOM): each holds public keys only, but they would pile up night after night. A
    /// home is abandoned when it is this user's folder, untouched for an hour, and the process
    /// its owner file names is gone; one without an owner file is left alone.
    static func removeAbandoned(in base: String) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: base) else { return }
        for name in names where name.hasPrefix("showbatch-gnupg-") {
            let home = base + "/" + name
            var info = stat()
            // One that holds our signing key goes as soon as its run is gone, with its agent.
            let secret = !((try? FileManager.default.contentsOfDirectory(atPath: home + "/private-keys-v1.d")) ?? []).isEmpty
            guard lstat(home, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == geteuid(),
                  secret || time(nil) - info.st_mtim.tv_sec > 3600,
                  let text = PrivateFile.readText(home + "/" + ownerFile, limit: 32),
                  let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 0,
                  kill(pid, 0) == -1 && errno == ESRCH else { continue }
            remove(home, stoppingAgent: secret)
        }
    }

    /// Removes a private home, first stopping any daemon that runs for it (its socket is there).
    /// With `stoppingAgent`, gpgconf is asked to stop it even when its socket lives elsewhere
    /// (`/run/user/UID/gnupg`).
    static func remove(_ home: String, stoppingAgent: Bool = false) {
        let sockets = (try? FileManager.default.contentsOfDirectory(atPath: home))?.filter { $0.hasPrefix("S.") } ?? []
        if !sockets.isEmpty || stoppingAgent {
            let gpgconf = Process()
            gpgconf.executableURL = URL(fileURLWithPath: GPGME.gpgconfPath)
            gpgconf.arguments = ["--homedir", home, "--kill", "all"]
            gpgconf.standardOutput = FileHandle.nullDevice
            gpgconf.standardError = FileHandle.nullDevice
            if (try? gpgconf.run()) != nil { gpgconf.waitUntilExit() }
        }
        // A gpg that GPGME stopped early (a failed write) may still be ending, and writing a file
        // into the home as the folder is emptied; removal is tried again until the folder is gone.
        for _ in 0..<100 {
            try? FileManager.default.removeItem(atPath: home)
            if case .none = PrivateFile.inspect(home) { return }
            usleep(10_000)
        }
    }
}
