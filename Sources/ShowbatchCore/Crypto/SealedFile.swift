import ShowbatchBasics
import ShowbatchManifest
#if canImport(Glibc)
import Glibc
#endif

// A sealed file: rows at rest while a run lasts (`.partial`, shard files), encrypted in chunks
// with AES-256-GCM, one or more chunks per checkpoint, so every checkpoint is a byte offset the
// file can be cut back to and continued from. The construction is STREAM (Hoang, Reyhanitabar,
// Rogaway, Vizár 2015): each chunk's nonce holds its counter and a last-chunk flag, so a reader
// that checks them refuses chunks reordered, repeated, dropped, cut off or appended.
//
// Layout, version 1 (integers big-endian):
//
//     header, 60 bytes
//       0   8  magic           89 53 42 53 45 41 4C 0A  ("\x89SBSEAL\n": catches 7-bit and
//                                                        line-ending mangling, as PNG's does)
//       8   1  version         1
//       9   3  reserved        0
//      12  16  file id         random, per file
//      28  16  key check       HMAC-SHA256(K, "showbatch sealed v1 key check")[0..<16]
//      44  16  header tag      HMAC-SHA256(Kh, bytes 0..<44)[0..<16]
//     chunk, 32 + n bytes, 0 <= n <= 1 MiB; as many as there are, the last one flagged
//       0   4  n               plaintext length (authenticated as GCM's associated data)
//       4  12  nonce           session prefix (7 random bytes) ‖ counter (4) ‖ flag (1)
//      16   n  ciphertext      AES-256-GCM under Kc
//    16+n  16  tag
//
// K is the file's 32-byte data key; Kc = HMAC-SHA256(K, "showbatch sealed v1 chunks" ‖ file id)
// and Kh = HMAC-SHA256(K, "showbatch sealed v1 header") are derived from it, so two files under
// one data key never share a chunk key. The counter counts chunks from 0; the flag is 1 on the
// last chunk and 0 on the others. The session prefix is drawn afresh each time a writer opens
// the file (create or resume): a resumed run seals new rows under counters an interrupted run may
// already have used past its last checkpoint, and a fresh prefix keeps every nonce used once. The
// reader takes the prefix from the chunk and checks the counter and the flag itself, after the tag.
//
// The key check tells a wrong key from a damaged file (GCM alone cannot); the header tag covers
// the file id and the reserved bytes. A reader refuses, each with its own message: a file that is
// not sealed, another version, another key, a changed header, a chunk that does not authenticate,
// a chunk out of place, a file cut inside a chunk or before its last chunk, and bytes after the
// last chunk. Plaintext is only handed out once its chunk has authenticated.

/// Constants and derived keys of the sealed-file format (described at the top of this file).
enum SealedFormat {
    static let magic: [UInt8] = [0x89, 0x53, 0x42, 0x53, 0x45, 0x41, 0x4C, 0x0A]
    static let version: UInt8 = 1
    static let headerSize = 60
    /// Length and nonce.
    static let chunkHeadSize = 16
    /// The most plaintext one chunk holds; a longer append is split. Bounds a reader's memory.
    static let maxChunk = 1 << 20
    /// Bytes a chunk adds to its plaintext.
    static let chunkOverhead = chunkHeadSize + AESGCM.tagSize
    static let prefixSize = 7

    /// The keys of one file, derived from its data key and file id.
    struct Keys {
        let chunks: SecretBytes
        let header: SecretBytes
        let check: [UInt8]

        init(_ key: DataKey, fileID: [UInt8]) {
            chunks = hmacSHA256(key: key.secret, Array("showbatch sealed v1 chunks".utf8) + fileID)
            header = hmacSHA256(key: key.secret, Array("showbatch sealed v1 header".utf8))
            check = hmacSHA256(key: key.secret, Array("showbatch sealed v1 key check".utf8)).withBytes { Array($0[0..<16]) }
        }

        func headerTag(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
            hmacSHA256(key: header, Array(bytes)).withBytes { Array($0[0..<16]) }
        }
    }

    static func readUInt32(_ bytes: UnsafeRawBufferPointer, at index: Int) -> UInt32 {
        (UInt32(bytes[index]) << 24) | (UInt32(bytes[index + 1]) << 16) | (UInt32(bytes[index + 2]) << 8) | UInt32(bytes[index + 3])
    }

    static func writeUInt32(_ value: UInt32, to bytes: UnsafeMutableRawBufferPointer, at index: Int) {
        bytes[index] = UInt8(truncatingIfNeeded: value >> 24)
        bytes[index + 1] = UInt8(truncatingIfNeeded: value >> 16)
        bytes[index + 2] = UInt8(truncatingIfNeeded: value >> 8)
        bytes[index + 3] = UInt8(truncatingIfNeeded: value)
    }

