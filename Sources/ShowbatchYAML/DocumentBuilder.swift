import ShowbatchBasics
internal import CYAML

extension YAMLParser {
    struct Frame {
        let kind: Node.Kind
        /// Where the container starts: a byte offset into the source.
        let start: Int
        let anchor: String?
        /// Where this container's children start in the builder's `pending` list.
        let first: Int
        /// Whether this is the list handed out item by item.
        var streamed = false
        /// Whether this is the list of a `<<` merge key: its aliases count when merged, not here.
        var mergeList = false
        /// What the children added so far cost (`Storage.cost`).
        var cost: UInt64 = 0
    }

    /// Builds a `Document` from libyaml events, node by node, keeping the marks of each.
    struct Builder {
        let source: SourceFile
        let limits: YAMLLimits
        let stream: ListStream?
        let isSecret: (([YAMLPathStep]) -> Bool)?
        /// Whether the value at a path may be shown (`YAMLParser.parseDocument`).
        var showsValue: (([YAMLPathStep]) -> Bool)?
        let document: Document
        let storage: Document.Storage
        var recordCount = 0
        /// Whether any node is an alias (its text may be a secret from elsewhere).
        var hasAliases = false
        var childCount = 0
        var textCount = 0
        /// Children of every open container, innermost last: one list, so containers cost no allocation.
        var pending: [UInt32] = []
        var stack: [Frame] = []
        var anchors: [String: Int] = [:]
        var root: Int?
        var documents = 0
        /// Whether libyaml's character positions are byte offsets (an ASCII source).
        let ascii: Bool
        /// The source's content start and size, kept here for `offset`, which runs twice an event.
        let contentStart: Int
        let byteCount: Int
        /// The last character position turned into a byte offset, to count on from.
        var cursor = (character: 0, byte: 0)
        /// What aliases and merges have added to the document so far (`Storage.cost`).
        var expansion = 0

        init(source: SourceFile, limits: YAMLLimits, stream: ListStream?, isSecret: (([YAMLPathStep]) -> Bool)?) {
            self.source = source
            self.limits = limits
            self.stream = stream
            self.isSecret = isSecret
            document = Document(source: source, maxRecords: limits.maxNodes,
                                maxMergedSlots: 2 * limits.maxExpansion / Int(2 * Document.nodeCost))
            storage = document.storage
            ascii = source.isASCII
            contentStart = source.contentStart
            byteCount = source.bytes.count
            cursor = (0, source.contentStart)
        }

        /// The byte offset of libyaml's character position `character` (counted from the
        /// source's content start). Positions come in order, mostly forward, so the cursor moves
        /// about as far as the parser reads.
        @inline(__always) mutating func offset(ofCharacter character: Int) -> Int {
            ascii ? min(contentStart + character, byteCount) : countedOffset(ofCharacter: character)
        }

        /// `offset` in a source with other characters than ASCII.
        mutating func countedOffset(ofCharacter character: Int) -> Int {
            let bytes = source.bytes
            var (at, byte) = cursor
            while at < character && byte < bytes.count {
                byte += 1
                while byte < bytes.count && bytes[byte] & 0xC0 == 0x80 { byte += 1 }
                at += 1
            }
            while at > character && byte > source.contentStart {
                byte -= 1
                while byte > source.contentStart && bytes[byte] & 0xC0 == 0x80 { byte -= 1 }
                at -= 1
            }
            cursor = (at, byte)
            return byte
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
            error(source.mark(atOffset: record.start), "the document has more than \(limits.maxNodes) nodes")
        }

        /// Counts `cost` more bytes of expansion at `mark`, refusing past the budget.
        mutating func expand(by cost: UInt32, at mark: Mark) throws(YAMLError) {
            expansion += Int(cost)
            if expansion > limits.maxExpansion {
                throw error(mark, "aliases and << merges expand the document by more than \(limits.maxExpansion >> 20) MiB (too many aliases?)")
            }
        }

