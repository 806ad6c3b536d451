import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// Sealed files: what is written comes back exactly, a checkpoint's offset can be cut back to and
/// continued, and a file changed in any way is refused with its own message.
@Suite struct SealedFileTests {
    /// A sealed file in a private folder, named `f` in messages.
    final class Scratch {
        let dir = TempDir()
        var path: String { dir.path + "/f" }

        deinit { dir.remove() }

        func create() -> Int32 {
            open(path, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
        }

        func bytes() -> [UInt8] { [UInt8](FileManager.default.contents(atPath: path)!) }

        func replace(_ bytes: [UInt8]) { try! Data(bytes).write(to: URL(fileURLWithPath: path)) }

        /// Every plaintext byte of the file, through `read(into:)` in pieces of `piece` bytes.
        func unseal(_ key: DataKey, piece: Int = 1 << 16) throws -> [UInt8] {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            defer { close(fd) }
            let reader = try SealedReader(fd: fd, key: key, name: "f")
            var out: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: piece)
            while true {
                let got = try buffer.withUnsafeMutableBytes { try reader.read(into: $0) }
                if got == 0 { break }
                out += buffer[0..<got]
            }
            #expect(reader.isAtEnd)
            return out
        }

        /// The refusal reading the file gives, or nil.
        func refusal(_ key: DataKey) -> String? {
            do {
                _ = try unseal(key)
                return nil
            } catch let error as CryptoError {
                return error.message
            } catch {
                return "\(error)"
            }
        }
    }

    let key = DataKey.random()

    /// Header, chunks of 100 and 100 bytes (at 60 and 192), a last chunk of 50 (at 324); 406 bytes.
    private func threeChunks(_ scratch: Scratch) throws -> [UInt8] {
        let fd = scratch.create()
        defer { close(fd) }
        let writer = try SealedWriter.create(fd: fd, key: key, name: "f")
        #expect(writer.offset == 60)
        let plain = seededBytes(250, seed: 3)
        #expect(try writer.append(Array(plain[0..<100])) == 192)
        #expect(try writer.append(Array(plain[100..<200])) == 324)
        #expect(try writer.finish(Array(plain[200..<250])) == 406)
        #expect(writer.chunkCount == 3 && writer.isFinished)
        return plain
    }

    @Test func whatIsSealedComesBackChunkByChunk() throws {
        let scratch = Scratch()
        let plain = try threeChunks(scratch)
        #expect(scratch.bytes().count == 406)
        #expect(try scratch.unseal(key) == plain)
        #expect(try scratch.unseal(key, piece: 7) == plain)
        let fd = open(scratch.path, O_RDONLY)
        defer { close(fd) }
        let reader = try SealedReader(fd: fd, key: key, name: "f")
        var sizes: [Int] = []
        while let chunk = try reader.nextChunk() { sizes.append(chunk.count) }
        #expect(sizes == [100, 100, 50])
        #expect(reader.offset == 406 && reader.chunkCount == 3)
    }

    @Test func appendsPastOneMebibyteAreSplitAndAnEmptyFileHasOneLastChunk() throws {
        let scratch = Scratch()
        let fd = scratch.create()
        let writer = try SealedWriter.create(fd: fd, key: key, name: "f")
        let plain = seededBytes((1 << 21) + 5, seed: 4)
        #expect(try writer.append([]) == 60)
        #expect(try writer.append(plain) == 60 + plain.count + 3 * 32)
        #expect(writer.chunkCount == 3)
        try writer.finish()
        close(fd)
        #expect(try scratch.unseal(key) == plain)

        let empty = Scratch()
        let emptyFD = empty.create()
        #expect(try SealedWriter.create(fd: emptyFD, key: key, name: "f").finish() == 92)
        close(emptyFD)
        #expect(try empty.unseal(key) == [])
    }

