import ShowbatchBasics
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
    /// What the value must look like after the transforms (`expect`); a value that fails is the
    /// row's error 1407.
    package var expect: LabelExpectation? = nil
    /// Whether a value equal to one the request sent fails the row (error 1408): an alias the
    /// vault does not know passes the proxy unchanged, and must not be written as the card.
    package var mustReveal = true
    /// The label of a `reveal:` alias (the Vault API's): an answer without its alias's value
    /// fails the row (error 1408), since the alias was not revealed.
    package var fromAlias = false

    /// The value after transforms and mask, unchecked.
    package func format(_ value: String) -> String {
        var result = value
        for transform in transforms { result = transform.apply(result) }
        if let mask { result = mask.apply(result) }
        return result
    }

    /// The value after the transforms, checked against `expect`, then masked; or which check it
    /// failed. The check comes after the transforms because they shape what is written (a pattern
    /// describes the cell), and before the mask because a masked value has lost the digits the
    /// checks are about.
    package func checkedFormat(_ value: String) -> Result<String, ExpectationFailure> {
        var result = value
        for transform in transforms { result = transform.apply(result) }
        if let expect, let failure = expect.failure(of: result) { return .failure(ExpectationFailure(check: failure)) }
        if let mask { result = mask.apply(result) }
        return .success(result)
    }
}

/// Which check of `expect` a value failed, in words that never quote it.
package struct ExpectationFailure: Error, Sendable, Equatable {
    /// `does not match the expected pattern` or `fails the Luhn check`.
    package var check: String
}
