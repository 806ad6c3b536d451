import Foundation
import ShowbatchBasics
import ShowbatchManifest
#if canImport(Glibc)
import Glibc
#endif

/// One file a merge writes (an output, or its rejects file) from the files of the shards: their
/// heads checked and the head written, rows taken one at a time from the shard a work item belongs
/// to and checked to be of its request, written as a run writes them (JSON separators, gzip
/// members every 4,096 rows), and at the end every shard file checked to be used up.
final class MergedFile {
    let path: String
    private let plan: MergePlan
    private let output: MergePlan.Output
    private let layout: OutputLayout
    private let shardPaths: [String]
    private let sources: [ShardRows]
    /// -1: the output is only checked (its one shard is the output itself).
    private let fd: Int32
    private var out: [UInt8] = []
    private let gzip: GzipMembers?
    private var compressed: [UInt8] = []
    /// An encrypted output's: its `.partial` is sealed.
    private let sealer: SealedWriter?
    private var rowsInMember = 0
    private(set) var rows = 0
    private var row: [UInt8] = []
    private var expected: [UInt8] = []
    /// Where the request's name is in a row, if the columns have it.
    private let requestColumn: Int?
    private let requestKey: String?
    /// The output's rows are split with a rejects file: a shard file holds some of its work items.
    private var split: Bool { output.target.rejects != nil }

    init(plan: MergePlan, output: MergePlan.Output, path: String, layout: OutputLayout, shardPaths: [String], fd: Int32,
         key: DataKey?) throws(RunError) {
        if let key, fd >= 0 {
            do {
                sealer = try SealedWriter.create(fd: fd, key: key, name: SideFile.partial.of(path))
            } catch {
                throw RunError.runtime(MergeError.sealingFailed(reason: error.message))
            }
        } else {
            sealer = nil
        }
        self.plan = plan
        self.output = output
        self.path = path
        self.layout = layout
        self.shardPaths = shardPaths
        self.fd = fd
        gzip = layout.gzip ? GzipMembers() : nil
        requestColumn = layout.sources.firstIndex(of: .fixed(.request))
        requestKey = requestColumn.map { layout.custom ? layout.names[$0] : ResultColumn.request.rawValue }
        var sources: [ShardRows] = []
        for (index, file) in shardPaths.enumerated() {
            let opened: ShardRows?
            do {
                opened = try ShardRows(path: file, format: layout.format, gzip: layout.gzip, key: output.keys[index])
            } catch {
                throw RunError.usage(MergeError.shardUnreadable(plan.shard(output, file, index), .openingFailed(reason: error.reason)))
            }
            guard let source = opened else {
                throw RunError.runtime(MergeError.shardUnopenable(plan.shard(output, file, index), problem: PrivateFile.readingProblem(file)))
            }
            sources.append(source)
        }
        self.sources = sources
        out.reserveCapacity(1 << 20)
        // The head: the header this manifest writes, which every CSV shard must start with.
        switch layout.format {
        case .csv:
            let header = RowEncoding.csvHeader(layout)
            for (index, source) in sources.enumerated() where layout.csv.header {
                let head: [UInt8]
                do { head = try source.head() } catch { throw malformed(index, error) }
                if head != header { throw notOfThisManifest(index, .header) }
            }
            out.append(contentsOf: header)
        case .json, .jsonl:
            for (index, source) in sources.enumerated() {
                do { _ = try source.head() } catch { throw malformed(index, error) }
            }
            if layout.format == .json { out.append(UInt8(ascii: "[")) }
        }
    }

    private func malformed(_ index: Int, _ problem: ShardRows.Malformed) -> RunError {
        .usage(MergeError.shardMalformed(plan.shard(output, shardPaths[index], index), format: layout.format, reason: problem.reason))
    }

    private func notOfThisManifest(_ index: Int, _ mismatch: MergeError.Mismatch) -> RunError {
        .usage(MergeError.shardNotOfManifest(plan.shard(output, shardPaths[index], index), mismatch))
    }

    /// Takes the next row of `shard`'s file for `item`, whose request's name is `name`.
    func take(from shard: Int, item: WorkItem, name: String) throws(RunError) {
        let source = sources[shard]
        row.removeAll(keepingCapacity: true)
        let found: Bool
        do { found = try source.next(into: &row) } catch { throw malformed(shard, error) }
        guard found else {
            throw notOfThisManifest(shard, .tooFewRows(holds: source.rows, expected: plan.expectedRows(output, shard: shard), split: split))
        }
        // Which request a row is of, compared without printing either name.
        let matches: Bool
        if layout.format == .csv {
            expected.removeAll(keepingCapacity: true)
            RowEncoding.appendCSVCell(name, layout.csv, to: &expected)
            matches = requestColumn.map {
                ShardRows.csvCell(row[...], column: $0, delimiter: layout.csv.delimiter)?.elementsEqual(expected) == true
            } ?? true
        } else {
            guard let value = try? JSONParser.parse(row), case .object = value else {
                throw malformed(shard, ShardRows.Malformed(reason: "its row \(source.rows) is not a JSON object"))
            }
            if let requestKey {
                if case .string(let written)? = value[requestKey] { matches = written == name } else { matches = false }
            } else {
                matches = true
            }
        }
        guard matches else {
            throw notOfThisManifest(shard, .otherRequest(row: source.rows, request: item.requestIndex + 1, item: item.ordinal))
        }
        if layout.format == .json { out.append(contentsOf: (rows == 0 ? "\n" : ",\n").utf8) }
        out.append(contentsOf: row)
        rows += 1
        rowsInMember += 1
        if gzip != nil && rowsInMember == 4096 {
            try flush(endingMember: true)
            rowsInMember = 0
        } else if out.count >= 1 << 20 {
            try flush()
        }
    }

    /// Checks that every shard file is used up, and writes the end.
    func finish() throws(RunError) {
        for (index, source) in sources.enumerated() {
            row.removeAll(keepingCapacity: true)
            let more: Bool
            do { more = try source.next(into: &row) } catch { throw malformed(index, error) }
            if more {
                let total = source.rows + source.countRest()
                throw notOfThisManifest(index, .tooManyRows(holds: total, expected: plan.expectedRows(output, shard: index), split: split))
            }
            do { try source.finish() } catch { throw malformed(index, error) }
        }
        if layout.format == .json { out.append(contentsOf: (rows == 0 ? "]\n" : "\n]\n").utf8) }
        try flush(endingMember: true)
        do {
            try sealer?.finish()
        } catch {
            throw RunError.runtime(MergeError.sealingFailed(reason: error.message))
        }
    }

    private func flush(endingMember: Bool = false) throws(RunError) {
        guard fd >= 0 else {
            out.removeAll(keepingCapacity: true)
            return
        }
        if let gzip {
            gzip.compress(out, endMember: endingMember, into: &compressed)
            out.removeAll(keepingCapacity: true)
            swap(&out, &compressed)
        }
        guard !out.isEmpty else { return }
        if let sealer {
            do {
                try sealer.append(out)
            } catch {
                throw RunError.runtime(MergeError.sealingFailed(reason: error.message))
            }
            out.withUnsafeMutableBytes { wipe($0) }
        } else if let code = out.withUnsafeBytes({ PrivateFile.writeAll(fd, $0) }) {
            throw RunError.runtime(FileError(.write, SideFile.partial.of(path), errno: code))
        }
        out.removeAll(keepingCapacity: true)
    }
}
