import ShowbatchBasics
import ShowbatchManifest

extension LabelFileSpec {
    /// A decoded value, or why there is none.
    package enum Content {
        /// The decoded bytes (a revealed value: never printed).
        case success([UInt8])
        /// The label's row error.
        case failure(RowError)
    }

    /// The decoded bytes of `value` (after `transforms`), or the row error of `label`. The error
    /// never holds the value or a part of it: only its kind, an offset or a limit.
    package func content(of value: JSONValue, label: LabelBinding) -> Content {
        guard case .string(let text) = value else {
            let kind: String
            switch value {
            case .number: kind = "a number"
            case .bool: kind = "a boolean"
            case .array: kind = "an array"
            default: kind = "an object"
            }
            return .failure(RowError(code: .invalidBase64, label: label.name,
                                     message: "label \(label.name): the value at \(label.path.text) is \(kind), not a base64 string"))
        }
        var transformed = text
        for transform in label.transforms { transformed = transform.apply(transformed) }
        switch Base64.decode(transformed, limit: maxBytes) {
        case .success(let bytes): return .success(bytes)
        case .failure(.tooLarge):
            return .failure(RowError(code: .valueTooLarge, label: label.name,
                                     message: "label \(label.name): the decoded value is over max_bytes (\(maxBytes ?? 0) bytes)"))
        case .failure(let failure):
            return .failure(RowError(code: .invalidBase64, label: label.name,
                                     message: "label \(label.name): the value at \(label.path.text) is not base64 (\(failure.words))"))
        }
    }
}
