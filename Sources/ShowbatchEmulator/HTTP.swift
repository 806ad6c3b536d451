import Foundation
import ShowbatchBasics
#if canImport(Glibc)
import Glibc
#endif

/// A parsed HTTP/1.1 request.
struct HTTPRequest {
    var method: String
    var path: String
    var version: String
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    func header(_ name: String) -> String? {
        // ASCII case folding: Foundation's locale-aware compare costs more than the rest of a request.
        headers.first { asciiLowercased($0.name) == name }?.value
    }

    /// Whether the connection stays open after the answer.
    var keepAlive: Bool {
        let connection = header("connection").map(asciiLowercased)
        if version == "HTTP/1.0" { return connection == "keep-alive" }
        return connection != "close"
    }
}

/// An answer to write.
struct HTTPResponse {
    var status: Int
    var contentType: String
    var body: [UInt8]
    var close: Bool
    var extraHeaders: [(String, String)] = []

    static func json(status: Int, _ fields: [String: String], close: Bool) -> HTTPResponse {
        var body: [UInt8] = [UInt8(ascii: "{")]
        for (index, key) in fields.keys.sorted().enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body.append(contentsOf: "\"\(key)\":\"\(fields[key]!)\"".utf8)
        }
        body.append(UInt8(ascii: "}"))
        return HTTPResponse(status: status, contentType: "application/json", body: body, close: close)
    }

    var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(body.count + 128)
        out.append(contentsOf: "HTTP/1.1 \(status) \(HTTPResponse.reason(status))\r\nContent-Type: ".utf8)
        out.append(contentsOf: contentType.utf8)
        out.append(contentsOf: "\r\nContent-Length: ".utf8)
        out.append(contentsOf: String(body.count).utf8)
        out.append(contentsOf: [13, 10])
        for (name, value) in extraHeaders { out.append(contentsOf: "\(name): \(value)\r\n".utf8) }
        if close { out.append(contentsOf: "Connection: close\r\n".utf8) }
        out.append(contentsOf: [13, 10])
        out.append(contentsOf: body)
        return out
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 400: return "Bad Request"
        case 403: return "Forbidden"
        case 413: return "Content Too Large"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        default: return "Status"
        }
    }
}

/// Reads requests from one socket with bounded buffers; handles pipelining, split reads,
/// Content-Length and chunked bodies.
struct HTTPConnection {
    enum Outcome {
        case request(HTTPRequest)
        case closed
        case reject(status: Int, reason: String)
    }

    let fd: Int32
    let maxHeaderBytes: Int
    let maxBodyBytes: Int
    private var buffer: [UInt8] = []
    private var start = 0
    private var chunk = [UInt8](repeating: 0, count: 64 * 1024)

    init(fd: Int32, maxHeaderBytes: Int, maxBodyBytes: Int) {
        self.fd = fd
        self.maxHeaderBytes = maxHeaderBytes
        self.maxBodyBytes = maxBodyBytes
    }