    @Test func aFileCutBackToACheckpointGoesOnWithTheNextChunk() throws {
        let scratch = Scratch()
        let plain = seededBytes(700, seed: 5)
        var fd = scratch.create()
        let writer = try SealedWriter.create(fd: fd, key: key, name: "f")
        try writer.append(Array(plain[0..<100]))
        let checkpoint = try writer.append(Array(plain[100..<300]))
        // Written after the checkpoint, then the crash: these bytes are cut off.
        try writer.append(seededBytes(123, seed: 6))
        close(fd)

        fd = open(scratch.path, O_RDWR)
        var seen: [UInt8] = []
        let resumed = try SealedWriter.resume(fd: fd, key: key, name: "f", at: checkpoint) { seen += $0 }
        #expect(seen == Array(plain[0..<300]))
        #expect(resumed.chunkCount == 2 && resumed.offset == checkpoint)
        try resumed.append(Array(plain[300..<650]))
        try resumed.finish(Array(plain[650...]))
        close(fd)
        #expect(try scratch.unseal(key) == plain)
    }

    @Test func resumingAtAnOffsetTheFileDoesNotBearIsRefused() throws {
        let scratch = Scratch()
        _ = try threeChunks(scratch)
        let fd = open(scratch.path, O_RDWR)
        defer { close(fd) }
        func refusal(_ offset: Int, key: DataKey? = nil) -> String? {
            do {
                _ = try SealedWriter.resume(fd: fd, key: key ?? self.key, name: "f", at: offset)
                return nil
            } catch {
                return error.message
            }
        }
        #expect(refusal(500) == "f is shorter than its checkpoint (406 bytes, not 500)")
        #expect(refusal(200) == "f: byte 200 is not the end of a chunk (the checkpoint and the file disagree)")
        #expect(refusal(30) == "f: byte 30 is not the end of a chunk (the checkpoint and the file disagree)")
        #expect(refusal(406) == "f already has its last chunk, before byte 406: a finished file is not continued")
        #expect(refusal(192, key: DataKey.random()) == "f was sealed under another key (its key check does not match)")
        // Refusals leave the file as it was.
        #expect(scratch.bytes().count == 406)
    }

    static let chunkRefused = "does not authenticate (it was changed or damaged)"

    @Test(arguments: [
        (0, "f is not a sealed showbatch file"),
        (8, "f is a sealed file of version 0, which this showbatch cannot read"),
        (10, "f: its header was changed or damaged (it does not authenticate)"),
        (12, "f: its header was changed or damaged (it does not authenticate)"),
        (27, "f: its header was changed or damaged (it does not authenticate)"),
        (28, "f was sealed under another key (its key check does not match)"),
        (44, "f: its header was changed or damaged (it does not authenticate)"),
        (59, "f: its header was changed or damaged (it does not authenticate)"),
        (60 + 16, "f: chunk 1 at byte 60 \(chunkRefused)"),
        (192, "f: chunk 2 at byte 192 claims 2147483748 bytes, more than a chunk holds (the file is damaged)"),
        (195, "f: chunk 2 at byte 192 \(chunkRefused)"),
        (196, "f: chunk 2 at byte 192 \(chunkRefused)"),
        (206, "f: chunk 2 at byte 192 \(chunkRefused)"),
        (207, "f: chunk 2 at byte 192 \(chunkRefused)"),
        (250, "f: chunk 2 at byte 192 \(chunkRefused)"),
        (192 + 16 + 100, "f: chunk 2 at byte 192 \(chunkRefused)"),
        (339, "f: chunk 3 at byte 324 \(chunkRefused)"),
        (405, "f: chunk 3 at byte 324 \(chunkRefused)"),
    ])
    func aByteChangedAnywhereIsRefused(index: Int, message: String) throws {
        let scratch = Scratch()
        _ = try threeChunks(scratch)
        var bytes = scratch.bytes()
        bytes[index] ^= index == 192 ? 0x80 : 0x01
        scratch.replace(bytes)
        #expect(scratch.refusal(key) == message)
    }

