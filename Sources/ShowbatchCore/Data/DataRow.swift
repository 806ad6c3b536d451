/// One row of an `each` data file, with its 0-based index.
public struct DataRow: Sendable {
    /// The 0-based row number among the file's data rows.
    public let index: Int
    /// The 1-based line of the file where the row starts.
    public let line: Int
    /// Column values; CSV values are strings, JSONL values keep their JSON type.
    public let values: [String: JSONValue]

    /// Creates a row.
    public init(index: Int, line: Int, values: [String: JSONValue]) {
        self.index = index
        self.line = line
        self.values = values
    }

    /// A column's value as text: strings as is, other JSON values as compact JSON.
    public func text(_ column: String) -> String? {
        guard let value = values[column] else { return nil }
        if case .string(let text) = value { return text }
        return value.compactText
    }
}
