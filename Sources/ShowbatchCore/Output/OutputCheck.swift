import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// What a journal says of an output, checked against the output's own rows and the manifest's
/// work items before a run trusts it (`--resume`, `--retry-failed`). The chain of the journal
/// (`JournalCodec`) shows that its records were written together; this shows that they are true
/// of this file: the rows up to a checkpoint are as many as it counts, of the statuses it counts
/// (rows say their status unless `columns` leaves it out), and the last of them is the work item
/// it names; each failed row's bytes are one whole row of the file, of the work item it names,
/// and a failed one.
///
/// Rows are read one at a time (`ShardRows`) and work items enumerated as a run does: memory
/// stays bounded, and the cost is one more read of what the run reads back anyway.
struct OutputCheck {
    let manifest: Manifest
    /// The output's place among the run's outputs.
    let target: Int
    let byRequest: [Int]
    let shard: Shard?

    /// Checks `checkpoint` and the failed rows it covers against the output `target` (its
    /// `.partial` file being resumed, or the finished file being rewritten: `path`), read up to
    /// the checkpoint's offset, and, with rejects, the rejects file (`rejectsPath`) up to its own.
    /// `key` unseals the files of an encrypted output. `rejectsPlaced`: the rejects file is in
    /// place already (checked by its caller), so its rows are taken as the journal counts them.
    /// Returns the rows read by error code and HTTP status, as far as the layout writes them.
    @discardableResult
    func verify(_ checkpoint: Journal.Checkpoint, failed: [Journal.FailedRow], path: String, rejectsPath: String?, key: DataKey? = nil,
                rejectsPlaced: Bool = false, of output: OutputTarget, journal: String) throws(RunError) -> RowTally {
        func untrusted(_ reason: String) -> RunError {
            .usage(JournalError.untrusted(journal: journal, reason: reason))
        }
        let items = ordinals()
        var own = try Rows(path, layout: output.layout, key: key, limit: checkpoint.offset, journal: journal)
        var statuses = RowCounts()
        var failedLeft = failed[...]
        let split = output.rejects != nil
        // Spans are checked where the journal keeps them for --retry-failed: a plain file
        // without a rejects file, whose row i is work item i.
        let spans = !split && !output.layout.gzip
        var lastOrdinal = -1
        var tally = RowTally()
        while let row = try own.next() {
            row.count(into: &tally)
            if let status = row.status {
                statuses.count(status)
                if split && (status == .failed || (status == .partial && output.rejectPartial)) {
                    throw untrusted("the output holds a \(status.rawValue) row, which goes to its rejects file")
                }
            }
            guard !split else { continue }
            guard let ordinal = items.next() else {
                throw untrusted("the output holds more rows than this manifest has work items for it")
            }
            lastOrdinal = ordinal
            guard spans, let next = failedLeft.first, next.start < row.span.end else { continue }
            try Self.check(next, is: row, of: ordinal, untrusted: untrusted)
            failedLeft = failedLeft.dropFirst()
        }
        if spans, let next = failedLeft.first {
            throw untrusted("a failed row it records (work item \(next.ordinal)) is not where a row of the output is")
        }
        var rows = own.count
        var statusesKnown = own.hasStatus
        if output.rejects != nil && (rejectsPath != nil || rejectsPlaced) {
            let mark = checkpoint.rejects ?? (offset: 0, hash: fnvOffsetBasis, rows: 0)
            var sideRows = mark.rows
            if let rejects = output.rejects, let rejectsPath {
                var side = try Rows(rejectsPath, layout: rejects.layout, key: key, limit: mark.offset, journal: journal)
                while let row = try side.next() {
                    row.count(into: &tally)
                    if let status = row.status { statuses.count(status) }
                }
                statusesKnown = statusesKnown && side.hasStatus
                sideRows = side.count
            } else {
                // Its rows' statuses are not read again: the output's own are checked below as can be.
                statusesKnown = false
            }
            guard own.count == (checkpoint.ownRows ?? 0), sideRows == mark.rows else {
                throw untrusted("it counts \(checkpoint.ownRows ?? 0) rows in the output and \(mark.rows) in its rejects file, which hold \(own.count) and \(sideRows)")
            }
            rows += sideRows
            // Which rows went to which file only the run knew: the last is the output's (rows)-th.
            for _ in 0..<rows {
                guard let ordinal = items.next() else {
                    throw untrusted("its files hold more rows than this manifest has work items for the output")
                }
                lastOrdinal = ordinal
            }
        }
        guard rows == checkpoint.counts.rows else {
            throw untrusted("it counts \(checkpoint.counts.rows) rows up to its last checkpoint, and the output holds \(rows)")
        }
        guard lastOrdinal == checkpoint.ordinal else {
            throw untrusted("its last checkpoint names work item \(checkpoint.ordinal), and the output's last row is work item \(lastOrdinal)")
        }
        if statusesKnown && statuses != checkpoint.counts {
            throw untrusted("it counts \(checkpoint.counts.ok) ok, \(checkpoint.counts.partial) partial and \(checkpoint.counts.failed) failed rows, and the output holds \(statuses.ok), \(statuses.partial) and \(statuses.failed)")
        }
        return tally
    }

