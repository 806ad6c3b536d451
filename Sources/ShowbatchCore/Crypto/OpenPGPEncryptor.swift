internal import CGPGME
import Foundation
import ShowbatchBasics
import ShowbatchManifest
#if canImport(Glibc)
import Glibc
#endif

/// Encrypts plaintext streams to the recipients' OpenPGP public keys with GnuPG, through GPGME.
///
/// Works in a private GnuPG home of its own (a new temporary folder, mode 0700, removed by
/// `close`) that holds only the recipients' public keys, so the user's keyrings and settings
/// play no part, and "always trust" means exactly these keys. Its gpg.conf keeps gpg-agent and
/// dirmngr from starting (public-key encryption needs neither); should one run all the same,
/// `close` stops it. gpg's diagnostics go to GPGME, not to the user's terminal.
package final class OpenPGPEncryptor {
    /// The recipients' primary key fingerprints, in the order given (a key given twice, once).
    package let fingerprints: [String]
    /// When each recipient's key stops being one that can be encrypted to (Unix time), for keys
    /// that expire at all: the primary key's expiry, or the last valid encryption subkey's.
    package let expiries: [String: Int]
    /// The private GnuPG home's path; nil once closed.
    var home: String? { privateHome?.path }
    private var privateHome: GnuPGHome?
    private var context: gpgme_ctx_t?
    private var keys: [gpgme_key_t?]
    /// The key IDs each recipient's messages may be encrypted to: its subkeys that can encrypt.
    private let recipientKeyIDs: [Set<String>]
    private let armor: Bool
    private let compress: Bool
    /// Our key, which signs each message (`encrypt.sign`).
    private var signer: SigningKey?
    /// The signing key's fingerprint.
    package var signerFingerprint: String? { signer?.fingerprint }

    /// Imports `recipients` into a private GnuPG home and checks each is a public key that can
    /// encrypt; throws the first problem. `armor` writes ASCII-armored output; `compress` lets
    /// gpg compress before encrypting (smaller output, slower).
    /// With `sign`, each message is also signed by that secret key, checked now.
    package init(recipients: [RecipientFile], armor: Bool = false, compress: Bool = false, sign: SignSpec? = nil) throws(CryptoError) {
        self.armor = armor
        self.compress = compress
        if recipients.isEmpty { throw CryptoError(.recipient, "there is no recipient to encrypt to") }
        let session = try KeySession(agent: sign != nil)
        var found: [(fingerprint: String, key: gpgme_key_t)] = []
        for file in recipients {
            switch session.load(file) {
            case .success(let key):
                if found.contains(where: { $0.fingerprint == key.fingerprint }) {
                    gpgme_key_unref(key.key)
                } else {
                    found.append(key)
                }
            case .failure(let error):
                for key in found { gpgme_key_unref(key.key) }
                session.close()
                throw error
            }
        }
        if let sign, let context = session.context {
            do {
                signer = try SigningKey(sign, context: context, session: session)
            } catch {
                for key in found { gpgme_key_unref(key.key) }
                session.close()
                throw error
            }
        }
        fingerprints = found.map(\.fingerprint)
        var expiries: [String: Int] = [:]
        for key in found { if let time = Self.expiry(key.key.pointee) { expiries[key.fingerprint] = time } }
        if let signer, let time = signer.expiry { expiries[signer.fingerprint] = time }
        self.expiries = expiries
        keys = found.map(\.key) + [nil]
        recipientKeyIDs = found.map { Self.encryptionKeyIDs($0.key.pointee) }
        privateHome = session.home
        context = session.takeContext()
        gpgme_set_armor(context, armor ? 1 : 0)
    }

    deinit { close() }

    /// Checks `recipients` as `init` does, without encrypting: every problem, in order (none when
    /// all can be encrypted to). For `validate`.
    package static func validate(_ recipients: [RecipientFile]) -> [RecipientProblem] {
        let session: KeySession
        do { session = try KeySession() } catch {
            return recipients.indices.map { RecipientProblem(index: $0, refusal: error) }
        }
        defer { session.close() }
        var problems: [RecipientProblem] = []
        for (index, file) in recipients.enumerated() {
            switch session.load(file) {
            case .success(let key): gpgme_key_unref(key.key)
            case .failure(let error): problems.append(RecipientProblem(index: index, refusal: error))
            }
        }
        return problems
    }

    /// Encrypts everything `source` gives, to every recipient, as one OpenPGP message written to
    /// `fd` (the caller's; not closed, not synced); the number of bytes written. The plaintext goes
    /// from `source` to gpg through a pipe, never through a file. Rethrows an error of `source` as
    /// it is; GnuPG's and the output's failures are `CryptoError`s.
    @discardableResult
    package func encrypt(from source: PlaintextSource, to fd: Int32) throws -> Int {
        guard let context else { preconditionFailure("encrypt after close") }
        let stream = Stream(source: source, fd: fd)
        let handle = Unmanaged.passUnretained(stream).toOpaque()
        // GPGME keeps the pointer to the callbacks for the data object's life.
        let plainCallbacks = UnsafeMutablePointer<gpgme_data_cbs>.allocate(capacity: 1)
        plainCallbacks.initialize(to: gpgme_data_cbs(read: { handle, buffer, size in
            let stream = Unmanaged<Stream>.fromOpaque(handle!).takeUnretainedValue()
            return stream.pull(into: UnsafeMutableRawBufferPointer(start: buffer, count: size))
        }, write: nil, seek: nil, release: nil))
        let cipherCallbacks = UnsafeMutablePointer<gpgme_data_cbs>.allocate(capacity: 1)
        cipherCallbacks.initialize(to: gpgme_data_cbs(read: nil, write: { handle, buffer, size in
            let stream = Unmanaged<Stream>.fromOpaque(handle!).takeUnretainedValue()
            return stream.push(UnsafeRawBufferPointer(start: buffer, count: size))
        }, seek: nil, release: nil))
        var plain: gpgme_data_t?
        var cipher: gpgme_data_t?
        defer {
            gpgme_data_release(plain)
            gpgme_data_release(cipher)
            plainCallbacks.deallocate()
            cipherCallbacks.deallocate()
        }
        var status = gpgme_data_new_from_cbs(&plain, plainCallbacks, handle)
        if status == 0 { status = gpgme_data_new_from_cbs(&cipher, cipherCallbacks, handle) }
        if status != 0 {
            throw CryptoError(.engine, "GPGME cannot set up the encryption: \(GPGME.describe(status))")
        }
        var flags = GPGME_ENCRYPT_ALWAYS_TRUST.rawValue | GPGME_ENCRYPT_NO_ENCRYPT_TO.rawValue
        if !compress { flags |= GPGME_ENCRYPT_NO_COMPRESS.rawValue }
        try privateHome?.check()
        status = withExtendedLifetime(stream) {
            keys.withUnsafeMutableBufferPointer { keys in
                signer == nil
                    ? gpgme_op_encrypt(context, keys.baseAddress, gpgme_encrypt_flags_t(flags), plain, cipher)
                    : gpgme_op_encrypt_sign(context, keys.baseAddress, gpgme_encrypt_flags_t(flags), plain, cipher)
            }
        }
        if let failure = stream.failure { throw failure }
        if let code = stream.writeErrno {
            throw CryptoError(.io, "cannot write the encrypted output: \(describeErrno(code))")
        }
        guard status == 0 else {
            if let result = gpgme_op_encrypt_result(context), let invalid = result.pointee.invalid_recipients {
                let fingerprint = invalid.pointee.fpr.map { String(cString: $0) } ?? "?"
                throw CryptoError(.engine, "GnuPG refused the recipient key \(fingerprint): \(GPGME.describe(invalid.pointee.reason))")
            }
            throw CryptoError(.engine, "GnuPG could not encrypt: \(GPGME.describe(status))")
        }
        if let signer, gpgme_op_sign_result(context)?.pointee.signatures == nil {
            throw CryptoError(.engine, "GnuPG encrypted the message but did not sign it with \(signer.fingerprint)")
        }
        if let problem = unexpectedRecipients(MessageRecipients.read(stream.head, armored: armor)) {
            throw CryptoError(.engine, "the encrypted message cannot be used: \(problem)")
        }
        return stream.written
    }

    /// What is wrong with whom a message is encrypted to, or nil when it is exactly the
    /// recipients: each of them, and no other key or passphrase.
    func unexpectedRecipients(_ reading: MessageRecipients.Reading) -> String? {
        switch reading {
        case .unreadable:
            return "its first packets do not say whom it is encrypted to, so it cannot be checked"
        case .passphrase:
            return "it can also be opened with a passphrase (GnuPG was told so by a setting showbatch did not make)"
        case .keys(let ids):
            let known = recipientKeyIDs.reduce(into: Set<String>()) { $0.formUnion($1) }
            if let other = ids.first(where: { !known.contains($0) }) {
                return "it is also encrypted to the key \(other), which is no recipient's (GnuPG was told so by a setting showbatch did not make, such as a group in a gpg.conf)"
            }
            if let missing = recipientKeyIDs.indices.first(where: { recipientKeyIDs[$0].isDisjoint(with: ids) }) {
                return "it is not encrypted to the recipient \(fingerprints[missing])"
            }
            return nil
        }
    }

    /// The key IDs of `key`'s subkeys (the primary key among them) that can encrypt.
    private static func encryptionKeyIDs(_ key: _gpgme_key) -> Set<String> {
        var ids: Set<String> = []
        var subkey = key.subkeys
        while let current = subkey {
            if current.pointee.can_encrypt != 0, let id = current.pointee.keyid { ids.insert(String(cString: id).uppercased()) }
            subkey = current.pointee.next
        }
        return ids
    }

    /// Releases the keys and the context and removes the private GnuPG home (stopping any
    /// gpg-agent that runs for it). Idempotent.
    /// When `key` can no longer be encrypted to, or nil when it never expires.
    /// With `signing`, when it can no longer sign (its signing subkeys count instead).
    static func expiry(_ key: _gpgme_key, signing: Bool = false) -> Int? {
        let primary = key.subkeys.map { Int($0.pointee.expires) } ?? 0
        var last: Int? = 0
        var subkey = key.subkeys
        while let current = subkey {
            let sub = current.pointee
            if (signing ? sub.can_sign : sub.can_encrypt) != 0 && sub.revoked == 0 && sub.expired == 0 && sub.disabled == 0 && sub.invalid == 0 {
                // One that never expires keeps the key usable.
                last = sub.expires == 0 ? nil : last.map { max($0, Int(sub.expires)) }
            }
            subkey = sub.next
        }
        let candidates = [primary > 0 ? primary : nil, last.flatMap { $0 > 0 ? $0 : nil }].compactMap { $0 }
        return candidates.min()
    }

    /// A warning for each recipient whose key expires within `days` days of `now`.
    package func expiryWarnings(within days: Int, for output: String, now: Date = Date()) -> [String] {
        guard days > 0 else { return [] }
        return (fingerprints + (signer.map { [$0.fingerprint] } ?? [])).compactMap { fingerprint in
            guard let time = expiries[fingerprint] else { return nil }
            let left = Double(time) - now.timeIntervalSince1970
            guard left < Double(days) * 86_400 else { return nil }
            let day = Timestamp.rfc3339(Date(timeIntervalSince1970: Double(time))).prefix(10)
            let when = "expires on \(day) (in \(max(0, Int(left / 86_400))) day\(Int(left / 86_400) == 1 ? "" : "s"); encrypt.warn_expiry is \(days)d)"
            return fingerprint == signer?.fingerprint
                ? "the signing key \(fingerprint) of \(output) \(when): make a new signing key and give the processor its public key before then"
                : "the recipient key \(fingerprint) of \(output) \(when): get the processor's new public key before then"
        }
    }

    package func close() {
        for key in keys { if let key { gpgme_key_unref(key) } }
        keys = []
        signer = nil
        if let context { gpgme_release(context) }
        context = nil
        privateHome?.remove()
        privateHome = nil
    }

    /// The plaintext pulled into gpg and the message pushed out, between GPGME's callbacks.
    private final class Stream {
        let source: PlaintextSource
        let fd: Int32
        var failure: (any Error)?
        var writeErrno: Int32?
        var written = 0
        /// The message's first bytes, which say whom it is encrypted to.
        var head: [UInt8] = []

        init(source: PlaintextSource, fd: Int32) {
            self.source = source
            self.fd = fd
        }

        func pull(into buffer: UnsafeMutableRawBufferPointer) -> Int {
            do {
                return try source.read(into: buffer)
            } catch {
                // GPGME sees an I/O error and ends the operation; the source's error is thrown.
                failure = error
                errno = EIO
                return -1
            }
        }

        func push(_ bytes: UnsafeRawBufferPointer) -> Int {
            if let code = PrivateFile.writeAll(fd, bytes) {
                writeErrno = code
                errno = code
                return -1
            }
            if head.count < 1 << 16 { head += bytes.prefix(1 << 16 - head.count) }
            written += bytes.count
            return bytes.count
        }
    }
}

