import Foundation
import ShowbatchBasics
internal import CCurl
import ShowbatchManifest
#if canImport(Glibc)
import Glibc
#endif

/// Why an SFTP step failed, in words that hold no key material, and what can fix it.
struct DeliveryFailure: Error, Equatable, CustomStringConvertible {
    enum Kind: Equatable {
        /// A server down, stalled or a dropped session: tried again after a pause, and by the next run.
        case retry
        /// Only a person fixes it (a host key refused, a login refused, no permission, a full disk,
        /// another file under the name, a hand-over whose outcome cannot be known): not tried again.
        case person
        /// A signal ended the wait.
        case interrupted
    }

    let message: String
    let kind: Kind

    init(_ message: String, _ kind: Kind) {
        self.message = message
        self.kind = kind
    }

    var retries: Bool { kind == .retry }
    var description: String { message }
}

/// An entry of the upload folder as the server lists it (its `lstat`: a link is a link).
struct RemoteEntry: Equatable, Sendable {
    enum Kind: Equatable, Sendable { case regular, link, directory, other }
    var kind: Kind
    var size: Int
}

/// SFTP through libcurl (libssh2 underneath), one operation at a time on one SSH session. Every
/// operation runs in a loop of its own that a signal ends within a tenth of a second, and that no
/// server can hold longer than `timeout` (connecting, listing, renaming) or than `timeout`
/// without progress (uploading). The host key is checked against known_hosts as OpenSSH reads
/// it (`KnownHosts`). Nothing is opened under a name that is not asked for: a folder is listed,
/// never stat'ed through a link; a rename and a removal name the folder, not the file.
final class SFTPClient {
    private let spec: DeliverSpec
    private let multi: UnsafeMutableRawPointer
    private let easy: UnsafeMutableRawPointer
    private let errors: UnsafeMutablePointer<CChar>
    /// The passphrase as a C string, wiped when the client goes.
    private let passphrase: UnsafeMutableRawBufferPointer?
    private let timeout: Duration
    private let isCancelled: () -> Bool
    /// The host key decision, for the callback libcurl asks.
    private let hostKey: HostKeyCheck
    /// The host's keys as plain lines libssh2 reads, in a private file of its own.
    private let knownHostsCopy: String
    private let server: String

