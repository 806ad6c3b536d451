import Foundation
import ShowbatchBasics
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
    static let secretSections: Set<String> = ["headers", "requests[].headers", "requests[].payload", "emulator.aliases", "auth.client_secret", "auth.password", "emulator.auth.client_secret", "output.encrypt.state_key", "output.deliver.passphrase", "output.encrypt.sign.passphrase", "audit.key"]

    /// Reference paths, for matching a node's place.
    private static let known: Set<String> = Set(ManifestReference.entries.map(\.path))
    /// Places a plain value may be shown: every reference path, and each user-chosen key (a label's
    /// short form, `name: json.path`).
    private static let valuePaths: Set<String> = known.union(ManifestReference.entries.compactMap { entry in
        entry.path.range(of: ".<name>").map { String(entry.path[..<$0.upperBound]) }
    })
    /// Every reference path and every path one lies under (cut before a `.` or a `[]`), and
    /// those cut before a `.` only: what `childPath` looks a key up in, once per key.
    private static let places: Set<String> = parents(cutAt: [".", "[]"])
    private static let namedPlaces: Set<String> = parents(cutAt: ["."])

    private static func parents(cutAt separators: [String]) -> Set<String> {
        var found = known
        for path in known {
            for separator in separators {
                var rest = path[...]
                while let cut = rest.range(of: separator) {
                    found.insert(String(path[..<cut.lowerBound]))
                    rest = rest[cut.upperBound...]
                }
            }
        }
        return found
    }

    /// Reference paths of lists whose items are plain values (`retry.on`, `mask.ranges`).
    private static let valueLists: Set<String> = Set(ManifestReference.entries.filter { $0.type == "list" }.map(\.path))
        .filter { path in !ManifestReference.entries.contains { $0.path.hasPrefix(path + "[].") } }

    init(root: Node) {
        var candidates: [(node: Node, shown: Bool)] = []
        var keys: [Node] = []
        // Content an alias repeats is walked once per place it is reached from: its nodes are the
        // same nodes each time, so a bomb of aliases costs what is written, not what it expands to.
        var walked: Set<Walked> = []
        func visit(_ node: Node, path: String?, inValueList: Bool) {
            if node.isAlias, let container = node.containerID,
               !walked.insert(Walked(container: container, path: path, inValueList: inValueList)).inserted {
                return
            }
            // What lies under a secret section is walked without a path, so a path is secret
            // when it is one of the sections.
            let secret = path.map(Self.secretSections.contains) ?? true
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
                    // An item of a list of plain values names what it is (`columns: [{pan: card}]`:
                    // a column and its template); its value is shown as the item is.
                    let child = secret ? nil : (inValueList ? path : Self.childPath(path, key: pair.key.text))
                    visit(pair.value, path: child, inValueList: inValueList)
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
            case .int, .bigInt, .float: texts.insert(node.text)
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

    /// Whether the value at `steps` from the root may hold a secret: in a secret section, or
    /// at a place the reference does not know. After a syntax error, whose line is then not quoted.
    static func isSecret(_ steps: [YAMLPathStep]) -> Bool {
        place(of: steps) == nil
    }

    /// Whether the value at `steps` from the root is one that may be shown (a label's regex, a
    /// column): after a syntax error in it, on its key's line, it is quoted.
    static func showsValue(_ steps: [YAMLPathStep]) -> Bool {
        guard let (path, inValueList) = place(of: steps) else { return false }
        return inValueList || valuePaths.contains(path)
    }

    /// The reference path of the value at `steps`, and whether it lies in a list of plain values;
    /// nil where it may hold a secret.
    private static func place(of steps: [YAMLPathStep]) -> (path: String, inValueList: Bool)? {
        var path = ""
        var inValueList = false
        for step in steps {
            switch step {
            case .item:
                inValueList = inValueList || valueLists.contains(path)
                path += "[]"
            case .key(let key?):
                // Inside an item of a list of plain values, a key is a name of the user's (a column).
                if inValueList { continue }
                guard let child = childPath(path, key: key) else { return nil }
                path = child
            case .key(nil): return nil
            }
            if secretSections.contains(where: { path == $0 || path.hasPrefix($0 + ".") || path.hasPrefix($0 + "[]") }) { return nil }
        }
        return (path, inValueList)
    }

    /// The reference path of `key` under `parent` (nil: a place the reference does not know).
    private static func childPath(_ parent: String?, key: String) -> String? {
        guard var parent else { return nil }
        // A request's own output has the keys of `output`, and is shown as it is.
        if parent == "requests[].output" { parent = "output" }
        let path = parent.isEmpty ? key : parent + "." + key
        if places.contains(path) { return path }
        let named = parent + ".<name>"
        return namedPlaces.contains(named) ? named : nil
    }

    /// Whether the value ending at `end` may be shown in a quoted line.
    func mayShow(valueEndingAt end: Mark) -> Bool { shownEnds.contains(end) }

    /// `message` with every secret text in it replaced by `<redacted>`: any secret of
    /// `SecretIndex.shortest` bytes or more wherever it appears (first, so that a secret holding a
    /// quote is found whole), then any quoted part as long that is a secret or a piece of one.
    /// Shorter texts are left alone: a word that short is a name far more often than a secret,
    /// and messages never quote a value of a secret section in the first place. `pieces` remembers what
    /// was found of each quoted part (messages repeat names).
    private func clear(_ message: String, index: SecretIndex, pieces: inout [String: Bool]) -> String {
        var bytes = Array(message.utf8)
        for range in index.occurrences(in: bytes, minimum: SecretIndex.shortest).reversed() {
            bytes.replaceSubrange(range, with: "<redacted>".utf8)
        }
        var parts = String(decoding: bytes, as: UTF8.self).components(separatedBy: "\"")
        // Odd parts are quoted.
        for part in parts.indices where part % 2 == 1 {
            let quoted = parts[part]
            let secret: Bool
            if let known = pieces[quoted] {
                secret = known
            } else {
                secret = quoted.utf8.count >= SecretIndex.shortest && index.containsPiece(quoted)
                pieces[quoted] = secret
            }
            if secret { parts[part] = "<redacted>" }
        }
        return parts.joined(separator: "\"")
    }

    /// Problems as diagnostics in file order (whatever order the checks ran in): each message
    /// cleared of secrets, each quoted line showing only what may be shown. The work is in
    /// proportion to the problems and the part of each line that is quoted, whatever the number
    /// of secrets or the length of the lines.
    func diagnostics(_ problems: [(mark: Mark, message: String)], source: SourceFile) -> [Diagnostic] {
        let index = SecretIndex(secretTexts)
        var pieces: [String: Bool] = [:]
        let quoted = Set(problems.map(\.mark).filter { Diagnostic.quotesLine(of: $0, in: source) }.map(\.line))
        let hidden = QuoteMask.hiddenSpans(in: source, lines: quoted, showValue: mayShow)
        var repeated: [Int: [SourceSpan]] = [:]
        for line in quoted where !index.isEmpty {
            // Only where the line is not hidden already: a cut inside a cut would show the rest.
            let cut = (hidden[line] ?? []).map { span in
                (span.start.line == line ? span.start.column : 1)..<(span.end.line == line ? span.end.column : Int.max)
            }
            repeated[line] = secretSpans(onLine: line, of: source, index: index).filter { span in
                !cut.contains { $0.overlaps(span.start.column..<span.end.column) }
            }
        }
        return problems.enumerated().sorted { ($0.element.mark, $0.offset) < ($1.element.mark, $1.offset) }.map {
            let line = $0.element.mark.line
            // A value quoted in a message keeps no control character: a line break in it could
            // forge a line of output.
            let message = index.isEmpty ? $0.element.message : clear($0.element.message, index: index, pieces: &pieces)
            return Diagnostic(source: source, mark: $0.element.mark, message: TerminalText.escaped(message),
                              redacting: (hidden[line] ?? []) + (repeated[line] ?? []))
        }
    }

    /// Where a secret's text is written out again in the quoted part of `line` (a header value
    /// copied into a setting that is shown): hidden in the quoted line as it is in messages. A
    /// secret that starts there and runs past it is found by its first bytes.
    private func secretSpans(onLine line: Int, of source: SourceFile, index: SecretIndex) -> [SourceSpan] {
        // Read far enough past the shown part that a secret starting in it is seen whole, or
        // its first bytes of a long one.
        guard let window = source.lineWindow(line, limit: Diagnostic.quoteLimit + SecretIndex.longPrefix) else { return [] }
        // As UTF-8, and the column of each byte.
        var bytes: [UInt8] = []
        var columns: [Int] = []
        for (offset, scalar) in window.scalars.enumerated() {
            for byte in String(scalar).utf8 {
                bytes.append(byte)
                columns.append(offset + 1)
            }
        }
        columns.append(window.scalars.count + 1)
        return index.occurrences(in: bytes, minimum: SecretIndex.shortest, prefixesAtEnd: window.truncated).filter { columns[$0.lowerBound] <= Diagnostic.quoteLimit }.map {
            SourceSpan(start: Mark(line: line, column: columns[$0.lowerBound]), end: Mark(line: line, column: columns[$0.upperBound]))
        }
    }
}

/// Content reached through an alias, and from where.
private struct Walked: Hashable {
    let container: Int
    let path: String?
    let inValueList: Bool
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