        /// An error found while reading: its line is quoted with every value hidden. Before the
        /// tree exists nothing tells a header or payload value from any other, and those may be
        /// secrets; messages at this stage never hold a value either. With `hidingLine`, nothing
        /// of the line is shown but its indentation.
        func error(_ mark: Mark?, _ message: String, hidingLine: Bool = false, showing shown: Range<Int>? = nil) -> YAMLError {
            guard let mark, Diagnostic.quotesLine(of: mark, in: source) else {
                return YAMLError(diagnostic: Diagnostic(source: source, mark: mark, message: message))
            }
            var hidden: [SourceSpan]
            if hidingLine {
                let indentation = source.indentation(ofLine: mark.line)
                hidden = [SourceSpan(start: Mark(line: mark.line, column: indentation + 1), end: Mark(line: mark.line + 1, column: 1))]
            } else {
                hidden = QuoteMask.hiddenSpans(in: source, lines: [mark.line], showValue: { _ in false })[mark.line] ?? []
                if let shown {
                    // The columns of a value that may be shown are cut out of what is hidden.
                    hidden = hidden.flatMap { span -> [SourceSpan] in
                        let columns = span.start.column..<(span.end.line == mark.line ? span.end.column : Int.max)
                        guard span.start.line == mark.line, columns.overlaps(shown) else { return [span] }
                        var kept: [SourceSpan] = []
                        if columns.lowerBound < shown.lowerBound {
                            kept.append(SourceSpan(start: span.start, end: Mark(line: mark.line, column: shown.lowerBound)))
                        }
                        if columns.upperBound > shown.upperBound {
                            // From the next character that is not white space, as hidden spans are.
                            let scalars = Array((source.line(mark.line) ?? "").unicodeScalars)
                            var start = shown.upperBound
                            while start < columns.upperBound, start <= scalars.count, scalars[start - 1] == " " || scalars[start - 1] == "\t" { start += 1 }
                            if start < columns.upperBound {
                                kept.append(SourceSpan(start: Mark(line: mark.line, column: start), end: span.end))
                            }
                        }
                        return kept
                    }
                }
            }
            return YAMLError(diagnostic: Diagnostic(source: source, mark: mark, message: message, redacting: hidden))
        }

        func syntaxError(_ syntax: SyntaxProblem) -> YAMLError {
            let problem = syntax.problem
            if syntax.isReaderError {
                // Reader errors (bad encoding, control characters) carry only a byte offset, and
                // libyaml reads ahead of what it has parsed: the place is found by parsing again
                // up to the offending byte.
                let offset = source.contentStart + syntax.offset
                let mark = source.mark(ofByteOffset: offset)
                let detail = problem == "control characters are not allowed" || problem.contains("UTF-8")
                    ? "\(problem); the manifest must be UTF-8 text" : problem
                var secret = false
                if let isSecret {
                    var probe = Builder(source: source, limits: limits, stream: nil, isSecret: nil)
                    _ = YAMLParser.run(&probe, length: offset, stoppingAt: mark)
                    secret = isSecret(probe.regionPath(at: mark))
                }
                return error(mark, detail, hidingLine: secret)
            }
            var message = problem
            if let context = syntax.context {
                message = "\(context): \(problem)"
            }
            // libyaml notices a misindented line where the structure breaks, often a line after it.
            if problem == "did not find expected key" || problem == "did not find expected '-' indicator" {
                message += " (check the indentation of this line and the line above)"
            } else if problem == "mapping values are not allowed in this context" {
                message += " (check the indentation of this line and the line above, or quote a value that holds \": \")"
            }
            if problem.hasPrefix("found character that cannot start any token"),
               let line = source.line(syntax.mark.line), line.contains("\t") {
                message += " (tabs cannot indent YAML; use spaces)"
            }
            let path = regionPath(at: syntax.mark)
            if isSecret?(path) ?? false { return error(syntax.mark, message, hidingLine: true) }
            return error(syntax.mark, message, showing: showsValue?(path) == true ? shownValueColumns(at: syntax.mark) : nil)
        }

        func string(_ pointer: UnsafeMutablePointer<yaml_char_t>?) -> String? {
            guard let pointer else { return nil }
            return String(cString: pointer)
        }

        func mark(_ index: Int) -> Mark {
            source.mark(atOffset: storage.record(index).start)
        }

