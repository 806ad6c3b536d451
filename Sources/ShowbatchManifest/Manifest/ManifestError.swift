import ShowbatchBasics
import ShowbatchYAML

/// Errors found in a manifest; `validate` prints them all.
package struct ManifestError: Error, Sendable, CustomStringConvertible {
    /// Every problem, in the order found.
    package let diagnostics: [Diagnostic]

    /// Wraps problems.
    package init(_ diagnostics: [Diagnostic]) { self.diagnostics = diagnostics }

    /// Every diagnostic, one after another.
    package var description: String { diagnostics.map(\.description).joined(separator: "\n") }
}

extension ManifestError {
    /// An invalid manifest is a usage error: nothing was sent.
    package var exitCode: ExitCode { .usage }
}
