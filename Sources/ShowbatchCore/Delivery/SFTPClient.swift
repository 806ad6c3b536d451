import Foundation
import ShowbatchBasics
internal import CCurl
import ShowbatchManifest
#if canImport(Glibc)
import Glibc
#endif

/// Why an SFTP step failed, in words that hold no key material, and whether trying again can help.
struct DeliveryFailure: Error, Equatable, CustomStringConvertible {
    let message: String
    /// A dropped connection, a server down or stalled: the delivery is tried again after a pause.
    let retries: Bool

    var description: String { message }
}

/// SFTP through one libcurl easy handle (libssh2 underneath), blocking: the file is uploaded once
/// the run's requests are done, with nothing else going on. One handle for every step, so the
/// SSH session is kept between them.
final class SFTPClient {
    private let spec: DeliverSpec
    private let easy: UnsafeMutableRawPointer
    private let errors: UnsafeMutablePointer<CChar>
    /// The passphrase as a C string, wiped when the client goes.
    private let passphrase: UnsafeMutableRawBufferPointer?
    private let timeout: Duration

    /// Checks that the key and known hosts files can be read (links are followed: a Secret's
    /// mount), then sets up the handle.
    init(spec: DeliverSpec, timeout: Duration) throws(DeliveryFailure) {
        for (what, path) in [("the private key (deliver.key_file)", spec.keyFile), ("the known hosts file (deliver.known_hosts)", spec.knownHosts)] {
            do {
                _ = try FileDescriptor.openInput(path)
            } catch {
                throw DeliveryFailure(message: "cannot read \(what) \(path): \(error.reason); nothing was uploaded", retries: false)
            }
        }
        guard let easy = curl_easy_init() else { throw DeliveryFailure(message: "libcurl could not start", retries: false) }
        self.spec = spec
        self.easy = easy
        self.timeout = timeout
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
        errors.deallocate()
        if let passphrase {
            wipe(passphrase)
            passphrase.deallocate()
        }
    }

