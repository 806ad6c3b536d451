import ShowbatchBasics
import ShowbatchManifest

/// What a run finds when it looks at its data files again at its end: each was counted when the
/// manifest was read, and one cut, grown or rewritten while the run read it makes the run's
/// files something other than that file's rows.
struct DataFileCheck {
    /// Rows the files held when the manifest was read that the run (its shard) never read: they
    /// count as unfinished, which `max_failed` does not cover.
    private(set) var unread = 0
    /// One message per data file that changed.
    private(set) var changes: [String] = []

    /// Compares each data-driven request's rows read (`rowsRead`, by request index) and its
    /// file's version now with what the manifest's reading found.
    init(manifest: Manifest, rowsRead: [Int: Int], shard: Shard?) {
        var ordinal = 0
        for (index, spec) in manifest.requests.enumerated() {
            guard let each = spec.each else {
                ordinal += 1
                continue
            }
            let read = rowsRead[index] ?? 0
            guard let rows = each.rows else {
                ordinal += read
                continue
            }
            defer { ordinal += rows }
            let rewritten = FileStamp.of(each.path) != each.stamp
            guard read != rows || rewritten else { continue }
            var message = "\(each.name) changed during the run: it had \(rows) row\(rows == 1 ? "" : "s") when the manifest was read"
            if read < rows {
                let missing = (ordinal + read..<ordinal + rows).count { shard?.takes($0) ?? true }
                unread += missing
                message += " and \(read) could be read; the \(missing) row\(missing == 1 ? "" : "s") not read \(missing == 1 ? "is" : "are") counted as unfinished"
            } else if read > rows {
                message += " and \(read) were read"
            } else {
                message += ", and as many were read, but it is not the same file version: the rows may come from two versions of it"
            }
            if !changes.contains(message) { changes.append(message) }
        }
    }
}
