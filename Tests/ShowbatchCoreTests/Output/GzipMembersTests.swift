import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
#if canImport(Glibc)
import Glibc
import TestSupport
#endif

/// Writes `bytes` to a new temporary file and opens it for reading.
private func opened(_ bytes: [UInt8]) throws -> (fd: Int32, path: String) {
    let path = FileManager.default.temporaryDirectory.path + "/showbatch-gz-" + UUID().uuidString
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    return (open(path, O_RDONLY), path)
}

/// Everything `GunzipReader` gives, read in pieces of `size` bytes.
private func gunzip(_ bytes: [UInt8], pieces size: Int = 7) throws(GunzipReader.Failure) -> [UInt8] {
    let (fd, path) = try! opened(bytes)
    defer {
        close(fd)
        unlink(path)
    }
    let reader = GunzipReader(source: try! StoredBytes(fd: fd, path: path, key: nil, limit: nil))
    var out: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: size)
    while true {
        let result = buffer.withUnsafeMutableBytes { raw in Result { () throws(GunzipReader.Failure) -> Int in try reader.read(into: raw) } }
        let count = try result.get()
        if count == 0 { return out }
        out += buffer[0..<count]
    }
}

/// The gzip members of an output: a member ends at every checkpoint, so the file is whole there,
/// and members written one after another read back as the concatenation of their bytes, by this
/// reader and by `gzip -dc`.
@Suite struct GzipMembersTests {
    /// Seeded pieces ended as members at seeded places read back exactly, whatever the read size.
    @Test(arguments: [1, 3, 4096]) func membersReadBackAsTheirConcatenation(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let compressor = GzipMembers()
        var file: [UInt8] = []
        var plain: [UInt8] = []
        for _ in 0..<40 {
            let piece = (0..<Int(random.next() % 3000)).map { _ in UInt8(truncatingIfNeeded: random.next() % 7 + 97) }
            plain += piece
            compressor.compress(piece, endMember: random.next() % 3 == 0, into: &file)
        }
        compressor.compress([], endMember: true, into: &file)
        for size in [1, 5, 1 << 16] {
            #expect(try gunzip(file, pieces: size) == plain)
        }
        // gzip itself reads it as one file.
        let (fd, path) = try opened(file)
        close(fd)
        defer { unlink(path) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/gzip")
        process.arguments = ["-dc", path]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0 && [UInt8](data) == plain)
    }

    /// The same rows and member ends give the same bytes (no name, no time in the header).
    @Test func theBytesDependOnTheInputOnly() {
        func compressed() -> [UInt8] {
            let compressor = GzipMembers()
            var out: [UInt8] = []
            compressor.compress(Array("request,status\n".utf8), endMember: true, into: &out)
            compressor.compress(Array("a,ok\n".utf8), endMember: true, into: &out)
            return out
        }
        #expect(compressed() == compressed())
    }

    /// A file cut inside a member, and bytes that are not gzip, are refused in words.
    @Test func aCutOrForeignFileIsRefused() throws {
        let compressor = GzipMembers()
        var file: [UInt8] = []
        compressor.compress(Array(repeating: 65, count: 10_000), endMember: true, into: &file)
        let firstMember = file.count
        compressor.compress(Array(repeating: 66, count: 10_000), endMember: true, into: &file)
        do {
            _ = try gunzip(Array(file.dropLast(5)))
            Issue.record("expected a refusal")
        } catch {
            #expect(error.reason == "its gzip data ends in the middle (the file was cut short)")
        }
        do {
            _ = try gunzip(Array("request,status\na,ok\n".utf8))
            Issue.record("expected a refusal")
        } catch {
            #expect(error.reason == "it is not valid gzip data")
        }
        // Cut back to a member's end (a checkpoint), the file is whole.
        #expect(try gunzip(Array(file[..<firstMember])) == Array(repeating: 65, count: 10_000))
    }
}
