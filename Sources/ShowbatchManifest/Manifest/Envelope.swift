import ShowbatchBasics
import ShowbatchYAML

/// `output.header` or `output.trailer`: one line written before the first row or after the last,
/// from a template of the file's totals and the night (`${run.rows}`, `${run.date}`,
/// `${run.seq}`, `${run.sum.NAME}`), environment references resolved when the manifest is read.
package struct EnvelopeLine: Sendable, Equatable {
    /// One piece of the line.
    package enum Part: Sendable, Equatable {
        case text(String)
        /// `${run.rows}`: the rows in the file.
        case rows
        /// `${run.date}` or `${run.seq}` / `${run.seq:N}`.
        case night(NightName.Reference)
        /// `${run.sum.NAME}`: the exact decimal sum of the output column `NAME`.
        case sum(String)
    }

    package var parts: [Part]
    /// Where it is in the manifest, for a problem found once the columns are known.
    package var mark: Mark

    package init(parts: [Part], mark: Mark) {
        self.parts = parts
        self.mark = mark
    }

    /// The columns it sums, in order, each once.
    package var sums: [String] {
        var names: [String] = []
        for case .sum(let name) in parts where !names.contains(name) { names.append(name) }
        return names
    }

    /// Whether it writes the file's totals (its rows or a sum), known only once the rows are written.
    package var needsTotals: Bool {
        parts.contains { part in
            switch part {
            case .rows, .sum: return true
            case .text, .night: return false
            }
        }
    }

    /// Whether it writes `${run.seq}`.
    package var numbers: Bool {
        parts.contains { if case .night(.seq) = $0 { return true } else { return false } }
    }

    /// The line, without its line ending: `sums` gives each summed column's total as text.
    package func render(rows: Int, date: NightDate, seq: Int, sums: [String: String]) -> String {
        var out = ""
        for part in parts {
            switch part {
            case .text(let text): out += text
            case .rows: out += String(rows)
            case .night(let reference): out += NightName.expand(reference.text, date: date, seq: seq)
            case .sum(let name): out += sums[name] ?? "0"
            }
        }
        return out
    }

    /// What `${run.NAME}` in a header or trailer refers to (`NAME` without `run.`), or what is wrong.
    package static func reference(_ name: Substring) -> Result<Part, TemplateSyntaxError> {
        if name == "rows" { return .success(.rows) }
        if name.hasPrefix("sum.") {
            let column = name.dropFirst(4)
            guard !column.isEmpty else {
                return .failure(TemplateSyntaxError(message: "${run.sum.} names no column; write ${run.sum.NAME} with the name of an output column"))
            }
            return .success(.sum(String(column)))
        }
        switch NightName.reference(name) {
        case .success(let night): return .success(.night(night))
        case .failure:
            return .failure(TemplateSyntaxError(message: "${run.\(name)} is not valid; expected ${run.rows}, ${run.date}, ${run.seq}, ${run.seq:N} or ${run.sum.NAME}"))
        }
    }
}
