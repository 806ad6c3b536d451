import Foundation
import ShowbatchBasics
internal import CCurl
import ShowbatchManifest

/// One blocking HTTP request through a libcurl easy handle, for `--metrics-push`: the push happens
/// as the process ends, on whatever thread ends it, with no event loop left to run it.
enum PushClient {
    struct Answer {
        let status: Int
        let body: [UInt8]
    }

    /// The answer's body, up to a limit.
    private final class Buffer {
        var bytes: [UInt8] = []
        var tooLarge = false
        let limit = Limits.responseBody
    }

    private static let write: sb_data_callback = { data, size, count, context in
        let buffer = Unmanaged<Buffer>.fromOpaque(context!).takeUnretainedValue()
        return appendBody(data, size * count, to: &buffer.bytes, limit: buffer.limit, tooLarge: &buffer.tooLarge)
    }

    static func send(method: String, url: String, body: [UInt8]?, timeout: Duration) -> Result<Answer, TransportFailure> {
        guard let easy = curl_easy_init() else { return .failure(.network("libcurl could not start a request")) }
        defer { curl_easy_cleanup(easy) }
        let buffer = Buffer()
        let context = Unmanaged.passRetained(buffer)
        defer { context.release() }
        let errors = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
        errors[0] = 0
        defer { errors.deallocate() }
        var headers: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(headers) }
        _ = sb_easy_setopt_pointer(easy, CURLOPT_URL, url)  // copied
        _ = sb_easy_setopt_pointer(easy, CURLOPT_PROTOCOLS_STR, "http,https")
        _ = sb_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        _ = sb_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, Int(timeout.seconds * 1000))
        _ = sb_easy_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, 1)
        _ = sb_easy_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, 2)
        _ = sb_easy_setopt_pointer(easy, CURLOPT_NOPROXY, CurlHandles.noProxy)
        _ = sb_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errors)
        _ = sb_easy_setopt_offset(easy, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(buffer.limit))
        _ = sb_easy_setopt_callback(easy, CURLOPT_WRITEFUNCTION, write)
        _ = sb_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, context.toOpaque())
        if method != "GET" { _ = sb_easy_setopt_pointer(easy, CURLOPT_CUSTOMREQUEST, method) }
        if let body {
            // The Prometheus text format, version 0.0.4; no `Expect: 100-continue` round trip.
            headers = curl_slist_append(headers, "Content-Type: text/plain; version=0.0.4; charset=utf-8")
            headers = curl_slist_append(headers, "Expect:")
            _ = sb_easy_setopt_pointer(easy, CURLOPT_HTTPHEADER, headers)
            _ = sb_easy_setopt_offset(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count))
            body.withUnsafeBytes { _ = sb_easy_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, $0.baseAddress) }  // copied
        }
        let code = curl_easy_perform(easy)
        guard code == CURLE_OK else {
            return .failure(CurlHandles.failure(code, detail: String(cString: errors), tooLarge: buffer.tooLarge, limit: buffer.limit))
        }
        var status = 0
        _ = sb_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        return .success(Answer(status: status, body: buffer.bytes))
    }
}