    /// "1 chunk", "2 chunks".
    static func chunks(_ count: Int) -> String { count == 1 ? "1 chunk" : "\(count) chunks" }
}

/// Writes a sealed file: a header, then a chunk (or several, for more than 1 MiB) for each
/// `append`, and a last chunk at `finish`. Every call returns the byte offset after it, a chunk
/// boundary: what a checkpoint records, and where `resume` can go on from. The file descriptor is
/// the caller's (opened, synced and closed by it); writes go to its current position.
package final class SealedWriter {
    /// The file as messages name it.
    package let name: String
    private let fd: Int32
    private let cipher: AESGCM
    private var nonce: [UInt8]
    private var counter: UInt32
    /// Where the next chunk goes: the offset after the last one written.
    package private(set) var offset: Int
    /// Whether the last chunk is written; nothing may follow it.
    package private(set) var isFinished = false
    /// Ciphertext of one chunk with its head and tag; not secret.
    private var scratch: [UInt8]

    private init(fd: Int32, keys: SealedFormat.Keys, name: String, counter: UInt32, offset: Int) {
        self.fd = fd
        self.name = name
        cipher = AESGCM(key: keys.chunks, .seal)
        nonce = randomBytes(SealedFormat.prefixSize) + [0, 0, 0, 0, 0]
        self.counter = counter
        self.offset = offset
        scratch = []
    }

    /// Chunks written so far, by this writer and the runs it continues.
    package var chunkCount: Int { Int(counter) }

    /// Starts a sealed file at `fd` (an empty file, opened for writing) under `key`: writes its
    /// header. `name` is the path messages show.
    package static func create(fd: Int32, key: DataKey, name: String) throws(CryptoError) -> SealedWriter {
        let fileID = randomBytes(16)
        let keys = SealedFormat.Keys(key, fileID: fileID)
        var header = SealedFormat.magic + [SealedFormat.version, 0, 0, 0] + fileID + keys.check
        header += keys.headerTag(header[...])
        if let code = header.withUnsafeBytes({ PrivateFile.writeAll(fd, $0) }) {
            throw CryptoError(.io, "cannot write \(name): \(describeErrno(code))")
        }
        return SealedWriter(fd: fd, keys: keys, name: name, counter: 0, offset: SealedFormat.headerSize)
    }

    /// Continues the sealed file at `fd` (opened for reading and writing) from `offset`, a chunk
    /// boundary a checkpoint recorded: every chunk before it is authenticated (and its plaintext
    /// handed to `visit`, in order), the file is cut back to it, and the next chunk takes the next
    /// counter.
    package static func resume(fd: Int32, key: DataKey, name: String, at offset: Int,
                               visit: (UnsafeRawBufferPointer) -> Void = { _ in }) throws(CryptoError) -> SealedWriter {
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw CryptoError(.io, "cannot read \(name): \(describeErrno(errno))")
        }
        let size = Int(info.st_size)
        guard size >= offset else {
            throw CryptoError(.sealedFile, "\(name) is shorter than its checkpoint (\(size) bytes, not \(offset))")
        }
        let reader = try SealedReader(fd: fd, key: key, name: name)
        guard offset >= SealedFormat.headerSize else {
            throw CryptoError(.sealedFile, "\(name): byte \(offset) is not the end of a chunk (the checkpoint and the file disagree)")
        }
        while reader.offset < offset {
            guard let chunk = try reader.readChunk(limit: offset) else { break }
            if chunk.last {
                throw CryptoError(.sealedFile, "\(name) already has its last chunk, before byte \(offset): a finished file is not continued")
            }
            visit(chunk.plaintext)
        }
        reader.wipe()
        guard ftruncate(fd, off_t(offset)) == 0, lseek(fd, off_t(offset), SEEK_SET) >= 0 else {
            throw CryptoError(.io, "cannot cut \(name) back to its checkpoint: \(describeErrno(errno))")
        }
        return SealedWriter(fd: fd, keys: reader.keys, name: name, counter: UInt32(reader.chunkCount), offset: offset)
    }

    /// Continues the sealed file at `fd` after its first `plaintextCount` bytes of plaintext, which
    /// must end at a chunk boundary (a checkpoint counts plaintext; the chunks' lengths, which
    /// authenticate, say where it is in the file): every chunk before it is authenticated and its
    /// plaintext handed to `visit`, in order, and the file is cut back to it. A last chunk after
    /// it (a file finished, but not yet put in place) is cut off too, to be written again.
    package static func resume(fd: Int32, key: DataKey, name: String, plaintextCount: Int,
                               visit: (UnsafeRawBufferPointer) -> Void = { _ in }) throws(CryptoError) -> SealedWriter {
        let reader = try SealedReader(fd: fd, key: key, name: name)
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw CryptoError(.io, "cannot read \(name): \(describeErrno(errno))")
        }
        var plaintext = 0
        while plaintext < plaintextCount {
            if reader.offset >= Int(info.st_size) {
                throw CryptoError(.sealedFile, "\(name) holds \(plaintext) bytes, fewer than its checkpoint's \(plaintextCount) (it was cut short)")
            }
            // A limit past any offset: a chunk is read whole, and nothing after a last one is probed.
            guard let chunk = try reader.readChunk(limit: Int.max) else { break }
            if chunk.last && plaintext + chunk.plaintext.count < plaintextCount {
                reader.wipe()
                throw CryptoError(.sealedFile, "\(name) ends (its last chunk) before its checkpoint: it holds \(plaintext + chunk.plaintext.count) bytes, not \(plaintextCount)")
            }
            guard plaintext + chunk.plaintext.count <= plaintextCount else {
                reader.wipe()
                throw CryptoError(.sealedFile, "\(name): its checkpoint (\(plaintextCount) bytes) is not at the end of a chunk (the checkpoint and the file disagree)")
            }
            visit(chunk.plaintext)
            plaintext += chunk.plaintext.count
        }
        reader.wipe()
        let offset = reader.offset
        guard ftruncate(fd, off_t(offset)) == 0, lseek(fd, off_t(offset), SEEK_SET) >= 0 else {
            throw CryptoError(.io, "cannot cut \(name) back to its checkpoint: \(describeErrno(errno))")
        }
        return SealedWriter(fd: fd, keys: reader.keys, name: name, counter: UInt32(reader.chunkCount), offset: offset)
    }

    /// Seals `plaintext` as the next chunk (chunks, past 1 MiB); the offset after it. Nothing is
    /// written for no bytes.
    @discardableResult
    package func append(_ plaintext: UnsafeRawBufferPointer) throws(CryptoError) -> Int {
        var start = 0
        while start < plaintext.count {
            let end = min(start + SealedFormat.maxChunk, plaintext.count)
            try seal(UnsafeRawBufferPointer(rebasing: plaintext[start..<end]), last: false)
            start = end
        }
        return offset
    }

    /// `append` of an array.
    @discardableResult
    package func append(_ plaintext: [UInt8]) throws(CryptoError) -> Int {
        try plaintext.withUnsafeBytes { bytes in
            Result { () throws(CryptoError) in try append(bytes) }
        }.get()
    }

    /// Seals `plaintext` (possibly none) and ends the file with the last chunk; the file's size.
    @discardableResult
    package func finish(_ plaintext: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0)) throws(CryptoError) -> Int {
        var start = 0
        while plaintext.count - start > SealedFormat.maxChunk {
            try seal(UnsafeRawBufferPointer(rebasing: plaintext[start..<(start + SealedFormat.maxChunk)]), last: false)
            start += SealedFormat.maxChunk
        }
        try seal(UnsafeRawBufferPointer(rebasing: plaintext[start...]), last: true)
        isFinished = true
        return offset
    }

    /// `finish` with an array.
    @discardableResult
    package func finish(_ plaintext: [UInt8]) throws(CryptoError) -> Int {
        try plaintext.withUnsafeBytes { bytes in
            Result { () throws(CryptoError) in try finish(bytes) }
        }.get()
    }

    private func seal(_ plaintext: UnsafeRawBufferPointer, last: Bool) throws(CryptoError) {
        precondition(!isFinished, "a sealed file is appended to after its last chunk")
        guard counter < UInt32.max else {
            throw CryptoError(.sealedFile, "\(name) has as many chunks as a sealed file can hold")
        }
        let total = SealedFormat.chunkOverhead + plaintext.count
        if scratch.count < total { scratch = [UInt8](repeating: 0, count: max(total, 1 << 16)) }
        nonce.withUnsafeMutableBytes { nonce in
            SealedFormat.writeUInt32(counter, to: nonce, at: SealedFormat.prefixSize)
            nonce[11] = last ? 1 : 0
        }
        let code = scratch.withUnsafeMutableBytes { out -> Int32? in
            SealedFormat.writeUInt32(UInt32(plaintext.count), to: out, at: 0)
            nonce.withUnsafeBytes { nonce in
                UnsafeMutableRawBufferPointer(rebasing: out[4..<16]).copyMemory(from: nonce)
                cipher.seal(nonce: nonce,
                            aad: UnsafeRawBufferPointer(rebasing: out[0..<4]),
                            plaintext: plaintext,
                            into: UnsafeMutableRawBufferPointer(rebasing: out[16..<(16 + plaintext.count)]),
                            tag: UnsafeMutableRawBufferPointer(rebasing: out[(16 + plaintext.count)..<total]))
            }
            return PrivateFile.writeAll(fd, UnsafeRawBufferPointer(rebasing: out[0..<total]))
        }
        if let code { throw CryptoError(.io, "cannot write \(name): \(describeErrno(code))") }
        counter += 1
        offset += total
    }
}

