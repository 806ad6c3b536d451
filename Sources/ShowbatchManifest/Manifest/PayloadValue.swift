import ShowbatchBasics
/// A payload value: JSON whose strings may be templates.
package indirect enum PayloadValue: Sendable {
    case null
    case bool(Bool)
    case number(String)
    case string(Template)
    case array([PayloadValue])
    case object([(key: String, value: PayloadValue)])

    /// Appends the compact JSON for one data row, without building it first. A string that is
    /// exactly `${row.COL}` keeps the row value's type.
    package func write(row: DataRow?, to out: inout [UInt8]) {
        JSONWriter.append(to: &out) { write(row: row, with: &$0) }
    }

    private func write(row: DataRow?, with writer: inout JSONWriter) {
        switch self {
        case .null: writer.null()
        case .bool(let value): writer.bool(value)
        case .number(let text): writer.number(text)
        case .string(let template):
            if let column = template.wholeRowColumn, let value = row?.values[column] {
                writer.value(value)
            } else {
                writer.string { piece in template.forEachPiece(row: row, piece) }
            }
        case .array(let items):
            writer.array { writer in for item in items { item.write(row: row, with: &writer) } }
        case .object(let members):
            writer.object { writer in
                for member in members {
                    writer.key(member.key)
                    member.value.write(row: row, with: &writer)
                }
            }
        }
    }
}
