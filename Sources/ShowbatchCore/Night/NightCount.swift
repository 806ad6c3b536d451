import ShowbatchBasics
import ShowbatchManifest

/// A night's rows counted from its files, and the rows its data files say it has: what must add
/// up (output + rejects = data) before a night is recorded finished or delivered.
enum NightCount {
    /// The rows of the written file `path` (sealed under `key`, if given), read back one at a
    /// time as merge reads a shard's: what comes before the first row (a CSV header record,
    /// JSON's `[`) is not a row.
    static func rows(of path: String, layout: OutputLayout, key: DataKey?) throws(RunError) -> Int {
        do {
            guard let rows = try ShardRows(path: path, format: layout.format, gzip: layout.gzip, key: key) else {
                throw RunError.runtime(NightError.cannotCount(path: path, reason: PrivateFile.readingProblem(path)))
            }
            if layout.format != .csv || layout.csv.header { _ = try rows.head() }
            var row: [UInt8] = []
            defer { row.withUnsafeMutableBytes { wipe($0) } }
            while try rows.next(into: &row) { row.removeAll(keepingCapacity: true) }
            try rows.finish()
            return rows.rows
        } catch let error as ShardRows.Malformed {
            throw RunError.runtime(NightError.cannotCount(path: path, reason: error.reason))
        } catch let error as RunError {
            throw error
        } catch {
            throw RunError.runtime(NightError.cannotCount(path: path, reason: "\(error)"))
        }
    }

    /// The work items of the output `index` (requests whose rows it takes, `byRequest`) that a
    /// process with `selection` writes: its data files' records as counted when the manifest
    /// was read (a static request is one), its shard's share of them, up to `--limit`.
    static func expected(_ manifest: Manifest, output index: Int, byRequest: [Int], selection: WorkSelection) -> Int {
        var ordinal = 0
        var taken = 0
        var mine = 0
        for (request, spec) in manifest.requests.enumerated() {
            let items = spec.each.map { $0.rows ?? 0 } ?? 1
            // The items `ordinal..<ordinal + items` in this process's shard.
            let shardItems = WorkSelection(shard: selection.shard).count(of: ordinal + items) - WorkSelection(shard: selection.shard).count(of: ordinal)
            let room = selection.limit.map { max(0, $0 - taken) } ?? shardItems
            let written = min(shardItems, room)
            if byRequest[request] == index { mine += written }
            taken += written
            ordinal += items
        }
        return mine
    }
}
