import Foundation
import ShowbatchBasics
import ShowbatchYAML

// Template strings and header sections (whose values are secrets).
extension ManifestDecoder {
    /// A template from a string value, with environment references resolved.
    /// `sensitive` values (headers, payload) are never quoted in messages.
    mutating func template(_ node: Node, _ what: @autoclosure () -> String, allowRow: Bool, sensitive: Bool = false) -> Template? {
        guard let raw = rawText(node, what()) else { return nil }
        guard var template = parseTemplate(raw, at: node, what(), sensitive: sensitive) else { return nil }
        if sensitive {
            for case .environment(let name) in template.parts {
                if let value = environment[name] { environmentSecrets.insert(value) }
            }
        }
        let unset = template.resolveEnvironment(environment)
        // Header and payload values only go out with requests, which a merge never sends.
        for name in unset where !(sensitive && use == .merge) {
            unsetVariable(name, at: node.mark, what())
        }
        if !allowRow {
            for column in template.rowColumns {
                problem(node.mark, "${row.\(column)} in \(what()) needs a request with \"each\"")
            }
            if template.parts.contains(.index) {
                problem(node.mark, "${index} in \(what()) needs a request with \"each\"")
            }
        }
        return template
    }

    mutating func headers(_ node: Node, _ context: @autoclosure () -> String, allowRow: Bool) -> [HeaderField] {
        guard let pairs = node.mapping else {
            problem(node.mark, "\(context()) must be a mapping of header names to values; found \(node.typeName)")
            return []
        }
        var result: [HeaderField] = []
        var seen: [(name: String, line: Int)] = []
        for pair in pairs {
            guard pair.key.kind == .scalar else { continue }
            let name = pair.key.text
            if !isToken(name) {
                // Not named: what is not a header name may be a value that lost its `: `.
                problem(pair.key.mark, "a header name is not valid (not shown); expected letters, digits and !#$%&'*+-.^_`|~ (is a \": \" missing?)")
                continue
            }
            let lowercased = name.lowercased()
            if let line = seen.first(where: { $0.name == lowercased })?.line {
                problem(pair.key.mark, "header \"\(name)\" is given twice (header names ignore case); first at line \(line)")
                continue
            }
            seen.append((lowercased, pair.key.mark.line))
            func what() -> String { "\(context()).\(name)" }
            guard let scalar = pair.value.scalar, scalar.value != .null, !isBool(scalar.value) else {
                problem(pair.value.mark, "\(what()) must be a string; found \(pair.value.typeName)")
                continue
            }
            guard let value = template(pair.value, what(), allowRow: allowRow, sensitive: true) else { continue }
            if let bad = value.parts.lazy.compactMap({ part -> String? in
                if case .literal(let text) = part { return HeaderField.problem(in: text) } else { return nil }
            }).first {
                problem(pair.value.mark, "\(what()) contains \(bad), which a header value cannot hold")
                continue
            }
            result.append(HeaderField(name: name, value: value))
        }
        return result
    }

    /// Why `${name}` cannot be used: unset, or set to nothing (a secret sent empty fails every row).
    /// A variable a value names is unset: a problem, except for `validate --no-env`, where it is a
    /// placeholder (the value is taken as absent, and the name listed).
    mutating func unsetVariable(_ name: String, at mark: Mark, _ what: String) {
        if use == .check {
            placeholders.insert(name)
        } else {
            problem(mark, environmentProblem(name, what))
        }
    }

    func environmentProblem(_ name: String, _ what: String) -> String {
        if name.hasPrefix(fileReference) {
            let path = String(name.dropFirst(fileReference.count))
            return "cannot take ${\(name)} (used in \(what)): \(fileProblems[path] ?? "the file is empty")"
        }
        if environment[name]?.isEmpty == true {
            return "environment variable \(name) is set but empty (used in \(what)); write ${\(name):-} where empty text is meant"
        }
        return "environment variable \(name) is not set (used in \(what))"
    }

    func isBool(_ value: ScalarValue) -> Bool {
        if case .bool = value { return true }
        return false
    }

    func isToken(_ name: String) -> Bool {
        !name.isEmpty && name.unicodeScalars.allSatisfy { scalar in
            Endpoint.isAlphanumericASCII(scalar) || "!#$%&'*+-.^_`|~".unicodeScalars.contains(scalar)
        }
    }
}
