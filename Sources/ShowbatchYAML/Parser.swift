internal import CYAML

/// A problem reading YAML: a syntax error from libyaml or a rule of this layer (one document,
/// no duplicate keys, bounded nesting and alias expansion).
public struct YAMLError: Error, Sendable, CustomStringConvertible {
    /// The rendered problem with its position.
    public let diagnostic: Diagnostic

    public var description: String { diagnostic.description }
}

/// Limits that keep hostile input from exhausting the stack or memory.
public struct YAMLLimits: Sendable {
    /// Deepest nesting of sequences and mappings.
    public var maxDepth: Int = 256
    /// Most nodes the document may hold once aliases are expanded (guards against alias bombs).
    public var maxNodes: Int = 20_000_000

    /// The default limits.
    public init() {}
}

/// Reads one YAML document into a `Node` tree through libyaml's event parser.
public enum YAMLParser {
    private static let mergeTag = "tag:yaml.org,2002:merge"
    private static let strTag = "tag:yaml.org,2002:str"

    /// Parses `source`, which must hold exactly one document.
    public static func parse(_ source: SourceFile, limits: YAMLLimits = YAMLLimits()) throws(YAMLError) -> Node {
        var builder = Builder(source: source, limits: limits)
        let result: Result<Node, YAMLError> = source.bytes.withUnsafeBufferPointer { buffer in
            var parser = yaml_parser_t()
            guard yaml_parser_initialize(&parser) == 1 else {
                return .failure(builder.error(nil, "libyaml could not start a parser (out of memory)"))
            }
            defer { yaml_parser_delete(&parser) }
            // The buffer outlives the parser: both end with this closure.
            yaml_parser_set_input_string(&parser, buffer.baseAddress ?? UnsafePointer(bitPattern: 1)!, buffer.count)
            yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING)
            while true {
                var event = yaml_event_t()
                guard yaml_parser_parse(&parser, &event) == 1 else {
                    return .failure(builder.syntaxError(parser))
                }
                defer { yaml_event_delete(&event) }
                do {
                    if try builder.handle(&event) { break }
                } catch let error as YAMLError {
                    return .failure(error)
                } catch {
                    return .failure(builder.error(nil, "\(error)"))
                }
            }
            guard let root = builder.root else {
                return .failure(builder.error(nil, "the file is empty; expected a YAML mapping"))
            }
            return .success(root)
        }
        return try result.get()
    }

    private struct Frame {
        enum Kind { case sequence, mapping }
        let kind: Kind
        let mark: Mark
        let anchor: String?
        var items: [Node] = []
        var size = 1
    }

    private struct Builder {
        let source: SourceFile
        let limits: YAMLLimits
        var stack: [Frame] = []
        var anchors: [String: (node: Node, size: Int)] = [:]
        var root: Node?
        var documents = 0
        var nodeCount = 0

        init(source: SourceFile, limits: YAMLLimits) {
            self.source = source
            self.limits = limits
        }

        func error(_ mark: Mark?, _ message: String) -> YAMLError {
            YAMLError(diagnostic: Diagnostic(source: source, mark: mark, message: message))
        }

        /// A syntax error quotes its line with the value part hidden: before the tree exists
        /// nothing tells a header or payload value from any other, and those may be secrets.
        func syntax(_ mark: Mark, _ message: String) -> YAMLError {
            var spans: [SourceSpan] = []
            if let line = source.line(mark.line) {
                let scalars = Array(line.unicodeScalars)
                if let colon = (0..<max(0, scalars.count - 1)).first(where: { scalars[$0] == ":" && scalars[$0 + 1] == " " }),
                   colon + 2 < scalars.count {
                    spans.append(SourceSpan(start: Mark(line: mark.line, column: colon + 3),
                                            end: Mark(line: mark.line, column: scalars.count + 1)))
                }
            }
            return YAMLError(diagnostic: Diagnostic(source: source, mark: mark, message: message, redacting: spans))
        }

        func syntaxError(_ parser: yaml_parser_t) -> YAMLError {
            let problem = parser.problem.map { String(cString: $0) } ?? "unknown problem"
            if parser.error == YAML_READER_ERROR {
                // Reader errors (bad encoding, control characters) carry only a byte offset.
                let mark = source.mark(ofByteOffset: parser.problem_offset)
                let detail = problem == "control characters are not allowed" || problem.contains("UTF-8")
                    ? "\(problem); the manifest must be UTF-8 text" : problem
                return syntax(mark, detail)
            }
            var message = problem
            if let context = parser.context.map({ String(cString: $0) }) {
                message = "\(context): \(problem)"
            }
            if problem.hasPrefix("found character that cannot start any token"),
               let line = source.line(Int(parser.problem_mark.line) + 1),
               line.contains("\t") {
                message += " (tabs cannot indent YAML; use spaces)"
            }
            return syntax(mark(parser.problem_mark), message)
        }

        func mark(_ mark: yaml_mark_t) -> Mark {
            Mark(line: Int(mark.line) + 1, column: Int(mark.column) + 1)
        }

        func string(_ pointer: UnsafeMutablePointer<yaml_char_t>?) -> String? {
            guard let pointer else { return nil }
            return String(cString: pointer)
        }

        /// Handles one event; returns true at the end of the stream.
        mutating func handle(_ event: inout yaml_event_t) throws(YAMLError) -> Bool {
            let start = mark(event.start_mark)
            let end = mark(event.end_mark)
            switch event.type {
            case YAML_STREAM_START_EVENT, YAML_DOCUMENT_END_EVENT, YAML_NO_EVENT:
                return false
            case YAML_STREAM_END_EVENT:
                return true
            case YAML_DOCUMENT_START_EVENT:
                documents += 1
                if documents > 1 {
                    throw error(start, "a manifest holds one YAML document; a second one starts here")
                }
                return false
            case YAML_ALIAS_EVENT:
                let name = string(event.data.alias.anchor) ?? ""
                guard let anchored = anchors[name] else {
                    throw error(start, "alias *\(name) refers to no anchor defined before it")
                }
                try add(anchored.node.moved(to: start, end: end), size: anchored.size)
            case YAML_SCALAR_EVENT:
                let data = event.data.scalar
                let text = String(decoding: UnsafeBufferPointer(start: data.value, count: data.length), as: UTF8.self)
                let style: ScalarStyle
                switch data.style {
                case YAML_SINGLE_QUOTED_SCALAR_STYLE: style = .singleQuoted
                case YAML_DOUBLE_QUOTED_SCALAR_STYLE: style = .doubleQuoted
                case YAML_LITERAL_SCALAR_STYLE: style = .literal
                case YAML_FOLDED_SCALAR_STYLE: style = .folded
                default: style = .plain
                }
                let tag = string(data.tag)
                let value: ScalarValue
                if let tag, tag != "!" {
                    value = try typed(text, tag: tag, at: start)
                } else if style == .plain && data.plain_implicit == 1 {
                    value = CoreSchema.resolve(text)
                } else {
                    value = .string(text)
                }
                let node = Node(content: .scalar(.init(text: text, style: style, tag: tag, value: value)), mark: start, end: end)
                if let anchor = string(data.anchor) { anchors[anchor] = (node, 1) }
                try add(node, size: 1)
            case YAML_SEQUENCE_START_EVENT:
                try push(.sequence, start, anchor: string(event.data.sequence_start.anchor))
            case YAML_MAPPING_START_EVENT:
                try push(.mapping, start, anchor: string(event.data.mapping_start.anchor))
            case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
                let frame = stack.removeLast()
                let node: Node
                if frame.kind == .sequence {
                    node = Node(content: .sequence(frame.items), mark: frame.mark, end: end)
                } else {
                    node = Node(content: .mapping(try mergedPairs(frame.items)), mark: frame.mark, end: end)
                }
                if let anchor = frame.anchor { anchors[anchor] = (node, frame.size) }
                try add(node, size: frame.size, counted: true)
            default:
                return false
            }
            return false
        }

        func typed(_ text: String, tag: String, at mark: Mark) throws(YAMLError) -> ScalarValue {
            let resolved = CoreSchema.resolve(text)
            switch tag {
            case YAMLParser.strTag: return .string(text)
            case "tag:yaml.org,2002:null":
                if case .null = resolved { return resolved }
            case "tag:yaml.org,2002:bool":
                if case .bool = resolved { return resolved }
            case "tag:yaml.org,2002:int":
                if case .int = resolved { return resolved }
            case "tag:yaml.org,2002:float":
                if case .float = resolved { return resolved }
                if case .int(let value) = resolved { return .float(Double(value)) }
            default:
                throw error(mark, "unsupported tag \(tag); expected !!str, !!int, !!float, !!bool or !!null")
            }
            throw error(mark, "\"\(text)\" cannot be read as \(tag.replacingPrefix("tag:yaml.org,2002:", with: "!!"))")
        }

        mutating func push(_ kind: Frame.Kind, _ mark: Mark, anchor: String?) throws(YAMLError) {
            if stack.count >= limits.maxDepth {
                throw error(mark, "nesting is deeper than \(limits.maxDepth) levels")
            }
            stack.append(Frame(kind: kind, mark: mark, anchor: anchor))
        }

        mutating func add(_ node: Node, size: Int, counted: Bool = false) throws(YAMLError) {
            // Containers counted their children as they came; scalars and aliases count here.
            if !counted { nodeCount += size } else { nodeCount += 1 }
            if nodeCount > limits.maxNodes {
                throw error(node.mark, "the document expands to more than \(limits.maxNodes) nodes (too many aliases?)")
            }
            if stack.isEmpty {
                root = node
            } else {
                stack[stack.count - 1].items.append(node)
                stack[stack.count - 1].size += size
            }
        }

        func isMergeKey(_ node: Node) -> Bool {
            guard let scalar = node.scalar else { return false }
            return scalar.text == "<<" && (scalar.tag == YAMLParser.mergeTag || (scalar.style == .plain && scalar.tag == nil))
        }

        /// Pairs the flat key/value list, rejecting duplicates and applying `<<` merges
        /// (explicit keys win over merged ones; earlier merge sources win over later ones).
        func mergedPairs(_ items: [Node]) throws(YAMLError) -> [Node.Pair] {
            var pairs: [Node.Pair] = []
            pairs.reserveCapacity(items.count / 2)
            var seen = SeenKeys()
            var merges: [Node] = []
            var index = 0
            while index + 1 < items.count {
                let key = items[index], value = items[index + 1]
                index += 2
                if isMergeKey(key) {
                    switch value.content {
                    case .mapping: merges.append(value)
                    case .sequence(let sources):
                        for source in sources {
                            guard source.mapping != nil else {
                                throw error(source.mark, "a << merge list holds mappings only; found \(source.typeName)")
                            }
                            merges.append(source)
                        }
                    case .scalar:
                        throw error(value.mark, "<< merges a mapping or a list of mappings; found \(value.typeName)")
                    }
                    continue
                }
                guard let scalar = key.scalar else {
                    throw error(key.mark, "mapping keys must be scalars; found \(key.typeName)")
                }
                if let first = seen[scalar.value] {
                    throw error(key.mark, "duplicate key \"\(scalar.text)\"; it is first defined at line \(first.line)")
                }
                seen[scalar.value] = key.mark
                pairs.append(Node.Pair(key: key, value: value))
            }
            for source in merges {
                for pair in source.mapping ?? [] {
                    guard let scalar = pair.key.scalar, seen[scalar.value] == nil else { continue }
                    seen[scalar.value] = pair.key.mark
                    pairs.append(pair)
                }
            }
            return pairs
        }
    }
}

extension String {
    func replacingPrefix(_ prefix: String, with replacement: String) -> String {
        hasPrefix(prefix) ? replacement + dropFirst(prefix.count) : self
    }
}

/// Keys already in a mapping: a linear scan for the usual handful, a hash table past that.
private struct SeenKeys {
    private var small: [(ScalarValue, Mark)] = []
    private var large: [ScalarValue: Mark]?

    subscript(key: ScalarValue) -> Mark? {
        get {
            if let large { return large[key] }
            return small.first { $0.0 == key }?.1
        }
        set {
            guard let newValue else { return }
            if large != nil {
                large![key] = newValue
            } else if small.count < 16 {
                small.append((key, newValue))
            } else {
                var table = Dictionary(small, uniquingKeysWith: { first, _ in first })
                table[key] = newValue
                large = table
                small = []
            }
        }
    }
}
