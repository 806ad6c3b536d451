/// A label binding: where a value is in the response and how it is shaped.
package struct LabelBinding: Sendable {
    /// The label name (an output column).
    package var name: String
    /// Where the value is in the response.
    package var path: ContentPath
    /// Replacements applied in order.
    package var transforms: [RegexTransform]
    /// The mask applied after the transforms.
    package var mask: Mask?
    /// For a binary label (`decode` and `file`): how its value is decoded and where it is written.
    package var file: LabelFileSpec? = nil

    /// The value after transforms and mask.
    package func format(_ value: String) -> String {
        var result = value
        for transform in transforms { result = transform.apply(result) }
        if let mask { result = mask.apply(result) }
        return result
    }
}
