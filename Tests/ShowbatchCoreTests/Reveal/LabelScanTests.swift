import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// `JSONParser.values(at:in:)` must answer exactly what a full parse and `ContentPath.lookup` do.
@Suite struct LabelScanTests {
    // "é" and "e\u{301}", "K" and the Kelvin sign are canonically equal: names compare as strings.
    static let keys = ["a", "b", "a.b", "K", "\u{212A}", "e\u{301}", "", "card_number"]
    static let segments = ["a", "b", "a.b", "K", "\u{212A}", "é", "0", "+1", "01"]

    /// Writes `text` as a JSON string, escaping some characters at random.
    static func string(_ text: String, _ random: inout SeededGenerator) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            if scalar.value < 0x20 || (scalar.value < 0x10000 && random.next() % 4 == 0) {
                out += "\\u" + String(format: "%04x", scalar.value)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    static func document(_ depth: Int, _ random: inout SeededGenerator) -> String {
        let space = random.next() % 3 == 0 ? " " : ""
        // Mostly objects at the top, mostly containers below, scalars at the bottom.
        let kind = depth == 0 && random.next() % 8 != 0 ? 6 : random.next() % (depth >= 4 ? 4 : 8)
        switch kind {
        case 0: return string(["4111", "x\"y", "", "é😀", "a\nb"][Int(random.next() % 5)], &random)
        case 1: return ["0", "-1.50", "2e3", "true", "false", "null"][Int(random.next() % 6)]
        case 2: return "\"\(random.next() % 1000)\""
        case 3: return "[]"
        case 4, 5:
            var items: [String] = []
            for _ in 0..<(random.next() % 4) { items.append(space + document(depth + 1, &random)) }
            return "[" + items.joined(separator: ",") + "]"
        default:
            var members: [String] = []
            // Most objects name each key once; the others may repeat one (a body the scanner
            // refuses when the repeated key is on a path).
            let distinct = random.next() % 4 != 0
            var used = Set<Int>()
            for _ in 0..<(random.next() % 5) {
                let pick = Int(random.next() % UInt64(keys.count))
                if distinct && !used.insert(pick).inserted { continue }
                let key = string(keys[pick], &random)
                members.append(space + key + space + ":" + document(depth + 1, &random))
            }
            return "{" + members.joined(separator: ",") + "}"
        }
    }

    static func paths(_ random: inout SeededGenerator) throws -> [ContentPath] {
        var paths: [ContentPath] = []
        for _ in 0..<(1 + random.next() % 6) {
            var written: [String] = []
            for _ in 0..<(1 + random.next() % 2) {
                let segment = segments[Int(random.next() % UInt64(segments.count))]
                written.append(segment.replacingOccurrences(of: ".", with: "\\."))
            }
            paths.append(try ContentPath(parsing: written.joined(separator: ".")))
        }
        return paths
    }

    /// What the full parser and lookup say: the values, nil for a non-object, or the error.
    static func expected(_ bytes: [UInt8], _ paths: [ContentPath]) -> Result<[JSONValue?]?, JSONParseError> {
        Result { () throws(JSONParseError) -> [JSONValue?]? in
            let json = try JSONParser.parse(bytes)
            guard case .object = json else { return nil }
            return paths.map { $0.lookup(in: json) }
        }
    }

    @Test(arguments: [1, 2, 3, 4])
    func agreesWithTheFullParser(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        var objects = 0, found = 0, errors = 0, ambiguous = 0
        for _ in 0..<500 {
            let text = Self.document(0, &random)
            var bytes = Array(text.utf8)
            // Every other document is damaged: a byte replaced, or the end cut off.
            if random.next() % 2 == 0, !bytes.isEmpty {
                let at = Int(random.next() % UInt64(bytes.count))
                if random.next() % 3 == 0 {
                    bytes.removeSubrange(at...)
                } else {
                    bytes[at] = Array("{}[],:\"\\ 0-.etx\u{01}\u{ff}".utf8)[Int(random.next() % 18)]
                }
            }
            let paths = try Self.paths(&random)
            let actual = Result { () throws(JSONParseError) in try JSONParser.values(at: paths, in: bytes) }
            switch (actual, Self.expected(bytes, paths)) {
            case (.success(let got), .success(let want)):
                #expect(got == want, "\(text) \(paths)")
                if let want {
                    objects += 1
                    found += want.compactMap { $0 }.count
                }
            case (.failure(let got), .success) where got.ambiguous:
                // The full parser takes the first of a key given twice; the scanner refuses the
                // body, which must then hold a key twice in one object.
                #expect(Self.hasAKeyTwice(try JSONParser.parse(bytes)), "\(text)")
                ambiguous += 1
            case (.failure(let got), .failure(let want)):
                #expect(got == want, "\(text)")
                errors += 1
            default:
                Issue.record("disagree on \(text) \(paths)")
            }
        }
        // The generator must reach every case, or the comparison proves little.
        #expect(objects > 100 && found > 50 && errors > 100 && ambiguous > 0, "\(objects) objects, \(found) values, \(errors) errors, \(ambiguous) ambiguous")
    }

    /// Whether an object in `value` has a member name twice.
    static func hasAKeyTwice(_ value: JSONValue) -> Bool {
        switch value {
        case .object(let members):
            return Set(members.map(\.key)).count < members.count || members.contains { hasAKeyTwice($0.value) }
        case .array(let items): return items.contains(where: hasAKeyTwice)
        default: return false
        }
    }

    @Test func aKeyTwiceOnAPathIsRefusedAndEscapedNamesMatch() throws {
        let twice = Array(#"{"a":{"x":1},"a":{"b":2},"card\u005fnumber":"4111"}"#.utf8)
        let paths = try ["a.b", "a.x", "card_number"].map { try ContentPath(parsing: $0) }
        #expect(throws: JSONParseError.self) { try JSONParser.values(at: paths, in: twice) }
        let body = Array(#"{"a":{"x":1},"card\u005fnumber":"4111","\u212a":"kelvin"}"#.utf8)
        #expect(try JSONParser.values(at: try ["a.x", "card_number", "K"].map { try ContentPath(parsing: $0) }, in: body)
            == [.number("1"), .string("4111"), .string("kelvin")])
    }

    @Test func pathsThroughAWholeValue() throws {
        let body = Array(#"{"o":{"x":[1,{"y":"z"}]},"n":[true]}"#.utf8)
        let paths = try ["o", "o.x.1.y", "n.+0", "n.0.more"].map { try ContentPath(parsing: $0) }
        let values = try JSONParser.values(at: paths, in: body)
        #expect(values?[0].map(\.compactText) == #"{"x":[1,{"y":"z"}]}"#)
        #expect(values?[1] == .string("z"))
        #expect(values?[2] == .bool(true))
        #expect(values?[3] == .some(nil))
    }
}
