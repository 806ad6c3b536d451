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

    /// The fingerprints of `recipients`' keys, in order (nil for one that cannot be read), and of
    /// the signing key, for `plan`: what a run would encrypt to and sign with. The signing key is
    /// imported into a private home only to be named; it is never unlocked here.
    package static func fingerprints(of recipients: [RecipientFile], signing: SignSpec?) -> (recipients: [String?], signing: String?) {
        guard let session = try? KeySession(agent: signing != nil) else { return (recipients.map { _ in nil }, nil) }
        defer { session.close() }
        let found = recipients.map { file -> String? in
            guard case .success(let key) = session.load(file) else { return nil }
            gpgme_key_unref(key.key)
            return key.fingerprint
        }
        let signer = signing.flatMap { try? session.importSecret(RecipientFile(path: $0.keyFile, name: $0.keyFile)) }
        return (found, signer)
    }

    /// Why the signing key of `spec` cannot sign (its file, passphrase, expiry), tried as a run
    /// tries it: a few bytes signed in a private GnuPG home; nil when it signs.
    package static func checkSigning(_ spec: SignSpec) -> String? {
        let session: KeySession
        do { session = try KeySession(agent: true) } catch { return error.message }
        defer { session.close() }
        guard let context = session.context else { return "GnuPG cannot run" }
        do {
            _ = try SigningKey(spec, context: context, session: session)
            return nil
        } catch {
            return error.message
        }
    }

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

extension RecipientProblem {
    /// GnuPG's refusal of the recipient at `index`.
    init(index: Int, refusal: CryptoError) {
        self.init(index: index, message: refusal.message, isThisMachine: refusal.isThisMachine)
    }
}
