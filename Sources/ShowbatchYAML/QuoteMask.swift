import ShowbatchBasics
internal import CYAML

/// Which parts of a source line an error may quote.
///
/// Secrets (header values, payload values, revealed alias values) sit in YAML values, so a
/// quoted line shows only what is known not to be one: mapping keys, YAML's punctuation, anchors
/// and tags, and the values `showValue` accepts. Everything else (other values, aliases, comments,
/// and whatever libyaml could not read past a syntax error) is hidden. The rule holds whatever
/// the error is and wherever the line is, because nothing is shown unless it was recognised.
package enum QuoteMask {
    /// The hidden spans of `lines` of `source`, by line, within the part of each line a
    /// diagnostic quotes (`Diagnostic.quoteLimit`): the file is not read past it, so that an
    /// error on a line of megabytes costs no more than one on a short line. `showValue` is asked
    /// about each value (a scalar that is not a mapping key, or an alias) by the mark just past its end.
    package static func hiddenSpans(in source: SourceFile, lines: Set<Int>, showValue: (Mark) -> Bool) -> [Int: [SourceSpan]] {
        guard !lines.isEmpty else { return [:] }
        let limit = Diagnostic.quoteLimit
        let shown = shownSpans(in: source, lines: lines, columns: limit + 1, showValue: showValue)
        var hidden: [Int: [SourceSpan]] = [:]
        for line in lines {
            guard let window = source.lineWindow(line, limit: limit) else { continue }
            let scalars = window.scalars
            var visible = [Bool](repeating: false, count: scalars.count)
            for span in shown[line] ?? [] {
                guard let columns = span.columns(onLine: line, lineLength: scalars.count) else { continue }
                for column in columns.clamped(to: 1..<scalars.count + 1) { visible[column - 1] = true }
            }
            // Runs of hidden characters, white space inside a run included, white space around it not.
            var spans: [SourceSpan] = []
            var index = 0
            while index < scalars.count {
                guard !visible[index], !isSpace(scalars[index]) else {
                    index += 1
                    continue
                }
                var end = index + 1
                var last = index
                while end < scalars.count && !visible[end] {
                    if !isSpace(scalars[end]) { last = end }
                    end += 1
                }
                spans.append(SourceSpan(start: Mark(line: line, column: index + 1), end: Mark(line: line, column: last + 2)))
                index = end
            }
            if !spans.isEmpty { hidden[line] = spans }
        }
        return hidden
    }

    private static func isSpace(_ scalar: Unicode.Scalar) -> Bool { scalar == " " || scalar == "\t" }

    /// The spans known safe to show on `lines` up to column `columns`, found with libyaml's
    /// scanner (its tokens say what is a key and what is a value, where a line-based guess could
    /// not). Scanning stops at the first token past that column on the last line.
    private static func shownSpans(in source: SourceFile, lines: Set<Int>, columns: Int, showValue: (Mark) -> Bool) -> [Int: [SourceSpan]] {
        var shown: [Int: [SourceSpan]] = [:]
        let lastLine = lines.max() ?? 0
        source.bytes.withUnsafeBufferPointer { buffer in
            var parser = yaml_parser_t()
            guard yaml_parser_initialize(&parser) == 1 else { return }
            defer { yaml_parser_delete(&parser) }
            let text = UnsafeBufferPointer(rebasing: buffer[source.contentStart...])
            yaml_parser_set_input_string(&parser, text.baseAddress ?? UnsafePointer(bitPattern: 1)!, text.count)
            yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING)
            // The token before the one at hand, anchors and tags skipped: a scalar right after a
            // zero-width KEY token is an implicit key (`name:`); an explicit one (`? x`), which a
            // stray `?` can make of a value, is not taken for one.
            var previous = YAML_NO_TOKEN
            var implicitKey = false
            while true {
                var token = yaml_token_t()
                guard yaml_parser_scan(&parser, &token) == 1 else { return }
                defer { yaml_token_delete(&token) }
                let type = token.type
                if type == YAML_STREAM_END_TOKEN { return }
                let start = Mark(line: Int(token.start_mark.line) + 1, column: Int(token.start_mark.column) + 1)
                let end = Mark(line: Int(token.end_mark.line) + 1, column: Int(token.end_mark.column) + 1)
                if start.line > lastLine || (start.line == lastLine && start.column > columns) { return }
                let show: Bool
                switch type {
                case YAML_SCALAR_TOKEN:
                    if previous == YAML_KEY_TOKEN && implicitKey {
                        // A key is shown when it looks like one: a value that lost its `: ` and
                        // became a key (`{Authorization:Bearer …}`) does not.
                        let text = String(decoding: UnsafeBufferPointer(start: token.data.scalar.value, count: token.data.scalar.length), as: UTF8.self)
                        show = isPlainKeyName(text)
                    } else {
                        show = showValue(end)
                    }
                case YAML_ALIAS_TOKEN: show = showValue(end)
                // An anchor or tag is shown only where its value is: an unquoted value that starts
                // with `&` or `!` reads as one.
                case YAML_ANCHOR_TOKEN, YAML_TAG_TOKEN: show = false
                default: show = true
                }
                if show && start < end && (start.column <= columns || end.line > start.line) {
                    for line in start.line...end.line where lines.contains(line) {
                        shown[line, default: []].append(SourceSpan(start: start, end: end))
                    }
                }
                if type != YAML_ANCHOR_TOKEN && type != YAML_TAG_TOKEN {
                    previous = type
                    implicitKey = type == YAML_KEY_TOKEN && start == end
                }
            }
        }
        return shown
    }
}

/// Whether `text` looks like a mapping key that can be shown (and quoted in a message): 1 to 64
/// ASCII letters, digits, `_`, `-` and `.`. Anything else may be a value that a slip of syntax
/// (a missing `: `, a stray `?`, an alias) turned into a key.
package func isPlainKeyName(_ text: String) -> Bool {
    let bytes = text.utf8
    if text == "<<" { return true }
    return (1...64).contains(bytes.count) && bytes.allSatisfy { byte in
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
    }
}
