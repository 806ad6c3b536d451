import CLinux
import Foundation

/// What the process does before anything else so that what it holds in memory (revealed
/// values, tokens, keys) is not written anywhere it was not asked to write.
package enum ProcessGuard {
    /// No core dump and no same-user debugger can read the process's memory, and GPGME's debug
    /// log is off (at level 8 and up it writes every plaintext byte given to gpg to a file).
    /// Called first, while the process has one thread: `unsetenv` is not safe beside others.
    package static func keepMemoryPrivate() {
        _ = showbatch_keep_memory_private()
        unsetenv("GPGME_DEBUG")
    }
}
