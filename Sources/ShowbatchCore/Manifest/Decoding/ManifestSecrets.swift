import Foundation
import ShowbatchYAML

/// What of a manifest may be shown in an error, decided once for the whole file before any
/// problem is rendered.
///
/// A value may be shown only where the manifest reference names a setting that holds no secret
/// (`vault`, `timeout`, `requests[].path`…) and only if the same content (through an anchor and
/// an alias) is nowhere else in the file where it could be one. Every other value (headers,
/// payloads, the emulator's alias values, keys the reference does not know, a wrong type where a
/// secret section was expected) is a secret. Quoted lines then show keys and punctuation and the
/// shown values only (`QuoteMask`), and a message is cleared of every secret text: the rule holds
/// for any problem, found by any check, in `validate`, `plan` and `run` alike.
struct ManifestSecrets {
    /// End marks of the scalar and alias nodes that may be shown.
    private var shownEnds: Set<Mark> = []
    /// The content of every secret scalar (shared by an anchored node and its aliases).
    private var secretContents: Set<UInt64> = []
    /// The secret texts, longest first, for clearing messages.
    private var secretTexts: [String] = []
    /// Where a secret is repeated (through an alias) at a place that is not secret: a request's
    /// name or path, a label, a setting. Such a value would be printed, so it is an error.
    private(set) var reusedSecrets: [Mark] = []

    /// Sections of the reference whose values are secrets whatever their shape.
    static let secretSections: Set<String> = ["headers", "requests[].headers", "requests[].payload", "emulator.aliases", "auth.client_secret", "emulator.auth.client_secret"]

    /// Reference paths, for matching a node's place.
    private static let known: Set<String> = Set(ManifestReference.entries.map(\.path))
    /// Places a plain value may be shown: every reference path, and each user-chosen key (a label's
    /// short form, `name: json.path`).
    private static let valuePaths: Set<String> = known.union(ManifestReference.entries.compactMap { entry in
        entry.path.range(of: ".<name>").map { String(entry.path[..<$0.upperBound]) }
    })
    /// Reference paths of lists whose items are plain values (`retry.on`, `mask.ranges`).
    private static let valueLists: Set<String> = Set(ManifestReference.entries.filter { $0.type == "list" }.map(\.path))
        .filter { path in !ManifestReference.entries.contains { $0.path.hasPrefix(path + "[].") } }

    init(root: Node) {
        var candidates: [(node: Node, shown: Bool)] = []
        var keys: [Node] = []
        func visit(_ node: Node, path: String?, inValueList: Bool) {
            let secret = path.map { path in Self.secretSections.contains { path == $0 || path.hasPrefix($0 + ".") || path.hasPrefix($0 + "[]") } } ?? true
            switch node.content {
            case .scalar:
                candidates.append((node, !secret && (inValueList || path.map(Self.valuePaths.contains) == true)))
            case .sequence(let items):
                let itemPath = path.map { $0 + "[]" }
                let list = inValueList || path.map(Self.valueLists.contains) == true
                for item in items { visit(item, path: secret ? nil : itemPath, inValueList: list) }
            case .mapping(let pairs):
                for pair in pairs {
                    if !secret { keys.append(pair.key) }
                    visit(pair.value, path: secret ? nil : Self.childPath(path, key: pair.key.text), inValueList: inValueList)
                }
            }
        }
        visit(root, path: "", inValueList: false)
        var texts: Set<String> = []
        for (node, shown) in candidates where !shown {
            guard let content = node.contentID else { continue }
            secretContents.insert(content)
            switch node.value {
            case .string(let text): texts.formUnion(Self.literalParts(text))
            case .int, .float: texts.insert(node.text)
            case .bool, .null: break
            }
        }
        for (node, shown) in candidates where shown {
            guard let content = node.contentID else { continue }
            if !secretContents.contains(content) {
                shownEnds.insert(node.end)
            } else if content & 0xFFFF_FFFF != 0 {
                reusedSecrets.append(node.mark)
            }
        }
        for key in keys {
            if let content = key.contentID, content & 0xFFFF_FFFF != 0, secretContents.contains(content) { reusedSecrets.append(key.mark) }
        }
        secretTexts = texts.filter { !$0.isEmpty }.sorted { $0.count > $1.count }
    }

