// A mapping's keys: duplicates refused, `<<` merges applied.
import Foundation

extension YAMLParser.Builder {
    /// Whether record `index` is a `<<` merge key: plain and untagged, or tagged `!!merge`.
    func isMergeKey(_ index: Int) -> Bool {
        let record = storage.record(index)
        guard record.kind == .scalar, record.count == 2 else { return false }
        if record.tag == ScalarTag.merge.rawValue + 1 { return true }
        guard record.style == .plain, record.tag == 0 else { return false }
        let bytes = storage.bytes(record)
        return bytes[0] == UInt8(ascii: "<") && bytes[1] == UInt8(ascii: "<")
    }

    func typeName(_ index: Int) -> String {
        Node(document: document, index: index).typeName
    }

    /// Appends the pending key/value list of a mapping to `children`, rejecting duplicates
    /// and applying `<<` merges (explicit keys win over merged ones; earlier merge sources win
    /// over later ones). Returns the number of pairs, what the merge keys and their values cost
    /// and what the entries they merged cost (`Storage.cost`); what is merged counts toward the
    /// expansion budget, once merged (a key that is already there takes nothing).
    mutating func appendPairs(from start: Int, of mapping: Document.Record) throws(YAMLError) -> (count: Int, mergeCost: UInt64, mergedCost: UInt64) {
        var seen = SeenKeys(storage: storage, offset: Int(mapping.offset))
        var merges: [(source: Int, key: Int)] = []
        var count = 0
        var mergeCost: UInt64 = 0
        var mergedCost: UInt64 = 0
        var position = start
        while position + 1 < pending.count {
            let key = Int(pending[position]), value = Int(pending[position + 1])
            position += 2
            if isMergeKey(key) {
                let source = storage.record(value)
                mergeCost += UInt64(storage.cost(storage.record(key))) + UInt64(storage.cost(source))
                switch source.kind {
                case .mapping: merges.append((value, key))
                case .sequence:
                    for slot in Int(source.offset)..<Int(source.offset + source.count) {
                        let item = storage.child(slot)
                        guard storage.record(item).kind == .mapping else {
                            throw error(mark(item), "a << merge list holds mappings only; found \(typeName(item))")
                        }
                        merges.append((item, key))
                    }
                case .scalar:
                    throw error(mark(value), "<< merges a mapping or a list of mappings; found \(typeName(value))")
                }
                continue
            }
            guard storage.record(key).kind == .scalar else {
                throw error(mark(key), "mapping keys must be scalars; found \(typeName(key))")
            }
            let identity = KeyIdentity(storage, key)
            if let first = seen.first(identity, count: count) {
                // Named only when it plainly is a key: an alias's text may be a secret from elsewhere.
                let name = String(decoding: identity.text, as: UTF8.self)
                let shown = !storage.record(key).isAlias && isPlainKeyName(name) ? " \"\(name)\"" : ""
                throw error(mark(key), "duplicate key\(shown); it is first defined at line \(mark(first).line)")
            }
            try appendChild(key, of: mapping)
            try appendChild(value, of: mapping)
            count += 1
            seen.inserted(identity, index: key, count: count)
        }
        for (source, mergeKey) in merges {
            let record = storage.record(source)
            for pair in 0..<Int(record.count) {
                let key = storage.child(Int(record.offset) + 2 * pair), value = storage.child(Int(record.offset) + 2 * pair + 1)
                guard storage.record(key).kind == .scalar else { continue }
                let identity = KeyIdentity(storage, key)
                guard seen.first(identity, count: count) == nil else { continue }
                let pairCost = storage.cost(storage.record(key)) &+ storage.cost(storage.record(value))
                try expand(by: pairCost, at: mark(mergeKey))
                try appendChild(key, of: mapping)
                try appendChild(value, of: mapping)
                count += 1
                mergedCost += UInt64(pairCost)
                seen.inserted(identity, index: key, count: count)
            }
        }
        return (count, mergeCost, mergedCost)
    }
}

/// What makes two mapping keys the same. A key's text is the name it is sent under in JSON, so
/// two keys of one text are one key (`1` and `"1"`, `true` and `'true'`); and two keys of one
/// value under the core schema are one key as YAML says (`1` and `0x1`, `~` and `null`), integers
/// compared exactly whatever their size and every NaN the same as another.
private struct KeyIdentity {
    /// The text; it lives as long as the document being built.
    let text: UnsafeBufferPointer<UInt8>
    let index: Int
    let value: Document.ValueKind

    init(_ storage: Document.Storage, _ index: Int) {
        let record = storage.record(index)
        self.index = index
        text = storage.bytes(record)
        value = record.value
    }

    /// The typed value when it is not a string (a string's value is its text).
    func typed(_ storage: Document.Storage) -> TypedKey? {
        let record = storage.record(index)
        switch value {
        case .string: return nil
        case .null: return .null
        case .bool: return .bool(storage.bits(record) != 0)
        case .int:
            if case .int(let value) = CoreSchema.resolve(bytes: text) { return .int(value) }
            return .bigInt(CoreSchema.decimalDigits(text) ?? "")
        case .float:
            let value = Double(bitPattern: storage.bits(record))
            return .float(value.isNaN ? Double.nan.bitPattern : value == 0 ? 0 : value.bitPattern)
        }
    }

    func matches(_ other: KeyIdentity, in storage: Document.Storage) -> Bool {
        // memcmp: a generic element-by-element compare is slow on the way of every key.
        if text.count == other.text.count
            && (text.isEmpty || (text[0] == other.text[0] && memcmp(text.baseAddress!, other.text.baseAddress!, text.count) == 0)) {
            return true
        }
        guard value != .string, value == other.value else { return false }
        return typed(storage) == other.typed(storage)
    }
}

/// A key's value under the core schema, for keys that are not strings.
private enum TypedKey: Hashable {
    case null, bool(Bool), int(Int), bigInt(String), float(UInt64)
}

/// Keys already in a mapping being built: a scan of its entries for the usual handful (no
/// allocation), hash tables by text and by value past that.
private struct SeenKeys {
    let storage: Document.Storage
    /// Where the mapping's entries start in the document's children.
    let offset: Int
    private var byText: [[UInt8]: Int]?
    private var byValue: [TypedKey: Int] = [:]

    init(storage: Document.Storage, offset: Int) {
        self.storage = storage
        self.offset = offset
    }

    /// The record of a key the same as `identity` among the first `count` entries.
    func first(_ identity: KeyIdentity, count: Int) -> Int? {
        if let byText {
            if let index = byText[Array(identity.text)] { return index }
            return identity.typed(storage).flatMap { byValue[$0] }
        }
        for pair in 0..<count {
            let key = storage.child(offset + 2 * pair)
            if KeyIdentity(storage, key).matches(identity, in: storage) { return key }
        }
        return nil
    }

    /// Notes that entry `count` (1-based) has just been added with key `index`.
    mutating func inserted(_ identity: KeyIdentity, index: Int, count: Int) {
        if byText != nil {
            add(identity, index: index)
        } else if count > 16 {
            byText = [:]
            for pair in 0..<count {
                let key = storage.child(offset + 2 * pair)
                add(KeyIdentity(storage, key), index: key)
            }
        }
    }

    private mutating func add(_ identity: KeyIdentity, index: Int) {
        byText![Array(identity.text)] = index
        if let typed = identity.typed(storage) { byValue[typed] = index }
    }
}