    /// Reads more bytes; false when the peer closed or failed.
    private mutating func fill() -> Bool {
        if start > 0 && start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start > 64 * 1024 {
            buffer.removeFirst(start)
            start = 0
        }
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                buffer.append(contentsOf: chunk[0..<count])
                return true
            }
            if count < 0 && errno == EINTR { continue }
            return false
        }
    }

    private var available: Int { buffer.count - start }

    private func find(_ pattern: [UInt8], from offset: Int) -> Int? {
        guard buffer.count - offset >= pattern.count else { return nil }
        var index = offset
        let last = buffer.count - pattern.count
        while index <= last {
            if buffer[index] == pattern[0] {
                var matched = true
                for k in 1..<pattern.count where buffer[index + k] != pattern[k] {
                    matched = false
                    break
                }
                if matched { return index }
            }
            index += 1
        }
        return nil
    }

    mutating func readRequest() -> Outcome {
        // The head.
        var headEnd: Int?
        // Bytes past `start` already searched; relative, because fill() may move `start`.
        var scanned = 0
        while true {
            if let end = find([13, 10, 13, 10], from: start + max(0, scanned - 3)) {
                headEnd = end
                break
            }
            scanned = available
            if available > maxHeaderBytes { return .reject(status: 431, reason: "request header fields too large") }
            guard fill() else { return .closed }
        }
        guard let end = headEnd else { return .closed }
        if end - start > maxHeaderBytes { return .reject(status: 431, reason: "request header fields too large") }
        // Parsed as bytes: String splitting and Foundation trimming cost more than the rest of a request.
        var lines = HTTPConnection.lines(buffer[start..<end])
        start = end + 4
        // Tolerate blank lines before a request (RFC 9112 2.2).
        while lines.first?.isEmpty == true { lines.removeFirst() }
        guard let requestLine = lines.first else { return .reject(status: 400, reason: "empty request") }
        let parts = requestLine.split(separator: 0x20)
        guard parts.count == 3, parts[2].starts(with: "HTTP/1.".utf8) else {
            return .reject(status: 400, reason: "malformed request line")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return .reject(status: 400, reason: "malformed header") }
            var valueStart = colon + 1
            var valueEnd = line.endIndex
            while valueStart < valueEnd, line[valueStart] == 0x20 || line[valueStart] == 0x09 { valueStart += 1 }
            while valueEnd > valueStart, line[valueEnd - 1] == 0x20 || line[valueEnd - 1] == 0x09 { valueEnd -= 1 }
            headers.append((String(decoding: line[..<colon], as: UTF8.self), String(decoding: line[valueStart..<valueEnd], as: UTF8.self)))
        }
        var request = HTTPRequest(method: String(decoding: parts[0], as: UTF8.self), path: String(decoding: parts[1], as: UTF8.self),
                                  version: String(decoding: parts[2], as: UTF8.self), headers: headers, body: [])
        // The body.
        if request.header("transfer-encoding")?.lowercased().contains("chunked") == true {
            switch readChunked() {
            case .success(let body): request.body = body
            case .failure(let outcome): return outcome.value
            }
        } else if let lengthText = request.header("content-length") {
            guard let length = Int(lengthText), length >= 0 else { return .reject(status: 400, reason: "invalid content-length") }
            if length > maxBodyBytes { return .reject(status: 413, reason: "request body too large") }
            while available < length {
                guard fill() else { return .closed }
            }
            request.body = Array(buffer[start..<start + length])
            start += length
        }
        return .request(request)
    }

    /// The CRLF-separated lines of a request head.
    static func lines(_ head: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
        var result: [ArraySlice<UInt8>] = []
        var lineStart = head.startIndex
        var index = head.startIndex
        while index + 1 < head.endIndex {
            if head[index] == 13 && head[index + 1] == 10 {
                result.append(head[lineStart..<index])
                index += 2
                lineStart = index
            } else {
                index += 1
            }
        }
        result.append(head[lineStart..<head.endIndex])
        return result
    }

    private struct Rejected: Error { let value: Outcome }

    private mutating func readChunked() -> Result<[UInt8], Rejected> {
        var body: [UInt8] = []
        while true {
            var lineEnd = find([13, 10], from: start)
            while lineEnd == nil {
                if available > 1024 { return .failure(Rejected(value: .reject(status: 400, reason: "malformed chunk size"))) }
                guard fill() else { return .failure(Rejected(value: .closed)) }
                lineEnd = find([13, 10], from: start)
            }
            let sizeText = String(decoding: buffer[start..<lineEnd!], as: UTF8.self)
            let sizeField = sizeText.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            guard let size = Int(sizeField, radix: 16), size >= 0 else {
                return .failure(Rejected(value: .reject(status: 400, reason: "malformed chunk size")))
            }
            start = lineEnd! + 2
            if size == 0 {
                // Trailers end with an empty line.
                while true {
                    var end = find([13, 10], from: start)
                    while end == nil {
                        guard fill() else { return .failure(Rejected(value: .closed)) }
                        end = find([13, 10], from: start)
                    }
                    let empty = end! == start
                    start = end! + 2
                    if empty { return .success(body) }
                }
            }
            if body.count + size > maxBodyBytes {
                return .failure(Rejected(value: .reject(status: 413, reason: "request body too large")))
            }
            while available < size + 2 {
                guard fill() else { return .failure(Rejected(value: .closed)) }
            }
            body.append(contentsOf: buffer[start..<start + size])
            start += size + 2
        }
    }

    /// Writes all of `bytes`; false when the peer is gone.
    func write(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        return bytes.withUnsafeBytes { raw in
            while offset < raw.count {
                let sent = send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                if sent < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += sent
            }
            return true
        }
    }
}

/// `text` with ASCII letters lower-cased (header names are ASCII tokens).
func asciiLowercased(_ text: String) -> String {
    guard text.utf8.contains(where: { $0 >= 65 && $0 <= 90 }) else { return text }
    return String(decoding: text.utf8.map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }, as: UTF8.self)
}
