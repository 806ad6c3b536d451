import ShowbatchBasics
import Foundation

/// A parsed YAML document stored flat: one record per node, scalar text in one byte buffer and
/// children as index lists. A 50,000-request manifest holds two million nodes; a tree of Swift
/// values with a String per scalar spent more time allocating and freeing than libyaml parsing.
///
/// Storage is allocated in chunks that never move, and a record is never written again once
/// its node is finished, so a finished node may be read on another thread while the parser
/// goes on adding nodes after it (see `YAMLParser.ListStream`).
package final class Document: @unchecked Sendable {
    /// 16 bytes, for there are millions: where the node is as byte offsets into the source
    /// (lines and columns are worked out when asked for, which is when something is reported),
    /// its text or children, and its kind, style, type and tag packed in the bits the offsets
    /// and counts leave free (sources are at most `maxSourceSize`). A typed scalar's number or
    /// boolean is read again from its text when asked for, rather than stored.
    struct Record {
        /// The start offset, and in the top bits the kind and the style.
        private var startBits: UInt32
        /// The end offset (exclusive), and in the top bits the value kind and whether the node
        /// is anchored or an alias.
        private var endBits: UInt32
        /// Scalars: offset of the text in `text`; containers: offset of the children in `children`.
        var offset: UInt32
        /// The count, and in the top bits the explicit tag plus one (0: none).
        private var countBits: UInt32

        private static let offsetMask: UInt32 = (1 << 27) - 1

        init(start: Int, end: Int, offset: UInt32, count: UInt32, kind: Node.Kind) {
            startBits = UInt32(start) | UInt32(kind.rawValue) << 27
            endBits = UInt32(end) | UInt32(ValueKind.string.rawValue) << 27
            self.offset = offset
            countBits = count
        }

        /// Where the node starts: a byte offset into the source.
        var start: Int {
            get { Int(startBits & Self.offsetMask) }
            set { startBits = startBits & ~Self.offsetMask | UInt32(newValue) }
        }

        /// Just past where the node ends: a byte offset into the source.
        var end: Int {
            get { Int(endBits & Self.offsetMask) }
            set { endBits = endBits & ~Self.offsetMask | UInt32(newValue) }
        }

        /// Scalars: text length in bytes; sequences: item count; mappings: pair count.
        var count: UInt32 {
            get { countBits & Self.offsetMask }
            set { countBits = countBits & ~Self.offsetMask | newValue }
        }

        var kind: Node.Kind { Node.Kind(rawValue: UInt8(startBits >> 27 & 0x3))! }

        var style: ScalarStyle {
            get { ScalarStyle(rawValue: UInt8(startBits >> 29 & 0x7))! }
            set { startBits = startBits & ~(0x7 << 29) | UInt32(newValue.rawValue) << 29 }
        }

        var value: ValueKind {
            get { ValueKind(rawValue: UInt8(endBits >> 27 & 0x7))! }
            set { endBits = endBits & ~(0x7 << 27) | UInt32(newValue.rawValue) << 27 }
        }

        /// The explicit tag plus one (0: none).
        var tag: UInt8 {
            get { UInt8(countBits >> 27 & 0xF) }
            set { countBits = countBits & ~(0xF << 27) | UInt32(newValue) << 27 }
        }

        /// Whether this record is an alias (a copy of the record it refers to, at the alias's place).
        var isAlias: Bool {
            get { endBits & 1 << 31 != 0 }
            set { endBits = newValue ? endBits | 1 << 31 : endBits & ~(1 << 31) }
        }

        /// Whether this node has an anchor (aliases may repeat it).
        var isAnchored: Bool {
            get { endBits & 1 << 30 != 0 }
            set { endBits = newValue ? endBits | 1 << 30 : endBits & ~(1 << 30) }
        }

        /// Whether this node is anchored or an alias.
        var isShared: Bool { endBits >> 30 != 0 }
    }

    /// The largest source a document can be read from: offsets and text lengths (at most 1.5
    /// times the source) take 27 bits of a record.
    static let maxSourceSize = 64 << 20

    enum ValueKind: UInt8 { case null, bool, int, float, string }

    /// What a node costs in the expansion budget besides its text (`Storage.cost`): about what
    /// one costs once decoded (a payload member is a name, a boxed value and a slot of an array,
    /// 60 to 110 bytes with its record), so that the budget bounds memory, not only time.
    static let nodeCost: UInt32 = 64

    /// Where the nodes are; the parser keeps a copy so that it never touches this object (whose
    /// reference count the decoding thread keeps changing) while it adds nodes.
    let storage: Storage
    /// Set once, when the parser finishes.
    private(set) var rootIndex = 0
    /// The number of records, set when the parser finishes.
    private(set) var recordCount = 0
    /// Whether any node is an alias: only then can a value appear in two places.
    package private(set) var hasAliases = false

    /// The source, whose offsets the records hold (and turn into marks with).
    let source: SourceFile

    /// Empty storage for `source` holding at most `maxRecords` nodes.
    init(source: SourceFile, maxRecords: Int, maxMergedSlots: Int) {
        self.source = source
        storage = Storage(sourceSize: source.bytes.count, maxRecords: maxRecords, maxMergedSlots: maxMergedSlots)
    }

    deinit { storage.deallocate() }

    func finish(root: Int, records: Int, aliases: Bool) {
        rootIndex = root
        recordCount = records
        hasAliases = aliases
    }

    /// Calls `body` with every scalar node in the order they were read (an alias is a node of
    /// its own, after the anchored node it repeats). Used to find the secrets of a manifest when
    /// an error is to be shown, never on the way of a valid one.
    package func forEachScalar(_ body: (Node) -> Void) {
        for index in 0..<recordCount where storage.record(index).kind == .scalar {
            body(Node(document: self, index: index))
        }
    }

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

        init(sourceSize: Int, maxRecords: Int, maxMergedSlots: Int) {
            // Every record counts toward the node limit. Children: each node is the child of at
            // most one container, each container has a slot for its size (`cost`), and merged
            // entries are copies, bounded by the expansion budget.
            recordChunks = .allocate(capacity: (maxRecords >> Self.chunkShift) + 1)
            recordChunks.initialize(repeating: nil)
            childChunks = .allocate(capacity: ((2 * maxRecords + maxMergedSlots) >> Self.chunkShift) + 1)
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

        /// What a node costs once expanded: `nodeCost` a node and the bytes of its text, every alias
        /// and merged entry counted again (saturating). A container keeps it in the child slot
        /// before its children, which an alias of it shares.
        @inline(__always) func cost(_ record: Record) -> UInt32 {
            record.kind == .scalar ? Document.nodeCost &+ record.count : UInt32(child(Int(record.offset) - 1))
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
            case .bigInt, .tooLarge:
                // Read as a float only under `!!float`; as an integer it is read from its digits.
                return record.value == .float ? (CoreSchema.decimalDigits(bytes(record)).flatMap(Double.init) ?? 0).bitPattern : 0
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
    package var root: Node { Node(document: self, index: rootIndex) }
}
