import Foundation
import ShowbatchBasics
import ShowbatchYAML

// Label bindings: content paths, transforms and masks.
extension ManifestDecoder {
    /// The label set of `node`. A set that aliases repeat (requests sharing one) is decoded once.
    mutating func labels(_ node: Node, _ context: @autoclosure () -> String) -> [LabelBinding] {
        guard let pairs = node.mapping else {
            problem(node.mark, "\(context()) labels must be a mapping of label names to content paths; found \(node.typeName)")
            return []
        }
        let shared = node.isShared ? node.containerID : nil
        if let shared, let known = sharedLabels[shared] { return known }
        // Requests written one after another often bind the same labels, written the same way:
        // the set of the request before stands for this one, neither decoded nor kept again.
        let range = node.byteRange
        if let last = lastLabels.range, sameText(last, range) { return lastLabels.labels }
        let problemCount = problems.count
        var result: [LabelBinding] = []
        for pair in pairs {
            guard let name = labelName(pair.key) else { continue }
            if let binding = label(name, pair.value) { result.append(binding) }
        }
        // Text that reads the same decodes the same, unless it has an alias (whose anchor may
        // have changed) or problems (which are reported where each is written).
        let clean = problems.count == problemCount && !source.bytes[range].contains(UInt8(ascii: "*"))
        lastLabels = (clean ? range : nil, result)
        if let shared { sharedLabels[shared] = result }
        return result
    }

    /// Whether the source text of two ranges is the same.
    private func sameText(_ first: Range<Int>, _ second: Range<Int>) -> Bool {
        guard first.count == second.count else { return false }
        return source.bytes.withUnsafeBufferPointer { bytes in
            first.isEmpty || memcmp(bytes.baseAddress! + first.lowerBound, bytes.baseAddress! + second.lowerBound, first.count) == 0
        }
    }

    mutating func contentPath(_ node: Node, _ what: @autoclosure () -> String) -> ContentPath? {
        guard let scalar = node.scalar, case .string = scalar.value else {
            problem(node.mark, "\(what()) must be a content path such as json.card_number; found \(node.typeName)")
            return nil
        }
        guard let text = scalarText(node, what()) else { return nil }
        do {
            return try ContentPath(parsing: text)
        } catch {
            problem(node.mark, error.message)
            return nil
        }
    }

    /// A label's name from its key; nil, with the problem said, when it is empty or a result
    /// column's name (nil and nothing said for a key that is no scalar: that is said elsewhere).
    mutating func labelName(_ key: Node) -> String? {
        guard let name = key.scalar?.text else { return nil }
        if name.isEmpty {
            problem(key.mark, "label names cannot be empty")
            return nil
        }
        if ResultColumn.names.contains(name) {
            problem(key.mark, "label \"\(name)\" has the name of a result column; rename it (result columns are \(choices(ResultColumn.names)))")
            return nil
        }
        return name
    }

    /// The binding of label `name`; `revealed`: the label of a `reveal:` alias, whose value is
    /// found at that path of the answer made for its row (the binding has no path of its own).
    mutating func label(_ name: String, _ node: Node, revealed: ContentPath? = nil) -> LabelBinding? {
        func what() -> String { "label \"\(name)\"" }
        if node.kind == .scalar, revealed == nil {
            guard let path = contentPath(node, what()) else { return nil }
            return LabelBinding(name: name, path: path, transforms: [], mask: nil)
        }
        guard let map = fields(node, what(), known: Self.labelKeys) else { return nil }
        let path: ContentPath
        if let revealed {
            if let pathNode = map["path"] {
                problem(pathNode.mark, "\(what()) is revealed from its alias (reveal), so it takes no path")
                return nil
            }
            path = revealed
        } else {
            guard let pathNode = map["path"] else {
                problem(node.mark, "missing required key \"path\" in \(what())")
                return nil
            }
            guard let found = contentPath(pathNode, "\(what()) path") else { return nil }
            path = found
        }
        var binding = LabelBinding(name: name, path: path, transforms: [], mask: nil)
        if let transformNode = map["transform"] {
            if let items = transformNode.sequence {
                for item in items {
                    guard let step = fields(item, "\(what()) transform", known: Self.transformKeys) else { continue }
                    guard let regexNode = step["regex"], let templateNode = step["template"] else {
                        problem(item.mark, "each transform of \(what()) needs regex and template")
                        continue
                    }
                    // The template is the regex engine's replacement: read as written, so its
                    // ${name} is a group, never an environment variable.
                    guard let pattern = text(regexNode, "\(what()) transform regex"),
                          let template = rawText(templateNode, "\(what()) transform template") else { continue }
                    let key = pattern + "\u{0}" + template
                    if let compiled = transforms[key] {
                        binding.transforms.append(compiled)
                        continue
                    }
                    do {
                        let compiled = try RegexTransform(pattern: pattern, template: template)
                        transforms[key] = compiled
                        binding.transforms.append(compiled)
                    } catch {
                        problem(error.inTemplate ? templateNode.mark : regexNode.mark, "\(what()): \(error.message)")
                    }
                }
            } else {
                problem(transformNode.mark, "\(what()) transform must be a list of {regex, template}; found \(transformNode.typeName)")
            }
        }
        if let maskNode = map["mask"] { binding.mask = mask(maskNode, what()) }
        if let revealedNode = map["revealed"], let revealed = text(revealedNode, "\(what()) revealed") {
            switch revealed {
            case "required": binding.mustReveal = true
            case "optional": binding.mustReveal = false
            default: problem(revealedNode.mark, "\(what()) revealed \"\(revealed)\" is not valid; expected required or optional")
            }
        }
        labelFile(map, node, into: &binding, what())
        if let expectNode = map["expect"] {
            if binding.file != nil || map["decode"] != nil {
                problem(expectNode.mark, "\(what()) is written to a file, so it cannot have expect (its value is bytes, not text)")
            } else {
                binding.expect = expectation(expectNode, what())
            }
        }
        return binding
    }

