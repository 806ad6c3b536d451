import ShowbatchBasics
/// A node of a YAML document with the 1-based marks of where it starts and ends.
///
/// A node is a position in its `Document`, which it keeps alive.
package struct Node: Sendable, Equatable {
    /// What kind of node this is.
    package enum Kind: UInt8, Sendable {
        case scalar, sequence, mapping
    }

    /// A view of a scalar node: its text, style, explicit tag and typed value.
    package struct Scalar: Sendable {
        let node: Node

        /// The text as libyaml decoded it (quotes and escapes resolved).
        package var text: String { node.text }
        /// How the scalar was written.
        package var style: ScalarStyle { node.record.style }
        /// The explicit tag, if one was written (`!!str`).
        package var tag: ScalarTag? { node.record.tag == 0 ? nil : ScalarTag(rawValue: node.record.tag - 1) }
        /// The value under the core schema; quoted scalars are always strings.
        package var value: ScalarValue { node.value }

        /// The JSON text of a number, digit for digit as written (`+7` is `7`, `.5` is `0.5`, an
        /// integer beyond 64 bits keeps every digit); nil for other values and for infinities
        /// and NaN, which JSON cannot hold.
        package var jsonNumber: String? {
            let record = node.record
            guard record.value == .int || record.value == .float else { return nil }
            return CoreSchema.jsonNumber(node.document.bytes(record), float: record.value == .float)
        }
    }

    /// One key/value entry of a mapping, in source order.
    package struct Pair: Sendable {
        /// The key node.
        package let key: Node
        /// The value node.
        package let value: Node
    }

    /// The items of a sequence.
    package struct Items: RandomAccessCollection, Sendable {
        let document: Document
        let offset: Int
        /// The index of the first item.
        package var startIndex: Int { 0 }
        /// One past the index of the last item.
        package let endIndex: Int

        /// The item at `position`.
        package subscript(position: Int) -> Node {
            Node(document: document, index: document.child(offset + position))
        }
    }

    /// The entries of a mapping, in source order, merges applied.
    package struct Pairs: RandomAccessCollection, Sendable {
        let document: Document
        let offset: Int
        /// The index of the first entry.
        package var startIndex: Int { 0 }
        /// One past the index of the last entry.
        package let endIndex: Int

        /// The entry at `position`.
        package subscript(position: Int) -> Pair {
            let base = offset + 2 * position
            return Pair(key: Node(document: document, index: document.child(base)),
                        value: Node(document: document, index: document.child(base + 1)))
        }
    }

    /// What the node holds.
    package enum Content: Sendable {
        case scalar(Scalar)
        case sequence(Items)
        case mapping(Pairs)
    }

    /// The document the node belongs to.
    package let document: Document
    let index: Int

    var record: Document.Record { document.record(index) }

    /// Whether both are the same node of the same document (an alias is a node of its own).
    package static func == (lhs: Node, rhs: Node) -> Bool {
        lhs.document === rhs.document && lhs.index == rhs.index
    }

    /// What kind of node this is.
    package var kind: Kind { record.kind }

    /// What the node holds.
    package var content: Content {
        switch record.kind {
        case .scalar: return .scalar(Scalar(node: self))
        case .sequence: return .sequence(items)
        case .mapping: return .mapping(pairs)
        }
    }

    /// Where the node starts in the source (for an alias: where the alias is written).
    package var mark: Mark { document.source.mark(atOffset: record.start) }

    /// Where the node ends (exclusive).
    package var end: Mark { document.source.mark(atOffset: record.end) }

    /// The bytes of the source the node covers (for an alias: the alias).
    package var byteRange: Range<Int> {
        let record = record
        return record.start..<max(record.start, record.end)
    }

    /// The source range the node covers.
    package var span: SourceSpan { SourceSpan(start: mark, end: end) }

    /// The scalar, if this node is one.
    package var scalar: Scalar? { record.kind == .scalar ? Scalar(node: self) : nil }

    /// The entries, if this node is a mapping.
    package var mapping: Pairs? { record.kind == .mapping ? pairs : nil }

    /// The items, if this node is a sequence.
    package var sequence: Items? { record.kind == .sequence ? items : nil }

    private var items: Items {
        let record = record
        return Items(document: document, offset: Int(record.offset), endIndex: Int(record.count))
    }

    private var pairs: Pairs {
        let record = record
        return Pairs(document: document, offset: Int(record.offset), endIndex: Int(record.count))
    }

    /// A scalar's text; empty for sequences and mappings.
    package var text: String {
        let record = record
        guard record.kind == .scalar else { return "" }
        return String(decoding: document.bytes(record), as: UTF8.self)
    }

    /// What identifies a scalar's content: an alias shares it with the node it repeats, so a
    /// secret is known as one wherever an alias shows it. Nil for sequences and mappings.
    package var contentID: UInt64? {
        let record = record
        guard record.kind == .scalar else { return nil }
        return UInt64(record.offset) << 32 | UInt64(record.count)
    }

    /// Whether this node is an alias (`*name`): it repeats the node it refers to, children and all.
    package var isAlias: Bool { record.isAlias }

    /// Whether this node is anchored or an alias: its content may be reached more than once,
    /// so that work done for it may be kept for the next time (`containerID`).
    package var isShared: Bool { record.isShared }

    /// What identifies a sequence's or mapping's children: an alias shares them with the node it
    /// repeats, so work done for one can be reused for the other. Nil for scalars.
    package var containerID: Int? {
        let record = record
        return record.kind == .scalar ? nil : Int(record.offset)
    }

    /// Whether this is a scalar whose text is exactly `string`, compared byte by byte.
    package func hasText(_ string: String) -> Bool {
        document.scalar(at: index, equals: string)
    }

    /// The value of the mapping entry whose key is the scalar `key`; nil if there is none or
    /// this is not a mapping. Compares bytes, so no String is made per key.
    package func value(forKey key: String) -> Node? {
        let record = record
        guard record.kind == .mapping else { return nil }
        for pair in 0..<Int(record.count) {
            let position = Int(record.offset) + 2 * pair
            if document.scalar(at: document.child(position), equals: key) {
                return Node(document: document, index: document.child(position + 1))
            }
        }
        return nil
    }

    /// The keys of this mapping that are not in `known`, in source order (usually none).
    package func unknownKeys(_ known: [String]) -> [Node] {
        let record = record
        guard record.kind == .mapping else { return [] }
        var unknown: [Node] = []
        for pair in 0..<Int(record.count) {
            let key = document.child(Int(record.offset) + 2 * pair)
            if !known.contains(where: { document.scalar(at: key, equals: $0) }) {
                unknown.append(Node(document: document, index: key))
            }
        }
        return unknown
    }

    /// A scalar's typed value; `.null` for sequences and mappings.
    package var value: ScalarValue {
        let record = record
        guard record.kind == .scalar else { return .null }
        switch record.value {
        case .null: return .null
        case .bool: return .bool(document.storage.bits(record) != 0)
        case .int:
            let bytes = document.bytes(record)
            if case .int(let value) = CoreSchema.resolve(bytes: bytes) { return .int(value) }
            return .bigInt(CoreSchema.decimalDigits(bytes) ?? text)
        case .float: return .float(Double(bitPattern: document.storage.bits(record)))
        case .string: return .string(text)
        }
    }

    /// A short description of the node's type, for "expected X, found Y" errors.
    package var typeName: String {
        let record = record
        switch record.kind {
        case .sequence: return "a list"
        case .mapping: return "a mapping"
        case .scalar:
            switch record.value {
            case .null: return "null"
            case .bool: return "a boolean"
            case .int: return "an integer"
            case .float: return "a number"
            case .string: return "a string"
            }
        }
    }
}
