/// A label binding: where a value is in the response and how it is shaped.
public struct LabelBinding: Sendable {
    /// The label name (an output column).
    public var name: String
    /// Where the value is in the response.
    public var path: ContentPath
    /// Replacements applied in order.
    public var transforms: [RegexTransform]
    /// The mask applied after the transforms.
    public var mask: Mask?

    /// The value after transforms and mask.
    public func format(_ value: String) -> String {
        var result = value
        for transform in transforms { result = transform.apply(result) }
        if let mask { result = mask.apply(result) }
        return result
    }
}
