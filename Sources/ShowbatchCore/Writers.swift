import Foundation
import ShowbatchYAML
#if canImport(Glibc)
import Glibc
#endif

/// Encodes result rows as CSV cells or JSON objects (SPEC section 3).
public enum RowEncoding {
    /// The fixed columns that precede the labels.
    public static let fixedColumns = ["request", "status", "http_status", "attempts", "error"]

    /// The CSV header line.
    public static func csvHeader(labels: [String], escapeFormulas: Bool) -> [UInt8] {
        var out: [UInt8] = []
        appendCSVLine(fixedColumns + labels, escapeFormulas: escapeFormulas, to: &out)
        return out
    }

    /// One CSV line for `row`, with a cell for each of `labels` (empty when the row lacks it).
    public static func csvLine(_ row: ResultRow, labels: [String], escapeFormulas: Bool, to out: inout [UInt8]) {
        appendCSVCell(row.request, escapeFormulas: escapeFormulas, to: &out)
        out.append(UInt8(ascii: ","))
        out.append(contentsOf: row.status.rawValue.utf8)
        out.append(UInt8(ascii: ","))
        if let status = row.httpStatus { out.append(contentsOf: String(status).utf8) }
        out.append(UInt8(ascii: ","))
        out.append(contentsOf: String(row.attempts).utf8)
        out.append(UInt8(ascii: ","))
        if !row.errors.isEmpty {
            appendCSVCell(row.errors.map(\.text).joined(separator: "; "), escapeFormulas: escapeFormulas, to: &out)
        }
        for label in labels {
            out.append(UInt8(ascii: ","))
            if let value = row.value(of: label) { appendCSVCell(value, escapeFormulas: escapeFormulas, to: &out) }
        }
        out.append(0x0A)
    }

    static func appendCSVLine(_ cells: [String], escapeFormulas: Bool, to out: inout [UInt8]) {
        for (index, cell) in cells.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            appendCSVCell(cell, escapeFormulas: escapeFormulas, to: &out)
        }
        out.append(0x0A)
    }

    /// Appends one cell: quoted when it holds a comma, quote or line break; with
    /// `escapeFormulas`, prefixed with `'` when a spreadsheet would take it for a formula.
    static func appendCSVCell(_ cell: String, escapeFormulas: Bool, to out: inout [UInt8]) {
        withUTF8(of: cell) { bytes in
            let formula = escapeFormulas && bytes.first.map { $0 == UInt8(ascii: "=") || $0 == UInt8(ascii: "+")
                || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "@") } == true
            let needsQuotes = bytes.contains { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "\"") || $0 == 0x0A || $0 == 0x0D }
            guard needsQuotes else {
                if formula { out.append(UInt8(ascii: "'")) }
                out.append(contentsOf: bytes)
                return
            }
            out.append(UInt8(ascii: "\""))
            if formula { out.append(UInt8(ascii: "'")) }
            for byte in bytes {
                if byte == UInt8(ascii: "\"") { out.append(byte) }
                out.append(byte)
            }
            out.append(UInt8(ascii: "\""))
        }
    }

    /// The JSON object of a row: request, status, http_status, attempts, labels, errors.
    public static func jsonObject(_ row: ResultRow) -> JSONValue {
        .object([
            JSONMember("request", .string(row.request)),
            JSONMember("status", .string(row.status.rawValue)),
            JSONMember("http_status", row.httpStatus.map { .number(String($0)) } ?? .null),
            JSONMember("attempts", .number(String(row.attempts))),
            JSONMember("labels", .object(row.labels.map { JSONMember($0.name, $0.value.map(JSONValue.string) ?? .null) })),
            JSONMember("errors", .array(row.errors.map { error in
                var members = [JSONMember("code", .number(String(error.code.rawValue))), JSONMember("kind", .string(error.code.kind))]
                if let label = error.label { members.append(JSONMember("label", .string(label))) }
                members.append(JSONMember("message", .string(error.message)))
                return .object(members)
            })),
        ])
    }
}

/// A problem a run cannot get past: bad options (exit 2) or a runtime failure (exit 3).
public enum RunError: Error, Sendable, CustomStringConvertible {
    /// The run cannot start as asked; nothing was sent.
    case usage(String)
    /// The run cannot start because of a place in the manifest (rendered with file, line, column
    /// and caret); nothing was sent.
    case manifest(Diagnostic)
    /// Something failed at run time: an unwritable output, a strict hostname check.
    case runtime(String)

    public var description: String {
        switch self {
        case .usage(let message), .runtime(let message): return message
        case .manifest(let diagnostic): return diagnostic.description
        }
    }
}

/// Creates (or with `truncate: false`, opens) a file with mode 0600, whatever the umask; parent
/// folders are created. Errors name `output`, the path the user knows, rather than the working file.
func createPrivateFile(_ path: String, for output: String, truncate: Bool = true) throws(RunError) -> FileHandle {
    let parent = (path as NSString).deletingLastPathComponent
    if !parent.isEmpty {
        do {
            try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        } catch {
            throw RunError.runtime("cannot create the folder \(parent) for \(output)")
        }
    }
    let fd = open(path, truncate ? O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC : O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw RunError.runtime("cannot create \(path) for \(output): \(String(cString: strerror(errno)))") }
    // An existing file keeps its old mode through O_CREAT: set it.
    fchmod(fd, 0o600)
    return FileHandle(fileDescriptor: fd, closeOnDealloc: true)
}

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
            RowEncoding.jsonObject(row).write(to: &buffer)
        case .jsonl:
            RowEncoding.jsonObject(row).write(to: &buffer)
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

extension Error {
    /// A description that is never empty on Linux (unlike `localizedDescription`).
    var readableDescription: String {
        if let error = self as? CocoaError, let path = error.filePath { return "\(error.code) (\(path))" }
        return String(describing: self)
    }
}