    /// The text of a secret without its `${…}` references (names of variables and columns, not
    /// secrets), in pieces, white space trimmed.
    private static func literalParts(_ text: String) -> [String] {
        guard text.contains("${") else { return [text] }
        var parts: [String] = []
        var rest = Substring(text)
        while let open = rest.range(of: "${") {
            parts.append(String(rest[..<open.lowerBound]))
            guard let close = rest[open.upperBound...].firstIndex(of: "}") else {
                rest = rest[open.upperBound...]
                break
            }
            rest = rest[rest.index(after: close)...]
        }
        parts.append(String(rest))
        return parts.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// The reference path of `key` under `parent` (nil: a place the reference does not know).
    private static func childPath(_ parent: String?, key: String) -> String? {
        guard let parent else { return nil }
        let path = parent.isEmpty ? key : parent + "." + key
        if known.contains(path) || known.contains(where: { $0.hasPrefix(path + ".") || $0.hasPrefix(path + "[]") }) {
            return path
        }
        let named = parent + ".<name>"
        if known.contains(named) || known.contains(where: { $0.hasPrefix(named + ".") }) { return named }
        return nil
    }

    /// Whether the value ending at `end` may be shown in a quoted line.
    func mayShow(valueEndingAt end: Mark) -> Bool { shownEnds.contains(end) }

    /// `message` with every secret text in it replaced by `<redacted>`: any secret of four
    /// characters or more wherever it appears (first, so that a secret holding a quote is found
    /// whole), then any quoted part that is a secret or a piece of one.
    func clear(_ message: String) -> String {
        guard !secretTexts.isEmpty else { return message }
        var cleared = message
        for secret in secretTexts where secret.count >= 4 && cleared.contains(secret) {
            cleared = cleared.replacingOccurrences(of: secret, with: "<redacted>")
        }
        var parts = cleared.components(separatedBy: "\"")
        // Odd parts are quoted.
        for index in parts.indices where index % 2 == 1 {
            let quoted = parts[index]
            if secretTexts.contains(where: { quoted == $0 || (quoted.count >= 4 && $0.contains(quoted)) }) {
                parts[index] = "<redacted>"
            }
        }
        return parts.joined(separator: "\"")
    }

    /// Problems as diagnostics in file order (whatever order the checks ran in): each message
    /// cleared of secrets, each quoted line showing only what may be shown.
    func diagnostics(_ problems: [(mark: Mark, message: String)], source: SourceFile) -> [Diagnostic] {
        let hidden = QuoteMask.hiddenSpans(in: source, lines: Set(problems.map(\.mark.line)), showValue: mayShow)
        var repeated: [Int: [SourceSpan]] = [:]
        for line in Set(problems.map(\.mark.line)) {
            // Only where the line is not hidden already: a cut inside a cut would show the rest.
            let cut = (hidden[line] ?? []).map { span in
                (span.start.line == line ? span.start.column : 1)..<(span.end.line == line ? span.end.column : Int.max)
            }
            repeated[line] = secretSpans(onLine: line, of: source).filter { span in
                !cut.contains { $0.overlaps(span.start.column..<span.end.column) }
            }
        }
        return problems.enumerated().sorted { ($0.element.mark, $0.offset) < ($1.element.mark, $1.offset) }.map {
            let line = $0.element.mark.line
            // A value quoted in a message keeps no control character: a line break in it could
            // forge a line of output.
            return Diagnostic(source: source, mark: $0.element.mark, message: TerminalText.escaped(clear($0.element.message)),
                              redacting: (hidden[line] ?? []) + (repeated[line] ?? []))
        }
    }

    /// Where a secret's text is written out again on `line` (a header value copied into a setting
    /// that is shown): hidden in the quoted line as it is in messages.
    private func secretSpans(onLine line: Int, of source: SourceFile) -> [SourceSpan] {
        guard let text = source.line(line) else { return [] }
        let scalars = Array(text.unicodeScalars)
        var covered: [Range<Int>] = []
        for secret in secretTexts where secret.unicodeScalars.count >= 4 {
            let needle = Array(secret.unicodeScalars)
            var start = 0
            while start + needle.count <= scalars.count {
                if Array(scalars[start..<start + needle.count]) == needle {
                    covered.append(start..<start + needle.count)
                    start += needle.count
                } else {
                    start += 1
                }
            }
        }
        // Overlapping finds are joined, so that none is left half shown.
        var merged: [Range<Int>] = []
        for range in covered.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = merged.last, range.lowerBound <= last.upperBound {
                merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
            } else {
                merged.append(range)
            }
        }
        return merged.map { SourceSpan(start: Mark(line: line, column: $0.lowerBound + 1), end: Mark(line: line, column: $0.upperBound + 1)) }
    }
}

extension ManifestDecoder {
    /// The problems as diagnostics, with no secret in any message or quoted line.
    func diagnostics(_ root: Node) -> [Diagnostic] {
        ManifestSecrets(root: root).diagnostics(problems, source: source)
    }

    /// The warnings, rendered as problems are.
    func renderedWarnings(_ root: Node) -> [ManifestWarning] {
        guard !warnings.isEmpty else { return [] }
        return ManifestSecrets(root: root).diagnostics(warnings, source: source).map(ManifestWarning.init)
    }
}
