import ShowbatchBasics
// Where a syntax error is, as a path from the root: which value's lines it lies among.
extension YAMLParser.Builder {
    /// The path of the innermost value whose region holds `mark`, from what has been read so
    /// far: the open containers and the keys of their open entries, then, through the entries
    /// last finished, each value whose lines `mark`'s line lies among (after its key's line and
    /// indented more than its key, or than its list item's dash). A line that lost its
    /// indentation inside a header's block value is found in that header this way, even though
    /// libyaml has ended the value before it.
    func regionPath(at mark: Mark) -> [YAMLPathStep] {
        var path: [YAMLPathStep] = []
        var last: (key: Int?, value: Int)?
        for (level, frame) in stack.enumerated() {
            let end = level + 1 < stack.count ? stack[level + 1].first : pending.count
            let entries = end - frame.first
            let innermost = level + 1 == stack.count
            switch frame.kind {
            case .sequence:
                if !innermost {
                    path.append(.item)
                } else if entries > 0 {
                    last = (nil, Int(pending[end - 1]))
                }
            default:
                if entries % 2 == 1 {
                    // A key waits for its value, which is open or where the error is.
                    path.append(.key(keyText(Int(pending[end - 1]))))
                    if innermost { return path }
                } else if !innermost {
                    path.append(.key(nil))
                } else if entries > 0 {
                    last = (Int(pending[end - 2]), Int(pending[end - 1]))
                }
            }
        }
        let indentation = source.indentation(ofLine: mark.line)
        while let (key, value) = last {
            let owner = self.mark(key ?? value)
            // A list item's dash is two columns before it; a key's value is indented past the key.
            let region = key == nil ? owner.column - 3 : owner.column - 1
            guard mark.line > owner.line, indentation > region else { break }
            path.append(key.map { .key(keyText($0)) } ?? .item)
            last = lastEntry(of: value)
        }
        return path
    }

    /// The columns of the value a syntax error at `mark` lies in, when it is written on its key's
    /// line in block style (`  - regex: "\d"`): from past the key's `: ` to the end of the line or
    /// to a comment. Nil when the key is elsewhere, or in a flow collection, whose line may hold
    /// other values.
    func shownValueColumns(at mark: Mark) -> Range<Int>? {
        guard let frame = stack.last, frame.kind != .sequence else { return nil }
        let entries = pending.count - frame.first
        guard entries % 2 == 1, let key = keyText(Int(pending[pending.count - 1])), isPlainKeyName(key) else { return nil }
        let keyMark = self.mark(Int(pending[pending.count - 1]))
        guard keyMark.line == mark.line, let line = source.line(mark.line) else { return nil }
        let scalars = Array(line.unicodeScalars)
        let start = keyMark.column - 1
        // Only indentation and list dashes before the key.
        guard start < scalars.count, scalars[..<start].allSatisfy({ $0 == " " || $0 == "-" }),
              String(String.UnicodeScalarView(scalars[start...].prefix(key.unicodeScalars.count))) == key else { return nil }
        var at = start + key.unicodeScalars.count
        while at < scalars.count, scalars[at] == " " { at += 1 }
        guard at < scalars.count, scalars[at] == ":" else { return nil }
        at += 1
        while at < scalars.count, scalars[at] == " " || scalars[at] == "\t" { at += 1 }
        var end = at
        while end < scalars.count, !(scalars[end] == "#" && (scalars[end - 1] == " " || scalars[end - 1] == "\t")) { end += 1 }
        while end > at, scalars[end - 1] == " " || scalars[end - 1] == "\t" { end -= 1 }
        guard end > at, mark.column - 1 < end else { return nil }
        return (at + 1)..<(end + 1)
    }

    /// The last key (nil in a list) and value of a finished container; nil for scalars and empty ones.
    private func lastEntry(of index: Int) -> (key: Int?, value: Int)? {
        let record = storage.record(index)
        guard record.count > 0 else { return nil }
        switch record.kind {
        case .scalar: return nil
        case .sequence: return (nil, storage.child(Int(record.offset + record.count) - 1))
        case .mapping:
            let base = Int(record.offset) + 2 * (Int(record.count) - 1)
            return (storage.child(base), storage.child(base + 1))
        }
    }

    private func keyText(_ index: Int) -> String? {
        let record = storage.record(index)
        guard record.kind == .scalar else { return nil }
        return String(decoding: storage.bytes(record), as: UTF8.self)
    }
}
