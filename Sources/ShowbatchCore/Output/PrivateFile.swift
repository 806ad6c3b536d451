import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Creates (or with `truncate: false`, opens) a file with mode 0600, whatever the umask; parent
/// folders are created. Errors name `output`, the path the user knows, rather than the working file.
func createPrivateFile(_ path: String, for output: String, truncate: Bool = true) throws(RunError) -> FileHandle {
    let parent = (path as NSString).deletingLastPathComponent
    if !parent.isEmpty {
        do {
            try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        } catch {
            throw RunError.runtime("cannot create the folder \(parent) for \(output)")
        }
    }
    let fd = open(path, truncate ? O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC : O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw RunError.runtime("cannot create \(path) for \(output): \(String(cString: strerror(errno)))") }
    // An existing file keeps its old mode through O_CREAT: set it.
    fchmod(fd, 0o600)
    return FileHandle(fileDescriptor: fd, closeOnDealloc: true)
}
