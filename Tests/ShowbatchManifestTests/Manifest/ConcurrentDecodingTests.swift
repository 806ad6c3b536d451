import Foundation
import Testing
import ShowbatchYAML
@testable import ShowbatchBasics
@testable import ShowbatchManifest
import TestSupport

/// Requests decoded on a second thread while parsing must come out exactly as decoded after it.
@Suite struct ConcurrentDecodingTests {
    /// A manifest of `count` requests of several shapes; every 7th has a problem when `problems`.
    static func manifest(_ count: Int, problems: Bool) -> String {
        var text = "vault: tnt1\nheaders: {X-Team: pay}\noutput: {path: out/r.csv}\nrequests:\n"
        for index in 0..<count {
            let broken = problems && index % 7 == 3
            switch index % 4 {
            case 0:
                text += "  - name: r\(index)\n    path: /post\n    headers: {X-Id: \"\(index)\"}\n"
                text += "    payload: {card: tok_\(index), n: \(index).5, list: [1, null, true]}\n"
                text += "    labels: {card: {path: json.card, mask: {ranges: [[0, 4]]}, transform: [{regex: '(\\d+)', template: '$1'}]}}\n"
            case 1:
                text += "  - {name: r\(index), path: \"/post?i=\(index)\", method: put, labels: {a: json.a\(broken ? ".." : "")}}\n"
            case 2:
                text += "  - name: \(broken ? "r0" : "r\(index)")\n    path: /get\n    method: get\n    output: {path: out/r\(index).jsonl}\n"
            default:
                text += "  - name: r\(index)\n    path: /post\n    \(broken ? "pth: /x" : "payload: {deep: {a: [{b: tok}]}}")\n"
            }
        }
        return text
    }

    /// One line per request (regex objects named by pattern, not address), or the errors.
    static func load(_ text: String, concurrentFrom: Int) -> [String] {
        do {
            let manifest = try ManifestLoader.load(source: SourceFile(name: "m.yaml", text: text), directory: "/d",
                                                   environment: [:], concurrentFrom: concurrentFrom, recipients: recipientsUnchecked)
            return manifest.requests.map {
                String(reflecting: $0).replacingOccurrences(of: "<NSRegularExpression: 0x[0-9a-f]+>", with: "<regex>", options: .regularExpression)
            } + ["hash \(manifest.contentHash)"]
        } catch {
            return error.diagnostics.map(\.description)
        }
    }

    /// Expects equal lists, naming only the first difference (a whole manifest is too long to print).
    static func expectSame(_ concurrent: [String], _ sequential: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(concurrent.count == sequential.count, sourceLocation: sourceLocation)
        if let index = (0..<min(concurrent.count, sequential.count)).first(where: { concurrent[$0] != sequential[$0] }) {
            Issue.record("line \(index) differs:\n\(concurrent[index])\n\(sequential[index])", sourceLocation: sourceLocation)
        }
    }

    @Test(arguments: [(1, false), (300, false), (300, true), (2_000, true)])
    func sameResultEitherWay(count: Int, problems: Bool) {
        let text = Self.manifest(count, problems: problems)
        let concurrent = Self.load(text, concurrentFrom: 0)
        Self.expectSame(concurrent, Self.load(text, concurrentFrom: .max))
        #expect(concurrent.first?.hasPrefix(problems ? "m.yaml:" : "ShowbatchManifest.RequestSpec(") == true)
        // Broken items have one problem each: a bad content path, a reused name or an unknown key.
        let perShape: [Int] = [0, 1, 1, 1]
        var expected = 0
        for index in 0..<count where index % 7 == 3 { expected += perShape[index % 4] }
        #expect(concurrent.count == (problems ? expected : count + 1))
    }

    @Test(arguments: [
        // A syntax error ends the parse while the worker is busy.
        manifest(500, problems: false) + "  - {name: x\n",
        // The list is an alias of another, so nothing is streamed.
        "vault: tnt1\nbase: &r [{name: a, path: /p}, {name: a, path: /q}]\nrequests: *r\n",
        // A requests key nested deeper is not the streamed list.
        "vault: tnt1\nrequests: [{name: a, path: /p}]\nother: {requests: [{name: a, path: /p}]}\n",
        "vault: tnt1\nrequests: []\n",
        "vault: tnt1\nrequests: [3, {name: a}]\n",
    ])
    func unusualListsAgree(text: String) {
        Self.expectSame(Self.load(text, concurrentFrom: 0), Self.load(text, concurrentFrom: .max))
    }
}
