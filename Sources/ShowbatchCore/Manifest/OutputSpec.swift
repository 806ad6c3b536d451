import Foundation

/// Output file formats.
public enum OutputFormat: String, Sendable, CaseIterable {
    case csv, json, jsonl

    /// The format an output path's extension implies, if any.
    public static func fromExtension(_ path: String) -> OutputFormat? {
        switch (path as NSString).pathExtension.lowercased() {
        case "csv": return .csv
        case "json": return .json
        case "jsonl", "ndjson": return .jsonl
        default: return nil
        }
    }
}

/// Where and how rows are written.
public struct OutputSpec: Sendable, Equatable {
    /// The path, resolved against the manifest's folder; may hold `{shard}`.
    public var path: String
    /// The format, when given explicitly.
    public var format: OutputFormat?
    /// Prefix CSV cells that start with `= + - @` with `'`.
    public var escapeFormulas = false

    /// Creates an output spec.
    public init(path: String, format: OutputFormat? = nil, escapeFormulas: Bool = false) {
        self.path = path
        self.format = format
        self.escapeFormulas = escapeFormulas
    }

    /// The format: explicit, else from the extension, else CSV.
    public var resolvedFormat: OutputFormat { format ?? OutputFormat.fromExtension(path) ?? .csv }
}
