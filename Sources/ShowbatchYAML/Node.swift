import Foundation

/// How a scalar was written in the source.
public enum ScalarStyle: UInt8, Sendable, Hashable {
    case plain, singleQuoted, doubleQuoted, literal, folded
}

/// A scalar's value typed by the YAML 1.2 core schema.
public enum ScalarValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int)
    case float(Double)
    case string(String)

    /// A short name of the type, for error messages ("a string", "an integer").
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .int: return "an integer"
        case .float: return "a number"
        case .string: return "a string"
        }
    }
}

/// The explicit tags a scalar may carry; any other tag is rejected while parsing.
public enum ScalarTag: UInt8, Sendable {
    case nonSpecific, str, null, bool, int, float

    /// The tag's full name as YAML spells it.
    public var name: String {
        switch self {
        case .nonSpecific: return "!"
        case .str: return "tag:yaml.org,2002:str"
        case .null: return "tag:yaml.org,2002:null"
        case .bool: return "tag:yaml.org,2002:bool"
        case .int: return "tag:yaml.org,2002:int"
        case .float: return "tag:yaml.org,2002:float"
        }
    }
}

/// A parsed YAML document stored flat: one record per node, scalar text in one byte buffer and
/// children as index lists. A 50,000-request manifest holds two million nodes; a tree of Swift
/// values with a String per scalar spent more time allocating and freeing than libyaml parsing.
///
/// Storage is allocated in chunks that never move, and a record is never written again once
/// its node is finished, so a finished node may be read on another thread while the parser
/// goes on adding nodes after it (see `YAMLParser.ListStream`).
public final class Document: @unchecked Sendable {
    /// 28 bytes: a typed scalar's number or boolean is read again from its text when asked for,
    /// which is rare, rather than stored in every record.
    struct Record {
        var startLine: UInt32
        var startColumn: UInt32
        var endLine: UInt32
        var endColumn: UInt32
        /// Scalars: offset of the text in `text`; containers: offset of the children in `children`.
        var offset: UInt32
        /// Scalars: text length in bytes; sequences: item count; mappings: pair count.
        var count: UInt32
        var kind: Node.Kind
        var style: ScalarStyle = .plain
        var value: ValueKind = .string
        /// The explicit tag plus one (0: none).
        var tag: UInt8 = 0
    }

    enum ValueKind: UInt8 { case null, bool, int, float, string }

    /// Where the nodes are; the parser keeps a copy so that it never touches this object (whose
    /// reference count the decoding thread keeps changing) while it adds nodes.
    let storage: Storage
    /// Set once, when the parser finishes.
    private(set) var rootIndex = 0

    /// Empty storage for a source of `sourceSize` bytes holding at most `maxRecords` nodes.
    init(sourceSize: Int, maxRecords: Int) {
        storage = Storage(sourceSize: sourceSize, maxRecords: maxRecords)
    }

    deinit { storage.deallocate() }

    func finish(root: Int) { rootIndex = root }

    @inline(__always) func record(_ index: Int) -> Record { storage.record(index) }
    @inline(__always) func child(_ index: Int) -> Int { storage.child(index) }
    @inline(__always) func bytes(_ record: Record) -> UnsafeBufferPointer<UInt8> { storage.bytes(record) }
    func scalar(at index: Int, equals string: String) -> Bool { storage.scalar(at: index, equals: string) }

    /// Chunked storage for records and children, and one buffer for scalar text.
    struct Storage {
        static let chunkShift = 16
        static let chunkMask = (1 << chunkShift) - 1

        private let recordChunks: UnsafeMutableBufferPointer<UnsafeMutablePointer<Record>?>
        private let childChunks: UnsafeMutableBufferPointer<UnsafeMutablePointer<UInt32>?>
        /// Scalar text. Decoded text is never longer than 1.5 times its source (the escape `\L` is
        /// two characters for three bytes), so twice the source size always suffices.
        let text: UnsafeMutableBufferPointer<UInt8>

