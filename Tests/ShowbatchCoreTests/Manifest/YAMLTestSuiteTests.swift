import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// The YAML test suite's data (github.com/yaml/yaml-test-suite, a `data-*` tag) when
/// `YAML_TEST_SUITE` names a folder holding it: it is not stored here (see the README), so this
/// runs where someone fetched it, e.g. `make yaml-test-suite`.
private let suiteFolder = ProcessInfo.processInfo.environment["YAML_TEST_SUITE"]

/// One case of the suite: a folder with `in.yaml`, maybe `in.json` (the values it holds, one JSON
/// text per document) and `error` (a YAML parser must refuse it).
struct SuiteCase: CustomTestStringConvertible, Sendable {
    let id: String
    let folder: String
    var testDescription: String { id }
}

private let suiteCases: [SuiteCase] = {
    guard let suiteFolder else { return [] }
    let files = FileManager.default
    var cases: [SuiteCase] = []
    // `name/` and `tags/` hold links to the same cases under other names.
    for name in ((try? files.contentsOfDirectory(atPath: suiteFolder)) ?? []).sorted() where name != "name" && name != "tags" {
        let folder = suiteFolder + "/" + name
        if files.fileExists(atPath: folder + "/in.yaml") {
            cases.append(SuiteCase(id: name, folder: folder))
        } else {
            // A case with several variants keeps each in a numbered folder.
            for sub in ((try? files.contentsOfDirectory(atPath: folder)) ?? []).sorted() where files.fileExists(atPath: "\(folder)/\(sub)/in.yaml") {
                cases.append(SuiteCase(id: "\(name)/\(sub)", folder: "\(folder)/\(sub)"))
            }
        }
    }
    return cases
}()

/// What a case of the suite's data-2022-01-17 gives other than its `in.json`, and why.
enum SuiteDifference: Sendable {
    /// libyaml 0.2.5 (Debian 12) refuses the case's file on its own (its event loop, as
    /// `bench/yaml_events.c` runs it, stops with an error): showbatch refuses it too.
    case libyamlRefuses
    /// libyaml reads the case otherwise than YAML 1.2 says; showbatch sends what libyaml reads.
    case libyamlReads(String)
    /// The case uses a tag showbatch refuses (README: only the core tags).
    case tagRefused
}

/// Every case of data-2022-01-17 that can be a payload and is not sent as its `in.json` says.
let suiteDifferences: [String: SuiteDifference] = {
    var differences: [String: SuiteDifference] = [
        "652Z": .libyamlReads("`?foo` in a flow mapping as an explicit key `foo`, not the plain scalar `?foo`"),
        "HM87/01": .libyamlReads("`[?x]` as a mapping with the key `x`, not the plain scalar `?x`"),
        "Y2GN": .libyamlReads("`&an:chor value` as the anchor `an` on `:chor value`, not the anchor `an:chor` on `value`"),
    ]
    for id in ["2SXE", "4MUZ/00", "4MUZ/01", "4MUZ/02", "58MP", "5MUD", "5T43", "6BCT", "8XYN", "96NN/00", "96NN/01", "9SA2",
               "A2M4", "DBG4", "DK95/00", "DK95/03", "HM87/00", "K3WX", "NJ66", "R4YG", "VJP3/01", "W5VH", "Y79Y/001", "Y79Y/010"] {
        differences[id] = .libyamlRefuses
    }
    // !!set, !!binary, !<!bar>, !local, !!omap, !foo, !<tag:clarkevans.com,2002:invoice>, !foo.
    for id in ["2XXW", "565N", "7FWL", "CUP7", "J7PZ", "M5C3", "UGM3", "Z67P"] { differences[id] = .tagRefused }
    return differences
}()

