import Testing
import ShowbatchBasics
@testable import ShowbatchYAML

private func parse(_ text: String) throws(YAMLError) -> Node {
    try YAMLParser.parse(SourceFile(name: "m.yaml", text: text))
}

private func failure(_ text: String, limits: YAMLLimits = YAMLLimits()) -> String? {
    do {
        _ = try YAMLParser.parse(SourceFile(name: "m.yaml", text: text), limits: limits)
        return nil
    } catch {
        return error.description
    }
}

private func value(_ node: Node, _ key: String) -> Node? {
    node.mapping?.first { $0.key.scalar?.text == key }?.value
}

@Suite struct YAMLParserTests {
    @Test func marksAreOneBasedOnEveryNode() throws {
        let root = try parse("vault: abc\nrequests:\n  - name: x\n    path: /p\n")
        #expect(root.mark == Mark(line: 1, column: 1))
        #expect(value(root, "vault")?.mark == Mark(line: 1, column: 8))
        let requests = try #require(value(root, "requests"))
        #expect(requests.mark == Mark(line: 3, column: 3))
        let first = try #require(requests.sequence?.first)
        #expect(first.mark == Mark(line: 3, column: 5))
        #expect(value(first, "path")?.mark == Mark(line: 4, column: 11))
    }

    @Test(arguments: [
        ("a", ScalarValue.string("a")),
        ("~", .null), ("null", .null), ("Null", .null), ("NULL", .null), ("", .null),
        ("true", .bool(true)), ("False", .bool(false)), ("TRUE", .bool(true)),
        ("yes", .string("yes")), ("no", .string("no")), ("on", .string("on")), ("off", .string("off")),
        ("42", .int(42)), ("-7", .int(-7)), ("+3", .int(3)), ("0o17", .int(15)), ("0x1F", .int(31)),
        ("1.5", .float(1.5)), ("-.5", .float(-0.5)), ("1e3", .float(1000)), (".inf", .float(.infinity)),
        ("0x", .string("0x")), ("1.2.3", .string("1.2.3")), ("12:30", .string("12:30")), ("01/2030", .string("01/2030")),
    ])
    func plainScalarsFollowTheCoreSchema(text: String, expected: ScalarValue) throws {
        let root = try parse("k: \(text)\n")
        #expect(value(root, "k")?.scalar?.value == expected)
    }

    @Test(arguments: ["'42'", "\"true\"", "!!str 42", "'null'"])
    func quotedOrTaggedScalarsAreStrings(text: String) throws {
        let root = try parse("k: \(text)\n")
        guard case .string? = value(root, "k")?.scalar?.value else {
            Issue.record("expected a string")
            return
        }
    }

    @Test func anchorsAndAliasesResolve() throws {
        let root = try parse("a: &x {k: 1}\nb: *x\n")
        let b = try #require(value(root, "b"))
        #expect(value(b, "k")?.scalar?.value == .int(1))
        #expect(b.mark == Mark(line: 2, column: 4))
    }

    @Test func mergeKeysKeepExplicitKeysFirst() throws {
        let root = try parse("""
        base: &base {a: 1, b: 2}
        other: &other {b: 9, c: 3}
        m:
          <<: [*base, *other]
          a: 7
        """)
        let m = try #require(value(root, "m"))
        #expect(m.mapping?.map { $0.key.scalar!.text } == ["a", "b", "c"])
        #expect(value(m, "a")?.scalar?.value == .int(7))
        #expect(value(m, "b")?.scalar?.value == .int(2))
        #expect(value(m, "c")?.scalar?.value == .int(3))
    }

    @Test(arguments: [
        ("a: 1\nb: 2\na: 3\n", "m.yaml:3:1: error: duplicate key \"a\"; it is first defined at line 1\n  a: <redacted>\n  ^"),
        ("a: 1\n---\nb: 2\n", "m.yaml:2:1: error: a manifest holds one YAML document; a second one starts here\n  ---\n  ^"),
        ("a: *nope\n", "m.yaml:1:4: error: an alias refers to no anchor defined before it (a plain value cannot start with *: quote the value if it is not an alias)\n  a: <redacted>\n     ^"),
        ("", "m.yaml: error: the file is empty; expected a YAML mapping"),
        ("a: [1, 2\n", "m.yaml:2:1: error: while parsing a flow sequence: did not find expected ',' or ']'\n  \n  ^"),
        ("a:\n\tb: 1\n", "m.yaml:2:1: error: while scanning for the next token: found character that cannot start any token (tabs cannot indent YAML; use spaces)\n  \t<redacted>\n  ^"),
        ("m: {<<: 3}\n", "m.yaml:1:9: error: << merges a mapping or a list of mappings; found an integer\n  m: {<<: <redacted>}\n          ^"),
        ("k: !!int abc\n", "m.yaml:1:4: error: the value cannot be read as !!int\n  k: <redacted>\n     ^"),
    ])
    func errorsPointAtTheLine(text: String, expected: String) {
        #expect(failure(text) == expected)
    }

    @Test func invalidUTF8IsAnErrorWithAPosition() {
        var bytes = Array("a: 1\nb: ".utf8)
        bytes += [0xFF, 0xFE]
        do {
            _ = try YAMLParser.parse(SourceFile(name: "m.yaml", bytes: bytes))
            Issue.record("expected an error")
        } catch {
            #expect(error.description.hasPrefix("m.yaml:2:4: error: invalid leading UTF-8 octet; the manifest must be UTF-8 text"))
        }
    }

