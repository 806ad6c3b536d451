import ShowbatchBasics
/// One row of an `each` data file, with its 0-based index.
package struct DataRow: Sendable {
    /// The 0-based row number among the file's data rows.
    package let index: Int
    /// The 1-based line of the file where the row starts.
    package let line: Int
    /// Column values; CSV values are strings, JSONL values keep their JSON type.
    package let values: [String: JSONValue]

    /// Creates a row.
    package init(index: Int, line: Int, values: [String: JSONValue]) {
        self.index = index
        self.line = line
        self.values = values
    }

    /// A column's value as text: strings as is, other JSON values as compact JSON.
    package func text(_ column: String) -> String? {
        guard let value = values[column] else { return nil }
        if case .string(let text) = value { return text }
        return value.compactText
    }
}
