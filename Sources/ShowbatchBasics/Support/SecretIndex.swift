import Foundation

/// The secret texts of a manifest, indexed so that finding them in a message or a quoted line
/// costs time in proportion to that text, not to the number of secrets: a manifest of fifty
/// thousand requests with a problem in each has as many secrets as messages.
///
/// Occurrences are found by length: for each length some secret has, one pass of a rolling
/// hash over the text, each hit checked byte for byte.
package struct SecretIndex {
    /// The secrets, as UTF-8.
    private let secrets: [[UInt8]]
    /// By length, the secrets of that length by hash.
    private let byLength: [Int: [UInt64: [Int32]]]
    /// The lengths, longest first (a longer secret is hidden whole before a shorter one in it).
    private let lengths: [Int]
    /// Every secret, each followed by a NUL, for finding a piece of one.
    private let joined: [UInt8]
    /// Every run of four bytes in a secret: a text with another one is no piece of a secret.
    private let grams: Set<UInt32>
    /// The secrets longer than `longPrefix`, by the hash of their first `longPrefix` bytes.
    private let heads: [UInt64: [Int32]]

    /// Texts shorter than this (in UTF-8 bytes) are never taken for secrets: shorter ones would
    /// hide common words and digits all over a log (`exp`, `1`), and no credential is that short.
    package static let shortest = 6

    /// Secrets longer than this are found by their first `longPrefix` bytes in quoted lines.
    package static let longPrefix = 64

    package init(_ texts: [String]) {
        secrets = texts.map { Array($0.utf8) }
        var byLength: [Int: [UInt64: [Int32]]] = [:]
        var heads: [UInt64: [Int32]] = [:]
        var joined: [UInt8] = []
        var grams = Set<UInt32>()
        for (index, secret) in secrets.enumerated() {
            byLength[secret.count, default: [:]][SecretIndex.hash(secret[...]), default: []].append(Int32(index))
            if secret.count > SecretIndex.longPrefix {
                heads[SecretIndex.hash(secret[..<SecretIndex.longPrefix]), default: []].append(Int32(index))
            }
            joined += secret
            joined.append(0)
            if secret.count >= 4 {
                for start in 0...(secret.count - 4) { grams.insert(SecretIndex.gram(secret, at: start)) }
            }
        }
        self.byLength = byLength
        self.heads = heads
        self.joined = joined
        self.grams = grams
        lengths = byLength.keys.sorted(by: >)
    }

    package var isEmpty: Bool { secrets.isEmpty }

    /// Whether `text` is a secret.
    package func contains(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return byLength[bytes.count]?[SecretIndex.hash(bytes[...])]?.contains { secrets[Int($0)] == bytes } == true
    }

    /// Whether `text` (four bytes or more) is a piece of a secret.
    package func containsPiece(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count >= 4 else { return contains(text) }
        for start in 0...(bytes.count - 4) where !grams.contains(SecretIndex.gram(bytes, at: start)) { return false }
        return joined.withUnsafeBufferPointer { haystack in
            bytes.withUnsafeBufferPointer { needle in
                // memchr to each place the first byte is, memcmp there.
                var start = 0
                while start + needle.count <= haystack.count {
                    guard let hit = memchr(haystack.baseAddress! + start, Int32(needle[0]), haystack.count - needle.count + 1 - start) else { return false }
                    let position = haystack.baseAddress!.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                    if memcmp(hit, needle.baseAddress!, needle.count) == 0 { return true }
                    start = position + 1
                }
                return false
            }
        }
    }

    /// The byte ranges of `text` that are secrets of at least `minimum` bytes, longest secrets
    /// first and never overlapping one already found. With `prefixesAtEnd`, a secret longer than
    /// `longPrefix` is found by its first `longPrefix` bytes and runs to the end of `text` (the
    /// shown part of a line, which such a secret may run past).
    package func occurrences(in text: [UInt8], minimum: Int, prefixesAtEnd: Bool = false) -> [Range<Int>] {
        var found: [Range<Int>] = []
        func free(_ range: Range<Int>) -> Bool { !found.contains { $0.overlaps(range) } }
        for length in lengths where length >= minimum && length <= text.count {
            guard let table = byLength[length] else { continue }
            SecretIndex.forEachWindow(of: length, in: text) { start, hash in
                let range = start..<start + length
                if let candidates = table[hash], candidates.contains(where: { secrets[Int($0)][...] == text[range] }), free(range) {
                    found.append(range)
                }
            }
        }
        if prefixesAtEnd && !heads.isEmpty {
            // By the first bytes: the rest may lie beyond the text.
            SecretIndex.forEachWindow(of: SecretIndex.longPrefix, in: text) { start, hash in
                let head = start..<start + SecretIndex.longPrefix
                if let candidates = heads[hash],
                   candidates.contains(where: { secrets[Int($0)][..<SecretIndex.longPrefix] == text[head] }),
                   free(start..<text.count) {
                    found.append(start..<text.count)
                }
            }
        }
        return found.sorted { $0.lowerBound < $1.lowerBound }
    }

    private static let base: UInt64 = 1_099_511_628_211

    private static func hash(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        var hash: UInt64 = 0
        for byte in bytes { hash = hash &* base &+ UInt64(byte) }
        return hash
    }

    /// Calls `body` with the start and hash of every window of `length` bytes of `text`, in one pass.
    private static func forEachWindow(of length: Int, in text: [UInt8], _ body: (Int, UInt64) -> Void) {
        guard length > 0, length <= text.count else { return }
        var power: UInt64 = 1
        for _ in 1..<length { power = power &* base }
        var hash = SecretIndex.hash(text[..<length])
        var start = 0
        while true {
            body(start, hash)
            guard start + length < text.count else { return }
            hash = (hash &- UInt64(text[start]) &* power) &* base &+ UInt64(text[start + length])
            start += 1
        }
    }

    private static func gram(_ bytes: [UInt8], at start: Int) -> UInt32 {
        UInt32(bytes[start]) << 24 | UInt32(bytes[start + 1]) << 16 | UInt32(bytes[start + 2]) << 8 | UInt32(bytes[start + 3])
    }
}