    /// Options every step sets again (a step may have changed them).
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
        // The host key must be in this file; without a key callback libcurl refuses any other.
        _ = sb_easy_setopt_pointer(easy, CURLOPT_SSH_KNOWNHOSTS, spec.knownHosts)
        _ = sb_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errors)
        _ = sb_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, Int(timeout.seconds * 1000))
        // A transfer that moves nothing for `timeout` is a stall, not a slow link.
        _ = sb_easy_setopt_long(easy, CURLOPT_LOW_SPEED_LIMIT, 1)
        _ = sb_easy_setopt_long(easy, CURLOPT_LOW_SPEED_TIME, max(1, Int(timeout.seconds)))
        _ = sb_easy_setopt_long(easy, CURLOPT_NEW_FILE_PERMS, 0o600)
        errors[0] = 0
    }

    /// The size of `name` in the folder, or nil when there is no such file.
    func size(of name: String) throws(DeliveryFailure) -> Int? {
        prepare(url: spec.destination.url(of: name))
        _ = sb_easy_setopt_long(easy, CURLOPT_NOBODY, 1)
        let code = curl_easy_perform(easy)
        if code == CURLE_REMOTE_FILE_NOT_FOUND { return nil }
        try check(code, doing: "look for \(name) on the server")
        var length: curl_off_t = -1
        _ = sb_easy_getinfo_offset(easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length)
        return length >= 0 ? Int(length) : nil
    }

    private static let digestWrite: sb_data_callback = { data, size, count, context in
        let stream = Unmanaged<FileDigest.Stream>.fromOpaque(context!).takeUnretainedValue()
        if let data { stream.update(data, size * count) }
        return size * count
    }

    /// The size and SHA-256 of `name` in the folder, read back (to tell a file of ours from
    /// another of the same size).
    func digest(of name: String) throws(DeliveryFailure) -> FileDigest {
        prepare(url: spec.destination.url(of: name))
        let stream = FileDigest.Stream()
        let context = Unmanaged.passRetained(stream)
        defer { context.release() }
        _ = sb_easy_setopt_callback(easy, CURLOPT_WRITEFUNCTION, Self.digestWrite)
        _ = sb_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, context.toOpaque())
        let code = curl_easy_perform(easy)
        try check(code, doing: "read \(name) back from the server to compare it")
        return stream.finish()
    }

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

    /// Uploads the file open at `fd` (from its start) as `name`, replacing a file of that name.
    func upload(_ fd: Int32, size: Int, as name: String) throws(DeliveryFailure) {
        guard lseek(fd, 0, SEEK_SET) == 0 else { throw DeliveryFailure(message: "cannot read the file to deliver: \(describeErrno(errno))", retries: false) }
        prepare(url: spec.destination.url(of: name))
        let source = Source(fd: fd)
        let context = Unmanaged.passRetained(source)
        defer { context.release() }
        _ = sb_easy_setopt_long(easy, CURLOPT_UPLOAD, 1)
        _ = sb_easy_setopt_offset(easy, CURLOPT_INFILESIZE_LARGE, curl_off_t(size))
        _ = sb_easy_setopt_callback(easy, CURLOPT_READFUNCTION, Self.read)
        _ = sb_easy_setopt_pointer(easy, CURLOPT_READDATA, context.toOpaque())
        let code = curl_easy_perform(easy)
        if source.failed != 0 { throw DeliveryFailure(message: "cannot read the file to deliver: \(describeErrno(source.failed))", retries: false) }
        try check(code, doing: "upload \(name)")
    }

    /// Renames `from` to `to` in the folder (an SFTP rename, which never replaces a file), and
    /// returns the size `to` then has.
    func rename(_ from: String, to: String) throws(DeliveryFailure) -> Int? {
        prepare(url: spec.destination.url(of: to))
        let command = "rename \"\(spec.destination.serverPath(of: from))\" \"\(spec.destination.serverPath(of: to))\""
        let quote = curl_slist_append(nil, command)
        defer { curl_slist_free_all(quote) }
        _ = sb_easy_setopt_pointer(easy, CURLOPT_QUOTE, quote)
        _ = sb_easy_setopt_long(easy, CURLOPT_NOBODY, 1)
        let code = curl_easy_perform(easy)
        try check(code, doing: "rename \(from) to \(to)")
        var length: curl_off_t = -1
        _ = sb_easy_getinfo_offset(easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length)
        return length >= 0 ? Int(length) : nil
    }

    /// Removes `name` from the folder, if it is there.
    func remove(_ name: String) {
        prepare(url: spec.destination.description)
        let quote = curl_slist_append(nil, "*rm \"\(spec.destination.serverPath(of: name))\"")
        defer { curl_slist_free_all(quote) }
        _ = sb_easy_setopt_pointer(easy, CURLOPT_QUOTE, quote)
        _ = sb_easy_setopt_long(easy, CURLOPT_NOBODY, 1)
        _ = curl_easy_perform(easy)
    }

    private func check(_ code: CURLcode, doing what: String) throws(DeliveryFailure) {
        guard code != CURLE_OK else { return }
        let detail = String(cString: errors)
        let words = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
        let server = "\(spec.destination.hostForURL):\(spec.destination.port)"
        switch code {
        case CURLE_PEER_FAILED_VERIFICATION:
            throw DeliveryFailure(message: "the host key of \(server) is not in the known hosts file \(spec.knownHosts), or differs from the one there: nothing was uploaded (no key is trusted on first use; add the processor's host key, checked with them)", retries: false)
        case CURLE_LOGIN_DENIED:
            throw DeliveryFailure(message: "\(server) refused user \(spec.user) with the key \(spec.keyFile), or the key could not be opened (a wrong or missing deliver.passphrase) (curl: \(words))", retries: false)
        case CURLE_REMOTE_ACCESS_DENIED, CURLE_REMOTE_FILE_NOT_FOUND, CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL:
            throw DeliveryFailure(message: "cannot \(what) in \(spec.destination): \(words)", retries: false)
        case CURLE_QUOTE_ERROR:
            throw DeliveryFailure(message: "cannot \(what) in \(spec.destination): the server refused (curl: \(words))", retries: false)
        case CURLE_COULDNT_CONNECT:
            throw DeliveryFailure(message: "cannot \(what): \(server) refused the connection (curl: \(words))", retries: true)
        case CURLE_OPERATION_TIMEDOUT:
            throw DeliveryFailure(message: "cannot \(what): \(server) did not answer within \(Units.text(timeout)) (curl: \(words))", retries: true)
        default:
            throw DeliveryFailure(message: "cannot \(what) in \(spec.destination) (curl: \(words))", retries: true)
        }
    }
}
