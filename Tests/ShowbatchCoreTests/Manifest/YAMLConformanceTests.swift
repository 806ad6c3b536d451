import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// The cases of `Tests/Fixtures/yaml-conformance`: YAML in (`NN-name.yaml`, a value sent as the
/// payload member `v`, or `NN-name.manifest.yaml`, a whole manifest for what only starts a file:
/// a byte order mark, directives, document markers), the JSON expected as `v` out (`NN-name.json`).
///
/// The cases are our own, written to cover the feature areas of the YAML test suite; the
/// expected JSON was checked against ruamel.yaml (YAML 1.2) and PyYAML where they read the YAML
/// 1.2 core schema (see the README for where they do not, and why the suite is not stored here).
let conformanceCases = fixtureCases("yaml-conformance")

/// `value`, a YAML document, as the payload member `v` of a manifest's one request: each line
/// indented under `v:` (empty lines stay empty, so that block scalars keep them).
func manifestEmbedding(_ value: [UInt8]) -> [UInt8] {
    var out = Array("vault: tnt1\nrequests:\n  - name: case\n    path: /post\n    payload:\n      v:\n".utf8)
    var lines = value.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
    if lines.last?.isEmpty == true { lines.removeLast() }
    for line in lines {
        if !line.isEmpty { out += Array("        ".utf8) + line }
        out.append(UInt8(ascii: "\n"))
    }
    return out
}

@Suite struct YAMLConformanceTests {
    /// The cases are there, wherever the tests run from.
    @Test func theCasesAreThere() {
        #expect(conformanceCases.count == 40)
    }

    /// Each case is embedded in a manifest, read, and its request's body built the way a run
    /// builds it; the member `v` of that body is the expected JSON, number text and member order
    /// included.
    @Test(arguments: conformanceCases)
    func theBodySentIsTheExpectedJSON(file: String) throws {
        let yaml = try #require(FileManager.default.contents(atPath: file))
        let manifest = try loadManifest(bytes: file.hasSuffix(".manifest.yaml") ? Array(yaml) : manifestEmbedding(Array(yaml)))
        let body = try #require(sentBody(manifest))
        let sent = try JSONParser.parse(Array(body.utf8))
        let expectedFile = file.replacingOccurrences(of: ".manifest.yaml", with: ".yaml").replacingOccurrences(of: ".yaml", with: ".json")
        let expected = try JSONParser.parse(try #require(FileManager.default.contents(atPath: expectedFile)))
        guard case .object(let members) = sent else {
            Issue.record("the body is not an object")
            return
        }
        #expect(members.map(\.key) == ["v"])
        #expect(sent["v"] == expected)
    }
}
