import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// How a failed transfer is classed, for every CURLcode the curl transport names, with libcurl's
/// own words as they come (a reset, a closed reused connection, TLS alerts): the class decides
/// whether the attempt is made again or the run stops.
@Suite struct CurlFailureTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let code: UInt32
        let detail: String
        let expected: TransportFailure
        var tooLarge = false
        var testDescription: String { "\(name): \(detail.isEmpty ? "(no words)" : detail)" }
    }

    /// The default retry policy: `retry.on: [429, 502, 503, 504, network, timeout]`.
    static let policy = RetryPolicy()

    static let cases: [Case] = [
        Case(name: "CURLE_RECV_ERROR", code: 56, detail: "Recv failure: Connection reset by peer",
             expected: .network("connection lost (curl: Recv failure: Connection reset by peer)")),
        Case(name: "CURLE_SEND_ERROR", code: 55, detail: "Connection died, tried 5 times before giving up",
             expected: .network("connection lost (curl: Connection died, tried 5 times before giving up)")),
        Case(name: "CURLE_SEND_ERROR", code: 55, detail: "Send failure: Broken pipe",
             expected: .network("connection lost (curl: Send failure: Broken pipe)")),
        Case(name: "CURLE_RECV_ERROR", code: 56, detail: "OpenSSL SSL_read: error:0A000126:SSL routines::unexpected eof while reading, errno 0",
             expected: .network("connection lost (curl: OpenSSL SSL_read: error:0A000126:SSL routines::unexpected eof while reading, errno 0)")),
        Case(name: "CURLE_RECV_ERROR", code: 56, detail: "OpenSSL SSL_read: error:0A00045C:SSL routines::tlsv13 alert certificate required, errno 0",
             expected: .certificate("the server refused the TLS handshake: it wants a client certificate, or does not trust the one given (curl: OpenSSL SSL_read: error:0A00045C:SSL routines::tlsv13 alert certificate required, errno 0)")),
        Case(name: "CURLE_SEND_ERROR", code: 55, detail: "OpenSSL SSL_write: error:0A000412:SSL routines::sslv3 alert bad certificate, errno 0",
             expected: .certificate("the server refused the TLS handshake: it wants a client certificate, or does not trust the one given (curl: OpenSSL SSL_write: error:0A000412:SSL routines::sslv3 alert bad certificate, errno 0)")),
        Case(name: "CURLE_SSL_CONNECT_ERROR", code: 35, detail: "OpenSSL/3.0.15: error:0A000418:SSL routines::tlsv1 alert unknown ca",
             expected: .certificate("the server refused the TLS handshake: it wants a client certificate, or does not trust the one given (curl: OpenSSL/3.0.15: error:0A000418:SSL routines::tlsv1 alert unknown ca)")),
        Case(name: "CURLE_SSL_CONNECT_ERROR", code: 35, detail: "OpenSSL SSL_connect: Connection reset by peer in connection to 127.0.0.1:443",
             expected: .network("TLS handshake failed (curl: OpenSSL SSL_connect: Connection reset by peer in connection to 127.0.0.1:443)")),
        Case(name: "CURLE_GOT_NOTHING", code: 52, detail: "Empty reply from server",
             expected: .network("connection closed without an answer (curl: Empty reply from server)")),
        Case(name: "CURLE_COULDNT_CONNECT", code: 7, detail: "Failed to connect to 127.0.0.1 port 9 after 0 ms: Couldn't connect to server",
             expected: .network("connection refused (curl: Failed to connect to 127.0.0.1 port 9 after 0 ms: Couldn't connect to server)")),
        Case(name: "CURLE_COULDNT_RESOLVE_HOST", code: 6, detail: "Could not resolve host: reveal.invalid",
             expected: .network("host not found (curl: Could not resolve host: reveal.invalid)")),
        Case(name: "CURLE_COULDNT_RESOLVE_PROXY", code: 5, detail: "Could not resolve proxy: proxy.invalid",
             expected: .network("proxy host not found (curl: Could not resolve proxy: proxy.invalid)")),
        Case(name: "CURLE_PARTIAL_FILE", code: 18, detail: "transfer closed with 10 bytes remaining to read",
             expected: .network("the answer ended before its announced length (curl: transfer closed with 10 bytes remaining to read)")),
        Case(name: "CURLE_HTTP2", code: 16, detail: "Error in the HTTP2 framing layer",
             expected: .network("HTTP/2 stream or framing error (curl: Error in the HTTP2 framing layer)")),
        Case(name: "CURLE_HTTP2_STREAM", code: 92, detail: "HTTP/2 stream 7 was not closed cleanly: PROTOCOL_ERROR (err 1)",
             expected: .network("HTTP/2 stream or framing error (curl: HTTP/2 stream 7 was not closed cleanly: PROTOCOL_ERROR (err 1))")),
        Case(name: "CURLE_OUT_OF_MEMORY", code: 27, detail: "",
             expected: .network("the answer could not be read: its headers are too large (over 100 KB) or memory ran out (curl: Out of memory)")),
        Case(name: "CURLE_SSL_CIPHER", code: 59, detail: "failed setting cipher list",
             expected: .network("TLS: no cipher in common with the server (curl: failed setting cipher list)")),
        Case(name: "CURLE_URL_MALFORMAT", code: 3, detail: "URL using bad/illegal format or missing URL",
             expected: .network("the URL cannot be used (curl: URL using bad/illegal format or missing URL)")),
        Case(name: "CURLE_UNSUPPORTED_PROTOCOL", code: 1, detail: "Protocol \"ftp\" not supported or disabled in libcurl",
             expected: .network("the URL cannot be used (curl: Protocol \"ftp\" not supported or disabled in libcurl)")),
        Case(name: "CURLE_UNSUPPORTED_PROTOCOL", code: 1, detail: "Received HTTP/0.9 when not allowed",
             expected: .notHTTP("the answer is not HTTP (curl: Received HTTP/0.9 when not allowed)")),
        Case(name: "CURLE_UNSUPPORTED_PROTOCOL", code: 1, detail: "Unsupported response code in HTTP response",
             expected: .notHTTP("the answer is not valid HTTP: its status is not a 3-digit code (curl: Unsupported response code in HTTP response)")),
        Case(name: "CURLE_WEIRD_SERVER_REPLY", code: 8, detail: "Invalid status line",
             expected: .notHTTP("the answer is not valid HTTP (curl: Invalid status line)")),
        Case(name: "CURLE_OPERATION_TIMEDOUT", code: 28, detail: "Operation timed out after 1000 milliseconds with 0 bytes received",
             expected: .timeout),
        Case(name: "CURLE_FILESIZE_EXCEEDED", code: 63, detail: "Exceeded the maximum allowed file size (16777216)",
             expected: .bodyTooLarge(Limits.responseBody)),
        Case(name: "CURLE_WRITE_ERROR", code: 23, detail: "Failure writing output to destination", expected: .bodyTooLarge(Limits.responseBody),
             tooLarge: true),
        Case(name: "CURLE_WRITE_ERROR", code: 23, detail: "Failure writing output to destination",
             expected: .network("transfer failed (curl error 23) (curl: Failure writing output to destination)")),
        Case(name: "CURLE_PEER_FAILED_VERIFICATION", code: 60, detail: "SSL certificate problem: unable to get local issuer certificate",
             expected: .certificate("the server's certificate is not trusted, has expired or does not name the host (curl: SSL certificate problem: unable to get local issuer certificate)")),
        Case(name: "CURLE_SSL_CERTPROBLEM", code: 58, detail: "could not load PEM client certificate from client.pem",
             expected: .certificate("the client certificate cannot be used (curl: could not load PEM client certificate from client.pem)")),
        Case(name: "CURLE_SSL_CACERT_BADFILE", code: 77, detail: "error setting certificate file: ca.pem",
             expected: .certificate("the CA file cannot be used (curl: error setting certificate file: ca.pem)")),
        Case(name: "CURLE_SSL_ISSUER_ERROR", code: 83, detail: "SSL: issuer check failed",
             expected: .certificate("the certificate's issuer is not the one required (curl: SSL: issuer check failed)")),
        Case(name: "CURLE_SSL_PINNEDPUBKEYNOTMATCH", code: 90, detail: "SSL: public key does not match pinned public key",
             expected: .certificate("the server's key does not match the pinned key (curl: SSL: public key does not match pinned public key)")),
    ]

    @Test(arguments: cases) func eachFailureHasItsClass(_ item: Case) {
        let failure = CurlHandles.failure(code: item.code, detail: item.detail, tooLarge: item.tooLarge)
        #expect(failure == item.expected)
        // Retried exactly when it is a network failure or a timeout; a certificate stops the run.
        let transient: Bool
        switch item.expected {
        case .network, .timeout: transient = true
        default: transient = false
        }
        #expect(Self.policy.retries(failure) == transient)
        if case .certificate = item.expected { #expect(failure.stopsTheRun) } else { #expect(!failure.stopsTheRun) }
    }
}
