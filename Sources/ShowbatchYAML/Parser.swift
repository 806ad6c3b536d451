import ShowbatchBasics
internal import CYAML

/// A problem reading YAML: a syntax error from libyaml or a rule of this layer (one document,
/// no duplicate keys, bounded nesting and alias expansion).
package struct YAMLError: Error, Sendable, CustomStringConvertible {
    /// The rendered problem with its position.
    package let diagnostic: Diagnostic

    /// The rendered diagnostic.
    package var description: String { diagnostic.description }
}

/// Limits that keep hostile input from exhausting the stack, memory or time.
package struct YAMLLimits: Sendable {
    /// Deepest nesting of sequences and mappings.
    package var maxDepth: Int = 256
    /// Most nodes the file may hold as written (an alias is one node).
    package var maxNodes: Int = 20_000_000
    /// Most bytes aliases and `<<` merges may add to the document, each node they repeat counted
    /// as 64 bytes and its text: what the expansion costs whoever walks or sends the document
    /// (an alias bomb is refused before it costs that, however few nodes it is written with).
    package var maxExpansion: Int = 256 << 20

    /// The default limits.
    package init() {}
}

/// One step of the way from the root of a document to a place in it.
package enum YAMLPathStep: Sendable, Equatable {
    /// The value of the mapping entry with this key (nil: a key that is not a scalar).
    case key(String?)
    /// An item of a list.
    case item
}

/// Reads one YAML document into a flat `Document` through libyaml's event parser.
package enum YAMLParser {
    /// Hands out the items of one top-level list as soon as each is parsed, so that a caller can
    /// work on them (on another thread) while the rest of the file is still being read.
    package struct ListStream {
        /// The key of the root mapping whose list is streamed (`requests`).
        package var key: String
        /// Called on the parsing thread with each finished item, in order.
        package var item: (Node) -> Void
        /// Called on the parsing thread with the finished list.
        package var end: (Node) -> Void

        /// Streams the list under `key`.
        package init(key: String, item: @escaping (Node) -> Void, end: @escaping (Node) -> Void) {
            self.key = key
            self.item = item
            self.end = end
        }
    }

    /// Parses `source`, which must hold exactly one document, and returns its root node.
    package static func parse(_ source: SourceFile, limits: YAMLLimits = YAMLLimits()) throws(YAMLError) -> Node {
        try parseDocument(source, limits: limits).root
    }

    /// Parses `source`, which must hold exactly one document, streaming one list if asked.
    ///
    /// `isSecret` says whether the value at a path may hold secrets: a syntax error inside such a
    /// value (a line of a header's block value that lost its indentation reads as a key) quotes
    /// nothing of its line but the indentation. `showsValue` says whether the value at a path is
    /// one that may be shown (a setting such as a label's regex): a syntax error in such a value,
    /// written on its key's line, quotes the value (`regex: "\d"`, an escape YAML does not know).
    package static func parseDocument(_ source: SourceFile, limits: YAMLLimits = YAMLLimits(), stream: ListStream? = nil,
                                      isSecret: (([YAMLPathStep]) -> Bool)? = nil,
                                      showsValue: (([YAMLPathStep]) -> Bool)? = nil) throws(YAMLError) -> Document {
        var builder = Builder(source: source, limits: limits, stream: stream, isSecret: isSecret)
        builder.showsValue = showsValue
        guard source.bytes.count <= Document.maxSourceSize else {
            throw builder.error(nil, "the file is larger than \(Document.maxSourceSize >> 20) MiB")
        }
        switch run(&builder, length: source.bytes.count, stoppingAt: nil) {
        case .finished:
            guard let root = builder.root else { throw builder.error(nil, "the file is empty; expected a YAML mapping") }
            builder.document.finish(root: root, records: builder.recordCount, aliases: builder.hasAliases)
            return builder.document
        case .stopped:
            throw builder.error(nil, "the file is empty; expected a YAML mapping")
        case .failed(let error):
            throw error
        case .syntax(let problem):
            throw builder.syntaxError(problem)
        }
    }

    /// How a run of the parser ended.
    enum Outcome {
        case finished
        /// At the first event at or after the probe mark.
        case stopped
        case failed(YAMLError)
        case syntax(SyntaxProblem)
    }

    /// What libyaml reported when it could not go on.
    struct SyntaxProblem {
        var isReaderError: Bool
        var problem: String
        var context: String?
        /// Where the problem is (scanner and parser errors).
        var mark: Mark
        /// The byte offset of the problem in the text given to libyaml (reader errors).
        var offset: Int
    }

    /// Feeds the first `length` bytes of the builder's source through libyaml into `builder`,
    /// stopping before the first event at or after `probe` if one is given.
    static func run(_ builder: inout Builder, length: Int, stoppingAt probe: Mark?) -> Outcome {
        let source = builder.source
        return source.bytes.withUnsafeBufferPointer { buffer in
            var parser = yaml_parser_t()
            guard yaml_parser_initialize(&parser) == 1 else {
                return .failed(builder.error(nil, "libyaml could not start a parser (out of memory)"))
            }
            defer { yaml_parser_delete(&parser) }
            let text = UnsafeBufferPointer(rebasing: buffer[min(source.contentStart, length)..<length])
            // The buffer outlives the parser: both end with this closure.
            yaml_parser_set_input_string(&parser, text.baseAddress ?? UnsafePointer(bitPattern: 1)!, text.count)
            yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING)
            while true {
                var event = yaml_event_t()
                guard yaml_parser_parse(&parser, &event) == 1 else {
                    return .syntax(SyntaxProblem(
                        isReaderError: parser.error == YAML_READER_ERROR,
                        problem: parser.problem.map { String(cString: $0) } ?? "unknown problem",
                        context: parser.context.map { String(cString: $0) },
                        mark: Mark(line: Int(parser.problem_mark.line) + 1, column: Int(parser.problem_mark.column) + 1),
                        offset: parser.problem_offset))
                }
                defer { yaml_event_delete(&event) }
                if let probe, Mark(line: Int(event.start_mark.line) + 1, column: Int(event.start_mark.column) + 1) >= probe {
                    return .stopped
                }
                do throws(YAMLError) {
                    if try builder.handle(&event) { return .finished }
                } catch {
                    return .failed(error)
                }
            }
        }
    }
}