        /// Handles one event; returns true at the end of the stream.
        mutating func handle(_ event: inout yaml_event_t) throws(YAMLError) -> Bool {
            let start = offset(ofCharacter: event.start_mark.index)
            let end = offset(ofCharacter: event.end_mark.index)
            let at = Mark(line: event.start_mark.line + 1, column: event.start_mark.column + 1)
            switch event.type {
            case YAML_STREAM_START_EVENT, YAML_DOCUMENT_END_EVENT, YAML_NO_EVENT:
                return false
            case YAML_STREAM_END_EVENT:
                return true
            case YAML_DOCUMENT_START_EVENT:
                try startDocument(at: at)
            case YAML_ALIAS_EVENT:
                try addAlias(named: string(event.data.alias.anchor) ?? "", start: start, end: end, at: at)
            case YAML_SCALAR_EVENT:
                try addScalar(of: event, start: start, end: end, at: at)
            case YAML_SEQUENCE_START_EVENT:
                let data = event.data.sequence_start
                try openCollection(.sequence, tag: string(data.tag), anchor: string(data.anchor), start: start, at: at)
            case YAML_MAPPING_START_EVENT:
                let data = event.data.mapping_start
                try openCollection(.mapping, tag: string(data.tag), anchor: string(data.anchor), start: start, at: at)
            case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
                try closeCollection(end: end)
            default:
                return false
            }
            return false
        }

        /// Counts a document's start: a manifest is one document.
        mutating func startDocument(at: Mark) throws(YAMLError) {
            documents += 1
            if documents > 1 {
                throw error(at, "a manifest holds one YAML document; a second one starts here")
            }
        }

        /// Adds an alias as a copy of its anchor's record, counting what it expands the document by.
        mutating func addAlias(named name: String, start: Int, end: Int, at: Mark) throws(YAMLError) {
            guard let anchored = anchors[name] else {
                throw error(at, "an alias refers to no anchor defined before it (a plain value cannot start with *: quote the value if it is not an alias)")
            }
            // The alias is reported where it is used; its content is shared with the anchor.
            var record = storage.record(anchored)
            record.start = start
            record.end = end
            record.isAlias = true
            record.isAnchored = false
            // What a merge takes from it is counted when merged, entry by entry.
            let cost = storage.cost(record)
            if !isMergeSource() { try expand(by: cost, at: at) }
            let index = try append(record)
            hasAliases = true
            try add(index, cost: cost)
        }

        /// Adds a scalar: its text copied, its style kept, its type from its tag or plain text.
        mutating func addScalar(of event: yaml_event_t, start: Int, end: Int, at: Mark) throws(YAMLError) {
            let data = event.data.scalar
            let bytes = UnsafeBufferPointer(start: data.value, count: data.length)
            var record = Document.Record(start: start, end: end, offset: UInt32(textCount), count: UInt32(data.length), kind: .scalar)
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
                let tag = try self.tag(String(cString: tagPointer), bytes: bytes, at: at)
                record.tag = tag.rawValue + 1
                set(&record, [.nonSpecific, .str, .merge].contains(tag) ? .string : CoreSchema.resolve(bytes: bytes), as: tag)
            } else if record.style == .plain && data.plain_implicit == 1 {
                let resolved = CoreSchema.resolve(bytes: bytes)
                if resolved == .tooLarge { throw tooLargeInteger(at) }
                set(&record, resolved, as: nil)
            }
            let anchor = string(data.anchor)
            record.isAnchored = anchor != nil
            let index = try append(record)
            if let anchor { anchors[anchor] = index }
            try add(index, cost: Document.nodeCost &+ record.count)
        }

        /// Opens a list or mapping once its tag is one it may take.
        mutating func openCollection(_ kind: Node.Kind, tag: String?, anchor: String?, start: Int, at: Mark) throws(YAMLError) {
            try checkCollectionTag(tag, kind: kind, at: at)
            try push(kind, start, at, anchor: anchor)
        }

        /// Closes the innermost list or mapping, storing its children and adding it to its parent.
        mutating func closeCollection(end: Int) throws(YAMLError) {
            let frame = stack.removeLast()
            var record = Document.Record(start: frame.start, end: end, offset: 0, count: 0, kind: frame.kind)
            // The slot before the children holds the container's cost (`Storage.cost`).
            let costSlot = childCount
            try appendChild(0, of: record)
            record.offset = UInt32(childCount)
            var cost = UInt64(Document.nodeCost) + frame.cost
            if frame.kind == .sequence {
                for child in pending[frame.first...] { try appendChild(Int(child), of: record) }
                record.count = UInt32(pending.count - frame.first)
            } else {
                let pairs = try appendPairs(from: frame.first, of: record)
                record.count = UInt32(pairs.count)
                // Merge keys and what they name are no entries; what they merge is.
                cost = cost - pairs.mergeCost + pairs.mergedCost
            }
            let saturated = UInt32(min(cost, UInt64(UInt32.max)))
            _ = storage.setChild(costSlot, saturated)
            record.isAnchored = frame.anchor != nil
            pending.removeSubrange(frame.first...)
            let index = try append(record)
            if let anchor = frame.anchor { anchors[anchor] = index }
            try add(index, cost: saturated)
            if frame.streamed { stream?.end(Node(document: document, index: index)) }
        }

