internal import CYAML

extension YAMLParser {
    struct Frame {
        let kind: Node.Kind
        let line: UInt32
        let column: UInt32
        let anchor: String?
        /// Where this container's children start in the builder's `pending` list.
        let start: Int
        var size = 1
        /// Whether this is the list handed out item by item.
        var streamed = false
    }

    /// Builds a `Document` from libyaml events, node by node, keeping the marks of each.
    struct Builder {
        let source: SourceFile
        let limits: YAMLLimits
        let stream: ListStream?
        let document: Document
        let storage: Document.Storage
        var recordCount = 0
        /// Records that repeat an anchored node (an alias's text may be a secret from elsewhere).
        var aliasRecords: Set<Int> = []
        var childCount = 0
        var textCount = 0
        /// Children of every open container, innermost last: one list, so containers cost no allocation.
        var pending: [UInt32] = []
        var stack: [Frame] = []
        var anchors: [String: (index: Int, size: Int)] = [:]
        var root: Int?
        var documents = 0
        var nodeCount = 0

        init(source: SourceFile, limits: YAMLLimits, stream: ListStream?) {
            self.source = source
            self.limits = limits
            self.stream = stream
            document = Document(sourceSize: source.bytes.count, maxRecords: limits.maxNodes)
            storage = document.storage
        }

        /// Adds a finished record and returns its index.
        mutating func append(_ record: Document.Record) throws(YAMLError) -> Int {
            guard storage.setRecord(recordCount, record) else { throw tooManyNodes(record) }
            recordCount += 1
            return recordCount - 1
        }

        mutating func appendChild(_ index: Int, of record: Document.Record) throws(YAMLError) {
            guard storage.setChild(childCount, UInt32(index)) else { throw tooManyNodes(record) }
            childCount += 1
        }

        func tooManyNodes(_ record: Document.Record) -> YAMLError {
            error(Mark(line: Int(record.startLine), column: Int(record.startColumn)),
                  "the document expands to more than \(limits.maxNodes) nodes (too many aliases?)")
        }

        /// An error found while reading: its line is quoted with every value hidden. Before the
        /// tree exists nothing tells a header or payload value from any other, and those may be
        /// secrets; messages at this stage never hold a value either.
        func error(_ mark: Mark?, _ message: String) -> YAMLError {
            guard let mark else { return YAMLError(diagnostic: Diagnostic(source: source, mark: nil, message: message)) }
            let hidden = QuoteMask.hiddenSpans(in: source, lines: [mark.line], showValue: { _ in false })
            return YAMLError(diagnostic: Diagnostic(source: source, mark: mark, message: message, redacting: hidden[mark.line] ?? []))
        }