/// Reads a sealed file from its start, chunk by chunk, handing out each chunk's plaintext only
/// once it has authenticated, and refusing a file that is not whole and unchanged (the messages
/// are listed at the top of this file). Reads with `pread` from offset 0; the file descriptor is
/// the caller's.
package final class SealedReader: PlaintextSource {
    /// The file as messages name it.
    package let name: String
    private let fd: Int32
    let keys: SealedFormat.Keys
    private let cipher: AESGCM
    /// The current chunk's ciphertext, decrypted in place.
    /// As large as the largest chunk so far (most are 64 KiB or less): merge holds a reader for
    /// each shard's file.
    private var buffer = SecretBytes(count: 0)
    private var plaintextCount = 0
    /// How much of the current chunk `read(into:)` has handed out.
    private var cursor = 0
    /// Bytes read and verified: the header and whole chunks.
    package private(set) var offset = 0
    /// Chunks read and verified.
    package private(set) var chunkCount = 0
    /// Whether the last chunk has been read (and nothing follows it).
    package private(set) var isAtEnd = false

    /// Opens the sealed file at `fd` under `key`; checks its header. `name` is the path messages
    /// show.
    package init(fd: Int32, key: DataKey, name: String) throws(CryptoError) {
        self.fd = fd
        self.name = name
        var header = [UInt8](repeating: 0, count: SealedFormat.headerSize)
        let got = try header.withUnsafeMutableBytes { Self.readFully(fd, $0, at: 0, name: name) }.get()
        let magic = SealedFormat.magic
        if got == 0 { throw CryptoError(.sealedFile, "\(name) is empty: it has no sealed header") }
        guard header[0..<min(got, magic.count)].elementsEqual(magic[0..<min(got, magic.count)]) else {
            throw CryptoError(.sealedFile, "\(name) is not a sealed showbatch file")
        }
        if got > magic.count && header[8] != SealedFormat.version {
            throw CryptoError(.sealedFile, "\(name) is a sealed file of version \(header[8]), which this showbatch cannot read")
        }
        guard got == SealedFormat.headerSize else {
            throw CryptoError(.sealedFile, "\(name) ends inside its header (the file was cut short)")
        }
        keys = SealedFormat.Keys(key, fileID: Array(header[12..<28]))
        guard keys.check.elementsEqual(header[28..<44]) else {
            throw CryptoError(.sealedFile, "\(name) was sealed under another key (its key check does not match)")
        }
        guard keys.headerTag(header[0..<44]).elementsEqual(header[44..<60]) else {
            throw CryptoError(.sealedFile, "\(name): its header was changed or damaged (it does not authenticate)")
        }
        cipher = AESGCM(key: keys.chunks, .open)
        offset = SealedFormat.headerSize
    }

    /// The next chunk's plaintext, valid until the next call; nil after the last chunk.
    package func nextChunk() throws(CryptoError) -> UnsafeRawBufferPointer? {
        let chunk = try readChunk(limit: nil)
        // Handed out whole: `read(into:)` goes on with the next chunk.
        cursor = plaintextCount
        return chunk?.plaintext
    }

    /// Fills `target` with the next plaintext bytes; how many (0 after the last chunk).
    package func read(into target: UnsafeMutableRawBufferPointer) throws(CryptoError) -> Int {
        while cursor == plaintextCount {
            guard try readChunk(limit: nil) != nil else { return 0 }
        }
        let count = min(target.count, plaintextCount - cursor)
        buffer.withBytes { bytes in
            target.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[cursor..<(cursor + count)]))
        }
        cursor += count
        return count
    }

    /// Zeroes the last chunk's plaintext.
    func wipe() {
        buffer.withMutableBytes { ShowbatchBasics.wipe($0) }
        plaintextCount = 0
        cursor = 0
    }

    /// Reads and authenticates the next chunk; nil after the last. With `limit` (resuming), a
    /// chunk that would end past it is refused: the limit must be a chunk boundary.
    func readChunk(limit: Int?) throws(CryptoError) -> (plaintext: UnsafeRawBufferPointer, last: Bool)? {
        if isAtEnd { return nil }
        let start = offset
        let number = chunkCount + 1
        var head = [UInt8](repeating: 0, count: SealedFormat.chunkHeadSize)
        let got = try head.withUnsafeMutableBytes { Self.readFully(fd, $0, at: start, name: name) }.get()
        if got == 0 {
            throw CryptoError(.sealedFile, "\(name) has no last chunk: it ends after \(SealedFormat.chunks(chunkCount)) (it was cut short, or its run did not finish)")
        }
        if got < head.count { throw cutShort(number, start) }
        let length = head.withUnsafeBytes { Int(SealedFormat.readUInt32($0, at: 0)) }
        guard length <= SealedFormat.maxChunk else {
            throw CryptoError(.sealedFile, "\(name): chunk \(number) at byte \(start) claims \(length) bytes, more than a chunk holds (the file is damaged)")
        }
        let end = start + SealedFormat.chunkOverhead + length
        if let limit, end > limit {
            throw CryptoError(.sealedFile, "\(name): byte \(limit) is not the end of a chunk (the checkpoint and the file disagree)")
        }
        let bodyCount = length + AESGCM.tagSize
        if buffer.count < bodyCount {
            // The old buffer (the last chunk's plaintext) is zeroed as it is freed.
            buffer = SecretBytes(count: bodyCount)
        }
        let authentic = try buffer.withMutableBytes { bytes -> Result<Bool, CryptoError> in
            let body = UnsafeMutableRawBufferPointer(rebasing: bytes[0..<bodyCount])
            switch Self.readFully(fd, body, at: start + SealedFormat.chunkHeadSize, name: name) {
            case .failure(let error): return .failure(error)
            case .success(let got) where got < bodyCount: return .failure(cutShort(number, start))
            case .success: break
            }
            return .success(head.withUnsafeBytes { head in
                cipher.open(nonce: UnsafeRawBufferPointer(rebasing: head[4..<16]),
                            aad: UnsafeRawBufferPointer(rebasing: head[0..<4]),
                            ciphertext: UnsafeRawBufferPointer(rebasing: bytes[0..<length]),
                            into: UnsafeMutableRawBufferPointer(rebasing: bytes[0..<length]),
                            tag: UnsafeRawBufferPointer(rebasing: bytes[length..<bodyCount]))
            })
        }.get()
        plaintextCount = 0
        cursor = 0
        guard authentic else {
            throw CryptoError(.sealedFile, "\(name): chunk \(number) at byte \(start) does not authenticate (it was changed or damaged)")
        }
        let counter = head.withUnsafeBytes { Int(SealedFormat.readUInt32($0, at: 4 + SealedFormat.prefixSize)) }
        guard counter == chunkCount else {
            wipe()
            throw CryptoError(.sealedFile, "\(name): chunk \(number) at byte \(start) is chunk \(counter + 1) of the file (chunks were reordered, repeated or dropped)")
        }
        let last = head[15] == 1
        offset = end
        chunkCount += 1
        plaintextCount = length
        if last {
            isAtEnd = true
            if limit == nil {
                var probe: UInt8 = 0
                let more = try withUnsafeMutableBytes(of: &probe) { Self.readFully(fd, $0, at: end, name: name) }.get()
                if more > 0 {
                    wipe()
                    throw CryptoError(.sealedFile, "\(name) has data after its last chunk (something was appended)")
                }
            }
        }
        return buffer.withBytes { (UnsafeRawBufferPointer(rebasing: $0[0..<length]), last) }
    }

    private func cutShort(_ number: Int, _ start: Int) -> CryptoError {
        CryptoError(.sealedFile, "\(name) ends inside chunk \(number) at byte \(start) (the file was cut short)")
    }

    /// Reads into all of `bytes` from `offset`, or up to the end of the file; how many bytes.
    private static func readFully(_ fd: Int32, _ bytes: UnsafeMutableRawBufferPointer, at offset: Int,
                                  name: String) -> Result<Int, CryptoError> {
        do {
            return .success(try FileDescriptor(borrowing: fd, path: name).read(into: bytes, at: offset))
        } catch {
            return .failure(CryptoError(.io, "cannot read \(name): \(error.reason)"))
        }
    }
}
