import Foundation

/// One output: rows streamed to `<path>.partial` and renamed into place when the run ends.
final class OutputFile {
    let path: String
    let format: OutputFormat
    let labels: [String]
    let escapeFormulas: Bool
    private let handle: FileHandle
    private let partialPath: String?
    private var buffer: [UInt8] = []
    private(set) var rows = 0

    /// Opens the output; `path` "-" is standard output (not atomic).
    init(path: String, format: OutputFormat, labels: [String], escapeFormulas: Bool) throws(RunError) {
        self.path = path
        self.format = format
        self.labels = labels
        self.escapeFormulas = escapeFormulas
        if path == "-" {
            handle = FileHandle.standardOutput
            partialPath = nil
        } else {
            let partial = path + ".partial"
            handle = try createPrivateFile(partial, for: path)
            partialPath = partial
        }
        buffer.reserveCapacity(1 << 16)
        switch format {
        case .csv: buffer = RowEncoding.csvHeader(labels: labels, escapeFormulas: escapeFormulas)
        case .json: buffer = Array("[".utf8)
        case .jsonl: break
        }
    }

    func write(_ row: ResultRow) throws(RunError) {
        switch format {
        case .csv: RowEncoding.csvLine(row, labels: labels, escapeFormulas: escapeFormulas, to: &buffer)
        case .json:
            buffer.append(contentsOf: (rows == 0 ? "\n" : ",\n").utf8)
            RowEncoding.writeJSON(row, to: &buffer)
        case .jsonl:
            RowEncoding.writeJSON(row, to: &buffer)
            buffer.append(0x0A)
        }
        rows += 1
        if buffer.count >= 1 << 16 { try flush() }
    }

    func flush() throws(RunError) {
        guard !buffer.isEmpty else { return }
        do {
            try handle.write(contentsOf: buffer)
        } catch {
            throw RunError.runtime("cannot write \(partialPath ?? "standard output"): \(error.readableDescription)")
        }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Ends the file and renames it into place.
    func finish() throws(RunError) {
        if format == .json { buffer.append(contentsOf: (rows == 0 ? "]\n" : "\n]\n").utf8) }
        try flush()
        guard let partialPath else { return }
        do {
            try handle.synchronize()
            try handle.close()
        } catch {
            throw RunError.runtime("cannot write \(partialPath): \(error.readableDescription)")
        }
        guard rename(partialPath, path) == 0 else {
            throw RunError.runtime("cannot rename \(partialPath) to \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Leaves the partial file as it is (interrupted runs).
    func abandon() {
        try? flush()
        if partialPath != nil { try? handle.close() }
    }
}
