/// FNV-1a, 64-bit: a stable content hash without a crypto library.
package func fnv1a<Bytes: Sequence<UInt8>>(_ bytes: Bytes, seed: UInt64 = 0xcbf29ce484222325) -> UInt64 {
    var hash = seed
    for byte in bytes {
        hash ^= UInt64(byte)
        hash = hash &* 0x100000001b3
    }
    return hash
}
