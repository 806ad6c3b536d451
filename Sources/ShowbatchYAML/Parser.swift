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

/// Reads one YAML document into a flat `Document` through libyaml's event parser.
public enum YAMLParser {
    /// Parses `source`, which must hold exactly one document, and returns its root node.
    public static func parse(_ source: SourceFile, limits: YAMLLimits = YAMLLimits()) throws(YAMLError) -> Node {
        try parseDocument(source, limits: limits).root
    }

    /// Parses `source`, which must hold exactly one document.
    public static func parseDocument(_ source: SourceFile, limits: YAMLLimits = YAMLLimits()) throws(YAMLError) -> Document {
        var builder = Builder(source: source, limits: limits)
        let result: Result<Document, YAMLError> = source.bytes.withUnsafeBufferPointer { buffer in
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
                do throws(YAMLError) {
                    if try builder.handle(&event) { break }
                } catch {
                    return .failure(error)
                }
            }
            guard let root = builder.root else {
                return .failure(builder.error(nil, "the file is empty; expected a YAML mapping"))
            }
            return .success(Document(records: builder.records, text: builder.text, children: builder.children, root: root))
        }
        return try result.get()
    }

    private struct Frame {
        let kind: Node.Kind
        let line: UInt32
        let column: UInt32
        let anchor: String?
        /// Where this container's children start in the builder's `pending` list.
        let start: Int
        var size = 1
    }

    private struct Builder {
        let source: SourceFile
        let limits: YAMLLimits
        var records: [Document.Record] = []
        var text: [UInt8] = []
        var children: [UInt32] = []
        /// Children of every open container, innermost last: one list, so containers cost no allocation.
        var pending: [UInt32] = []
        var stack: [Frame] = []
        var anchors: [String: (index: Int, size: Int)] = [:]
        var root: Int?
        var documents = 0
        var nodeCount = 0

        init(source: SourceFile, limits: YAMLLimits) {
            self.source = source
            self.limits = limits
            // A manifest has about one node per 7 bytes and half its bytes in scalar text.
            records.reserveCapacity(source.bytes.count / 7)
            text.reserveCapacity(source.bytes.count / 2)
            children.reserveCapacity(source.bytes.count / 7)
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
            return syntax(Mark(line: Int(parser.problem_mark.line) + 1, column: Int(parser.problem_mark.column) + 1), message)
        }

        func string(_ pointer: UnsafeMutablePointer<yaml_char_t>?) -> String? {
            guard let pointer else { return nil }
            return String(cString: pointer)
        }

        func mark(_ index: Int) -> Mark {
            Mark(line: Int(records[index].startLine), column: Int(records[index].startColumn))
        }

        /// Handles one event; returns true at the end of the stream.
        mutating func handle(_ event: inout yaml_event_t) throws(YAMLError) -> Bool {
            let line = UInt32(truncatingIfNeeded: event.start_mark.line + 1)
            let column = UInt32(truncatingIfNeeded: event.start_mark.column + 1)
            let endLine = UInt32(truncatingIfNeeded: event.end_mark.line + 1)
            let endColumn = UInt32(truncatingIfNeeded: event.end_mark.column + 1)
            switch event.type {
            case YAML_STREAM_START_EVENT, YAML_DOCUMENT_END_EVENT, YAML_NO_EVENT:
                return false
            case YAML_STREAM_END_EVENT:
                return true
            case YAML_DOCUMENT_START_EVENT:
                documents += 1
                if documents > 1 {
                    throw error(Mark(line: Int(line), column: Int(column)), "a manifest holds one YAML document; a second one starts here")
                }
                return false
            case YAML_ALIAS_EVENT:
                let name = string(event.data.alias.anchor) ?? ""
                guard let anchored = anchors[name] else {
                    throw error(Mark(line: Int(line), column: Int(column)), "alias *\(name) refers to no anchor defined before it")
                }
                // The alias is reported where it is used; its content is shared with the anchor.
                var record = records[anchored.index]
                record.startLine = line
                record.startColumn = column
                record.endLine = endLine
                record.endColumn = endColumn
                records.append(record)
                try add(records.count - 1, size: anchored.size)
            case YAML_SCALAR_EVENT:
                let data = event.data.scalar
                let bytes = UnsafeBufferPointer(start: data.value, count: data.length)
                var record = Document.Record(startLine: line, startColumn: column, endLine: endLine, endColumn: endColumn,
                                             offset: UInt32(text.count), count: UInt32(data.length), kind: .scalar)
                text.append(contentsOf: bytes)
                switch data.style {
                case YAML_SINGLE_QUOTED_SCALAR_STYLE: record.style = .singleQuoted
                case YAML_DOUBLE_QUOTED_SCALAR_STYLE: record.style = .doubleQuoted
                case YAML_LITERAL_SCALAR_STYLE: record.style = .literal
                case YAML_FOLDED_SCALAR_STYLE: record.style = .folded
                default: record.style = .plain
                }
                if let tagPointer = data.tag {
                    let tag = try self.tag(String(cString: tagPointer), bytes: bytes, at: Mark(line: Int(line), column: Int(column)))
                    record.tag = tag.rawValue + 1
                    set(&record, tag == .nonSpecific || tag == .str ? .string : CoreSchema.resolve(bytes: bytes), as: tag)
                } else if record.style == .plain && data.plain_implicit == 1 {
                    set(&record, CoreSchema.resolve(bytes: bytes), as: nil)
                }
                records.append(record)
                if let anchor = string(data.anchor) { anchors[anchor] = (records.count - 1, 1) }
                try add(records.count - 1, size: 1)
            case YAML_SEQUENCE_START_EVENT:
                try push(.sequence, line, column, anchor: string(event.data.sequence_start.anchor))
            case YAML_MAPPING_START_EVENT:
                try push(.mapping, line, column, anchor: string(event.data.mapping_start.anchor))
            case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
                let frame = stack.removeLast()
                let offset = UInt32(children.count)
                let count: Int
                if frame.kind == .sequence {
                    children.append(contentsOf: pending[frame.start...])
                    count = pending.count - frame.start
                } else {
                    count = try appendPairs(from: frame.start)
                }
                pending.removeSubrange(frame.start...)
                records.append(Document.Record(startLine: frame.line, startColumn: frame.column, endLine: endLine, endColumn: endColumn,
                                               offset: offset, count: UInt32(count), kind: frame.kind))
                if let anchor = frame.anchor { anchors[anchor] = (records.count - 1, frame.size) }
                try add(records.count - 1, size: frame.size, counted: true)
            default:
                return false
            }
            return false
        }

        /// Stores a resolved value; an explicit tag must agree with what the text resolves to.
        func set(_ record: inout Document.Record, _ resolved: CoreSchema.Resolved, as tag: ScalarTag?) {
            switch resolved {
            case .null: record.value = .null
            case .bool(let value): record.value = .bool; record.bits = value ? 1 : 0
            case .int(let value):
                if tag == .float {
                    record.value = .float
                    record.bits = Double(value).bitPattern
                } else {
                    record.value = .int
                    record.bits = UInt64(bitPattern: Int64(value))
                }
            case .float(let value): record.value = .float; record.bits = value.bitPattern
            case .string: record.value = .string
            }
        }

        /// The explicit tag of a scalar, checked against its text.
        func tag(_ name: String, bytes: UnsafeBufferPointer<UInt8>, at mark: Mark) throws(YAMLError) -> ScalarTag {
            let tag: ScalarTag
            switch name {
            case "!": return .nonSpecific
            case ScalarTag.str.name: return .str
            case ScalarTag.null.name: tag = .null
            case ScalarTag.bool.name: tag = .bool
            case ScalarTag.int.name: tag = .int
            case ScalarTag.float.name: tag = .float
            default:
                throw error(mark, "unsupported tag \(name); expected !!str, !!int, !!float, !!bool or !!null")
            }
            let resolved = CoreSchema.resolve(bytes: bytes)
            switch (tag, resolved) {
            case (.null, .null), (.bool, .bool), (.int, .int), (.float, .float), (.float, .int): return tag
            default:
                let text = String(decoding: bytes, as: UTF8.self)
                throw error(mark, "\"\(text)\" cannot be read as \(name.replacingPrefix("tag:yaml.org,2002:", with: "!!"))")
            }
        }

        mutating func push(_ kind: Node.Kind, _ line: UInt32, _ column: UInt32, anchor: String?) throws(YAMLError) {
            if stack.count >= limits.maxDepth {
                throw error(Mark(line: Int(line), column: Int(column)), "nesting is deeper than \(limits.maxDepth) levels")
            }
            stack.append(Frame(kind: kind, line: line, column: column, anchor: anchor, start: pending.count))
        }

        mutating func add(_ index: Int, size: Int, counted: Bool = false) throws(YAMLError) {
            // Containers counted their children as they came; scalars and aliases count here.
            nodeCount += counted ? 1 : size
            if nodeCount > limits.maxNodes {
                throw error(mark(index), "the document expands to more than \(limits.maxNodes) nodes (too many aliases?)")
            }
            if stack.isEmpty {
                root = index
            } else {
                pending.append(UInt32(index))
                stack[stack.count - 1].size += size
            }
        }

        func isMergeKey(_ index: Int) -> Bool {
            let record = records[index]
            guard record.kind == .scalar, record.count == 2, record.style == .plain,
                  record.tag == 0 else { return false }
            return text[Int(record.offset)] == UInt8(ascii: "<") && text[Int(record.offset) + 1] == UInt8(ascii: "<")
        }

        func typeName(_ index: Int) -> String {
            Node(document: Document(records: [records[index]], text: [], children: [], root: 0), index: 0).typeName
        }

        /// Appends the pending key/value list of a mapping to `children`, rejecting duplicates
        /// and applying `<<` merges (explicit keys win over merged ones; earlier merge sources win
        /// over later ones). Returns the number of pairs.
        mutating func appendPairs(from start: Int) throws(YAMLError) -> Int {
            var seen = SeenKeys()
            var merges: [Int] = []
            var count = 0
            var position = start
            while position + 1 < pending.count {
                let key = Int(pending[position]), value = Int(pending[position + 1])
                position += 2
                if isMergeKey(key) {
                    switch records[value].kind {
                    case .mapping: merges.append(value)
                    case .sequence:
                        let source = records[value]
                        for item in children[Int(source.offset)..<Int(source.offset + source.count)] {
                            guard records[Int(item)].kind == .mapping else {
                                throw error(mark(Int(item)), "a << merge list holds mappings only; found \(typeName(Int(item)))")
                            }
                            merges.append(Int(item))
                        }
                    case .scalar:
                        throw error(mark(value), "<< merges a mapping or a list of mappings; found \(typeName(value))")
                    }
                    continue
                }
                guard records[key].kind == .scalar else {
                    throw error(mark(key), "mapping keys must be scalars; found \(typeName(key))")
                }
                let identity = KeyIdentity(records[key], text: text)
                if let first = seen.first(identity, text: text) {
                    let name = String(decoding: identity.bytes(in: text), as: UTF8.self)
                    throw error(mark(key), "duplicate key \"\(name)\"; it is first defined at line \(records[first].startLine)")
                }
                seen.insert(identity, index: key, text: text)
                children.append(UInt32(key))
                children.append(UInt32(value))
                count += 1
            }
            for source in merges {
                let record = records[source]
                for pair in 0..<Int(record.count) {
                    let key = Int(children[Int(record.offset) + 2 * pair]), value = children[Int(record.offset) + 2 * pair + 1]
                    guard records[key].kind == .scalar else { continue }
                    let identity = KeyIdentity(records[key], text: text)
                    guard seen.first(identity, text: text) == nil else { continue }
                    seen.insert(identity, index: key, text: text)
                    children.append(UInt32(key))
                    children.append(value)
                    count += 1
                }
            }
            return count
        }
    }
}