        func syntaxError(_ parser: yaml_parser_t) -> YAMLError {
            let problem = parser.problem.map { String(cString: $0) } ?? "unknown problem"
            if parser.error == YAML_READER_ERROR {
                // Reader errors (bad encoding, control characters) carry only a byte offset.
                let mark = source.mark(ofByteOffset: parser.problem_offset)
                let detail = problem == "control characters are not allowed" || problem.contains("UTF-8")
                    ? "\(problem); the manifest must be UTF-8 text" : problem
                return error(mark, detail)
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
            return error(Mark(line: Int(parser.problem_mark.line) + 1, column: Int(parser.problem_mark.column) + 1), message)
        }

        func string(_ pointer: UnsafeMutablePointer<yaml_char_t>?) -> String? {
            guard let pointer else { return nil }
            return String(cString: pointer)
        }

        func mark(_ index: Int) -> Mark {
            let record = storage.record(index)
            return Mark(line: Int(record.startLine), column: Int(record.startColumn))
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
                    throw error(Mark(line: Int(line), column: Int(column)),
                                "an alias refers to no anchor defined before it (a plain value cannot start with *: quote the value if it is not an alias)")
                }
                // The alias is reported where it is used; its content is shared with the anchor.
                var record = storage.record(anchored.index)
                record.startLine = line
                record.startColumn = column
                record.endLine = endLine
                record.endColumn = endColumn
                let index = try append(record)
                aliasRecords.insert(index)
                try add(index, size: anchored.size)
            case YAML_SCALAR_EVENT:
                let data = event.data.scalar
                let bytes = UnsafeBufferPointer(start: data.value, count: data.length)
                var record = Document.Record(startLine: line, startColumn: column, endLine: endLine, endColumn: endColumn,
                                             offset: UInt32(textCount), count: UInt32(data.length), kind: .scalar)
                // Cannot overflow: decoded text is at most 1.5 times the source (see `Document.text`).
                precondition(textCount + data.length <= storage.text.count, "scalar text outgrew its buffer")
                if data.length > 0 {
                    UnsafeMutableRawPointer(storage.text.baseAddress! + textCount).copyMemory(from: data.value, byteCount: data.length)
                }
                textCount += data.length
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
                let index = try append(record)
                if let anchor = string(data.anchor) { anchors[anchor] = (index, 1) }
                try add(index, size: 1)
            case YAML_SEQUENCE_START_EVENT:
                try push(.sequence, line, column, anchor: string(event.data.sequence_start.anchor))
            case YAML_MAPPING_START_EVENT:
                try push(.mapping, line, column, anchor: string(event.data.mapping_start.anchor))
            case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
                let frame = stack.removeLast()
                var record = Document.Record(startLine: frame.line, startColumn: frame.column, endLine: endLine, endColumn: endColumn,
                                             offset: UInt32(childCount), count: 0, kind: frame.kind)
                if frame.kind == .sequence {
                    for child in pending[frame.start...] { try appendChild(Int(child), of: record) }
                    record.count = UInt32(pending.count - frame.start)
                } else {
                    record.count = UInt32(try appendPairs(from: frame.start, of: record))
                }
                pending.removeSubrange(frame.start...)
                let index = try append(record)
                if let anchor = frame.anchor { anchors[anchor] = (index, frame.size) }
                try add(index, size: frame.size, counted: true)
                if frame.streamed { stream?.end(Node(document: document, index: index)) }
            default:
                return false
            }
            return false
        }

        /// Stores a resolved value's type (`!!float 1` is a float); `Storage.bits` reads its payload
        /// from the text when asked.
        func set(_ record: inout Document.Record, _ resolved: CoreSchema.Resolved, as tag: ScalarTag?) {
            switch resolved {
            case .null: record.value = .null
            case .bool: record.value = .bool
            case .int: record.value = tag == .float ? .float : .int
            case .float: record.value = .float
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
                // The tag is not named: an unquoted value starting with `!` reads as one.
                throw error(mark, "unsupported tag; expected !!str, !!int, !!float, !!bool or !!null (quote a value that starts with !)")
            }
            let resolved = CoreSchema.resolve(bytes: bytes)
            switch (tag, resolved) {
            case (.null, .null), (.bool, .bool), (.int, .int), (.float, .float), (.float, .int): return tag
            default:
                throw error(mark, "the value cannot be read as \(name.replacingPrefix("tag:yaml.org,2002:", with: "!!"))")
            }
        }

        mutating func push(_ kind: Node.Kind, _ line: UInt32, _ column: UInt32, anchor: String?) throws(YAMLError) {
            if stack.count >= limits.maxDepth {
                throw error(Mark(line: Int(line), column: Int(column)), "nesting is deeper than \(limits.maxDepth) levels")
            }
            var frame = Frame(kind: kind, line: line, column: column, anchor: anchor, start: pending.count)
            // The streamed list is a sequence that is the value of `stream.key` in the root mapping.
            if let stream, kind == .sequence, stack.count == 1, stack[0].kind == .mapping,
               (pending.count - stack[0].start) % 2 == 1, let key = pending.last,
               storage.scalar(at: Int(key), equals: stream.key), storage.record(Int(key)).value == .string {
                frame.streamed = true
            }
            stack.append(frame)
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
                if stack[stack.count - 1].streamed { stream?.item(Node(document: document, index: index)) }
            }
        }
    }
}

extension String {
    func replacingPrefix(_ prefix: String, with replacement: String) -> String {
        hasPrefix(prefix) ? replacement + dropFirst(prefix.count) : self
    }
}
