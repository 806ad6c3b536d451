import Foundation
import ShowbatchBasics
import ShowbatchManifest
#if canImport(Glibc)
import Glibc
#endif

/// An output column a header or trailer sums (`${run.sum.NAME}`): where it is in the layout.
struct SummedColumn: Equatable {
    let name: String
    /// Its place among the layout's columns.
    let column: Int
    let source: OutputLayout.Source
}

/// An output's header and trailer lines (`output.header`, `output.trailer`) for one night.
///
/// The totals are counted from the finished file's own rows when it is put in place, so an
/// uninterrupted run, a resumed one, a `--retry-failed` rewrite and a merge of shards, which all
/// end with the same rows, end with the same envelope. The rows are written without it (the
/// `.partial`, its journal's checkpoints and the kept rows say nothing of it).
struct FileEnvelope {
    let header: EnvelopeLine?
    let trailer: EnvelopeLine?
    let date: NightDate
    let seq: Int
    let summed: [SummedColumn]

    /// The file's rows and the sum of each summed column, as text.
    struct Totals: Equatable {
        var rows = 0
        var sums: [String: String] = [:]
    }

    /// The header and trailer, encoded as the file is (a line ending as its CSV dialect's, a gzip
    /// member each for a `.gz` output).
    func lines(_ totals: Totals, layout: OutputLayout) -> (head: [UInt8], tail: [UInt8]) {
        let ending = layout.format == .csv && layout.csv.crlf ? "\r\n" : "\n"
        func encoded(_ line: EnvelopeLine?) -> [UInt8] {
            guard let line else { return [] }
            let bytes = Array((line.render(rows: totals.rows, date: date, seq: seq, sums: totals.sums) + ending).utf8)
            guard layout.gzip else { return bytes }
            var member: [UInt8] = []
            GzipMembers().compress(bytes, endMember: true, into: &member)
            return member
        }
        return (encoded(header), encoded(trailer))
    }

    /// Whether the lines need the file's totals, which only its rows give.
    var needsTotals: Bool { header?.needsTotals == true || trailer?.needsTotals == true }

    /// Counts the rows of the finished file `path` (sealed under `key`, if given) and adds up its
    /// summed columns. A summed cell that is not a decimal number (rows are checked as they are
    /// written, so only a file changed since) is refused.
    func totals(of path: String, layout: OutputLayout, key: DataKey?) throws(RunError) -> Totals {
        guard needsTotals else { return Totals() }
        do {
            guard let rows = try ShardRows(path: path, format: layout.format, gzip: layout.gzip, key: key) else {
                throw RunError.runtime(NightError.cannotTotal(path: path, reason: PrivateFile.readingProblem(path)))
            }
            if layout.format != .csv || layout.csv.header { _ = try rows.head() }
            var sums = summed.map { _ in ExactDecimal.zero }
            var row: [UInt8] = []
            defer { row.withUnsafeMutableBytes { wipe($0) } }
            while try rows.next(into: &row) {
                // A JSON Lines row is parsed once, whatever the columns summed.
                let object = layout.format == .csv ? nil : try? JSONParser.parse(row)
                for (index, column) in summed.enumerated() {
                    guard let cell = Self.cell(column, of: row, object: object, layout: layout), !cell.isEmpty else { continue }
                    guard let value = ExactDecimal(cell[...]) else {
                        throw RunError.runtime(NightError.notADecimal(path: path, row: rows.rows, column: column.name))
                    }
                    sums[index] = sums[index].adding(value)
                }
                row.removeAll(keepingCapacity: true)
            }
            var totals = Totals(rows: rows.rows)
            for (index, column) in summed.enumerated() { totals.sums[column.name] = sums[index].description }
            return totals
        } catch let error as ShardRows.Malformed {
            throw RunError.runtime(NightError.cannotTotal(path: path, reason: error.reason))
        } catch let error as RunError {
            throw error
        } catch {
            throw RunError.runtime(NightError.cannotTotal(path: path, reason: "\(error)"))
        }
    }

