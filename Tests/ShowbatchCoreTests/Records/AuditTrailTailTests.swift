import Foundation
import Testing
import ShowbatchBasics
import TestSupport
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

    /// A trail another run holds locked is waited for, within a bound: then the append fails
    /// saying so, never waits on.
    @Test func aTrailLockedTooLongIsAnError() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let manifest = try loadManifest("vault: tnt1\noutput: {path: r.csv}\nrequests: [{name: a, path: /p}]\n", in: dir)
        var trail = AuditTrail(path: dir.path + "/audit.jsonl", runID: "r1", manifest: manifest)
        trail.lockWait = .seconds(1)
        let held = open(trail.path, O_RDWR | O_CREAT, 0o600)
        defer { close(held) }
        #expect(flock(held, LOCK_EX) == 0)
        let refused = #expect(throws: RunError.self) { try trail.append("merged", outcome: "ok") }
        #expect(refused?.description == "cannot lock the audit trail \(trail.path): another run has held it for over 1 s")
        #expect(flock(held, LOCK_UN) == 0)
        try trail.append("merged", outcome: "ok")
        #expect(try String(contentsOfFile: trail.path, encoding: .utf8).contains("\"event\":\"merged\""))
    }
}