        /// Stores a resolved value's type (`!!float 1` is a float); `Storage.bits` reads its payload
        /// from the text when asked.
        func set(_ record: inout Document.Record, _ resolved: CoreSchema.Resolved, as tag: ScalarTag?) {
            switch resolved {
            case .null: record.value = .null
            case .bool: record.value = .bool
            case .int, .bigInt, .tooLarge: record.value = tag == .float ? .float : .int
            case .float: record.value = .float
            case .string: record.value = .string
            }
        }

        func tooLargeInteger(_ mark: Mark) -> YAMLError {
            error(mark, "the integer does not fit in 64 bits; write it in decimal, or quote it to keep it as text")
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
            case ScalarTag.merge.name:
                guard bytes.elementsEqual("<<".utf8) else { throw error(mark, "the value cannot be read as !!merge") }
                return .merge
            default:
                // The tag is not named: an unquoted value starting with `!` reads as one.
                throw error(mark, "unsupported tag; expected !!str, !!int, !!float, !!bool or !!null (quote a value that starts with !)")
            }
            let resolved = CoreSchema.resolve(bytes: bytes)
            switch (tag, resolved) {
            case (_, .tooLarge) where tag == .int || tag == .float: throw tooLargeInteger(mark)
            case (.null, .null), (.bool, .bool), (.int, .int), (.int, .bigInt), (.float, .float), (.float, .int), (.float, .bigInt): return tag
            default:
                throw error(mark, "the value cannot be read as \(name.replacingPrefix("tag:yaml.org,2002:", with: "!!"))")
            }
        }

        /// A list or mapping takes no tag but its own core one (`!!seq`, `!!map`) or `!`: a set, an
        /// ordered map or a type of another application would be read as something it is not.
        func checkCollectionTag(_ name: String?, kind: Node.Kind, at mark: Mark) throws(YAMLError) {
            guard let name, name != "!" else { return }
            if kind == .sequence && name == "tag:yaml.org,2002:seq" { return }
            if kind == .mapping && name == "tag:yaml.org,2002:map" { return }
            throw error(mark, kind == .sequence ? "unsupported tag on a list; expected none or !!seq"
                                                : "unsupported tag on a mapping; expected none or !!map")
        }

        /// Whether a node coming now is merged into the mapping it is in: the value of a `<<`
        /// key, or an item of such a value's list.
        func isMergeSource() -> Bool {
            guard let frame = stack.last else { return false }
            if frame.mergeList { return true }
            return frame.kind == .mapping && (pending.count - frame.first) % 2 == 1 && isMergeKey(Int(pending[pending.count - 1]))
        }

        mutating func push(_ kind: Node.Kind, _ start: Int, _ at: Mark, anchor: String?) throws(YAMLError) {
            if stack.count >= limits.maxDepth {
                throw error(at, "nesting is deeper than \(limits.maxDepth) levels")
            }
            var frame = Frame(kind: kind, start: start, anchor: anchor, first: pending.count)
            frame.mergeList = kind == .sequence && isMergeSource()
            // The streamed list is a sequence that is the value of `stream.key` in the root mapping.
            if let stream, kind == .sequence, stack.count == 1, stack[0].kind == .mapping,
               (pending.count - stack[0].first) % 2 == 1, let key = pending.last,
               storage.scalar(at: Int(key), equals: stream.key), storage.record(Int(key)).value == .string {
                frame.streamed = true
            }
            stack.append(frame)
        }

        mutating func add(_ index: Int, cost: UInt32) throws(YAMLError) {
            if stack.isEmpty {
                root = index
            } else {
                pending.append(UInt32(index))
                stack[stack.count - 1].cost += UInt64(cost)
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
