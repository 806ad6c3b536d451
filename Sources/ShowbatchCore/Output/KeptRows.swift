import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// What a `--retry-failed` run rewrites an output from: the rows of the finished files (the
/// output and its rejects file; for an OpenPGP message, the sealed rows kept beside it), read
/// back one at a time in work-item order (`ShardRows`, so plain, gzip and sealed files alike) and
/// copied into the new files as they were, each to the file it was in, while the failed rows are
/// sent again and written in their place.
///
/// Which file holds a work item's row only the journal knows: without a rejects file, the output
/// holds every work item's row; with one, the rejects file holds the failed and rejected
/// (partial) rows and the output the others, each in work-item order. So a row that now
/// succeeds lands in the output at its work-item position, and the rejects file keeps only what
/// failed again (and its partial rows).
final class KeptRows {
    private let output: Source
    private let rejects: Source?
    private let failed: Set<Int>
    private let rejected: Set<Int>
    /// The output's work items (this shard's), in order, up to `last`.
    private let items: AnyIterator<Int>
    private let last: Int
    private var peeked: Int?
    private var row: [UInt8] = []

    /// One file read back.
    private struct Source {
        let rows: ShardRows
        let path: String
    }

    /// Opens the finished files of `target` (`path`, and `rejectsPath` with rejects), sealed under
    /// `key` when encrypted, whose rows are the work items `items` up to `last`.
    init(target: OutputTarget, path: String, rejectsPath: String?, key: DataKey?, failed: [Journal.FailedRow], rejected: [Int],
         items: AnyIterator<Int>, last: Int) throws(RunError) {
        output = try KeptRows.open(path, layout: target.layout, key: key)
        if let layout = target.rejects?.layout, let rejectsPath {
            rejects = try KeptRows.open(rejectsPath, layout: layout, key: key)
        } else {
            rejects = nil
        }
        self.failed = Set(failed.map(\.ordinal))
        self.rejected = Set(rejected)
        self.items = items
        self.last = last
    }

    private static func open(_ path: String, layout: OutputLayout, key: DataKey?) throws(RunError) -> Source {
        let opened: ShardRows?
        do {
            opened = try ShardRows(path: path, format: layout.format, gzip: layout.gzip, key: key)
        } catch {
            throw unreadable(path, error.reason)
        }
        guard let rows = opened else {
            let refusal = PrivateFile.refusal(path)
            throw RunError.runtime(JournalError.keptRowsUnopened(path: path, refusal: refusal, errno: errno))
        }
        // What comes before the first row is the new file's own (`OutputFile` writes it).
        if layout.format == .json || (layout.format == .csv && layout.csv.header) {
            do { _ = try rows.head() } catch { throw unreadable(path, error.reason) }
        }
        return Source(rows: rows, path: path)
    }

    private static func unreadable(_ path: String, _ reason: String) -> RunError {
        .runtime(JournalError.keptRowsUnreadable(path: path, reason: reason))
    }

    /// The next work item whose row is kept; nil after the last.
    private func peek() -> Int? {
        if peeked == nil, let item = items.next(), item <= last { peeked = item }
        return peeked
    }

    /// Copies into `file` (and its rejects file) every kept row before the work item `ordinal`,
    /// noting in `journal` those that go to the rejects file; the row of `ordinal` itself, a
    /// failed row being sent again, is dropped (the new row takes its place). With `Int.max`,
    /// every row left is copied (the rewrite is ending).
    func copy(before ordinal: Int, into file: OutputFile, journal: Journal?) throws(RunError) {
        while let item = peek(), item <= ordinal {
            peeked = nil
            var split = false
            var source = output
            if let rejects, failed.contains(item) || rejected.contains(item) {
                split = true
                source = rejects
            }
            row.removeAll(keepingCapacity: true)
            let found: Bool
            do { found = try source.rows.next(into: &row) } catch { throw KeptRows.unreadable(source.path, error.reason) }
            guard found else {
                throw KeptRows.unreadable(source.path, "it holds fewer rows than its journal counts")
            }
            if item == ordinal {
                guard failed.contains(item) else {
                    throw RunError.runtime(JournalError.resentRowDidNotFail(file: file.path, item: item))
                }
                continue
            }
            guard !failed.contains(item) else {
                throw RunError.runtime(JournalError.failedRowNotResent(file: file.path, item: item))
            }
            try file.writeKept(row, toRejects: split)
            if split { journal?.recordRejected(item) }
        }
    }

    /// Copies every row left, then checks that both files are used up.
    func finish(into file: OutputFile, journal: Journal?) throws(RunError) {
        try copy(before: Int.max, into: file, journal: journal)
        for source in [output] + (rejects.map { [$0] } ?? []) {
            row.removeAll(keepingCapacity: true)
            let more: Bool
            do {
                more = try source.rows.next(into: &row)
                if !more { try source.rows.finish() }
            } catch {
                throw KeptRows.unreadable(source.path, error.reason)
            }
            if more { throw KeptRows.unreadable(source.path, "it holds more rows than its journal counts") }
        }
        row.withUnsafeMutableBytes { wipe($0) }
    }
}
