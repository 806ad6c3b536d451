import CZlib

/// Compresses an output as a series of gzip members, one ended at every checkpoint.
///
/// A file of concatenated members is one gzip file to every reader (RFC 1952 §2.2; `gzip -d`,
/// zlib, Python's `gzip`), and it can be cut back to any checkpoint and continued with a new member:
/// that is what makes a `.gz` output resumable. The header has no name and no time, so the same
/// rows and the same checkpoints give the same bytes.
final class GzipMembers {
    private var stream = z_stream()
    private var open = false
    private var chunk = [UInt8](repeating: 0, count: 1 << 16)

    deinit {
        if open { deflateEnd(&stream) }
    }

    /// Compresses `input` into `out`; with `endMember`, ends the member (its trailer is written)
    /// so the bytes so far are a whole gzip file.
    func compress(_ input: [UInt8], endMember: Bool, into out: inout [UInt8]) {
        guard !input.isEmpty || (endMember && open) else { return }
        if !open {
            // 15 window bits + 16: a gzip wrapper, not zlib's.
            let status = deflateInit2_(&stream, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
            precondition(status == Z_OK, "deflateInit2 failed: \(status)")
            open = true
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
            open = false
        }
    }
}