/// What makes two mapping keys the same: their typed value (`1` and `0x1` are one key; `"1"` and
/// `1` are two).
private struct KeyIdentity {
    let value: Document.ValueKind
    let bits: UInt64
    let offset: Int
    let count: Int

    init(_ record: Document.Record, text: [UInt8]) {
        value = record.value
        bits = record.value == .string ? 0 : record.bits
        offset = Int(record.offset)
        count = Int(record.count)
    }

    func bytes(in text: [UInt8]) -> ArraySlice<UInt8> { text[offset..<offset + count] }

    func matches(_ other: KeyIdentity, text: [UInt8]) -> Bool {
        guard value == other.value else { return false }
        switch value {
        case .null: return true
        case .string: return count == other.count && bytes(in: text) == other.bytes(in: text)
        case .float: return Double(bitPattern: bits) == Double(bitPattern: other.bits)
        case .bool, .int: return bits == other.bits
        }
    }

    /// A hashable form for large mappings.
    func key(in text: [UInt8]) -> Key {
        Key(value: value.rawValue, bits: value == .float ? Double(bitPattern: bits).hashKey : bits,
            text: value == .string ? Array(bytes(in: text)) : [])
    }

    struct Key: Hashable {
        let value: UInt8
        let bits: UInt64
        let text: [UInt8]
    }
}

private extension Double {
    /// Equal doubles give equal keys (0.0 and -0.0 are one key, as `==` says).
    var hashKey: UInt64 { self == 0 ? 0 : bitPattern }
}

/// Keys already in a mapping: a linear scan for the usual handful, a hash table past that.
private struct SeenKeys {
    private var small: [(KeyIdentity, Int)] = []
    private var large: [KeyIdentity.Key: Int]?

    func first(_ identity: KeyIdentity, text: [UInt8]) -> Int? {
        if let large { return large[identity.key(in: text)] }
        return small.first { $0.0.matches(identity, text: text) }?.1
    }

    mutating func insert(_ identity: KeyIdentity, index: Int, text: [UInt8]) {
        if large != nil {
            large![identity.key(in: text)] = index
        } else if small.count < 16 {
            small.append((identity, index))
        } else {
            var table: [KeyIdentity.Key: Int] = [:]
            for (known, position) in small where table[known.key(in: text)] == nil { table[known.key(in: text)] = position }
            table[identity.key(in: text)] = index
            large = table
            small = []
        }
    }
}

extension String {
    func replacingPrefix(_ prefix: String, with replacement: String) -> String {
        hasPrefix(prefix) ? replacement + dropFirst(prefix.count) : self
    }
}