/// GPGME's one-time set-up and its errors in words.
enum GPGME {
    /// The oldest GPGME with everything used here (Debian 12 ships 1.18).
    static let minimumVersion = "1.13.0"

    /// Whether GPGME is new enough and gpg can be run; checked once per process.
    static let ready: Result<Void, CryptoError> = {
        guard gpgme_check_version(minimumVersion) != nil else {
            let found = gpgme_check_version(nil).map { String(cString: $0) } ?? "?"
            return .failure(CryptoError(.engine, "GPGME \(found) is too old: showbatch needs \(minimumVersion) or later"))
        }
        let status = gpgme_engine_check_version(GPGME_PROTOCOL_OpenPGP)
        guard status == 0 else {
            return .failure(CryptoError(.engine, "GnuPG cannot be run (\(describe(status))): install the gnupg package"))
        }
        return .success(())
    }()

    /// Where gpgconf is, as GPGME found it.
    static var gpgconfPath: String {
        var info: gpgme_engine_info_t?
        if gpgme_get_engine_info(&info) == 0 {
            var entry = info
            while let current = entry {
                if current.pointee.protocol == GPGME_PROTOCOL_GPGCONF, let file = current.pointee.file_name {
                    return String(cString: file)
                }
                entry = current.pointee.next
            }
        }
        return "/usr/bin/gpgconf"
    }

