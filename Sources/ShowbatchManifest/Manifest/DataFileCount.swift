import ShowbatchBasics
import ShowbatchYAML

extension ManifestLoader {
    /// Reads every `each` data file through once, before anything is sent: a record that cannot
    /// end (a quote still open at the end of the file, a record over `Limits.dataRecord`, a
    /// quoted field spanning more than `Limits.quotedFieldLines` lines) is an error positioned in
    /// the data file, instead of a night cut short. Each file's rows and version are kept in its
    /// `DataSource`: reports show that count, and a run checks it again at its end.
    static func countDataFiles(_ manifest: inout Manifest) -> [Diagnostic] {
        var counted: [String: (rows: Int, stamp: FileStamp?)] = [:]
        var problems: [Diagnostic] = []
        var failed: Set<String> = []
        for index in manifest.requests.indices {
            guard let each = manifest.requests[index].each, !failed.contains(each.path) else { continue }
            if let known = counted[each.path] {
                manifest.requests[index].each?.rows = known.rows
                manifest.requests[index].each?.stamp = known.stamp
                continue
            }
            let stamp = FileStamp.of(each.path)
            // A header that cannot be read is the manifest's problem already (its column check).
            guard var reader = try? DataRowReader(kind: each.kind, path: each.path, name: each.name) else { continue }
            defer { reader.close() }
            do {
                let rows = try reader.countRest()
                counted[each.path] = (rows, stamp)
                manifest.requests[index].each?.rows = rows
                manifest.requests[index].each?.stamp = stamp
            } catch let error as DataFileError {
                failed.insert(each.path)
                // `d.csv:1200: error: …`: the data file's line, where the manifest's own errors
                // have a line and a column.
                problems.append(Diagnostic(file: error.line.map { "\(error.file):\($0)" } ?? error.file, message: error.message))
            } catch {
                failed.insert(each.path)
                problems.append(Diagnostic(file: each.name, message: "cannot be read: \(error)"))
            }
        }
        return problems
    }
}