    @Test func binaryInputIsAnError() {
        let bytes: [UInt8] = [0x7F, 0x45, 0x4C, 0x46, 0x02, 0x01, 0x01, 0x00, 0x00, 0x00]
        do {
            _ = try YAMLParser.parse(SourceFile(name: "m.yaml", bytes: bytes))
            Issue.record("expected an error")
        } catch {
            #expect(error.description.hasPrefix("m.yaml:1:1: error: control characters are not allowed; the manifest must be UTF-8 text"))
        }
    }

    @Test func billionLaughsIsRefused() {
        var text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
        for level in 1...9 {
            let refs = Array(repeating: "*a\(level - 1)", count: 10).joined(separator: ", ")
            text += "a\(level): &a\(level) [\(refs)]\n"
        }
        var limits = YAMLLimits()
        limits.maxExpansion = 1 << 20
        let message = failure(text, limits: limits)
        #expect(message?.contains("error: aliases and << merges expand the document by more than 1 MiB (too many aliases?)") == true)
    }

    @Test func deepNestingIsRefusedWithoutCrashing() {
        let text = String(repeating: "[", count: 20_000) + String(repeating: "]", count: 20_000)
        // The line is too long to quote, so only the position is given.
        #expect(failure(text) == "m.yaml:1:257: error: nesting is deeper than 256 levels")
    }

    /// Keys are compared by typed value and by text, in small mappings (a scan) and large ones
    /// (hash tables).
    @Test(arguments: [3, 40])
    func duplicateKeysAreFoundByValue(filler: Int) {
        let prefix = (0..<filler).map { "f\($0): x\n" }.joined()
        let line = filler + 2
        #expect(failure(prefix + "1: a\n0x1: b\n")
                == "m.yaml:\(line):1: error: duplicate key \"0x1\"; it is first defined at line \(line - 1)\n  0x1: <redacted>\n  ^")
        #expect(failure(prefix + "~: a\nnull: b\n")?.hasPrefix("m.yaml:\(line):1: error: duplicate key \"null\"") == true)
        #expect(failure(prefix + "1.0: a\n1.00: b\n")?.hasPrefix("m.yaml:\(line):1: error: duplicate key \"1.00\"") == true)
        #expect(failure(prefix + "k: a\nk: b\n")?.hasPrefix("m.yaml:\(line):1: error: duplicate key \"k\"") == true)
        // A quoted "1" is a string, a plain 1 an integer, but both are sent as the JSON name "1".
        #expect(failure(prefix + "\"1\": a\n1: b\n")?.hasPrefix("m.yaml:\(line):1: error: duplicate key \"1\"") == true)
        #expect(failure(prefix + "\"01\": a\n1: b\n") == nil)
    }

    @Test func tagsTypeScalars() throws {
        let root = try parse("a: !!float 1\nb: !!str 2\nc: ! 3\nd: !!null ~\ne: !!bool true\nf: !!int 0x10\n")
        #expect(value(root, "a")?.scalar?.value == .float(1))
        #expect(value(root, "b")?.scalar?.value == .string("2"))
        #expect(value(root, "c")?.scalar?.value == .string("3"))
        #expect(value(root, "d")?.scalar?.value == .null)
        #expect(value(root, "e")?.scalar?.value == .bool(true))
        #expect(value(root, "f")?.scalar?.value == .int(16))
        #expect(value(root, "b")?.scalar?.tag == .str)
        #expect(failure("a: !!binary abc\n") == "m.yaml:1:4: error: unsupported tag; expected !!str, !!int, !!float, !!bool or !!null (quote a value that starts with !)\n  a: <redacted>\n     ^")
    }

    @Test func aliasesShareContentAndMergesReachThroughThem() throws {
        let root = try parse("base: &b {x: 1, y: [2, 3]}\nuse: {<<: *b, y: 4}\nagain: *b\n")
        let use = try #require(value(root, "use"))
        #expect(use.mapping?.map(\.key.text) == ["y", "x"])
        #expect(value(use, "y")?.scalar?.value == .int(4))
        let again = try #require(value(root, "again"))
        #expect(again.mark == Mark(line: 3, column: 8))
        #expect(value(again, "y")?.sequence?.map(\.value) == [.int(2), .int(3)])
        #expect(root.value(forKey: "use")?.value(forKey: "x")?.value == .int(1))
        #expect(root.unknownKeys(["base", "use"]).map(\.text) == ["again"])
    }

    @Test(arguments: [
        ("9223372036854775807", ScalarValue.int(.max)), ("-9223372036854775808", .int(.min)),
        ("9223372036854775808", .bigInt("9223372036854775808")), ("0x7FFFFFFFFFFFFFFF", .int(.max)),
        ("0o777", .int(511)), ("0o8", .string("0o8")), ("0xG", .string("0xG")), ("-", .string("-")),
        ("nul", .string("nul")), ("nulls", .string("nulls")), ("truex", .string("truex")),
    ])
    func integerEdges(text: String, expected: ScalarValue) {
        #expect(CoreSchema.resolve(text) == expected)
    }

    @Test func complexKeysAreRefused() {
        #expect(failure("? [a]\n: 1\n") == "m.yaml:1:3: error: mapping keys must be scalars; found a list\n  ? [<redacted>]\n    ^")
    }
}