    @Test func chunksSwappedDroppedCutOrAppendedAreRefused() throws {
        let scratch = Scratch()
        _ = try threeChunks(scratch)
        let bytes = scratch.bytes()
        let header = Array(bytes[0..<60]), first = Array(bytes[60..<192]), second = Array(bytes[192..<324]), last = Array(bytes[324...])
        let cases: [([UInt8], String)] = [
            (header + second + first + last, "f: chunk 1 at byte 60 is chunk 2 of the file (chunks were reordered, repeated or dropped)"),
            (header + first + first + second + last, "f: chunk 2 at byte 192 is chunk 1 of the file (chunks were reordered, repeated or dropped)"),
            (header + first + last, "f: chunk 2 at byte 192 is chunk 3 of the file (chunks were reordered, repeated or dropped)"),
            (header + first + second, "f has no last chunk: it ends after 2 chunks (it was cut short, or its run did not finish)"),
            (header, "f has no last chunk: it ends after 0 chunks (it was cut short, or its run did not finish)"),
            (Array(bytes[0..<300]), "f ends inside chunk 2 at byte 192 (the file was cut short)"),
            (Array(bytes[0..<200]), "f ends inside chunk 2 at byte 192 (the file was cut short)"),
            (Array(bytes[0..<30]), "f ends inside its header (the file was cut short)"),
            (Array(bytes[0..<5]), "f ends inside its header (the file was cut short)"),
            ([], "f is empty: it has no sealed header"),
            (Array("request,status\n".utf8), "f is not a sealed showbatch file"),
            (bytes + [0], "f has data after its last chunk (something was appended)"),
            (bytes + last, "f has data after its last chunk (something was appended)"),
        ]
        for (changed, message) in cases {
            scratch.replace(changed)
            #expect(scratch.refusal(key) == message)
        }
        scratch.replace(bytes)
        #expect(scratch.refusal(DataKey.random()) == "f was sealed under another key (its key check does not match)")
        #expect(scratch.refusal(key) == nil)
    }

    /// Random chunk sizes (across the 1 MiB split), a crash and resume at a random checkpoint,
    /// random read sizes: the plaintext always comes back whole.
    @Test func randomChunksResumesAndReadsRoundTrip() throws {
        var generator = SeededGenerator(seed: 2024)
        for round in 0..<12 {
            let scratch = Scratch()
            var fd = scratch.create()
            var writer = try SealedWriter.create(fd: fd, key: key, name: "f")
            var expected: [UInt8] = []
            var checkpoints: [(offset: Int, plainCount: Int)] = [(writer.offset, 0)]
            func size() -> Int {
                switch generator.next() % 4 {
                case 0: return Int(generator.next() % 16)
                case 1: return Int(generator.next() % 5000)
                case 2: return (1 << 20) - 2 + Int(generator.next() % 4)
                default: return Int(generator.next() % 300_000)
                }
            }
            for step in 0..<Int(generator.next() % 6) {
                let piece = seededBytes(size(), seed: UInt64(round * 100 + step))
                expected += piece
                let offset = try writer.append(piece)
                checkpoints.append((offset, expected.count))
            }
            if generator.next() % 2 == 0 {
                let resumeAt = checkpoints[Int(generator.next() % UInt64(checkpoints.count))]
                close(fd)
                fd = open(scratch.path, O_RDWR)
                var seen = 0
                writer = try SealedWriter.resume(fd: fd, key: key, name: "f", at: resumeAt.offset) { seen += $0.count }
                #expect(seen == resumeAt.plainCount)
                expected.removeSubrange(resumeAt.plainCount...)
                let more = seededBytes(size(), seed: UInt64(round * 100 + 99))
                expected += more
                try writer.append(more)
            }
            let tail = seededBytes(size(), seed: UInt64(round * 100 + 98))
            expected += tail
            try writer.finish(tail)
            close(fd)
            let piece = 1 + Int(generator.next() % 200_000)
            #expect(try scratch.unseal(key, piece: piece) == expected, "round \(round)")
        }
    }
}