    /// A failed row the journal records where `row` is must be that row, of its work item
    /// (`ordinal`), and one that failed.
    private static func check(_ recorded: Journal.FailedRow, is row: Rows.Row, of ordinal: Int,
                              untrusted: (String) -> RunError) throws(RunError) {
        guard recorded.start == row.span.start, recorded.end == row.span.end else {
            throw untrusted("a failed row it records (work item \(recorded.ordinal)) is not where a row of the output is")
        }
        guard recorded.ordinal == ordinal else {
            throw untrusted("a failed row it records as work item \(recorded.ordinal) is the row of work item \(ordinal)")
        }
        if let status = row.status, status != .failed {
            throw untrusted("a failed row it records (work item \(recorded.ordinal)) is a row that did not fail")
        }
    }

    /// The rows of a finished file (an output or its rejects file, `limit` bytes of it) by error
    /// code and HTTP status, as far as its layout writes them.
    static func tally(of path: String, layout: OutputLayout, key: DataKey?, limit: Int, journal: String) throws(RunError) -> RowTally {
        var rows = try Rows(path, layout: layout, key: key, limit: limit, journal: journal)
        var tally = RowTally()
        while let row = try rows.next() { row.count(into: &tally) }
        return tally
    }

    /// The ordinals of this output's work items (this shard's), in order.
    func ordinals() -> AnyIterator<Int> {
        var items = WorkItemSequence(manifest: manifest).makeIterator()
        let byRequest = self.byRequest
        let target = self.target
        let shard = self.shard
        return AnyIterator {
            while let item = items.next() {
                if byRequest[item.requestIndex] == target && (shard?.takes(item.ordinal) ?? true) { return item.ordinal }
            }
            return nil
        }
    }

    /// The rows of one file up to a limit, with where each is and its status when the layout
    /// writes it.
    struct Rows {
        struct Row {
            var span: (start: Int, end: Int)
            var status: RowStatus?
            /// The HTTP status cell (empty: no answer); nil when the layout has no such column.
            var httpStatus: String?
            /// The row's errors, when the layout writes them.
            var errors: [(code: ErrorCode, message: String)]?

            /// Counts the row by what it says of its answer and errors.
            func count(into tally: inout RowTally) {
                if let httpStatus {
                    if let status = Int(httpStatus) { tally.byHTTPStatus[status, default: 0] += 1 } else { tally.withoutAnswer += 1 }
                }
                if let errors, !errors.isEmpty { tally.add(errors: errors) }
            }
        }

        private let reader: ShardRows
        private let layout: OutputLayout
        private let journal: String
        /// Where the status is: a CSV column, or a JSON key.
        private let statusColumn: Int?
        private let statusKey: String?
        /// Where the HTTP status and the errors are, when the layout writes them.
        private let httpColumn: Int?
        private let errorColumn: Int?
        private var bytes: [UInt8] = []