/// What the case says the document's value is, as the member `v` of a request's payload: nil
/// when the case cannot be a payload (several documents, a `%TAG` or `%YAML` directive, a case
/// the suite says a parser refuses, or one with no JSON).
func payloadEmbedding(_ folder: String) -> (yaml: [UInt8], json: String)? {
    let files = FileManager.default
    guard !files.fileExists(atPath: folder + "/error"),
          let yaml = files.contents(atPath: folder + "/in.yaml"),
          let json = files.contents(atPath: folder + "/in.json").map({ String(decoding: $0, as: UTF8.self) }) else { return nil }
    var lines = Array(yaml).split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map(Array.init)
    // Directives and document markers belong to the file, not to a value embedded in one.
    if lines.contains(where: { $0.first == UInt8(ascii: "%") || $0.starts(with: Array("...".utf8)) }) { return nil }
    let starts = lines.indices.filter { lines[$0].starts(with: Array("---".utf8)) && (lines[$0].count == 3 || [UInt8(ascii: " "), UInt8(ascii: "\t")].contains(lines[$0][3])) }
    guard starts.count <= 1 else { return nil }
    if let start = starts.first {
        // A comment line may come before the marker; anything else makes two documents.
        guard lines[..<start].allSatisfy({ $0.isEmpty || $0.first == UInt8(ascii: "#") }) else { return nil }
        let rest = Array(lines[start].dropFirst(3).drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") })
        lines.removeSubrange(...start)
        if !rest.isEmpty { lines.insert(rest, at: 0) }
    }
    // A tab that lines may start with would become part of the indentation under `v:`.
    if lines.contains(where: { $0.first == UInt8(ascii: "\t") }) { return nil }
    let text = lines.joined(separator: [UInt8(ascii: "\n")])
    guard let value = try? JSONParser.parse(Array(json.utf8)) else { return nil }
    return (Array(text), value.compactText)
}

/// Two JSON values are the same value: numbers compare by their value as a double where their
/// texts differ (`1e3` is `1000.0`), everything else exactly.
func sameValue(_ a: JSONValue, _ b: JSONValue) -> Bool {
    switch (a, b) {
    case (.number(let x), .number(let y)): return x == y || (Double(x) != nil && Double(x) == Double(y))
    case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy(sameValue)
    case (.object(let x), .object(let y)):
        // The suite's JSON orders some members otherwise than the YAML writes them.
        return x.count == y.count && x.allSatisfy { member in y.contains { $0.key == member.key && sameValue($0.value, member.value) } }
    default: return a == b
    }
}

@Suite(.enabled(if: suiteFolder != nil, "YAML_TEST_SUITE names no folder of the YAML test suite's data"))
struct YAMLTestSuiteTests {
    /// Every case that can be a payload is sent as its `in.json` says, but for the listed
    /// differences, each checked to be what the list says (a case that changes must be looked at).
    @Test(arguments: suiteCases)
    func aSuiteCaseIsSentAsItsJSONSays(_ suiteCase: SuiteCase) throws {
        guard let (yaml, json) = payloadEmbedding(suiteCase.folder) else { return }
        let expected = try JSONParser.parse(Array(json.utf8))
        let read = Result { () throws(ManifestError) in try loadManifest(bytes: manifestEmbedding(yaml)) }
        let sent = (try? read.get()).flatMap(sentBody).flatMap { try? JSONParser.parse(Array($0.utf8)) }?["v"]
        let same = sent.map { sameValue($0, expected) } ?? false
        let what: String
        switch read {
        case .failure(let error): what = "refused: \(error.description)"
        case .success: what = "sent \(sent?.compactText ?? "nothing")"
        }
        switch suiteDifferences[suiteCase.id] {
        case nil:
            #expect(same, "\(suiteCase.id): \(what); the suite says \(json)")
        case .libyamlReads(let how)?:
            #expect(!same && sent != nil, "\(suiteCase.id): libyaml was listed as reading \(how), but it is \(what)")
        case .libyamlRefuses?:
            #expect(sent == nil, "\(suiteCase.id): libyaml was listed as refusing it, but it is \(what)")
        case .tagRefused?:
            #expect(what.contains("error: unsupported tag"), "\(suiteCase.id): \(what)")
        }
    }

    /// The suite holds cases, and enough of them are payloads for the run to mean something.
    @Test func theSuiteIsThere() {
        let payloads = suiteCases.filter { payloadEmbedding($0.folder) != nil }
        #expect(suiteCases.count > 300 && payloads.count > 150, "\(suiteCases.count) cases, \(payloads.count) payloads")
    }
}
