internal import CYAML

/// A problem reading YAML: a syntax error from libyaml or a rule of this layer (one document,
/// no duplicate keys, bounded nesting and alias expansion).
package struct YAMLError: Error, Sendable, CustomStringConvertible {
    /// The rendered problem with its position.
    package let diagnostic: Diagnostic

    /// The rendered diagnostic.
    package var description: String { diagnostic.description }
}

/// Limits that keep hostile input from exhausting the stack or memory.
package struct YAMLLimits: Sendable {
    /// Deepest nesting of sequences and mappings.
    package var maxDepth: Int = 256
    /// Most nodes the document may hold once aliases are expanded (guards against alias bombs).
    package var maxNodes: Int = 20_000_000

    /// The default limits.
    package init() {}
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
    package static func parseDocument(_ source: SourceFile, limits: YAMLLimits = YAMLLimits(),
                                     stream: ListStream? = nil) throws(YAMLError) -> Document {
        var builder = Builder(source: source, limits: limits, stream: stream)
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
            builder.document.finish(root: root, records: builder.recordCount, aliases: !builder.aliasRecords.isEmpty)
            return .success(builder.document)
        }
        return try result.get()
    }
}
