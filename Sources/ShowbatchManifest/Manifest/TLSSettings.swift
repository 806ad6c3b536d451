import ShowbatchBasics
/// How TLS connections are verified and which client certificate they present.
///
/// Verification is always on; these only say which certificate authorities to trust (instead of
/// the system's) and, for mutual TLS, the client's certificate and key.
package struct TLSSettings: Sendable, Equatable {
    /// A PEM file of the certificate authorities to trust.
    package var caFile: String?
    /// A folder of hashed PEM certificates (`c_rehash`) to trust.
    package var caPath: String?
    /// The client certificate (PEM), for mutual TLS.
    package var clientCertificate: String?
    /// The client certificate's private key (PEM, unencrypted).
    package var clientKey: String?

    /// No settings: the system's certificate authorities, no client certificate.
    package init(caFile: String? = nil, caPath: String? = nil, clientCertificate: String? = nil, clientKey: String? = nil) {
        self.caFile = caFile
        self.caPath = caPath
        self.clientCertificate = clientCertificate
        self.clientKey = clientKey
    }

    /// These settings, with the usual environment variables where the manifest says nothing:
    /// `CURL_CA_BUNDLE`, then `SSL_CERT_FILE`, for the CA file, and `SSL_CERT_DIR` for the folder
    /// (libcurl itself reads none of them; the curl tool and OpenSSL do).
    package func withEnvironment(_ environment: [String: String]) -> TLSSettings {
        var settings = self
        if settings.caFile == nil && settings.caPath == nil {
            settings.caFile = environment["CURL_CA_BUNDLE"].flatMap { $0.isEmpty ? nil : $0 }
                ?? environment["SSL_CERT_FILE"].flatMap { $0.isEmpty ? nil : $0 }
            settings.caPath = environment["SSL_CERT_DIR"].flatMap { $0.isEmpty ? nil : $0 }
        }
        return settings
    }
}