    /// A GPGME error in words (gpgme_strerror).
    static func describe(_ status: gpgme_error_t) -> String {
        String(cString: gpgme_strerror(status))
    }
}

/// A private GnuPG home with a GPGME context on it, that loads and checks recipient key files.
final class KeySession {
    let home: GnuPGHome
    private(set) var context: gpgme_ctx_t?

    /// With `agent`, gpg-agent may start for the home (a secret key needs it).
    init(agent: Bool = false) throws(CryptoError) {
        try GPGME.ready.get()
        home = try GnuPGHome(agent: agent)
        var context: gpgme_ctx_t?
        var status = gpgme_new(&context)
        if status == 0 { status = gpgme_set_protocol(context, GPGME_PROTOCOL_OpenPGP) }
        if status == 0 { status = gpgme_ctx_set_engine_info(context, GPGME_PROTOCOL_OpenPGP, nil, home.path) }
        guard status == 0, let context else {
            gpgme_release(context)
            home.remove()
            throw CryptoError(.engine, "GPGME cannot start: \(GPGME.describe(status))")
        }
        gpgme_set_offline(context, 1)
        self.context = context
    }

    /// Hands the context over to the encryptor, which releases it.
    func takeContext() -> gpgme_ctx_t? {
        defer { context = nil }
        return context
    }

