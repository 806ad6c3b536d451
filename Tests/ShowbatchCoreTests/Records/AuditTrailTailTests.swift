import Foundation
import Testing
import ShowbatchBasics
@testable import ShowbatchCore

/// The line an audit entry chains to is read from the end of the trail, in chunks: the last one,
/// however long the trail or the line.
@Suite struct AuditTrailTailTests {
    @Test(arguments: [(3_000, 70), (2, 200_000), (1, 10)])
    func theLastLineIsReadFromTheEnd(lines: Int, width: Int) throws {
        let path = FileManager.default.temporaryDirectory.path + "/audit-tail-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let text = (0..<lines).map { index in "\(index)," + String(repeating: "x", count: width) }.joined(separator: "\n") + "\n"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let file = try #require(try FileDescriptor.openOwn(path))
        let last = AuditTrail.lastLine(of: file, size: text.utf8.count)
        #expect(last.map { String(decoding: $0, as: UTF8.self) } == "\(lines - 1)," + String(repeating: "x", count: width))
        #expect(AuditTrail.lastLine(of: file, size: 0) == nil)
    }
}