        init(_ path: String, layout: OutputLayout, key: DataKey?, limit: Int, journal: String) throws(RunError) {
            let opened: ShardRows?
            do {
                opened = try ShardRows(path: path, format: layout.format, gzip: layout.gzip, key: key, limit: limit)
            } catch {
                throw RunError.usage(JournalError.untrustedFile(journal: journal, path: path, reason: error.reason))
            }
            guard let reader = opened else {
                throw RunError.runtime(JournalError.uncheckable(path: path, journal: journal, reason: PrivateFile.readingProblem(path)))
            }
            self.reader = reader
            self.layout = layout
            self.journal = journal
            statusColumn = layout.sources.firstIndex(of: .fixed(.status))
            statusKey = statusColumn.map { layout.custom ? layout.names[$0] : ResultColumn.status.rawValue }
            httpColumn = layout.sources.firstIndex(of: .fixed(.httpStatus))
            errorColumn = layout.sources.firstIndex(of: .fixed(.error))
            guard limit > 0, layout.format != .jsonl, layout.format != .csv || layout.csv.header else { return }
            let head: [UInt8]
            do {
                head = try reader.head()
            } catch {
                throw notWritten(error.reason)
            }
            if layout.format == .csv && layout.csv.header && head != RowEncoding.csvHeader(layout) {
                throw notWritten("it has not the header this run writes")
            }
        }

        /// Whether each row says its status.
        var hasStatus: Bool { statusColumn != nil }

        /// Rows read so far.
        var count: Int { reader.rows }

        private func notWritten(_ reason: String) -> RunError {
            .usage(JournalError.untrustedFile(journal: journal, path: reader.path, reason: reason))
        }

        /// The next row up to the limit; nil after the last.
        mutating func next() throws(RunError) -> Row? {
            bytes.removeAll(keepingCapacity: true)
            let found: Bool
            do {
                found = try reader.next(into: &bytes)
            } catch {
                throw notWritten(error.reason)
            }
            guard found else { return nil }
            var row = Row(span: reader.lastSpan, status: nil)
            if layout.format == .csv {
                func cell(_ column: Int?) -> String? {
                    guard let column, let cell = ShardRows.csvCell(bytes[...], column: column, delimiter: layout.csv.delimiter) else { return nil }
                    return Rows.unquoted(cell)
                }
                row.status = cell(statusColumn).flatMap(RowStatus.init(rawValue:))
                row.httpStatus = cell(httpColumn)
                row.errors = cell(errorColumn).map(Rows.errors(inCell:))
            } else if let value = try? JSONParser.parse(bytes) {
                if let statusKey, case .string(let text)? = value[statusKey] { row.status = RowStatus(rawValue: text) }
                let custom = layout.custom
                if let httpColumn {
                    let http = value[custom ? layout.names[httpColumn] : ResultColumn.httpStatus.rawValue]
                    if case .number(let text)? = http { row.httpStatus = text } else { row.httpStatus = "" }
                }
                if custom, let errorColumn {
                    if case .string(let text)? = value[layout.names[errorColumn]] { row.errors = Rows.errors(inCell: text) } else { row.errors = [] }
                } else if !custom, case .array(let items)? = value["errors"] {
                    row.errors = items.compactMap { item in
                        guard case .number(let text)? = item["code"], let number = Int(text), let code = ErrorCode(rawValue: number) else { return nil }
                        if case .string(let message)? = item["message"] { return (code, message) }
                        return (code, "")
                    }
                }
            }
            guard statusColumn == nil || row.status != nil else { throw notWritten("its row \(reader.rows) has no status a run writes") }
            return row
        }

        /// A CSV cell's text, its quotes undone.
        static func unquoted(_ cell: ArraySlice<UInt8>) -> String {
            let text = String(decoding: cell, as: UTF8.self)
            guard text.count >= 2, text.hasPrefix("\""), text.hasSuffix("\"") else { return text }
            return String(text.dropFirst().dropLast()).replacingOccurrences(of: "\"\"", with: "\"")
        }

        /// The errors an `error` cell holds: `CODE kind: message` items joined by `; `.
        static func errors(inCell text: String) -> [(code: ErrorCode, message: String)] {
            var found: [(code: ErrorCode, message: String)] = []
            for item in text.components(separatedBy: "; ") {
                let parts = item.split(separator: " ", maxSplits: 1)
                if parts.count == 2, let number = Int(parts[0]), let code = ErrorCode(rawValue: number),
                   parts[1].hasPrefix(code.kind + ": ") {
                    found.append((code, String(parts[1].dropFirst(code.kind.count + 2))))
                } else if let last = found.popLast() {
                    // A message that holds "; " itself goes on.
                    found.append((last.code, last.message + "; " + item))
                }
            }
            return found
        }
    }
}
