/// Turns an HTTP answer into a result row (SPEC 2.5, 2.6 and 3).
package enum Reveal {
    /// The row for a 2xx answer: labels extracted, transformed and masked.
    package static func row(ordinal: Int, request: String, status: Int, attempts: Int, body: [UInt8],
                           labels: [LabelBinding]) -> ResultRow {
        var row = ResultRow(ordinal: ordinal, request: request, status: .failed, httpStatus: status, attempts: attempts,
                            labels: labels.map { ($0.name, nil) }, errors: [])
        if body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            row.errors = [RowError(code: .unexpectedResponseDataFormat, label: nil, message: "empty response body")]
            return row
        }
        let values: [JSONValue?]
        do {
            guard let found = try JSONParser.values(at: labels.map(\.path), in: body) else {
                row.errors = [RowError(code: .responseInvalidJSON, label: nil, message: "response body is JSON but not an object")]
                return row
            }
            values = found
        } catch {
            row.errors = [RowError(code: .responseInvalidJSON, label: nil, message: "response body is not valid JSON (\(error.reason) at byte \(error.offset))")]
            return row
        }
        var missing = 0
        for (index, binding) in labels.enumerated() {
            guard let value = values[index], value != .null else {
                missing += 1
                row.errors.append(RowError(code: .fieldNotFound, label: binding.name,
                                           message: "label \(binding.name): no value at \(binding.path.text)"))
                continue
            }
            let text: String
            switch value {
            case .string(let string): text = string
            case .number(let number): text = number
            case .bool(let flag): text = flag ? "true" : "false"
            default: text = value.compactText
            }
            row.labels[index].value = binding.format(text)
        }
        row.status = missing == 0 ? .ok : .partial
        return row
    }
}
