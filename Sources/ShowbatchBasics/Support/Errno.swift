import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An errno in words: the system's text, and what it means for a run where that helps.
package func describeErrno(_ code: Int32) -> String {
    let text = String(cString: strerror(code))
    switch code {
    case ENOSPC: return "\(text) (the disk is full)"
    case EDQUOT: return "\(text) (the disk quota is used up)"
    case EPIPE: return "\(text) (whatever reads the output has gone away)"
    case EACCES, EPERM: return "\(text) (check the folder's owner and permissions)"
    case EROFS: return "\(text) (the file system is mounted read-only)"
    default: return text
    }
}