    /// A summed column's text in one written row (CSV quoting undone), empty when it has none.
    private static func cell(_ column: SummedColumn, of row: [UInt8], object: JSONValue?, layout: OutputLayout) -> String? {
        guard layout.format == .csv else {
            guard let object, case .object = object else { return nil }
            let value: JSONValue?
            switch column.source {
            case .label(let name) where !layout.custom: value = object["labels"]?[name]
            case .fixed(let fixed) where !layout.custom: value = object[fixed.rawValue]
            default: value = object[column.name]
            }
            switch value {
            case .string(let text)?: return text
            case .number(let text)?: return text
            default: return nil
            }
        }
        guard var cell = ShardRows.csvCell(row[...], column: column.column, delimiter: layout.csv.delimiter) else { return nil }
        if cell.first == UInt8(ascii: "\""), cell.count >= 2 {
            cell = cell.dropFirst().dropLast()
            return String(decoding: cell, as: UTF8.self).replacingOccurrences(of: "\"\"", with: "\"")
        }
        return String(decoding: cell, as: UTF8.self)
    }

    /// The row as an output with summed columns takes it: a summed cell that is not a decimal
    /// number fails the row, its cell left empty (the value is never written or quoted).
    static func checked(_ row: ResultRow, summing columns: [SummedColumn]) -> ResultRow {
        var row = row
        for column in columns {
            guard let text = RowEncoding.text(of: column.source, in: row), !text.isEmpty, ExactDecimal(text[...]) == nil else { continue }
            var label: String?
            switch column.source {
            case .label(let name):
                label = name
                for index in row.labels.indices where row.labels[index].name == name { row.labels[index].value = nil }
            case .extra(let index):
                if index < row.extras.count { row.extras[index] = "" }
            case .fixed:
                continue
            }
            row.status = .failed
            row.errors.append(RowError(code: .notANumber, label: label,
                                       message: "column \(column.name) of request \(row.request): the value is not a decimal number, and the file's header or trailer sums it"))
        }
        return row
    }

    /// Makes `finished`, the file put in place of the plain `partial`: the header, the partial's
    /// bytes as they are, then the trailer; synced. On failure it is removed.
    func write(_ partial: String, to finished: String, for path: String, layout: OutputLayout) throws(RunError) {
        let lines = self.lines(try totals(of: partial, layout: layout, key: nil), layout: layout)
        let out = try PrivateFile.create(finished, for: path)
        var failure: String?
        if let reason = lines.head.withUnsafeBytes({ PrivateFile.writeAll(out, $0) }) { failure = describeErrno(reason) }
        if failure == nil {
            failure = Self.copy(partial, to: out)
        }
        if failure == nil, let reason = lines.tail.withUnsafeBytes({ PrivateFile.writeAll(out, $0) }) { failure = describeErrno(reason) }
        if failure == nil, fdatasync(out) != 0 { failure = describeErrno(errno) }
        close(out)
        if let failure {
            unlink(finished)
            throw RunError.runtime(FileError(.write, finished, cause: .reason(failure)))
        }
    }

    /// Copies every byte of `path` to `out`; what went wrong, if anything.
    private static func copy(_ path: String, to out: Int32) -> String? {
        let opened: Int32?
        do { opened = try PrivateFile.openForReading(path) } catch { return error.description }
        guard let opened else { return PrivateFile.readingProblem(path) }
        let source = FileDescriptor(borrowing: opened, path: path)
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        defer {
            close(opened)
            buffer.withUnsafeMutableBytes { wipe($0) }
        }
        while true {
            let count: Int
            do { count = try source.read(into: &buffer) } catch { return error.reason }
            if count == 0 { return nil }
            if let reason = buffer.withUnsafeBytes({ PrivateFile.writeAll(out, UnsafeRawBufferPointer(rebasing: $0[0..<count])) }) {
                return describeErrno(reason)
            }
        }
    }
}
