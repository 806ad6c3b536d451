import Foundation
import Testing
@testable import ShowbatchBasics

/// A failed file operation carries what was done, to what file, for what and its errno, and is
/// put in words in one place.
@Suite struct FileErrorTests {
    @Test(arguments: [
        (FileError(.write, "out/r.csv", errno: ENOSPC), "cannot write out/r.csv: No space left on device (the disk is full)"),
        (FileError(.write, .journal, "out/r.csv.journal", errno: EIO), "cannot write the journal out/r.csv.journal: Input/output error"),
        (FileError(.create, .folder, "out", purpose: "for out/r.csv", errno: EACCES),
         "cannot create the folder out for out/r.csv: Permission denied (check the folder's owner and permissions)"),
        (FileError(.rename(to: "out/r.csv"), "out/r.csv.partial", errno: EROFS,
                   next: "the journal out/r.csv.journal is kept, so the run can go on with --resume once that is fixed"),
         "cannot rename out/r.csv.partial to out/r.csv: Read-only file system (the file system is mounted read-only); the journal out/r.csv.journal is kept, so the run can go on with --resume once that is fixed"),
        (FileError(.makePrivate, "r.csv", errno: EPERM), "cannot make r.csv private (mode 0600): Operation not permitted (check the folder's owner and permissions)"),
        (FileError(.syncFolder, "ledger", errno: EIO), "cannot write ledger: syncing its folder: Input/output error"),
        (FileError(.lock, .auditTrail, "audit.log", errno: ENOLCK), "cannot lock the audit trail audit.log: No locks available"),
    ])
    func itSaysWhatWasDoneToWhatAndWhy(error: FileError, text: String) {
        #expect(error.description == text)
        #expect(RunError.runtime(error).description == text && RunError.runtime(error).exitCode == .runtime)
    }

    /// What a file showbatch writes could not be made: the error is the file's, with the
    /// system's errno as a field, not only in its words.
    @Test func aFileThatCannotBeCreatedCarriesItsErrno() throws {
        let dir = FileManager.default.temporaryDirectory.path + "/showbatch-fileerror-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // A folder no one may write into (root ignores modes: there, it is a file in its place).
        let blocked = dir + "/blocked"
        if getuid() == 0 {
            _ = FileManager.default.createFile(atPath: blocked, contents: Data())
        } else {
            try FileManager.default.createDirectory(atPath: blocked, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o500])
        }
        #expect {
            try PrivateFile.replaceAtomically(blocked + "/r.csv", with: Array("x".utf8), mode: 0o600)
        } throws: { error in
            guard case .runtime(let problem)? = error as? RunError, let file = problem as? FileError else { return false }
            return file.path == blocked + "/r.csv" || file.path == blocked
        }
    }
}
