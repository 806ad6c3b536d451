import Foundation
import Testing
import ShowbatchYAML
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// The manifest as libyaml reads it, `m.yaml` in the current folder.
func loadManifest(bytes: [UInt8]) throws(ManifestError) -> Manifest {
    try ManifestLoader.load(source: SourceFile(name: "m.yaml", bytes: bytes), directory: ".", environment: [:])
}

/// The JSON body the first request of a manifest sends, built the way a run builds it.
func sentBody(_ manifest: Manifest) -> String? {
    let preparer = RequestPreparer(manifest: manifest, baseURL: "http://127.0.0.1")
    guard case .success(let request) = preparer.prepare(WorkItem(ordinal: 0, requestIndex: 0, row: nil)) else { return nil }
    return request.body.map { String(decoding: $0, as: UTF8.self) }
}

/// A manifest of one request sending `payload` (flow YAML on one line, or block YAML indented under `payload:`).
private func manifest(payload: String) -> String {
    "vault: tnt1\nrequests:\n  - name: a\n    path: /post\n    payload: \(payload)\n"
}

private func body(payload: String) throws -> String? {
    sentBody(try loadManifest(bytes: Array(manifest(payload: payload).utf8)))
}

/// What a request sends is what the YAML says, or a positioned error (issue 19, items 8 to 12).
@Suite struct SentAsWrittenTests {
    /// Two keys that are one JSON name would send one member twice, and a receiver keeps either.
    @Test(arguments: [
        ("{1: a, \"1\": b}", "m.yaml:5:21: error: duplicate key \"1\"; it is first defined at line 5\n      payload: {1: <redacted>, \"1\": <redacted>}\n                               ^"),
        ("{x: {true: c, 'true': d}}", "m.yaml:5:28: error: duplicate key \"true\"; it is first defined at line 5\n      payload: {x: {true: <redacted>, 'true': <redacted>}}\n                                      ^"),
        ("{~: e, '~': f}", "m.yaml:5:21: error: duplicate key; it is first defined at line 5\n      payload: {<redacted>: <redacted>, <redacted>: <redacted>}\n                                        ^"),
    ])
    func keysSentUnderOneNameAreRefused(payload: String, expected: String) {
        #expect(manifestErrors(manifest(payload: payload)) == expected)
    }

    /// A merged key gives way to an explicit one sent under the same name, so that a receiver
    /// keeping the last member does not get the merged value.
    @Test func aMergedKeyGivesWayToAnExplicitOneOfTheSameName() throws {
        #expect(try body(payload: "{m: {\"1\": explicit, <<: {1: merged, 2: two}}}") == "{\"m\":{\"1\":\"explicit\",\"2\":\"two\"}}")
    }

