import Foundation
import ShowbatchYAML

/// Output file formats.
package enum OutputFormat: String, Sendable, CaseIterable {
    case csv, json, jsonl

    /// The format an output path's extension implies, if any (`.gz` is looked through).
    package static func fromExtension(_ path: String) -> OutputFormat? {
        let path = isGzipPath(path) ? String(path.dropLast(3)) : path
        switch (path as NSString).pathExtension.lowercased() {
        case "csv": return .csv
        case "json": return .json
        case "jsonl", "ndjson": return .jsonl
        default: return nil
        }
    }

    /// The path ends in `.gz`.
    package static func isGzipPath(_ path: String) -> Bool { path.lowercased().hasSuffix(".gz") }
}

/// Where and how rows are written.
package struct OutputSpec: Sendable, Equatable {
    /// Equal when they write the same bytes to the same place (where the columns were written aside).
    package static func == (lhs: OutputSpec, rhs: OutputSpec) -> Bool {
        lhs.path == rhs.path && lhs.format == rhs.format && lhs.csv == rhs.csv && lhs.columns == rhs.columns
            && lhs.rejects == rhs.rejects && lhs.rejectPartial == rhs.rejectPartial && lhs.compress == rhs.compress
    }

    /// The path, resolved against the manifest's folder; may hold `{shard}`.
    package var path: String
    /// The format, when given explicitly.
    package var format: OutputFormat?
    /// How CSV is written.
    package var csv = CSVDialect()
    /// The columns in order; nil for the default (the fixed columns, then every label).
    package var columns: [OutputColumn]?
    /// Where failed rows go instead of this file (resolved like `path`), if anywhere.
    package var rejects: String?
    /// Partial rows go to `rejects` too.
    package var rejectPartial = false
    /// Compress with gzip; nil: when the path ends in `.gz`.
    package var compress: Bool?
    /// Where each item of `columns` is in the manifest, for errors found once the labels are known.
    package var columnMarks: [Mark] = []
    /// Where the `columns` key is, for the warning about failed rows written blank.
    package var columnsKeyMark: Mark?

    /// Creates an output spec.
    package init(path: String, format: OutputFormat? = nil, escapeFormulas: Bool = false) {
        self.path = path
        self.format = format
        self.csv.escapeFormulas = escapeFormulas
    }

    /// Defuse formulas in CSV cells.
    package var escapeFormulas: Bool {
        get { csv.escapeFormulas }
        set { csv.escapeFormulas = newValue }
    }

    /// The format: explicit, else from the extension, else CSV.
    package var resolvedFormat: OutputFormat { format ?? OutputFormat.fromExtension(path) ?? .csv }
}

/// How CSV is written (`output.csv`).
package struct CSVDialect: Sendable, Equatable {
    /// The byte between cells: `,` `;` tab or `|`.
    package var delimiter = UInt8(ascii: ",")
    /// End lines with CR LF instead of LF.
    package var crlf = false
    /// Write the header line.
    package var header = true
    /// Quote every cell, not only those that need it.
    package var quoteAll = false
    /// Defuse cells a spreadsheet would run as a formula (plain numbers are left alone).
    package var escapeFormulas = false

    /// The default dialect: comma, LF, header, minimal quoting, no formula escaping.
    package init() {}
}

/// One column of `output.columns`.
package enum OutputColumn: Sendable, Equatable {
    /// A fixed column (`request`, `status`, …), under `name`.
    case fixed(ResultColumn, name: String)
    /// A label's value, under `name`.
    case label(String, name: String)
    /// Text made from the data row (`${row.COLUMN}`, `${index}`, `${request}`), never sent.
    case template([ColumnPart], name: String)

    /// The column's name in the header (CSV) or as the key (JSON).
    package var name: String {
        switch self {
        case .fixed(_, let name), .label(_, let name), .template(_, let name): return name
        }
    }
}

/// A piece of a column template.
package enum ColumnPart: Sendable, Equatable {
    /// Text as written (environment references already resolved).
    case literal(String)
    /// A data-row column's value (empty when the row lacks it).
    case row(String)
    /// The data row's 0-based index.
    case index
    /// The expanded request name.
    case request
}