    func close() {
        if let context { gpgme_release(context) }
        context = nil
        home.remove()
    }

    /// Imports the key in `file` and checks it can be encrypted to; the key (referenced; the
    /// caller unrefs it) and its fingerprint.
    func load(_ file: RecipientFile) -> Result<(fingerprint: String, key: gpgme_key_t), CryptoError> {
        let name = file.name
        func refuse(_ message: String) -> Result<(fingerprint: String, key: gpgme_key_t), CryptoError> {
            .failure(CryptoError(.recipient, message))
        }
        do throws(CryptoError) {
            try home.check()
        } catch {
            return .failure(error)
        }
        var bytes: [UInt8]
        switch Self.readKeyFile(file) {
        case .success(let read): bytes = read
        case .failure(let error): return .failure(error)
        }
        // A secret key never goes to gpg (nor stays in memory longer than this check).
        defer { bytes.withUnsafeMutableBytes { wipe($0) } }
        if bytes.isEmpty { return refuse("\(name) is empty: it holds no OpenPGP key") }
        if bytes.starts(with: Array("-----BEGIN PGP PRIVATE KEY BLOCK-----".utf8)) || Self.contains(bytes, "-----BEGIN PGP PRIVATE KEY BLOCK-----") {
            return refuse(Self.secretKeyMessage(name))
        }
        // Binary: a packet whose tag is a secret key (5) or secret subkey (7) (RFC 9580 4.2:
        // bit 7 set; bit 6 says the new format, whose tag is the low 6 bits, else bits 5-2).
        if let first = bytes.first, first & 0x80 != 0 {
            let tag = first & 0x40 != 0 ? first & 0x3F : (first >> 2) & 0x0F
            if tag == 5 || tag == 7 { return refuse(Self.secretKeyMessage(name)) }
        }
        var data: gpgme_data_t?
        var status = bytes.withUnsafeBytes { bytes in
            gpgme_data_new_from_mem(&data, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count, 0)
        }
        if status == 0 {
            status = gpgme_op_import(context, data)
        }
        gpgme_data_release(data)
        if gpgme_err_code(status) == GPG_ERR_NO_DATA {
            return refuse("\(name) holds no OpenPGP key (it is not an armored or binary OpenPGP public key)")
        }
        guard status == 0 else { return refuse("\(name) cannot be imported: \(GPGME.describe(status))") }
        guard let result = gpgme_op_import_result(context) else {
            return refuse("\(name) cannot be imported: GnuPG gave no result")
        }
        if result.pointee.secret_read > 0 { return refuse(Self.secretKeyMessage(name)) }
        if result.pointee.considered == 0 {
            return refuse("\(name) holds no OpenPGP key (it is not an armored or binary OpenPGP public key)")
        }
        var fingerprints: [String] = []
        var entry = result.pointee.imports
        while let current = entry {
            if current.pointee.result != 0 {
                return refuse("\(name): GnuPG cannot import its key: \(GPGME.describe(current.pointee.result))")
            }
            if let fpr = current.pointee.fpr {
                let fingerprint = String(cString: fpr)
                if !fingerprints.contains(fingerprint) { fingerprints.append(fingerprint) }
            }
            entry = current.pointee.next
        }
        if result.pointee.no_user_id > 0 && fingerprints.isEmpty {
            return refuse("\(name): GnuPG cannot import its key: it has no user ID")
        }
        guard fingerprints.count == 1, let fingerprint = fingerprints.first else {
            if fingerprints.isEmpty {
                return refuse("\(name) holds no OpenPGP key that GnuPG could import")
            }
            return refuse("\(name) holds \(fingerprints.count) keys: give each recipient's public key in a file of its own")
        }
        var key: gpgme_key_t?
        status = gpgme_get_key(context, fingerprint, &key, 0)
        guard status == 0, let key else {
            return refuse("\(name): GnuPG cannot list its key \(fingerprint): \(GPGME.describe(status))")
        }
        if let problem = Self.unpinned(file, fingerprint) ?? Self.unusable(key.pointee, fingerprint: fingerprint, name: name) {
            gpgme_key_unref(key)
            return refuse(problem)
        }
        return .success((fingerprint, key))
    }

