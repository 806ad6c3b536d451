import Foundation
import Testing
import TestSupport

/// `validate --no-env` and `--format json`: a manifest checked in CI, which has none of its secrets.
@Suite struct ValidateForCITests {
    private static let manifest = """
    vault: tnt1
    headers: {Authorization: "Bearer ${SB_CI_TOKEN}"}
    output: {path: out/r.csv}
    requests:
      - {name: a, path: /post, payload: {c: "${SB_CI_ALIAS}"}, labels: {card: json.c}}
    """

    @Test func anUnsetVariableIsAPlaceholderWithNoEnv() async throws {
        let work = Workspace(["m.yaml": Self.manifest])
        defer { work.remove() }
        let strict = try await showbatch(["validate", "m.yaml"], in: work.path)
        #expect(strict.status == 2 && strict.stderr.hasSuffix("m.yaml: 2 problems\n"))
        let check = try await showbatch(["validate", "--no-env", "m.yaml"], in: work.path)
        #expect(check.status == 0)
        #expect(check.stdout == "m.yaml: ok (1 request); unset, taken as placeholders: SB_CI_ALIAS, SB_CI_TOKEN\n")
    }

    /// Only what is wrong with the manifest itself is left: a key that is not one.
    @Test func theProblemsAsJSON() async throws {
        let work = Workspace(["m.yaml": Self.manifest.replacingOccurrences(of: "labels: {card: json.c}", with: "labels: {card: json.c}, bogus: 1")])
        defer { work.remove() }
        let check = try await showbatch(["validate", "--no-env", "--format", "json", "m.yaml"], in: work.path)
        #expect(check.status == 2)
        #expect(check.stdout == #"{"valid":false,"problems":[{"file":"m.yaml","line":5,"column":84,"severity":"error","message":"unknown key \"bogus\" in request 1; expected name, path, method, headers, payload, reveal, labels, each or output"}]}"# + "\n")
        #expect(check.stderr == "")
        work.write("m.yaml", Self.manifest)
        let ok = try await showbatch(["validate", "--no-env", "--format", "json", "m.yaml"], in: work.path)
        #expect(ok.status == 0 && ok.stdout == #"{"valid":true,"problems":[]}"# + "\n")
    }
}