    /// A label's `expect`: `pattern` (the whole value must match it) and `luhn`.
    mutating func expectation(_ node: Node, _ what: @autoclosure () -> String) -> LabelExpectation? {
        guard let map = fields(node, "\(what()) expect", known: Self.expectKeys) else { return nil }
        // Only for an empty mapping: unknown keys have errors of their own.
        if map.pairs.isEmpty {
            problem(node.mark, "\(what()) expect needs pattern, luhn or both")
            return nil
        }
        var expectation = LabelExpectation()
        var valid = true
        if let patternNode = map["pattern"] {
            expectation.pattern = expectedPattern(patternNode, what())
            if expectation.pattern == nil { valid = false }
        }
        if let luhnNode = map["luhn"] {
            if let luhn = bool(luhnNode, "\(what()) expect luhn") { expectation.luhn = luhn } else { valid = false }
        }
        return valid ? expectation : nil
    }

    private mutating func expectedPattern(_ node: Node, _ what: String) -> ExpectedPattern? {
        guard let pattern = text(node, "\(what) expect pattern") else { return nil }
        if pattern.isEmpty {
            problem(node.mark, "\(what) expect pattern is empty; give a regular expression the whole value must match")
            return nil
        }
        do {
            return try ExpectedPattern(pattern: pattern)
        } catch {
            problem(node.mark, "\(what): \(error.message)")
            return nil
        }
    }

    mutating func mask(_ node: Node, _ what: @autoclosure () -> String) -> Mask? {
        if case .bool(let on)? = node.scalar?.value { return on ? Mask() : nil }
        guard let map = fields(node, "\(what()) mask", known: Self.maskKeys) else { return nil }
        var mask = Mask()
        if let symbolNode = map["symbol"], let symbol = text(symbolNode, "\(what()) mask symbol") {
            if symbol.isEmpty {
                mask.symbol = nil
            } else if symbol.count == 1 {
                mask.symbol = symbol.first
            } else {
                problem(symbolNode.mark, "\(what()) mask symbol must be one character or \"\"; found \"\(symbol)\"")
            }
        }
        if let rangesNode = map["ranges"] {
            guard let items = rangesNode.sequence else {
                problem(rangesNode.mark, "\(what()) mask ranges must be a list of [start, end] pairs; found \(rangesNode.typeName)")
                return mask
            }
            for item in items {
                guard let bounds = item.sequence, bounds.count == 2 else {
                    problem(item.mark, "\(what()) mask range must be [start, end] (integers or null); found \(item.typeName)")
                    continue
                }
                var values: [Int?] = []
                for bound in bounds {
                    switch bound.scalar?.value {
                    case .int(let value)?: values.append(value)
                    case .null?: values.append(nil)
                    default:
                        problem(bound.mark, "\(what()) mask range bounds must be integers or null; found \(bound.typeName)")
                    }
                }
                guard values.count == 2 else { continue }
                // A range that can cover no character would leave the value unmasked, so it is
                // a mistake here, not a range to skip as an interactive SDK does.
                let range = Mask.Range(start: values[0], end: values[1])
                if let problemText = Self.rangeProblem(range) {
                    problem(item.mark, "\(what()) mask range \(Self.rangeText(range)) \(problemText)")
                    continue
                }
                mask.ranges.append(range)
            }
        }
        return mask
    }

    /// Why a range can mask nothing whatever the value, or nil when it can.
    static func rangeProblem(_ range: Mask.Range) -> String? {
        if (range.start ?? 0) < 0 || (range.end ?? 0) < 0 {
            return "has a negative bound; characters are counted from 0 (null is the start or the end)"
        }
        if let start = range.start, let end = range.end, start > end {
            return "ends before it starts, so it would mask nothing; write [start, end] with start <= end"
        }
        return nil
    }

    /// A range as the manifest writes it.
    static func rangeText(_ range: Mask.Range) -> String {
        "[\(range.start.map(String.init) ?? "null"), \(range.end.map(String.init) ?? "null")]"
    }
}
