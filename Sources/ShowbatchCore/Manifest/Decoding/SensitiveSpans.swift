import Foundation
import ShowbatchYAML

// Which parts of the source are secrets, so that no quoted line shows them.
extension ManifestDecoder {
    /// The problems as diagnostics in file order (whatever order the checks ran in), with header,
    /// payload and alias values redacted from every quoted line.
    func diagnostics(_ root: Node) -> [Diagnostic] {
        let sensitive = Self.sensitiveSpans(root)
        return problems.enumerated().sorted { ($0.element.mark, $0.offset) < ($1.element.mark, $1.offset) }.map {
            Diagnostic(source: source, mark: $0.element.mark, message: $0.element.message, redacting: sensitive[$0.element.mark.line] ?? [])
        }
    }

    /// Source spans of header, payload and alias values by line: never quoted in errors.
    static func sensitiveSpans(_ root: Node) -> [Int: [SourceSpan]] {
        var sensitive: [Int: [SourceSpan]] = [:]
        func scalars(_ node: Node?) {
            guard let node else { return }
            switch node.content {
            case .scalar:
                for line in node.mark.line...max(node.mark.line, node.end.line) {
                    sensitive[line, default: []].append(node.span)
                }
            case .sequence(let items): items.forEach { scalars($0) }
            case .mapping(let pairs): pairs.forEach { scalars($0.value) }
            }
        }
        scalars(root.value(forKey: "headers"))
        scalars(root.value(forKey: "emulator")?.value(forKey: "aliases"))
        for request in root.value(forKey: "requests")?.sequence.map(Array.init) ?? [] {
            scalars(request.value(forKey: "headers"))
            scalars(request.value(forKey: "payload"))
        }
        return sensitive
    }
}
