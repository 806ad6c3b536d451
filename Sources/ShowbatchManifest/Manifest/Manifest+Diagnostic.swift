import Foundation
import ShowbatchBasics
import ShowbatchYAML

extension Manifest {
    /// A problem at `mark` in the manifest, quoting its line as `validate` does (secrets hidden),
    /// from the text the manifest was read from (never the file as it is now, which may have
    /// changed). Without that text, the line is not quoted, since nothing would tell a secret
    /// from the rest.
    package func diagnostic(at mark: Mark, _ message: String) -> Diagnostic {
        guard let source, let root = try? YAMLParser.parse(source) else {
            return Diagnostic(source: SourceFile(name: file, bytes: []), mark: mark, message: message)
        }
        return ManifestSecrets(root: root).diagnostics([(mark, message)], source: source)[0]
    }
}
