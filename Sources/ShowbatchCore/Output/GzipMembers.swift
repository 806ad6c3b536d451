import ShowbatchBasics
internal import CZlib
import ShowbatchManifest
#if canImport(Glibc)
import Glibc
#endif

/// Compresses an output as a series of gzip members, one ended at every checkpoint.
///
/// A file of concatenated members is one gzip file to every reader (RFC 1952 §2.2; `gzip -d`,
/// zlib, Python's `gzip`), and it can be cut back to any checkpoint and continued with a new member:
/// that is what makes a `.gz` output resumable. The header has no name and no time, so the same
/// rows and the same checkpoints give the same bytes.
final class GzipMembers {
    private var stream = z_stream()
    private var inMember = false
    private var chunk = [UInt8](repeating: 0, count: 1 << 16)

    deinit {
        if inMember { deflateEnd(&stream) }
    }

    /// Compresses `input` into `out`; with `endMember`, ends the member (its trailer is written)
    /// so the bytes so far are a whole gzip file.
    func compress(_ input: [UInt8], endMember: Bool, into out: inout [UInt8]) {
        guard !input.isEmpty || (endMember && inMember) else { return }
        if !inMember {
            // 15 window bits + 16: a gzip wrapper, not zlib's.
            let status = deflateInit2_(&stream, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
            precondition(status == Z_OK, "deflateInit2 failed: \(status)")
            inMember = true
        }
        let flush = endMember ? Z_FINISH : Z_NO_FLUSH
        var input = input
        input.withUnsafeMutableBufferPointer { source in
            stream.next_in = source.baseAddress
            stream.avail_in = uInt(source.count)
            var status: Int32 = Z_OK
            repeat {
                let produced = chunk.withUnsafeMutableBufferPointer { target -> Int in
                    stream.next_out = target.baseAddress
                    stream.avail_out = uInt(target.count)
                    status = deflate(&stream, flush)
                    return target.count - Int(stream.avail_out)
                }
                out.append(contentsOf: chunk[0..<produced])
                // Without Z_FINISH, deflate is done when it leaves room in the output; with it,
                // when the member's end is written.
            } while endMember ? status != Z_STREAM_END : stream.avail_out == 0
            stream.next_in = nil
        }
        if endMember {
            deflateEnd(&stream)
            stream = z_stream()
            inMember = false
        }
    }
}

/// Reads a gzip file of one or more members (as `GzipMembers` writes them) as its plain bytes.
final class GunzipReader {
    /// Why the file cannot be read, in words.
    struct Failure: Error {
        let reason: String
    }

    private let source: StoredBytes
    private var stream = z_stream()
    private var input = [UInt8](repeating: 0, count: 1 << 16)
    private var inputStart = 0
    private var inputEnd = 0
    private var fileEnded = false
    /// Between members: the last one ended and no byte of another has been read.
    private var betweenMembers = true

    /// Reads the gzip bytes `source` gives (a file, or a sealed file's plaintext).
    init(source: StoredBytes) {
        self.source = source
        // 15 window bits + 16: gzip only.
        let status = inflateInit2_(&stream, 15 + 16, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        precondition(status == Z_OK, "inflateInit2 failed: \(status)")
    }

    deinit { inflateEnd(&stream) }

    /// Fills `buffer` with plain bytes; how many (0 at the end of the file).
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(Failure) -> Int {
        while true {
            if inputStart == inputEnd && !fileEnded {
                let count: Int
                do {
                    count = try input.withUnsafeMutableBytes { bytes in
                        try Result { () throws(StoredBytes.Failure) -> Int in try source.read(into: bytes) }.get()
                    }
                } catch let failure as StoredBytes.Failure {
                    throw Failure(reason: failure.reason)
                } catch {
                    throw Failure(reason: "it cannot be read")
                }
                inputStart = 0
                inputEnd = count
                if count == 0 { fileEnded = true }
            }
            if inputStart == inputEnd && fileEnded {
                if betweenMembers { return 0 }
                throw Failure(reason: "its gzip data ends in the middle (the file was cut short)")
            }
            var status: Int32 = Z_OK
            var produced = 0
            let consumed = input.withUnsafeMutableBufferPointer { source -> Int in
                stream.next_in = source.baseAddress! + inputStart
                stream.avail_in = uInt(inputEnd - inputStart)
                stream.next_out = buffer.baseAddress!.assumingMemoryBound(to: Bytef.self)
                stream.avail_out = uInt(buffer.count)
                status = inflate(&stream, Z_NO_FLUSH)
                produced = buffer.count - Int(stream.avail_out)
                return (inputEnd - inputStart) - Int(stream.avail_in)
            }
            inputStart += consumed
            if consumed > 0 { betweenMembers = false }
            switch status {
            case Z_STREAM_END:
                // Another member may follow.
                inflateReset(&stream)
                betweenMembers = true
            case Z_OK, Z_BUF_ERROR:
                break
            default:
                throw Failure(reason: "it is not valid gzip data")
            }
            if produced > 0 { return produced }
        }
    }
}
