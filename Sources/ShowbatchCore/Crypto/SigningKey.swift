internal import CGPGME
import Foundation
import ShowbatchBasics
import ShowbatchManifest
#if canImport(Glibc)
import Glibc
#endif

/// Our secret key in a private GnuPG home, which signs each message as it is encrypted
/// (`encrypt.sign`). Signing needs gpg-agent, which holds the key: it runs for the private home
/// only, takes the passphrase through loopback pinentry (from this process, never a prompt or a
/// file), and is stopped when the home is removed.
final class SigningKey {
    let fingerprint: String
    let key: gpgme_key_t
    /// When it can no longer sign (Unix time), nil when it never expires.
    let expiry: Int?
    /// Read by GPGME's passphrase callback for as long as the context lives.
    private let passphrase: Passphrase

    /// The passphrase the callback gives gpg-agent (which caches none: it asks at each
    /// signature); asked again after a wrong one, it says no.
    final class Passphrase {
        let secret: SecretBytes?
        init(_ secret: SecretBytes?) { self.secret = secret }
    }

    /// Imports the secret key of `spec` through `context` (of a home whose gpg-agent may start),
    /// checks it can sign, and signs a test message, so a wrong passphrase stops a run before
    /// anything is sent; makes it the context's signer.
    init(_ spec: SignSpec, context: gpgme_ctx_t, session: KeySession) throws(CryptoError) {
        let name = spec.keyFile
        passphrase = Passphrase(spec.passphrase)
        gpgme_set_pinentry_mode(context, GPGME_PINENTRY_MODE_LOOPBACK)
        gpgme_set_passphrase_cb(context, { hook, _, _, previousWasBad, fd in
            let box = Unmanaged<Passphrase>.fromOpaque(hook!).takeUnretainedValue()
            // No second try with the same words, and nothing to give for a key without one.
            guard previousWasBad == 0, let secret = box.secret else { return gpgme_error_t(GPG_ERR_CANCELED.rawValue) }
            let written = secret.withBytes { bytes in gpgme_io_writen(fd, bytes.baseAddress, bytes.count) }
            return written == 0 && gpgme_io_writen(fd, "\n", 1) == 0 ? 0 : gpgme_error_t(GPG_ERR_CANCELED.rawValue)
        }, Unmanaged.passUnretained(passphrase).toOpaque())
        let fingerprint = try session.importSecret(RecipientFile(path: spec.keyFile, name: name))
        var found: gpgme_key_t?
        let status = gpgme_get_key(context, fingerprint, &found, 1)
        guard status == 0, let found else {
            throw CryptoError(.recipient, "\(name): GnuPG cannot list its secret key \(fingerprint): \(GPGME.describe(status))")
        }
        if let problem = Self.unusable(found.pointee, fingerprint: fingerprint, name: name) {
            gpgme_key_unref(found)
            throw CryptoError(.recipient, problem)
        }
        self.fingerprint = fingerprint
        key = found
        expiry = OpenPGPEncryptor.expiry(found.pointee, signing: true)
        gpgme_signers_clear(context)
        gpgme_signers_add(context, found)
        try testSign(context, name: name)
    }

    deinit { gpgme_key_unref(key) }

    /// Signs a few bytes, so that a key the passphrase does not unlock is found now.
    private func testSign(_ context: gpgme_ctx_t, name: String) throws(CryptoError) {
        var plain: gpgme_data_t?
        var signature: gpgme_data_t?
        defer {
            gpgme_data_release(plain)
            gpgme_data_release(signature)
        }
        var status = gpgme_data_new_from_mem(&plain, "showbatch", 9, 1)
        if status == 0 { status = gpgme_data_new(&signature) }
        if status == 0 { status = gpgme_op_sign(context, plain, signature, GPGME_SIG_MODE_DETACH) }
        guard status == 0 else {
            switch gpgme_err_code(status) {
            case GPG_ERR_CANCELED, GPG_ERR_NO_PASSPHRASE, GPG_ERR_BAD_PASSPHRASE:
                throw CryptoError(.recipient, passphrase.secret == nil
                    ? "\(name): the signing key is protected by a passphrase: give it in encrypt.sign.passphrase"
                    : "\(name): encrypt.sign.passphrase does not unlock the signing key")
            default:
                throw CryptoError(.engine, "\(name): GnuPG cannot sign with the key \(fingerprint): \(GPGME.describe(status))")
            }
        }
    }

    /// Why `key` cannot sign, or nil.
    private static func unusable(_ key: _gpgme_key, fingerprint: String, name: String) -> String? {
        let what = "\(name): the signing key \(fingerprint)"
        if key.revoked != 0 { return "\(what) is revoked" }
        if key.expired != 0 { return "\(what) has expired" }
        if key.disabled != 0 || key.invalid != 0 { return "\(what) is not valid" }
        var subkey = key.subkeys
        while let current = subkey {
            let sub = current.pointee
            if sub.can_sign != 0 && sub.secret != 0 && sub.revoked == 0 && sub.expired == 0 && sub.disabled == 0 && sub.invalid == 0 { return nil }
            subkey = sub.next
        }
        return "\(what) cannot sign: it has no valid signing key whose secret part is in the file"
    }
}

extension KeySession {
    /// Imports the secret key in `file` (one key, its secret part there); its fingerprint.
    func importSecret(_ file: RecipientFile) throws(CryptoError) -> String {
        try home.check()
        var bytes: [UInt8]
        switch Self.readKeyFile(file) {
        case .success(let read): bytes = read
        case .failure(let error): throw error
        }
        defer { bytes.withUnsafeMutableBytes { wipe($0) } }
        var data: gpgme_data_t?
        var status = bytes.withUnsafeBytes { bytes in
            gpgme_data_new_from_mem(&data, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count, 0)
        }
        if status == 0 { status = gpgme_op_import(context, data) }
        gpgme_data_release(data)
        guard status == 0 || gpgme_err_code(status) == GPG_ERR_NO_DATA else {
            throw CryptoError(.recipient, "\(file.name) cannot be imported: \(GPGME.describe(status))")
        }
        guard status == 0, let result = gpgme_op_import_result(context), result.pointee.secret_read > 0 else {
            throw CryptoError(.recipient, "\(file.name) holds no secret key: give our signing key as gpg --export-secret-keys --armor writes it")
        }
        var fingerprints: [String] = []
        var entry = result.pointee.imports
        while let current = entry {
            if let fpr = current.pointee.fpr, !fingerprints.contains(String(cString: fpr)) { fingerprints.append(String(cString: fpr)) }
            entry = current.pointee.next
        }
        guard fingerprints.count == 1, let fingerprint = fingerprints.first else {
            throw CryptoError(.recipient, "\(file.name) holds \(fingerprints.count) keys: give the one signing key only")
        }
        return fingerprint
    }
}