    @Test func numbersAreSentDigitForDigit() throws {
        let payload = "{big: +99999999999999999999, neg: -0099999999999999999999, u64: 0xFFFFFFFFFFFFFFFF, oct: 0o17, "
            + "frac: .10000000000000000001, exp: 1e400, point: 1., float: !!float 12, z: -0, keys: {99999999999999999999: a, 99999999999999999998: b}}"
        #expect(try body(payload: payload) == "{\"big\":99999999999999999999,\"neg\":-99999999999999999999,\"u64\":18446744073709551615,\"oct\":15,"
                + "\"frac\":0.10000000000000000001,\"exp\":1e400,\"point\":1.0,\"float\":12.0,\"z\":0,\"keys\":{\"99999999999999999999\":\"a\",\"99999999999999999998\":\"b\"}}")
    }

    @Test func numbersJSONCannotHoldAreRefused() {
        #expect(manifestErrors(manifest(payload: "{h: 0x1FFFFFFFFFFFFFFFFF}"))
                == "m.yaml:5:18: error: the integer does not fit in 64 bits; write it in decimal, or quote it to keep it as text\n      payload: {h: <redacted>}\n                   ^")
        #expect(manifestErrors(manifest(payload: "{n: .nan}"))
                == "m.yaml:5:18: error: request \"a\" payload.n is not a number JSON can hold\n      payload: {n: <redacted>}\n                   ^")
    }

    @Test(arguments: [
        ("{x: !!set {a: 1}}", "m.yaml:5:18: error: unsupported tag on a mapping; expected none or !!map\n      payload: {x: <redacted> {a: <redacted>}}\n                   ^"),
        ("{x: !!omap [{a: 1}]}", "m.yaml:5:18: error: unsupported tag on a list; expected none or !!seq\n      payload: {x: <redacted> [{a: <redacted>}]}\n                   ^"),
        ("!foo {a: 1}", "m.yaml:5:14: error: unsupported tag on a mapping; expected none or !!map\n      payload: <redacted> {a: <redacted>}\n               ^"),
        ("{x: !!str {a: 1}}", "m.yaml:5:18: error: unsupported tag on a mapping; expected none or !!map\n      payload: {x: <redacted> {a: <redacted>}}\n                   ^"),
    ])
    func tagsOnPayloadListsAndMappingsAreRefused(payload: String, expected: String) {
        #expect(manifestErrors(manifest(payload: payload)) == expected)
    }

    @Test func theMergeTagMerges() throws {
        #expect(try body(payload: "{m: {!!merge <<: {a: 1}, b: !!map {c: !!seq [2]}}}") == "{\"m\":{\"b\":{\"c\":[2]},\"a\":1}}")
    }

    @Test func aManifestMayStartWithAByteOrderMark() throws {
        let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
        let loaded = try loadManifest(bytes: bom + Array(manifest(payload: "{a: 1}").utf8))
        #expect(loaded.vault == "tnt1")
        #expect(sentBody(loaded) == "{\"a\":1}")
        do {
            _ = try loadManifest(bytes: bom + Array("vault: t!n\nrequests: [{name: a, path: /p}]\n".utf8))
            Issue.record("expected an error")
        } catch {
            #expect(error.description.hasPrefix("m.yaml:1:8: error: vault "))
        }
    }

    /// An alias bomb in a payload (12 million nodes, under the former limit of 20 million, which
    /// took 1.6 GB and 9 s to decode) is refused while it is read.
    @Test func anAliasBombInAPayloadIsRefused() {
        var payload = "\n      l0: &l0 [x, x, x, x, x, x, x, x, x, x]"
        for level in 1...6 {
            payload += "\n      l\(level): &l\(level) [" + Array(repeating: "*l\(level - 1)", count: 10).joined(separator: ", ") + "]"
        }
        #expect(manifestErrors(manifest(payload: payload)).hasPrefix(
            "m.yaml:12:26: error: aliases and << merges expand the document by more than 256 MiB (too many aliases?)\n"))
    }

    /// A syntax error early on a line of megabytes quotes it, and reads it, only as far as it is
    /// shown: deep nesting after that once made validate take minutes.
    @Test func anErrorOnALongLineReadsOnlyWhatItShows() {
        let depth = 300_000
        let text = manifest(payload: "{a: ], b: " + String(repeating: "[", count: depth) + String(repeating: "]", count: depth) + "}")
        #expect(manifestErrors(text) == "m.yaml:5:18: error: while parsing a flow node: did not find expected node content\n      <redacted>…\n      ^")
    }

    /// Aliases within the budget are sent expanded, the content they repeat decoded once.
    @Test func aPayloadOfAliasesIsSentExpanded() throws {
        var payload = "\n      l0: &l0 [x, 1]"
        for level in 1...12 { payload += "\n      l\(level): &l\(level) [*l\(level - 1), *l\(level - 1)]" }
        payload += "\n      top: {<<: {a: *l12}}"
        let sent = try #require(try body(payload: payload))
        let leaves = sent.components(separatedBy: "\"x\",1").count - 1
        #expect(leaves == (1...12).reduce(0) { $0 + (1 << $1) } + 1 + (1 << 12))
        #expect(sent.hasSuffix(",\"top\":{\"a\":" + (0..<12).reduce("[\"x\",1]") { inner, _ in "[\(inner),\(inner)]" } + "}}"))
    }

    /// A chain of merges each replacing the key it takes adds an entry a link: counted once
    /// merged, it is read (counted before merging, it was refused as too many aliases).
    @Test func aChainOfMergesIsCountedOnceMerged() throws {
        var payload = "\n      a0: &a0 {k: 0, j: 0}"
        for link in 1..<7000 { payload += "\n      a\(link): &a\(link) {<<: *a\(link - 1), k: \(link)}" }
        let sent = try #require(try body(payload: payload))
        #expect(sent.hasSuffix(",\"a6999\":{\"k\":6999,\"j\":0}}"))
    }
}