    /// Reads the key and known hosts files (links are followed: a Secret's mount), then sets up
    /// the handles. `isCancelled` is asked ten times a second while an operation waits.
    init(spec: DeliverSpec, timeout: Duration, isCancelled: @escaping () -> Bool = { false }) throws(DeliveryFailure) {
        do {
            _ = try FileDescriptor.openInput(spec.keyFile)
        } catch {
            throw DeliveryFailure("cannot read the private key (deliver.key_file) \(spec.keyFile): \(error.reason); nothing was uploaded", .person)
        }
        let knownText: String
        do {
            let file = try FileDescriptor.openInput(spec.knownHosts)
            knownText = String(decoding: try file.readAll(limit: 1 << 22), as: UTF8.self)
        } catch {
            throw DeliveryFailure("cannot read the known hosts file (deliver.known_hosts) \(spec.knownHosts): \(error.reason); nothing was uploaded", .person)
        }
        server = "\(spec.destination.hostForURL):\(spec.destination.port)"
        let known = KnownHosts(text: knownText)
        hostKey = HostKeyCheck(known: known, host: spec.destination.host, port: spec.destination.port)
        // libssh2 asks the server for the key types the file it reads has: given only this host's.
        let copy = FileManager.default.temporaryDirectory.path + "/showbatch-known-hosts-\(RunOptions.newRunID())"
        let fd = open(copy, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw DeliveryFailure("cannot write \(copy): \(describeErrno(errno))", .retry) }
        let lines = Array(known.plainLines(host: spec.destination.host, port: spec.destination.port).utf8)
        let written = lines.withUnsafeBytes { PrivateFile.writeAll(fd, $0) }
        close(fd)
        if let written {
            unlink(copy)
            throw DeliveryFailure("cannot write \(copy): \(describeErrno(written))", .retry)
        }
        knownHostsCopy = copy
        guard let multi = curl_multi_init(), let easy = curl_easy_init() else {
            unlink(copy)
            throw DeliveryFailure("libcurl could not start", .retry)
        }
        self.multi = multi
        self.spec = spec
        self.easy = easy
        self.timeout = timeout
        self.isCancelled = isCancelled
        errors = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errors[0] = 0
        if let secret = spec.passphrase {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: secret.count + 1, alignment: 1)
            secret.withBytes { buffer.copyMemory(from: $0) }
            buffer[secret.count] = 0
            passphrase = buffer
        } else {
            passphrase = nil
        }
    }

    deinit {
        curl_easy_cleanup(easy)
        curl_multi_cleanup(multi)
        errors.deallocate()
        unlink(knownHostsCopy)
        if let passphrase {
            wipe(passphrase)
            passphrase.deallocate()
        }
    }

    /// Options every operation sets again (an operation may have changed them).
    private func prepare(url: String) {
        curl_easy_reset(easy)
        _ = sb_easy_setopt_pointer(easy, CURLOPT_URL, url)  // copied
        _ = sb_easy_setopt_pointer(easy, CURLOPT_PROTOCOLS_STR, "sftp")
        _ = sb_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        _ = sb_easy_setopt_pointer(easy, CURLOPT_USERNAME, spec.user)
        _ = sb_easy_setopt_long(easy, CURLOPT_SSH_AUTH_TYPES, Int(CURLSSH_AUTH_PUBLICKEY))
        _ = sb_easy_setopt_pointer(easy, CURLOPT_SSH_PRIVATE_KEYFILE, spec.keyFile)
        // Empty: libssh2 derives the public key from the private one.
        _ = sb_easy_setopt_pointer(easy, CURLOPT_SSH_PUBLIC_KEYFILE, "")
        if let passphrase { _ = sb_easy_setopt_pointer(easy, CURLOPT_KEYPASSWD, passphrase.baseAddress) }
        _ = sb_easy_setopt_pointer(easy, CURLOPT_SSH_KNOWNHOSTS, knownHostsCopy)
        _ = sb_easy_setopt_sshkey(easy, Self.keyCallback)
        _ = sb_easy_setopt_pointer(easy, CURLOPT_SSH_KEYDATA, Unmanaged.passUnretained(hostKey).toOpaque())
        _ = sb_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errors)
        _ = sb_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, max(1, Int(timeout.seconds * 1000)))
        _ = sb_easy_setopt_long(easy, CURLOPT_NEW_FILE_PERMS, 0o600)
        errors[0] = 0
    }

    /// libcurl asks it for the server's key: the known hosts file as OpenSSH reads it decides.
    private static let keyCallback: sb_sshkey_callback = { _, _, found, _, context in
        let check = Unmanaged<HostKeyCheck>.fromOpaque(context!).takeUnretainedValue()
        guard let found, found.pointee.len > 0, let bytes = found.pointee.key else {
            check.refusal = "offered no host key that can be checked"
            return Int32(CURLKHSTAT_REJECT.rawValue)
        }
        let key = Array(UnsafeRawBufferPointer(start: bytes, count: found.pointee.len))
        return check.accepts(key) ? Int32(CURLKHSTAT_FINE.rawValue) : Int32(CURLKHSTAT_REJECT.rawValue)
    }

    // MARK: Operations

    /// The entries of the upload folder whose names `wanted` takes, as the server's listing (its
    /// `lstat`) says them; a name not there is absent.
    func list(_ wanted: (String) -> Bool) throws(DeliveryFailure) -> [String: RemoteEntry] {
        prepare(url: spec.destination.description)
        let sink = Sink()
        let context = Unmanaged.passRetained(sink)
        defer { context.release() }
        _ = sb_easy_setopt_callback(easy, CURLOPT_WRITEFUNCTION, Self.collect)
        _ = sb_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, context.toOpaque())
        try check(perform(deadline: timeout), doing: "list the folder")
        return Self.entries(in: String(decoding: sink.bytes, as: UTF8.self), wanted)
    }

    /// The names in a listing (`ls -l` lines, as OpenSSH's server writes them; a link followed
    /// by ` -> target`), with their kind and size.
    static func entries(in listing: String, _ wanted: (String) -> Bool) -> [String: RemoteEntry] {
        var found: [String: RemoteEntry] = [:]
        for line in listing.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 9, let first = fields[0].first, let size = Int(fields[4]) else { continue }
            let kind: RemoteEntry.Kind = first == "-" ? .regular : first == "l" ? .link : first == "d" ? .directory : .other
            // The name is what follows the date (three fields); a link's ends before " -> ".
            var name = fields[8...].joined(separator: " ")
            if kind == .link, let arrow = name.range(of: " -> ") { name = String(name[..<arrow.lowerBound]) }
            if wanted(name) { found[name] = RemoteEntry(kind: kind, size: size) }
        }
        return found
    }

    /// Uploads the file open at `fd` (from its start) as `name` (libcurl creates or truncates it;
    /// `name` is one no one else knows). A server that takes nothing for `timeout` is a stall.
    func upload(_ fd: Int32, size: Int, as name: String) throws(DeliveryFailure) {
        // From its start; a pipe (the check's probe) has no start to go back to.
        guard lseek(fd, 0, SEEK_SET) == 0 || errno == ESPIPE else { throw DeliveryFailure("cannot read the file to deliver: \(describeErrno(errno))", .person) }
        prepare(url: spec.destination.url(of: name))
        let source = Source(fd: fd)
        let context = Unmanaged.passRetained(source)
        defer { context.release() }
        _ = sb_easy_setopt_long(easy, CURLOPT_UPLOAD, 1)
        _ = sb_easy_setopt_offset(easy, CURLOPT_INFILESIZE_LARGE, curl_off_t(size))
        _ = sb_easy_setopt_callback(easy, CURLOPT_READFUNCTION, Self.read)
        _ = sb_easy_setopt_pointer(easy, CURLOPT_READDATA, context.toOpaque())
        let code = perform(deadline: nil, stall: timeout)
        if source.failed != 0 { throw DeliveryFailure("cannot read the file to deliver: \(describeErrno(source.failed))", .person) }
        do {
            try check(code, doing: "upload \(name) to")
        } catch where error.kind == .retry {
            // A server that stops taking bytes may have a full disk, which no retry fixes.
            if let free = freeBytes(), free < size {
                throw DeliveryFailure("cannot upload \(name) to \(spec.destination): the server has \(free) bytes free and the file has \(size): no space left on the server's disk (\(error.message))", .person)
            }
            throw error
        }
    }

    /// Renames `from` to `to` in the folder (an SFTP rename, which OpenSSH's server never lets
    /// replace a file). Naming the folder, not the file: nothing is opened.
    func rename(_ from: String, to: String) throws(DeliveryFailure) {
        try quote("rename \"\(spec.destination.serverPath(of: from))\" \"\(spec.destination.serverPath(of: to))\"", doing: "rename \(from) to \(to) in")
    }

    /// Removes `name` from the folder (a link is removed, never followed); a name that is not
    /// there is no failure.
    func remove(_ name: String) throws(DeliveryFailure) {
        do {
            try quote("rm \"\(spec.destination.serverPath(of: name))\"", doing: "remove \(name) from")
        } catch where error.message.contains("No such file") {
            return
        }
    }

    /// The bytes free for us in the folder (the server's `statvfs`), when it says.
    func freeBytes() -> Int? {
        prepare(url: spec.destination.description)
        let sink = Sink()
        let context = Unmanaged.passRetained(sink)
        defer { context.release() }
        let command = curl_slist_append(nil, "statvfs \"\(spec.destination.serverPath(of: ""))\"")
        defer { curl_slist_free_all(command) }
        _ = sb_easy_setopt_pointer(easy, CURLOPT_QUOTE, command)
        _ = sb_easy_setopt_long(easy, CURLOPT_NOBODY, 1)
        _ = sb_easy_setopt_callback(easy, CURLOPT_HEADERFUNCTION, Self.collect)
        _ = sb_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, context.toOpaque())
        guard perform(deadline: timeout) == .done(CURLE_OK) else { return nil }
        var values: [String: Int] = [:]
        for line in String(decoding: sink.bytes, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, let value = Int(parts[1].trimmingCharacters(in: .whitespaces)) { values[String(parts[0])] = value }
        }
        guard let available = values["f_bavail"], let size = values["f_frsize"] ?? values["f_bsize"] else { return nil }
        return available.multipliedReportingOverflow(by: size).overflow ? Int.max : available * size
    }

    /// The size and SHA-256 of `name` in the folder, read back (to tell a file of ours from
    /// another of the same size that was there before any hand-over of ours began).
    func digest(of name: String) throws(DeliveryFailure) -> FileDigest {
        prepare(url: spec.destination.url(of: name))
        let stream = FileDigest.Stream()
        let context = Unmanaged.passRetained(stream)
        defer { context.release() }
        _ = sb_easy_setopt_callback(easy, CURLOPT_WRITEFUNCTION, Self.digestWrite)
        _ = sb_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, context.toOpaque())
        try check(perform(deadline: nil, stall: timeout), doing: "read \(name) back from")
        return stream.finish()
    }

    private func quote(_ command: String, doing what: String) throws(DeliveryFailure) {
        prepare(url: spec.destination.description)
        let list = curl_slist_append(nil, command)
        defer { curl_slist_free_all(list) }
        _ = sb_easy_setopt_pointer(easy, CURLOPT_QUOTE, list)
        _ = sb_easy_setopt_long(easy, CURLOPT_NOBODY, 1)
        try check(perform(deadline: timeout), doing: what)
    }

    // MARK: The loop every operation runs in

    /// How an operation ended.
    private enum Ended: Equatable {
        case done(CURLcode)
        /// Nothing moved for the stall limit, or the deadline passed.
        case stalled
        case interrupted
    }

    /// Runs the prepared transfer: ended by libcurl, by `deadline` (the whole operation), by
    /// `stall` without a byte moving, or by a signal; never longer.
    private func perform(deadline: Duration?, stall: Duration? = nil) -> Ended {
        curl_multi_add_handle(multi, easy)
        defer { curl_multi_remove_handle(multi, easy) }
        let start = ContinuousClock.now
        var lastMoved = start
        var moved: (curl_off_t, curl_off_t) = (-1, -1)
        while true {
            var running: Int32 = 0
            curl_multi_perform(multi, &running)
            var left: Int32 = 0
            while let message = curl_multi_info_read(multi, &left) {
                if message.pointee.msg == CURLMSG_DONE { return .done(sb_message_result(message)) }
            }
            if running == 0 { return .done(CURLE_OK) }
            if isCancelled() { return .interrupted }
            let now = ContinuousClock.now
            if let deadline, now - start > deadline { return .stalled }
            if let stall {
                var sent: curl_off_t = 0, received: curl_off_t = 0
                _ = sb_easy_getinfo_offset(easy, CURLINFO_SIZE_UPLOAD_T, &sent)
                _ = sb_easy_getinfo_offset(easy, CURLINFO_SIZE_DOWNLOAD_T, &received)
                if (sent, received) != moved {
                    moved = (sent, received)
                    lastMoved = now
                } else if now - lastMoved > stall {
                    return .stalled
                }
            }
            var ready: Int32 = 0
            _ = sb_multi_poll(multi, 100, &ready)
        }
    }

    /// Turns an operation's end into a failure, in the server's words where it gave any.
    private func check(_ ended: Ended, doing what: String) throws(DeliveryFailure) {
        let code: CURLcode
        switch ended {
        case .interrupted: throw DeliveryFailure("interrupted while trying to \(what) \(spec.destination)", .interrupted)
        case .stalled: throw DeliveryFailure("cannot \(what) \(spec.destination): \(server) did not answer within \(Units.text(timeout))", .retry)
        case .done(let done): code = done
        }
        guard code != CURLE_OK else { return }
        let detail = String(cString: errors)
        let words = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
        if let refusal = hostKey.refusal {
            throw DeliveryFailure("the host key of \(server) \(refusal) (known hosts file \(spec.knownHosts)): nothing was uploaded (no key is trusted on first use; check the processor's host key with them)", .person)
        }
        switch code {
        case CURLE_PEER_FAILED_VERIFICATION:
            throw DeliveryFailure("the host key of \(server) is not in the known hosts file \(spec.knownHosts), or differs from the one there: nothing was uploaded (no key is trusted on first use; add the processor's host key, checked with them)", .person)
        case CURLE_LOGIN_DENIED:
            throw DeliveryFailure("\(server) refused user \(spec.user) with the key \(spec.keyFile), or the key could not be opened (a wrong or missing deliver.passphrase) (curl: \(words))", .person)
        case CURLE_REMOTE_DISK_FULL:
            throw DeliveryFailure("cannot \(what) \(spec.destination): the server says its disk is full (\(Self.serverWords(words)))", .person)
        case CURLE_REMOTE_ACCESS_DENIED, CURLE_REMOTE_FILE_NOT_FOUND, CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL, CURLE_QUOTE_ERROR:
            throw DeliveryFailure("cannot \(what) \(spec.destination): the server answered \(Self.serverWords(words))", .person)
        case CURLE_COULDNT_CONNECT:
            throw DeliveryFailure("cannot \(what) \(spec.destination): \(server) refused the connection (curl: \(words))", .retry)
        case CURLE_OPERATION_TIMEDOUT:
            throw DeliveryFailure("cannot \(what) \(spec.destination): \(server) did not answer within \(Units.text(timeout)) (curl: \(words))", .retry)
        default:
            throw DeliveryFailure("cannot \(what) \(spec.destination) (curl: \(words))", .retry)
        }
    }

    /// libcurl's words for an SFTP status (`Upload failed: Permission denied (3/-31)`) as the
    /// server's answer: `Permission denied (SFTP status 3)`.
    static func serverWords(_ text: String) -> String {
        var words = text
        for prefix in ["Upload failed: ", "rename command failed: ", "rm command failed: ", "Could not open remote file for reading: ",
                       "Could not open directory for reading: ", "Creating the dir/file failed: "] where words.hasPrefix(prefix) {
            words = String(words.dropFirst(prefix.count))
        }
        if let open = words.lastIndex(of: "("), words.hasSuffix(")"), let slash = words[open...].firstIndex(of: "/"),
           let status = Int(words[words.index(after: open)..<slash]) {
            return words[..<open].trimmingCharacters(in: .whitespaces) + " (SFTP status \(status))"
        }
        return words
    }

    // MARK: Callbacks

    private final class Source {
        let fd: Int32
        var failed: Int32 = 0
        init(fd: Int32) { self.fd = fd }
    }

    private static let read: sb_data_callback = { buffer, size, count, context in
        let source = Unmanaged<Source>.fromOpaque(context!).takeUnretainedValue()
        while true {
            let got = Glibc.read(source.fd, buffer, size * count)
            if got >= 0 { return got }
            if errno == EINTR { continue }
            source.failed = errno
            return Int(CURL_READFUNC_ABORT)
        }
    }

    private final class Sink {
        var bytes: [UInt8] = []
    }

    /// Keeps what the server sends (a listing, `statvfs` lines), up to 64 MiB.
    private static let collect: sb_data_callback = { data, size, count, context in
        let sink = Unmanaged<Sink>.fromOpaque(context!).takeUnretainedValue()
        if let data, sink.bytes.count < 64 << 20 {
            sink.bytes.append(contentsOf: UnsafeRawBufferPointer(start: data, count: size * count))
        }
        return size * count
    }

    private static let digestWrite: sb_data_callback = { data, size, count, context in
        let stream = Unmanaged<FileDigest.Stream>.fromOpaque(context!).takeUnretainedValue()
        if let data { stream.update(data, size * count) }
        return size * count
    }
}

/// What libcurl's host key callback decides with, and why it refused.
private final class HostKeyCheck {
    let known: KnownHosts
    let host: String
    let port: Int
    /// Why the last key was refused, in words (after "the host key of HOST:PORT").
    var refusal: String?

    init(known: KnownHosts, host: String, port: Int) {
        self.known = known
        self.host = host
        self.port = port
    }

    func accepts(_ key: [UInt8]) -> Bool {
        switch known.check(host: host, port: port, key: key) {
        case .known:
            refusal = nil
            return true
        case .revoked(let line):
            refusal = "is revoked (@revoked, line \(line))"
        case .changed(let lines):
            refusal = "differs from the one there (line\(lines.count == 1 ? "" : "s") \(lines.map(String.init).joined(separator: ", "))): it changed, or this is another server"
        case .unknown:
            refusal = "is not there (no line for \(KnownHosts.lookupName(host: host, port: port)) holds a key of its type)"
        }
        return false
    }
}