        init(sourceSize: Int, maxRecords: Int) {
            // Every record counts toward the node limit; a mapping's entries are at most two per node.
            recordChunks = .allocate(capacity: (maxRecords >> Self.chunkShift) + 1)
            recordChunks.initialize(repeating: nil)
            childChunks = .allocate(capacity: ((2 * maxRecords) >> Self.chunkShift) + 1)
            childChunks.initialize(repeating: nil)
            text = .allocate(capacity: 2 * sourceSize + 64)
        }

        func deallocate() {
            for chunk in recordChunks { chunk?.deallocate() }
            for chunk in childChunks { chunk?.deallocate() }
            recordChunks.deallocate()
            childChunks.deallocate()
            text.deallocate()
        }

        @inline(__always) func record(_ index: Int) -> Record {
            recordChunks[index >> Self.chunkShift].unsafelyUnwrapped[index & Self.chunkMask]
        }

        @inline(__always) func child(_ index: Int) -> Int {
            Int(childChunks[index >> Self.chunkShift].unsafelyUnwrapped[index & Self.chunkMask])
        }

        /// Stores record `index`; false when the storage is full.
        func setRecord(_ index: Int, _ record: Record) -> Bool {
            store(record, at: index, in: recordChunks)
        }

        /// Stores child slot `index`; false when the storage is full.
        func setChild(_ index: Int, _ value: UInt32) -> Bool {
            store(value, at: index, in: childChunks)
        }

        private func store<T>(_ value: T, at index: Int, in chunks: UnsafeMutableBufferPointer<UnsafeMutablePointer<T>?>) -> Bool {
            let chunk = index >> Self.chunkShift
            guard chunk < chunks.count else { return false }
            if chunks[chunk] == nil { chunks[chunk] = .allocate(capacity: 1 << Self.chunkShift) }
            (chunks[chunk].unsafelyUnwrapped + (index & Self.chunkMask)).initialize(to: value)
            return true
        }

        /// The text bytes of a scalar record.
        @inline(__always) func bytes(_ record: Record) -> UnsafeBufferPointer<UInt8> {
            UnsafeBufferPointer(start: text.baseAddress! + Int(record.offset), count: Int(record.count))
        }

        /// The payload of a typed scalar (bool, integer or float bits), read again from its text.
        func bits(_ record: Record) -> UInt64 {
            switch CoreSchema.resolve(bytes: bytes(record)) {
            case .bool(let value): return value ? 1 : 0
            case .int(let value): return record.value == .float ? Double(value).bitPattern : UInt64(bitPattern: Int64(value))
            case .float(let value): return value.bitPattern
            case .null, .string: return 0
            }
        }

        /// Whether record `index` is a scalar whose text is exactly `string`.
        func scalar(at index: Int, equals string: String) -> Bool {
            let record = record(index)
            guard record.kind == .scalar, Int(record.count) == string.utf8.count else { return false }
            var string = string
            // memcmp: a generic element-by-element compare showed in validate's profile.
            return string.withUTF8 { $0.isEmpty || memcmp($0.baseAddress!, bytes(record).baseAddress!, $0.count) == 0 }
        }
    }

    /// The top node of the document.
    public var root: Node { Node(document: self, index: rootIndex) }
}

/// A node of a YAML document with the 1-based marks of where it starts and ends.
///
/// A node is a position in its `Document`, which it keeps alive.
public struct Node: Sendable, Equatable {
    /// What kind of node this is.
    public enum Kind: UInt8, Sendable {
        case scalar, sequence, mapping
    }

    /// A view of a scalar node: its text, style, explicit tag and typed value.
    public struct Scalar: Sendable {
        let node: Node

        /// The text as libyaml decoded it (quotes and escapes resolved).
        public var text: String { node.text }
        /// How the scalar was written.
        public var style: ScalarStyle { node.record.style }
        /// The explicit tag, if one was written (`!!str`).
        public var tag: ScalarTag? { node.record.tag == 0 ? nil : ScalarTag(rawValue: node.record.tag - 1) }
        /// The value under the core schema; quoted scalars are always strings.
        public var value: ScalarValue { node.value }
    }

    /// One key/value entry of a mapping, in source order.
    public struct Pair: Sendable {
        /// The key node.
        public let key: Node
        /// The value node.
        public let value: Node
    }

