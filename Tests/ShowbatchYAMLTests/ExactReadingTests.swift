import Testing
import ShowbatchBasics
@testable import ShowbatchYAML

private func parse(_ text: String, limits: YAMLLimits = YAMLLimits()) throws(YAMLError) -> Node {
    try YAMLParser.parse(SourceFile(name: "m.yaml", text: text), limits: limits)
}

private func failure(_ text: String, limits: YAMLLimits = YAMLLimits()) -> String? {
    do {
        _ = try parse(text, limits: limits)
        return nil
    } catch {
        return error.description
    }
}

private func failure(_ bytes: [UInt8]) -> String? {
    do {
        _ = try YAMLParser.parse(SourceFile(name: "m.yaml", bytes: bytes))
        return nil
    } catch {
        return error.description
    }
}

private func keys(_ node: Node?) -> [String]? {
    node?.mapping?.map(\.key.text)
}

/// The YAML read exactly (issue 19): keys compared as the JSON names they are sent under,
/// numbers kept digit for digit, tags checked on every node, a byte order mark accepted, and
/// time and memory bounded by what is read and shown.
@Suite struct ExactReadingTests {
    // MARK: Keys as the JSON names they become

    /// Each pair is sent under one JSON name, which a receiver would take for one member.
    @Test(arguments: [
        ("k: {1: a, \"1\": b}\n", "m.yaml:1:11: error: duplicate key \"1\"; it is first defined at line 1\n  k: {1: <redacted>, \"1\": <redacted>}\n                     ^"),
        ("k: {true: a, 'true': b}\n", "m.yaml:1:14: error: duplicate key \"true\"; it is first defined at line 1\n  k: {true: <redacted>, 'true': <redacted>}\n                        ^"),
        ("k: {~: a, '~': b}\n", "m.yaml:1:11: error: duplicate key; it is first defined at line 1\n  k: {<redacted>: <redacted>, <redacted>: <redacted>}\n                              ^"),
        ("k: {null: a, 'null': b}\n", "m.yaml:1:14: error: duplicate key \"null\"; it is first defined at line 1\n  k: {null: <redacted>, 'null': <redacted>}\n                        ^"),
    ])
    func keysOfOneJSONNameAreDuplicates(text: String, expected: String) {
        #expect(failure(text) == expected)
    }

    /// An explicit key wins over a merged key sent under the same name, as it does over a merged
    /// key of the same value: the merged one is not added.
    @Test func anExplicitKeyWinsOverAMergedOneOfTheSameName() throws {
        let root = try parse("m: {\"1\": explicit, <<: {1: merged, true: t}, 'true': kept}\n")
        let m = root.value(forKey: "m")
        #expect(keys(m) == ["1", "true"])
        #expect(m?.value(forKey: "1")?.text == "explicit")
        #expect(m?.value(forKey: "true")?.text == "kept")
    }

