import ShowbatchYAML

/// Errors found in a manifest; `validate` prints them all.
public struct ManifestError: Error, Sendable, CustomStringConvertible {
    /// Every problem, in the order found.
    public let diagnostics: [Diagnostic]

    /// Wraps problems.
    public init(_ diagnostics: [Diagnostic]) { self.diagnostics = diagnostics }

    /// Every diagnostic, one after another.
    public var description: String { diagnostics.map(\.description).joined(separator: "\n") }
}
