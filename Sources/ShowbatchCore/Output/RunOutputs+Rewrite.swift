import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// Where a `--retry-failed` run's outputs are opened: what it rewrites each from.
extension RunOutputs {
    /// A `--retry-failed` rewrite of `target`, whose finished run's `journal` is read back: its
    /// files (or an OpenPGP message's kept sealed rows) are checked against the journal, and a
    /// new `.partial` of each made, into which `KeptRows` copies every row but the failed ones,
    /// which are sent again. Nil for the file when no row failed; the rows it keeps, counted.
    static func rewrite(_ target: OutputTarget, journal: Journal, check: OutputCheck,
                                sealing: OutputFile.Sealing?) throws(RunError) -> (OutputFile?, KeptRows?, RowCounts) {
        guard let ended = journal.ended, let checkpoint = journal.lastCheckpoint else {
            throw RunError.usage(JournalError.unfinished(journal: journal.path))
        }
        let key = target.encrypt != nil ? journal.dataKey : nil
        if target.encrypt != nil && key == nil {
            throw RunError.usage(JournalError.noDataKey(journal: journal.path, output: target.path))
        }
        let path = target.readableRows(of: target.path)
        let rejectsPath = target.rejects.map { target.readableRows(of: $0.path) }
        for file in target.rowsAside where PrivateFile.inspect(file) == .none {
            throw RunError.usage(JournalError.keptRowsGone(output: target.path, file: file, sealed: target.publishesMessage))
        }
        let mark = checkpoint.rejects ?? (offset: 0, hash: fnvOffsetBasis, rows: 0)
        guard Journal.outputMatches(path, size: ended.size, hash: ended.hash, key: key) else {
            throw RunError.usage(JournalError.changedSince(path: path, flag: .retryFailed))
        }
        if let rejectsPath, !Journal.outputMatches(rejectsPath, size: mark.offset, hash: mark.hash, key: key) {
            throw RunError.usage(JournalError.changedSince(path: rejectsPath, flag: .retryFailed))
        }
        try check.verify(checkpoint, failed: journal.failedRows, path: path, rejectsPath: rejectsPath, key: key, of: target, journal: journal.path)
        var counts = checkpoint.counts
        counts.rows -= counts.failed
        counts.failed = 0
        guard !journal.failedRows.isEmpty else { return (nil, nil, counts) }
        let rows = try KeptRows(target: target, path: path, rejectsPath: rejectsPath, key: key, failed: journal.failedRows,
                                rejected: journal.rejectedRows, items: check.ordinals(), last: checkpoint.ordinal)
        let file = try OutputFile.create(path: target.path, layout: target.layout, sealing: sealing)
        if let rejects = target.rejects {
            do {
                file.attachRejects(try OutputFile.create(path: rejects.path, layout: rejects.layout, sealing: sealing), partial: target.rejectPartial)
            } catch {
                file.abandon()
                throw error
            }
        }
        file.carry(counts, lastOrdinal: checkpoint.ordinal)
        return (file, rows, counts)
    }
}
