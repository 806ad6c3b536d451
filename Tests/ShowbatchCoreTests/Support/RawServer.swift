import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
import TestSupport
#endif

/// A hostile server on 127.0.0.1: to every connection it reads the request head and writes the
/// same bytes back, whatever they are, then closes.
final class RawServer: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    private let answer: [UInt8]
    private let stopped = Atomic<Bool>(false)

    var baseURL: String { "http://127.0.0.1:\(port)" }

    init(answer: [UInt8]) throws {
        self.answer = answer
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard fd >= 0, bound == 0, listen(fd, 16) == 0 else { throw POSIXError(.EADDRINUSE) }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = Int(UInt16(bigEndian: actual.sin_port))
        Thread { [self] in serve() }.start()
    }

    private func serve() {
        while !stopped.load(ordering: .acquiring) {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            var head: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            var headEnd: Int?
            while headEnd == nil {
                let count = chunk.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
                if count <= 0 { break }
                head += chunk[0..<count]
                headEnd = head.indices.dropLast(3).first { head[$0] == 13 && head[$0 + 1] == 10 && head[$0 + 2] == 13 && head[$0 + 3] == 10 }
            }
            // The body too, so that closing does not reset the connection under the answer.
            if let headEnd {
                let text = String(decoding: head[..<headEnd], as: UTF8.self).lowercased()
                let length = text.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                while head.count - (headEnd + 4) < length {
                    let count = chunk.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
                    if count <= 0 { break }
                    head += chunk[0..<count]
                }
            }
            _ = answer.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            shutdown(connection, Int32(SHUT_RDWR))
            close(connection)
        }
    }

    func stop() {
        stopped.store(true, ordering: .releasing)
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }
}