    /// The items of a sequence.
    public struct Items: RandomAccessCollection, Sendable {
        let document: Document
        let offset: Int
        /// The index of the first item.
        public var startIndex: Int { 0 }
        /// One past the index of the last item.
        public let endIndex: Int

        /// The item at `position`.
        public subscript(position: Int) -> Node {
            Node(document: document, index: document.child(offset + position))
        }
    }

    /// The entries of a mapping, in source order, merges applied.
    public struct Pairs: RandomAccessCollection, Sendable {
        let document: Document
        let offset: Int
        /// The index of the first entry.
        public var startIndex: Int { 0 }
        /// One past the index of the last entry.
        public let endIndex: Int

        /// The entry at `position`.
        public subscript(position: Int) -> Pair {
            let base = offset + 2 * position
            return Pair(key: Node(document: document, index: document.child(base)),
                        value: Node(document: document, index: document.child(base + 1)))
        }
    }

    /// What the node holds.
    public enum Content: Sendable {
        case scalar(Scalar)
        case sequence(Items)
        case mapping(Pairs)
    }

    /// The document the node belongs to.
    public let document: Document
    let index: Int

    var record: Document.Record { document.record(index) }

    /// Whether both are the same node of the same document (an alias is a node of its own).
    public static func == (lhs: Node, rhs: Node) -> Bool {
        lhs.document === rhs.document && lhs.index == rhs.index
    }

    /// What kind of node this is.
    public var kind: Kind { record.kind }

    /// What the node holds.
    public var content: Content {
        switch record.kind {
        case .scalar: return .scalar(Scalar(node: self))
        case .sequence: return .sequence(items)
        case .mapping: return .mapping(pairs)
        }
    }

    /// Where the node starts in the source (for an alias: where the alias is written).
    public var mark: Mark {
        let record = record
        return Mark(line: Int(record.startLine), column: Int(record.startColumn))
    }

    /// Where the node ends (exclusive).
    public var end: Mark {
        let record = record
        return Mark(line: Int(record.endLine), column: Int(record.endColumn))
    }

    /// The source range the node covers.
    public var span: SourceSpan { SourceSpan(start: mark, end: end) }

    /// The scalar, if this node is one.
    public var scalar: Scalar? { record.kind == .scalar ? Scalar(node: self) : nil }

    /// The entries, if this node is a mapping.
    public var mapping: Pairs? { record.kind == .mapping ? pairs : nil }

    /// The items, if this node is a sequence.
    public var sequence: Items? { record.kind == .sequence ? items : nil }

    private var items: Items {
        let record = record
        return Items(document: document, offset: Int(record.offset), endIndex: Int(record.count))
    }

    private var pairs: Pairs {
        let record = record
        return Pairs(document: document, offset: Int(record.offset), endIndex: Int(record.count))
    }

    /// A scalar's text; empty for sequences and mappings.
    public var text: String {
        let record = record
        guard record.kind == .scalar else { return "" }
        return String(decoding: document.bytes(record), as: UTF8.self)
    }

    /// Whether this is a scalar whose text is exactly `string`, compared byte by byte.
    public func hasText(_ string: String) -> Bool {
        document.scalar(at: index, equals: string)
    }