    /// Why a key of `fingerprint` is not the one `file` is pinned to (`encrypt.fingerprints`), or nil.
    private static func unpinned(_ file: RecipientFile, _ fingerprint: String) -> String? {
        guard let pins = file.pinned, !pins.contains(fingerprint) else { return nil }
        return "\(file.name) holds the key \(fingerprint), which is not one of encrypt.fingerprints (\(pins.joined(separator: ", "))): a key file swapped for another key is not encrypted to"
    }

    /// Why `key` cannot be encrypted to, or nil.
    private static func unusable(_ key: _gpgme_key, fingerprint: String, name: String) -> String? {
        let what = "\(name): the key \(fingerprint)"
        if key.revoked != 0 { return "\(what) is revoked" }
        if key.expired != 0 {
            let expires = key.subkeys.map { $0.pointee.expires } ?? 0
            return expires > 0 ? "\(what) expired on \(day(expires))" : "\(what) has expired"
        }
        if key.disabled != 0 { return "\(what) is disabled" }
        if key.invalid != 0 { return "\(what) is not valid" }
        var capable = 0
        var subkey = key.subkeys
        while let current = subkey {
            let sub = current.pointee
            if sub.can_encrypt != 0 {
                capable += 1
                if sub.revoked == 0 && sub.expired == 0 && sub.disabled == 0 && sub.invalid == 0 { return nil }
            }
            subkey = sub.next
        }
        if capable == 0 {
            return "\(what) cannot encrypt: it has no encryption subkey (a signing-only key?)"
        }
        return "\(what) has no encryption subkey that is still valid (each has expired or is revoked)"
    }

