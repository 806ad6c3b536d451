/// FNV-1a, 64-bit: a stable content hash without a crypto library. Inlinable: it runs over every
/// byte of every output, and only a caller's own copy is specialized for its byte sequence
/// (across the module boundary, each byte would go through the generic Sequence).
@inlinable
package func fnv1a<Bytes: Sequence<UInt8>>(_ bytes: Bytes, seed: UInt64 = 0xcbf29ce484222325) -> UInt64 {
    var hash = seed
    for byte in bytes {
        hash ^= UInt64(byte)
        hash = hash &* 0x100000001b3
    }
    return hash
}

/// FNV-1a's starting value (`fnv1a`'s default seed): the hash of nothing, where a chain or a running hash begins.
package let fnvOffsetBasis: UInt64 = 0xcbf29ce484222325
