import ShowbatchBasics
import ShowbatchManifest

/// What one output file holds and how its bytes look: format, columns in order, CSV dialect.
struct OutputLayout: Equatable {
    /// Where a column's value comes from.
    enum Source: Equatable {
        case fixed(ResultColumn)
        case label(String)
        /// The row's `extras[index]`: text the feed made from the data row.
        case extra(Int)
    }

    var format: OutputFormat
    var sources: [Source]
    /// The header names (CSV) or keys (JSON), one per source.
    var names: [String]
    var csv: CSVDialect
    /// Columns were given in the manifest: JSON rows are then flat objects of exactly them.
    var custom: Bool
    /// Written through gzip, a member per checkpoint.
    var gzip = false

    /// Today's layout: the fixed columns, then every label of the requests writing here.
    static func standard(format: OutputFormat, labels: [String], csv: CSVDialect) -> OutputLayout {
        OutputLayout(format: format, sources: ResultColumn.allCases.map(Source.fixed) + labels.map(Source.label),
                     names: ResultColumn.names + labels, csv: csv, custom: false)
    }

    /// Whether a reader can tell a failed row from a real one: a `status` or `error` column.
    var showsFailures: Bool {
        sources.contains { $0 == .fixed(.status) || $0 == .fixed(.error) }
    }

    /// What a journal records of the layout: anything that changes a row's bytes.
    var signature: [String] {
        var parts = names
        parts.append("sources:" + sources.map { source -> String in
            switch source {
            case .fixed(let column): return "f" + column.rawValue
            case .label(let name): return "l" + name
            case .extra(let index): return "x\(index)"
            }
        }.joined(separator: "\u{1F}"))
        if format == .csv {
            parts.append("csv:\(csv.delimiter),\(csv.crlf),\(csv.header),\(csv.quoteAll),\(csv.escapeFormulas)")
        }
        if custom { parts.append("custom") }
        if gzip { parts.append("gzip") }
        return parts
    }
}
