internal import CGPGME
import Foundation
import ShowbatchBasics
import ShowbatchManifest
#if canImport(Glibc)
import Glibc
#endif

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
