import Foundation
import ShowbatchBasics
import ShowbatchManifest
#if canImport(Glibc)
import Glibc
#endif

/// The journal's part in a `--retry-failed` rewrite: the journal of the new files written whole
/// before they are put in place, adopted after, and a commit cut short between the two finished
/// by the next run.
extension Journal {
    /// Whether a finished output's journal stays: for `--retry-failed` when rows failed, and for
    /// merge to know which rows a shard's rejects file holds. An OpenPGP message's stays only when
    /// rows failed and its kept sealed rows can be read again (its data key wrapped under the
    /// state key); merge never reads it.
    static func stays(failed: Int, rejected: Int, publishesMessage: Bool, keyWrapped: Bool) -> Bool {
        if publishesMessage { return keyWrapped && failed > 0 }
        return failed > 0 || rejected > 0
    }

    /// Before a `--retry-failed` rewrite is put in place: the journal of the new files, written
    /// whole and synced as `<journal>.next` (its identity and data key as this one has them, the
    /// rewrite's failed and rejected rows, its last checkpoint and end). Putting the files in
    /// place and then renaming this file over the journal (`adoptRewrite`) is the commit; a run
    /// cut short between the two is finished by `finishInterruptedRewrite`, so a journal never
    /// describes files it was not written for. `keep`: the new journal stays.
    func prepareRewrite(_ checkpoint: Checkpoint, keep: Bool) throws(RunError) {
        let next = SideFile.journalNext.of(output)
        let nextFD = try PrivateFile.create(next, for: output)
        var whole: [UInt8] = []
        var rewriter = JournalCodec.Writer()
        rewriter.encode(.identity(identity), into: &whole)
        if let storedKey { rewriter.encode(.dataKey(storedKey), into: &whole) }
        for record in rewriteRecords { rewriter.encode(record, into: &whole) }
        rewriter.encode(.checkpoint(checkpoint), into: &whole)
        rewriter.encode(.end(size: checkpoint.offset, hash: checkpoint.hash), into: &whole)
        let code = whole.withUnsafeBytes { PrivateFile.writeAll(nextFD, $0) } ?? (fdatasync(nextFD) == 0 ? nil : errno)
        Glibc.close(nextFD)
        if let code {
            unlink(next)
            throw RunError.runtime(FileError(.write, .journal, next, errno: code))
        }
        rewriteKept = keep
    }

    /// Once the rewritten files are in place: their journal replaces this one, or both go when
    /// it does not stay.
    func adoptRewrite() throws(RunError) {
        close()
        try Journal.adopt(SideFile.journalNext.of(output), as: path, keep: rewriteKept)
    }

    private static func adopt(_ next: String, as path: String, keep: Bool) throws(RunError) {
        if keep {
            guard rename(next, path) == 0 else {
                throw RunError.runtime(FileError(.rename(to: path), next, errno: errno))
            }
        } else {
            unlink(path)
            unlink(next)
        }
    }

    /// Finishes the commit of a `--retry-failed` run of `target` cut short after writing
    /// `<journal>.next`. Each of its files (the output and its rejects file, or an OpenPGP
    /// message's kept sealed rows) is either in place as `.next` describes it, or still its
    /// whole `.partial` (written and synced before `.next` was), which is then put in place: the
    /// `.next` file becomes the journal. If a file is neither, the commit never got that far: the
    /// `.next` file goes, and the journal still describes the files. Done under the journal's
    /// lock; when another run holds it, that run's files are left alone.
    static func finishInterruptedRewrite(of target: OutputTarget) throws(RunError) {
        let output = target.path
        let path = SideFile.journal.of(output)
        let next = SideFile.journalNext.of(output)
        guard case .regular = PrivateFile.inspect(next) else { return }
        guard let fd = try PrivateFile.openExisting(path, for: output) else {
            unlink(next)
            return
        }
        defer { Glibc.close(fd) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return }
        // A .next file that cannot be read or trusted describes nothing: it goes.
        guard let bytes = try? FileDescriptor.openOwn(next)?.readAll(limit: Int.max),
              let contents = try? JournalCodec.read(bytes), let ended = contents.ended else {
            unlink(next)
            return
        }
        // An encrypted output's files are compared by their plaintext, under the key `.next` holds.
        var key: DataKey?
        if target.encrypt != nil {
            guard case .wrapped(let text)? = contents.dataKey, let stateKey = target.encrypt?.stateKey,
                  let unwrapped = try? KeyWrap.unwrap(text, under: stateKey, context: wrapContext(contents.identity.output)) else {
                unlink(next)
                return
            }
            key = unwrapped
        }
        let keep = stays(failed: contents.failedRows.count, rejected: contents.rejectedRows.count,
                         publishesMessage: target.publishesMessage, keyWrapped: key != nil)
        var marks = [(path: output, size: ended.size, hash: ended.hash)]
        if let rejects = target.rejects {
            let mark = contents.lastCheckpoint?.rejects ?? (offset: 0, hash: fnvOffsetBasis, rows: 0)
            marks.append((rejects.path, mark.offset, mark.hash))
        }
        if target.keepsRowsAside && !keep {
            // The messages (or files with a header or trailer) were in place before `.next` was
            // written; the rows kept beside them go after it.
            if target.rowsAside.allSatisfy({ PrivateFile.inspect($0) == .none }) {
                try adopt(next, as: path, keep: false)
            } else {
                unlink(next)
            }
            return
        }
        var placing: [(from: String, to: String)] = []
        for mark in marks {
            let state = target.readableRows(of: mark.path)
            if outputMatches(state, size: mark.size, hash: mark.hash, key: key) { continue }
            let partial = SideFile.partial.of(mark.path)
            guard outputMatches(partial, size: mark.size, hash: mark.hash, key: key) else {
                unlink(next)
                return
            }
            placing.append((partial, state))
        }
        for file in placing where rename(file.from, file.to) != 0 {
            throw RunError.runtime(FileError(.rename(to: file.to), file.from, errno: errno))
        }
        try adopt(next, as: path, keep: keep)
    }

    /// Whether `path` is a regular file of `size` bytes whose FNV-1a hash is `hash`; with `key`, a
    /// whole sealed file whose plaintext is those bytes (and `hash` their `journalTag`).
    static func outputMatches(_ path: String, size: Int, hash: UInt64, key: DataKey? = nil) -> Bool {
        guard let file = try? FileDescriptor.openOwn(path), let bytes = try? StoredBytes(fd: file.raw, path: path, key: key, limit: nil) else {
            return false
        }
        defer { bytes.wipe() }
        var total = 0
        var value = fnvOffsetBasis
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        defer { chunk.withUnsafeMutableBytes { wipe($0) } }
        while true {
            let count: Int
            do {
                count = try chunk.withUnsafeMutableBytes { buffer in
                    try Result { () throws(StoredBytes.Failure) -> Int in try bytes.read(into: buffer) }.get()
                }
            } catch {
                return false
            }
            if count == 0 { break }
            value = fnv1a(chunk[0..<count], seed: value)
            total += count
        }
        return total == size && (key.map { $0.journalTag(value) } ?? value) == hash
    }
}
