import ShowbatchBasics
import ShowbatchManifest

/// Where the plaintext of an OpenPGP message comes from, piece by piece (a sealed file being
/// unsealed, shard files in order): it is pulled while GnuPG encrypts, never kept whole.
package protocol PlaintextSource: AnyObject {
    /// Fills `buffer` with the next bytes; how many, 0 at the end.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
}