    private static func secretKeyMessage(_ name: String) -> String {
        "\(name) holds a secret key: give the recipient's public key only (gpg --armor --export)"
    }

    /// A Unix time's UTC day, as 2024-01-31.
    private static func day(_ time: Int) -> String {
        var seconds = time_t(time)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(format: "%04d-%02d-%02d", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday))
    }

    private static func contains(_ bytes: [UInt8], _ text: String) -> Bool {
        let needle = Array(text.utf8)
        guard bytes.count >= needle.count else { return false }
        for start in 0...(bytes.count - needle.count) where bytes[start] == needle[0] {
            if bytes[start..<(start + needle.count)].elementsEqual(needle) { return true }
        }
        return false
    }

    /// The bytes of a key file (read through a link, as any input is); at most 1 MiB.
    static func readKeyFile(_ file: RecipientFile) -> Result<[UInt8], CryptoError> {
        let limit = 1 << 20
        let fd = open(file.path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            return .failure(CryptoError(.recipient, "\(file.name) cannot be read: \(describeErrno(errno))"))
        }
        defer { Glibc.close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            return .failure(CryptoError(.recipient, "\(file.name) cannot be read: \(describeErrno(errno))"))
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: return .failure(CryptoError(.recipient, "\(file.name) is a directory, not a key file"))
        default: return .failure(CryptoError(.recipient, "\(file.name) is not a regular file"))
        }
        guard info.st_size <= limit else {
            return .failure(CryptoError(.recipient, "\(file.name) is too big for a public key file (\(info.st_size) bytes; at most 1 MiB)"))
        }
        do {
            return .success(try FileDescriptor(borrowing: fd, path: file.name).readAll(limit: limit))
        } catch {
            return .failure(CryptoError(.recipient, "\(file.name) cannot be read: \(error.reason)"))
        }
    }
}

extension RecipientProblem {
    /// GnuPG's refusal of the recipient at `index`.
    init(index: Int, refusal: CryptoError) {
        self.init(index: index, message: refusal.message, isThisMachine: refusal.isThisMachine)
    }
}
