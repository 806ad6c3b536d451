// A mapping's keys: duplicates refused, `<<` merges applied.
extension YAMLParser.Builder {
    func isMergeKey(_ index: Int) -> Bool {
        let record = storage.record(index)
        guard record.kind == .scalar, record.count == 2, record.style == .plain, record.tag == 0 else { return false }
        let bytes = storage.bytes(record)
        return bytes[0] == UInt8(ascii: "<") && bytes[1] == UInt8(ascii: "<")
    }

    func typeName(_ index: Int) -> String {
        Node(document: document, index: index).typeName
    }

    /// Appends the pending key/value list of a mapping to `children`, rejecting duplicates
    /// and applying `<<` merges (explicit keys win over merged ones; earlier merge sources win
    /// over later ones). Returns the number of pairs.
    mutating func appendPairs(from start: Int, of mapping: Document.Record) throws(YAMLError) -> Int {
        var seen = SeenKeys(storage: storage, offset: Int(mapping.offset))
        var merges: [Int] = []
        var count = 0
        var position = start
        while position + 1 < pending.count {
            let key = Int(pending[position]), value = Int(pending[position + 1])
            position += 2
            if isMergeKey(key) {
                let source = storage.record(value)
                switch source.kind {
                case .mapping: merges.append(value)
                case .sequence:
                    for slot in Int(source.offset)..<Int(source.offset + source.count) {
                        let item = storage.child(slot)
                        guard storage.record(item).kind == .mapping else {
                            throw error(mark(item), "a << merge list holds mappings only; found \(typeName(item))")
                        }
                        merges.append(item)
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
                let name = String(decoding: identity.bytes, as: UTF8.self)
                let shown = !aliasRecords.contains(key) && isPlainKeyName(name) ? " \"\(name)\"" : ""
                throw error(mark(key), "duplicate key\(shown); it is first defined at line \(storage.record(first).startLine)")
            }
            try appendChild(key, of: mapping)
            try appendChild(value, of: mapping)
            count += 1
            seen.inserted(identity, index: key, count: count)
        }
        for source in merges {
            let record = storage.record(source)
            for pair in 0..<Int(record.count) {
                let key = storage.child(Int(record.offset) + 2 * pair), value = storage.child(Int(record.offset) + 2 * pair + 1)
                guard storage.record(key).kind == .scalar else { continue }
                let identity = KeyIdentity(storage, key)
                guard seen.first(identity, count: count) == nil else { continue }
                try appendChild(key, of: mapping)
                try appendChild(value, of: mapping)
                count += 1
                seen.inserted(identity, index: key, count: count)
            }
        }
        return count
    }
}

/// What makes two mapping keys the same: their typed value (`1` and `0x1` are one key; `"1"` and
/// `1` are two).
private struct KeyIdentity {
    let value: Document.ValueKind
    let bits: UInt64
    /// The text; it lives as long as the document being built.
    let bytes: UnsafeBufferPointer<UInt8>

    init(_ storage: Document.Storage, _ index: Int) {
        let record = storage.record(index)
        value = record.value
        bits = record.value == .string || record.value == .null ? 0 : storage.bits(record)
        bytes = storage.bytes(record)
    }

    func matches(_ other: KeyIdentity) -> Bool {
        guard value == other.value else { return false }
        switch value {
        case .null: return true
        case .string: return bytes.elementsEqual(other.bytes)
        case .float: return Double(bitPattern: bits) == Double(bitPattern: other.bits)
        case .bool, .int: return bits == other.bits
        }
    }

    /// A hashable form for large mappings.
    var key: Key {
        Key(value: value.rawValue, bits: value == .float ? Double(bitPattern: bits).hashKey : bits,
            text: value == .string ? Array(bytes) : [])
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

/// Keys already in a mapping being built: a scan of its entries for the usual handful (no
/// allocation), a hash table past that.
private struct SeenKeys {
    let storage: Document.Storage
    /// Where the mapping's entries start in the document's children.
    let offset: Int
    private var large: [KeyIdentity.Key: Int]?

    init(storage: Document.Storage, offset: Int) {
        self.storage = storage
        self.offset = offset
    }

    /// The record of an equal key among the first `count` entries.
    func first(_ identity: KeyIdentity, count: Int) -> Int? {
        if let large { return large[identity.key] }
        for pair in 0..<count {
            let key = storage.child(offset + 2 * pair)
            if KeyIdentity(storage, key).matches(identity) { return key }
        }
        return nil
    }

    /// Notes that entry `count` (1-based) has just been added with key `index`.
    mutating func inserted(_ identity: KeyIdentity, index: Int, count: Int) {
        if large != nil {
            large![identity.key] = index
        } else if count > 16 {
            var table: [KeyIdentity.Key: Int] = [:]
            for pair in 0..<count {
                let key = storage.child(offset + 2 * pair)
                table[KeyIdentity(storage, key).key] = key
            }
            large = table
        }
    }
}
