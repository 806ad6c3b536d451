#if canImport(Glibc)
import Glibc
#endif

/// Memory for key material or decrypted bytes, zeroed before it is freed (explicit_bzero, which
/// the compiler cannot drop as a dead store). Best effort: Swift may have copied bytes that passed
/// through a `String` or an `Array` elsewhere, so secrets are written straight into this memory.
package final class SecretBytes: @unchecked Sendable {
    private let storage: UnsafeMutableRawBufferPointer

    /// `count` zero bytes.
    package init(count: Int) {
        storage = .allocate(byteCount: max(count, 1), alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        self.count = count
    }

    /// A copy of `bytes` (a passphrase read from the manifest).
    package convenience init(copying bytes: [UInt8]) {
        self.init(count: bytes.count)
        withMutableBytes { $0.copyBytes(from: bytes) }
    }

    /// How many bytes it holds.
    package let count: Int

    deinit {
        wipe(storage)
        storage.deallocate()
    }

    /// Reads the bytes; they must not escape `body`.
    package func withBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeRawBufferPointer(rebasing: storage[0..<count]))
    }

    /// Writes the bytes; only while the value is being made (it is shared once made).
    package func withMutableBytes<Result>(_ body: (UnsafeMutableRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeMutableRawBufferPointer(rebasing: storage[0..<count]))
    }

    /// Whether `other` holds the same bytes, in time that does not depend on where they differ.
    package func matches(_ other: SecretBytes) -> Bool {
        guard count == other.count else { return false }
        return withBytes { mine in
            other.withBytes { theirs in
                var difference: UInt8 = 0
                for index in 0..<count { difference |= mine[index] ^ theirs[index] }
                return difference == 0
            }
        }
    }
}

/// Zeroes `bytes` in a way the compiler keeps.
package func wipe(_ bytes: UnsafeMutableRawBufferPointer) {
    guard let base = bytes.baseAddress, bytes.count > 0 else { return }
    explicit_bzero(base, bytes.count)
}

/// The bytes of base64 `text` (standard alphabet; padding optional; white space around it
/// ignored), decoded straight into secret memory; nil when it is not base64.
package func decodeBase64Secret(_ text: [UInt8]) -> SecretBytes? {
    func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D }
    var start = 0
    var end = text.count
    while start < end && isSpace(text[start]) { start += 1 }
    while end > start && isSpace(text[end - 1]) { end -= 1 }
    var padding = 0
    while end > start && text[end - 1] == UInt8(ascii: "=") && padding < 2 {
        end -= 1
        padding += 1
    }
    let digits = end - start
    // With padding, the text is whole groups of 4; without, a last group of 1 cannot happen.
    if padding > 0 && (digits + padding) % 4 != 0 { return nil }
    if digits % 4 == 1 { return nil }
    let secret = SecretBytes(count: digits / 4 * 3 + max(digits % 4 - 1, 0))
    let ok = secret.withMutableBytes { out -> Bool in
        var accumulator: UInt32 = 0
        var bits = 0
        var written = 0
        for index in start..<end {
            let c = text[index]
            let value: UInt32
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(c - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(c - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(c - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "+"): value = 62
            case UInt8(ascii: "/"): value = 63
            default: return false
            }
            accumulator = (accumulator << 6) | value
            bits += 6
            if bits >= 8 {
                bits -= 8
                out[written] = UInt8(truncatingIfNeeded: accumulator >> UInt32(bits))
                written += 1
            }
        }
        accumulator = 0
        return true
    }
    return ok ? secret : nil
}