    /// The value of the mapping entry whose key is the scalar `key`; nil if there is none or
    /// this is not a mapping. Compares bytes, so no String is made per key.
    public func value(forKey key: String) -> Node? {
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
    public func unknownKeys(_ known: [String]) -> [Node] {
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
    public var value: ScalarValue {
        let record = record
        guard record.kind == .scalar else { return .null }
        switch record.value {
        case .null: return .null
        case .bool: return .bool(document.storage.bits(record) != 0)
        case .int: return .int(Int(bitPattern: UInt(document.storage.bits(record))))
        case .float: return .float(Double(bitPattern: document.storage.bits(record)))
        case .string: return .string(text)
        }
    }

    /// A short description of the node's type, for "expected X, found Y" errors.
    public var typeName: String {
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

/// Resolution of plain scalars under the YAML 1.2 core schema.
public enum CoreSchema {
    /// A resolved plain scalar: the type, and the payload for booleans, integers and floats.
    enum Resolved: Equatable {
        case null, bool(Bool), int(Int), float(Double), string
    }

    /// The typed value of a plain scalar's text.
    public static func resolve(_ text: String) -> ScalarValue {
        var text = text
        let resolved = text.withUTF8 { resolve(bytes: $0) }
        switch resolved {
        case .null: return .null
        case .bool(let value): return .bool(value)
        case .int(let value): return .int(value)
        case .float(let value): return .float(value)
        case .string: return .string(text)
        }
    }

    static func resolve(bytes: UnsafeBufferPointer<UInt8>) -> Resolved {
        // Most scalars are words: only these first characters can start a non-string.
        guard let first = bytes.first else { return .null }
        switch first {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."):
            break
        case UInt8(ascii: "~"), UInt8(ascii: "n"), UInt8(ascii: "N"), UInt8(ascii: "t"), UInt8(ascii: "T"),
             UInt8(ascii: "f"), UInt8(ascii: "F"):
            return word(bytes)
        default:
            return .string
        }
        switch String(decoding: bytes, as: UTF8.self) {
        case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF": return .float(.infinity)
        case "-.inf", "-.Inf", "-.INF": return .float(-.infinity)
        case ".nan", ".NaN", ".NAN": return .float(.nan)
        default: break
        }
        if bytes.count > 2, bytes[0] == UInt8(ascii: "0") {
            let digits = UnsafeBufferPointer(rebasing: bytes[2...])
            if bytes[1] == UInt8(ascii: "x"), digits.allSatisfy(isHex), let value = integer(digits, radix: 16) {
                return .int(value)
            }
            if bytes[1] == UInt8(ascii: "o"), digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "7") }),
               let value = integer(digits, radix: 8) {
                return .int(value)
            }
        }
        if isDecimalInteger(bytes) {
            var negative = false
            var digits = bytes
            if bytes[0] == UInt8(ascii: "-") || bytes[0] == UInt8(ascii: "+") {
                negative = bytes[0] == UInt8(ascii: "-")
                digits = UnsafeBufferPointer(rebasing: bytes[1...])
            }
            if let magnitude = integer(digits, radix: 10, negative: negative) { return .int(magnitude) }
            return .float(Double(String(decoding: bytes, as: UTF8.self)) ?? 0)
        }
        if isFloat(bytes), let value = Double(String(decoding: bytes, as: UTF8.self)) { return .float(value) }
        return .string
    }

    private static func word(_ bytes: UnsafeBufferPointer<UInt8>) -> Resolved {
        guard bytes.count <= 5 else { return .string }
        switch String(decoding: bytes, as: UTF8.self) {
        case "~", "null", "Null", "NULL": return .null
        case "true", "True", "TRUE": return .bool(true)
        case "false", "False", "FALSE": return .bool(false)
        default: return .string
        }
    }

    /// Digits in `radix`, accumulated with overflow checks; nil on overflow.
    private static func integer(_ digits: UnsafeBufferPointer<UInt8>, radix: Int, negative: Bool = false) -> Int? {
        var value = 0
        for byte in digits {
            let digit: Int
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = Int(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = Int(byte - UInt8(ascii: "a")) + 10
            default: digit = Int(byte - UInt8(ascii: "A")) + 10
            }
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: radix)
            let (next, overflow2) = negative ? shifted.subtractingReportingOverflow(digit) : shifted.addingReportingOverflow(digit)
            if overflow1 || overflow2 { return nil }
            value = next
        }
        return value
    }

    private static func isHex(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
            || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "f"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "F"))
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private static func isDecimalInteger(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") { index += 1 }
        guard index < bytes.count else { return false }
        return bytes[index...].allSatisfy(isDigit)
    }

    // [-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?
    private static func isFloat(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        func digits() -> Int {
            let start = index
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            return index - start
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") { index += 1 }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { return false }
        } else {
            guard digits() > 0 else { return false }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                _ = digits()
            }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") { index += 1 }
            guard digits() > 0 else { return false }
        }
        return index == bytes.count
    }
}
