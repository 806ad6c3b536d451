import ShowbatchBasics
import ShowbatchYAML

/// A binary label: its value is decoded (`decode: base64`) and written to a file of its own
/// (`file: TEMPLATE`, relative to the folder of the output its row goes to); the row's cell
/// holds that file's path.
package struct LabelFileSpec: Sendable {
    /// How the value is decoded (only base64 is supported).
    package enum Decoding: String, Sendable {
        /// RFC 4648 base64, standard or URL-safe alphabet.
        case base64
    }

    /// How the value is decoded.
    package var decode: Decoding = .base64
    /// Where the bytes go.
    package var template: FileTemplate
    /// The most bytes a decoded value may have; nil: no limit but the answer's.
    package var maxBytes: Int?
    /// Where `file` is written in the manifest.
    package var mark: Mark
}

/// Where a work item's binary label goes: its path relative to the output's folder, or why it
/// has none (a data-row value that made the path unusable).
package enum LabelFileTarget: Sendable, Equatable {
    /// The relative path, checked: no empty, `.` or `..` segment, no name too long.
    case path(String)
    /// Why the path cannot be used, in words that name the path but no revealed value.
    case refused(String)
}

/// The template of a label file's path: literal text, `${row.COLUMN}`, `${index}` and
/// `${request}` (environment references are resolved when the manifest is read).
///
/// A value inserted from the data row (or the request's name) is one part of one file name:
/// `/`, `%` and control characters in it are percent-encoded (`a/b` → `a%2Fb`), and a value of
/// dots only is encoded whole (`..` → `%2E%2E`), so a data row can neither add a folder nor walk
/// up. The manifest's own text may not hold `%`, so every `%` in a path is such an escape and a
/// name holding `%` followed by a letter (the temporary files' `.%partial`) is never a row's file.
package struct FileTemplate: Sendable {
    /// The parsed template; `${request}` is kept as the environment reference `request`.
    package let source: Template

    /// The longest file or folder name, in bytes: 255, the usual file-system limit, less what
    /// the temporary name adds (`.` and `.%partial`).
    package static let longestName = 245
    /// What the temporary file of a label file adds to its name: `.NAME.%partial`.
    package static let temporarySuffix = ".%partial"

    /// A template of `source`, which the decoder has checked with `problems`.
    package init(source: Template) { self.source = source }

    /// The template as a path pattern, its references as written (`pdf/${row.id}.pdf`).
    package var pattern: String { source.asWritten }

    /// What is wrong with the template as written, whatever the data rows hold: an absolute
    /// path, a `..`, `.` or empty segment, a name too long, a `%` or a control character.
    package var problems: [String] {
        if source.parts.isEmpty { return ["is empty; give the path of a file inside the output's folder"] }
        var found: [String] = []
        if case .literal(let text)? = source.parts.first, text.hasPrefix("/") {
            found.append("is an absolute path; label files are written inside the output's folder, so give a path relative to it")
        }
        var literals = ""
        for part in source.parts { if case .literal(let text) = part { literals += text } }
        if literals.contains("%") {
            found.append("holds %, which marks the escapes of data-row values in file names; leave it out")
        }
        if literals.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            found.append("holds a control character, which a file name should not")
        }
        // Segments made of literal text alone are checked here; the others once expanded.
        var segment = ""
        var literalOnly = true
        var segments: [(text: String, literal: Bool)] = []
        for part in source.parts {
            guard case .literal(let text) = part else {
                literalOnly = false
                continue
            }
            var pieces = text.split(separator: "/", omittingEmptySubsequences: false)
            segment += pieces.removeFirst()
            for piece in pieces {
                segments.append((segment, literalOnly))
                segment = String(piece)
                literalOnly = true
            }
        }
        segments.append((segment, literalOnly))
        if segments.count > 1, segments[0].text.isEmpty, segments[0].literal { segments.removeFirst() }
        for (index, segment) in segments.enumerated() where segment.literal {
            switch segment.text {
            case "..": found.append("has a .. segment, which leaves the output's folder; label files stay inside it")
            case ".": found.append("has a . segment; write the path without it")
            case "" where index == segments.count - 1: found.append("ends with /; it must end with a file name")
            case "": found.append("has an empty segment (//)")
            default:
                if segment.text.utf8.count > Self.longestName {
                    found.append("has a name over \(Self.longestName) bytes")
                }
            }
        }
        // Each problem once, however many segments have it.
        var unique: [String] = []
        for message in found where !unique.contains(message) { unique.append(message) }
        return unique
    }

    /// The path for a work item: `request` is its expanded name, `row` its data row.
    package func expand(row: DataRow?, request: String) -> LabelFileTarget {
        var path = ""
        for part in source.parts {
            switch part {
            case .literal(let text): path += text
            case .environment, .environmentOr: path += Self.nameSegment(request)
            case .row(let column): path += Self.nameSegment(row?.text(column) ?? "")
            case .index: path += row.map { String($0.index) } ?? ""
            }
        }
        for segment in path.split(separator: "/", omittingEmptySubsequences: false) {
            switch segment {
            case "": return .refused("file \(path) has an empty folder or file name (is a data-row value empty?)")
            case ".", "..": return .refused("file \(path) has a \(segment) segment; label files stay inside the output's folder")
            default:
                if segment.utf8.count > Self.longestName {
                    return .refused("file \(path) has a name over \(Self.longestName) bytes")
                }
            }
        }
        return .path(path)
    }

    /// `value` as part of one file name: `/`, `%` and control characters percent-encoded, and a
    /// value of dots only encoded whole.
    package static func nameSegment(_ value: String) -> String {
        let onlyDots = !value.isEmpty && value.utf8.allSatisfy { $0 == UInt8(ascii: ".") }
        guard onlyDots || value.utf8.contains(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "%") || $0 < 0x20 || $0 == 0x7F }) else {
            return value
        }
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(value.utf8.count + 6)
        for byte in value.utf8 {
            if onlyDots || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "%") || byte < 0x20 || byte == 0x7F {
                out.append(contentsOf: [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            } else {
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Base64 (RFC 4648) decoding of label values: the standard (`+/`) or URL-safe (`-_`) alphabet,
/// `=` padding optional but only at the end, ASCII white space (MIME line breaks) ignored.
package enum Base64 {
    /// Why a text is not base64; described without any of its characters.
    package enum Failure: Error, Equatable {
        /// A character outside the alphabet at this byte offset.
        case character(offset: Int)
        /// Something other than padding or white space after `=`, at this byte offset.
        case afterPadding(offset: Int)
        /// A length that no encoding has (one character too many, or too much padding).
        case length
        /// The decoded bytes would be over the limit.
        case tooLarge

        /// The failure in words.
        package var words: String {
            switch self {
            case .character(let offset): return "a character outside the base64 alphabet at offset \(offset)"
            case .afterPadding(let offset): return "data after the = padding at offset \(offset)"
            case .length: return "its length is not one base64 has"
            case .tooLarge: return "over the size limit"
            }
        }
    }

    private static let skip: UInt8 = 0xFE
    private static let invalid: UInt8 = 0xFF
    private static let pad: UInt8 = 0xFD

    private static let table: [UInt8] = {
        var table = [UInt8](repeating: invalid, count: 256)
        for (index, byte) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8.enumerated() {
            table[Int(byte)] = UInt8(index)
        }
        table[Int(UInt8(ascii: "-"))] = 62
        table[Int(UInt8(ascii: "_"))] = 63
        for byte in [UInt8(ascii: " "), 0x09, 0x0A, 0x0D] { table[Int(byte)] = skip }
        table[Int(UInt8(ascii: "="))] = pad
        return table
    }()

    /// The bytes `text` encodes; `.tooLarge` as soon as they would pass `limit`.
    package static func decode(_ text: String, limit: Int? = nil) -> Result<[UInt8], Failure> {
        var text = text
        return text.withUTF8 { decode($0, limit: limit) }
    }

    /// The bytes `input` encodes; `.tooLarge` as soon as they would pass `limit`.
    package static func decode(_ input: UnsafeBufferPointer<UInt8>, limit: Int? = nil) -> Result<[UInt8], Failure> {
        var out: [UInt8] = []
        out.reserveCapacity(min(input.count / 4 * 3 + 2, limit.map { $0 + 3 } ?? Int.max))
        var accumulator: UInt32 = 0
        var count = 0
        var padding = 0
        for (offset, byte) in input.enumerated() {
            let value = table[Int(byte)]
            if value == skip { continue }
            if value == pad {
                padding += 1
                continue
            }
            if value == invalid { return .failure(.character(offset: offset)) }
            if padding > 0 { return .failure(.afterPadding(offset: offset)) }
            accumulator = accumulator << 6 | UInt32(value)
            count += 1
            if count & 3 == 0 {
                if let limit, out.count + 3 > limit { return .failure(.tooLarge) }
                out.append(UInt8(truncatingIfNeeded: accumulator >> 16))
                out.append(UInt8(truncatingIfNeeded: accumulator >> 8))
                out.append(UInt8(truncatingIfNeeded: accumulator))
                accumulator = 0
            }
        }
        let rest = count & 3
        if rest == 1 || padding > 2 || (padding > 0 && (count + padding) & 3 != 0) { return .failure(.length) }
        let tail = rest == 0 ? 0 : rest - 1
        if let limit, out.count + tail > limit { return .failure(.tooLarge) }
        if rest == 2 {
            out.append(UInt8(truncatingIfNeeded: accumulator >> 4))
        } else if rest == 3 {
            out.append(UInt8(truncatingIfNeeded: accumulator >> 10))
            out.append(UInt8(truncatingIfNeeded: accumulator >> 2))
        }
        return .success(out)
    }
}