    /// Text and value both make a key: `0x1` is `1` (one value) though sent as another name.
    @Test(arguments: [3, 40])
    func keysAreComparedByTextAndByExactValue(filler: Int) {
        let prefix = (0..<filler).map { "f\($0): x\n" }.joined()
        let line = filler + 2
        // Integers beyond 64 bits are compared digit for digit, not as doubles.
        #expect(failure(prefix + "99999999999999999999: a\n99999999999999999998: b\n") == nil)
        // Not named: a plain key name has no sign.
        #expect(failure(prefix + "99999999999999999999: a\n+099999999999999999999: b\n")
                == "m.yaml:\(line):1: error: duplicate key; it is first defined at line \(line - 1)\n  <redacted>: <redacted>\n  ^")
        #expect(failure(prefix + "18446744073709551615: a\n0xFFFFFFFFFFFFFFFF: b\n")?
            .hasPrefix("m.yaml:\(line):1: error: duplicate key \"0xFFFFFFFFFFFFFFFF\"") == true)
        // Every NaN is the same key, whatever the size of the mapping.
        #expect(failure(prefix + ".nan: a\n.NaN: b\n")?.hasPrefix("m.yaml:\(line):1: error: duplicate key \".NaN\"") == true)
        #expect(failure(prefix + "0.0: a\n-0.0: b\n")?.hasPrefix("m.yaml:\(line):1: error: duplicate key \"-0.0\"") == true)
        #expect(failure(prefix + "1: a\n1.0: b\n") == nil)
    }

    // MARK: Numbers digit for digit

    @Test(arguments: [
        ("+99999999999999999999", "99999999999999999999"), ("99999999999999999999", "99999999999999999999"),
        ("-0099999999999999999999", "-99999999999999999999"), ("-0", "0"), ("007", "7"), ("+3", "3"),
        ("0xFFFFFFFFFFFFFFFF", "18446744073709551615"), ("0o1777777777777777777777", "18446744073709551615"), ("0x1F", "31"),
        (".5", "0.5"), ("-.5", "-0.5"), ("+1.5e+3", "1.5e+3"), ("1.", "1.0"), ("00.25", "0.25"), ("1e3", "1e3"),
        ("-.10000000000000000001", "-0.10000000000000000001"), ("1e400", "1e400"), ("-0.0", "-0.0"),
        ("!!float 12", "12.0"), ("!!float -0", "-0.0"), ("!!int 0x10", "16"), ("!!float 99999999999999999999", "99999999999999999999.0"),
    ])
    func numbersKeepEveryDigit(text: String, json: String) throws {
        let root = try parse("k: \(text)\n")
        #expect(root.value(forKey: "k")?.scalar?.jsonNumber == json)
    }

    @Test(arguments: [".inf", "-.Inf", ".nan", "abc", "'12'", "\"1.5\"", "~", "true", "!!str 12"])
    func onlyNumbersJSONCanHoldHaveJSONText(text: String) throws {
        let root = try parse("k: \(text)\n")
        #expect(root.value(forKey: "k")?.scalar?.jsonNumber == nil)
    }

    /// An integer beyond 64 bits is an integer still, with every digit.
    @Test func integersBeyond64BitsKeepTheirType() throws {
        let root = try parse("a: 99999999999999999999\nb: -99999999999999999999\n")
        #expect(root.value(forKey: "a")?.scalar?.value == .bigInt("99999999999999999999"))
        #expect(root.value(forKey: "b")?.scalar?.value == .bigInt("-99999999999999999999"))
        #expect(root.value(forKey: "a")?.typeName == "an integer")
    }

    @Test(arguments: [
        ("k: 0x1FFFFFFFFFFFFFFFF\n", "m.yaml:1:4: error: the integer does not fit in 64 bits; write it in decimal, or quote it to keep it as text\n  k: <redacted>\n     ^"),
        ("k: [1, 0o7777777777777777777777777]\n", "m.yaml:1:8: error: the integer does not fit in 64 bits; write it in decimal, or quote it to keep it as text\n  k: [<redacted>, <redacted>]\n                  ^"),
        ("k: !!int 0x1FFFFFFFFFFFFFFFF\n", "m.yaml:1:4: error: the integer does not fit in 64 bits; write it in decimal, or quote it to keep it as text\n  k: <redacted>\n     ^"),
    ])
    func hexadecimalAndOctalBeyond64BitsAreRefused(text: String, expected: String) {
        #expect(failure(text) == expected)
    }

    // MARK: Tags

    @Test(arguments: [
        ("!foo {a: 1}", "mapping", "!!map"), ("!!set {a: 1}", "mapping", "!!map"), ("!!str {a: 1}", "mapping", "!!map"),
        ("!!seq {a: 1}", "mapping", "!!map"), ("!!omap [{a: 1}]", "list", "!!seq"), ("!!pairs [{a: 1}]", "list", "!!seq"),
        ("!!map [1]", "list", "!!seq"), ("!foo [1]", "list", "!!seq"),
    ])
    func tagsOnListsAndMappingsAreRefusedAsOnScalars(value: String, kind: String, tag: String) {
        #expect(failure("k: \(value)\n")?.hasPrefix("m.yaml:1:4: error: unsupported tag on a \(kind); expected none or \(tag)\n  k: <redacted> ") == true)
    }

    @Test func coreTagsOnListsAndMappingsAreAccepted() throws {
        let root = try parse("a: !!map {x: 1}\nb: !!seq [1]\nc: ! {x: 1}\nd: ! [1]\ne: !!map\n  x: 1\n")
        #expect(keys(root) == ["a", "b", "c", "d", "e"])
        #expect(root.value(forKey: "b")?.sequence?.count == 1)
    }

    /// `!!merge` marks a merge key as other YAML 1.2 tools read it; on other text it is refused.
    @Test func theMergeTagMakesAMergeKey() throws {
        let root = try parse("base: &b {x: 1}\nm: {!!merge <<: *b, y: 2}\nn:\n  !!merge <<: [*b, {z: 3}]\n")
        #expect(keys(root.value(forKey: "m")) == ["y", "x"])
        #expect(keys(root.value(forKey: "n")) == ["x", "z"])
        #expect(failure("m: {!!merge x: 1}\n") == "m.yaml:1:5: error: the value cannot be read as !!merge\n  m: {<redacted> x: <redacted>}\n      ^")
    }

    // MARK: A byte order mark

    @Test func aByteOrderMarkIsNoPartOfTheFirstLine() throws {
        let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
        let root = try YAMLParser.parse(SourceFile(name: "m.yaml", bytes: bom + Array("vault: abc\nrequests: []\n".utf8)))
        #expect(keys(root) == ["vault", "requests"])
        #expect(root.value(forKey: "vault")?.mark == Mark(line: 1, column: 8))
        #expect(failure(bom + Array("a: 1\na: 2\n".utf8)) == "m.yaml:2:1: error: duplicate key \"a\"; it is first defined at line 1\n  a: <redacted>\n  ^")
        #expect(failure(bom + Array("a: !!int x\n".utf8)) == "m.yaml:1:4: error: the value cannot be read as !!int\n  a: <redacted>\n     ^")
    }

    // MARK: Bounded time and memory

    /// An alias bomb is refused by what its expansion would cost, long before that is spent:
    /// this one repeats 12 million nodes, under the former limit of 20 million.
    @Test func anAliasBombIsRefusedByWhatItsExpansionCosts() {
        var text = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n"
        for level in 1...6 {
            text += "l\(level): &l\(level) [" + Array(repeating: "*l\(level - 1)", count: 10).joined(separator: ", ") + "]\n"
        }
        // Refused at the third repetition of l5 (1.1 million nodes, 72 MB once expanded).
        #expect(failure(text) == "m.yaml:7:20: error: aliases and << merges expand the document by more than 256 MiB (too many aliases?)\n  l6: <redacted> [" + Array(repeating: "<redacted>", count: 10).joined(separator: ", ") + "]\n" + String(repeating: " ", count: 42) + "^")
    }

    /// A few aliases of a long text cost as much as many nodes.
    @Test func aLongTextRepeatedByAliasesCountsItsBytes() {
        let text = "s: &s \"" + String(repeating: "x", count: 1 << 20) + "\"\nl: [" + Array(repeating: "*s", count: 300).joined(separator: ", ") + "]\n"
        // The 256th alias of a MiB of text passes 256 MiB (a line too long to quote there).
        #expect(failure(text) == "m.yaml:2:1025: error: aliases and << merges expand the document by more than 256 MiB (too many aliases?)")
    }

    /// What a merge adds is counted once merged: a chain of merges that each replace the key they
    /// take adds one entry a link, and is read.
    @Test func mergesCountWhatTheyAddOnceMerged() throws {
        var text = "a0: &a0 {k: 0, j: 0}\n"
        for link in 1..<7000 { text += "a\(link): &a\(link) {<<: *a\(link - 1), k: \(link)}\n" }
        let root = try parse(text)
        #expect(keys(root.value(forKey: "a6999")) == ["k", "j"])
        #expect(root.value(forKey: "a6999")?.value(forKey: "k")?.text == "6999")
    }

    /// A chain whose every link adds its own key grows as the square of its length: its merges
    /// are refused once they pass the budget, at the merge that does.
    @Test func aChainOfGrowingMergesIsRefusedAtTheBudget() {
        var text = "a0: &a0 {k0: 0}\n"
        for link in 1..<4000 { text += "a\(link): &a\(link) {<<: *a\(link - 1), k\(link): \(link)}\n" }
        var limits = YAMLLimits()
        limits.maxExpansion = 16 << 20
        let message = failure(text, limits: limits)
        #expect(message == "m.yaml:501:14: error: aliases and << merges expand the document by more than 16 MiB (too many aliases?)\n  a500: <redacted> {<<: <redacted>, k500: <redacted>}\n                    ^")
    }

    /// A syntax error early on a line of megabytes reads the line only as far as it is shown:
    /// deep nesting after the shown part once made the quoting take minutes.
    @Test func anErrorOnALongLineReadsOnlyWhatItShows() {
        let depth = 200_000
        let text = "k: {a: ], b: " + String(repeating: "[", count: depth) + String(repeating: "]", count: depth) + "}\n"
        let shown = "k: {a: ], b: " + String(repeating: "[", count: Diagnostic.quoteLimit - 13) + "…"
        #expect(failure(text) == "m.yaml:1:8: error: while parsing a flow node: did not find expected node content\n  \(shown)\n         ^")
    }

    /// The quoted part of a long line is cut first, then redacted: a hidden value that runs past
    /// it ends the quote, and nothing after it is pulled into view.
    @Test func aLongLineIsCutBeforeItIsRedacted() {
        let text = "k: {a: ], b: \"" + String(repeating: "x", count: 200) + "\", c: d}\n"
        #expect(failure(text) == "m.yaml:1:8: error: while parsing a flow node: did not find expected node content\n  k: {a: ], b: <redacted>…\n         ^")
    }

    // MARK: Marks

    /// Nodes keep byte offsets and are given marks when asked: lines and columns come out as
    /// libyaml counts them, in characters, after multi-byte text, CR LF breaks and a BOM alike.
    @Test(arguments: [false, true])
    func marksCountCharactersInAnyText(bom: Bool) throws {
        let text = "é: &a 1\r\nkü: [ü, \"ä\", *a]\r\n日本: {x: ☺}\n"
        let root = try YAMLParser.parse(SourceFile(name: "m.yaml", bytes: (bom ? [0xEF, 0xBB, 0xBF] : []) + Array(text.utf8)))
        let list = try #require(root.value(forKey: "kü"))
        #expect(root.value(forKey: "é")?.mark == Mark(line: 1, column: 4))
        #expect(list.mark == Mark(line: 2, column: 5))
        #expect(list.end == Mark(line: 2, column: 17))
        #expect(list.sequence?.map(\.mark) == [Mark(line: 2, column: 6), Mark(line: 2, column: 9), Mark(line: 2, column: 14)])
        #expect(list.sequence?[1].end == Mark(line: 2, column: 12))
        #expect(root.value(forKey: "日本")?.value(forKey: "x")?.mark == Mark(line: 3, column: 9))
        #expect(root.mapping?.map(\.key.mark) == [Mark(line: 1, column: 1), Mark(line: 2, column: 1), Mark(line: 3, column: 1)])
    }

    // MARK: Where a syntax error is

    /// After a syntax error, the path of the value whose lines the error is among, found from
    /// what was read: a line that lost its indentation in a block value belongs to that value.
    @Test(arguments: [
        ("h:\n  X-Block: |\n      one\n    two: three\nz: 1\n", [YAMLPathStep.key("h"), .key("X-Block")]),
        ("h:\n  X-Block: |\n      one\n two: three\nz: 1\n", [.key("h")]),
        ("r:\n  - name: a\n    p:\n      note: >\n          one\n       two: three\n", [.key("r"), .item, .key("p"), .key("note")]),
        ("r:\n  - name: a\n    p:\n      note: >\n          one\n     two: three\n", [.key("r"), .item, .key("p")]),
        ("h: {a: \"x\n", [.key("h"), .key("a")]),
        ("a: 1\nb: [1, 2\n", [.key("b")]),
    ])
    func aSyntaxErrorIsPlacedInTheValueItsLineBelongsTo(text: String, path: [YAMLPathStep]) {
        nonisolated(unsafe) var seen: [YAMLPathStep]?
        do {
            _ = try YAMLParser.parseDocument(SourceFile(name: "m.yaml", text: text), isSecret: { seen = $0; return true })
            Issue.record("expected a syntax error")
        } catch {
            #expect(seen == path)
        }
    }
}
