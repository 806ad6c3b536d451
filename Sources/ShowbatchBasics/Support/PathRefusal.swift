import Foundation

/// A path showbatch would write, or read as one of its own files, that it refuses: what was
/// found there, and what the person is to do; put in words here only.
package struct PathRefusal: RunProblem, Equatable {
    /// What is at the path (or its folder) that makes it refused.
    package enum Found: Sendable, Equatable {
        case directory
        /// A symbolic link: showbatch never writes through one.
        case link
        /// A device, pipe or socket.
        case special
        /// Not a regular file, found so once opened.
        case notRegular
        /// A file of another user's.
        case otherUsers(owner: String, runner: String)
        /// A file with more than one name.
        case links(Int)
        /// A file other users can write.
        case writableByOthers(mode: UInt32)
        /// A folder whose owner, another user, can replace any file in it.
        case folderOwned(folder: String, owner: String)
        /// A folder others can write, without the sticky bit.
        case folderWritable(folder: String, mode: UInt32)
    }

    /// What the person is told to do.
    package enum Remedy: Sendable, Equatable {
        /// Nothing is written there.
        case cannotWrite
        case removeAndRunAgain
        /// A file another user could have planted is not used, whatever showbatch would do with it.
        case untrustedFile
        /// Only a folder of the user's own (or with the sticky bit) is used.
        case useAFolderOfYourOwn
    }

    package var path: String
    package var found: Found
    package var remedy: Remedy

    package init(_ path: String, _ found: Found, _ remedy: Remedy) {
        self.path = path
        self.found = found
        self.remedy = remedy
    }

    /// What was found, in words that name the path.
    package var finding: String {
        switch found {
        case .directory: return "\(path) is a directory"
        case .link: return "\(path) is a symbolic link; showbatch never writes through one"
        case .special: return "\(path) is not a regular file (a device, pipe or socket)"
        case .notRegular: return "\(path) is not a regular file"
        case .otherUsers(let owner, let runner): return "\(path) belongs to \(owner), not to \(runner), who runs showbatch"
        case .links(let count): return "\(path) has \(count) links (a hard link elsewhere gives it another name, maybe in another user's folder)"
        case .writableByOthers(let mode): return "\(path) can be written by other users (mode \(String(mode, radix: 8)))"
        case .folderOwned(let folder, let owner): return "the folder \(folder) belongs to \(owner), who can replace any file in it"
        case .folderWritable(let folder, let mode):
            return "the folder \(folder) can be written by other users and has no sticky bit (mode \(String(mode, radix: 8))), so they can replace the files in it"
        }
    }

    package var description: String {
        switch remedy {
        case .cannotWrite: return finding + ": cannot write it"
        case .removeAndRunAgain: return finding + ": remove it and run again"
        case .untrustedFile:
            return finding + "; showbatch never resumes, merges, reads or writes into a file another user could have planted or can change: remove it and run again"
        case .useAFolderOfYourOwn:
            return "cannot use \(path): \(finding); showbatch keeps its files only where no other user can plant or swap them: use a folder of your own (mode 0700 or 0755), or one with the sticky bit"
        }
    }

    package func redacted(_ redact: (String) -> String) -> PathRefusal {
        var copy = self
        copy.path = redact(path)
        switch found {
        case .folderOwned(let folder, let owner): copy.found = .folderOwned(folder: redact(folder), owner: redact(owner))
        case .folderWritable(let folder, let mode): copy.found = .folderWritable(folder: redact(folder), mode: mode)
        case .otherUsers(let owner, let runner): copy.found = .otherUsers(owner: redact(owner), runner: redact(runner))
        case .directory, .link, .special, .notRegular, .links, .writableByOthers: break
        }
        return copy
    }
}
