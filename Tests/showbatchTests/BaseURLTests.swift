import Foundation
import Testing
import TestSupport
import ShowbatchEmulator
@testable import showbatch

/// `--base-url`: a real manifest (a live vault, no emulator section) sent to a local server for a
/// try; plain http:// only to a loopback address.
@Suite struct BaseURLTests {
    @Test(arguments: ["http://127.0.0.1:8080/", "http://127.9.8.7", "http://[::1]:9000", "https://staging.example.com/reveal"])
    func addressesItTakes(url: String) throws {
        guard case .run(let run) = try ArgumentParser.parse(["run", "m.yaml", "--base-url", url]) else {
            Issue.record("not a run")
            return
        }
        var trimmed = url
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        #expect(run.baseURL == trimmed)
    }

    @Test(arguments: [
        ("http://10.0.0.5:8080", "showbatch: error: --base-url http://10.0.0.5 would send card data in the clear over a network: plain http:// is for a loopback address only (127.0.0.0/8, [::1]); use https://"),
        ("http://localhost:8080", "showbatch: error: --base-url http://localhost would send card data in the clear over a network: plain http:// is for a loopback address only (127.0.0.0/8, [::1]); use https://"),
        ("ftp://127.0.0.1", "showbatch: error: --base-url must be an http:// (loopback only) or https:// URL, such as http://127.0.0.1:8080 or https://staging.example.com; got \"ftp://127.0.0.1\""),
        ("https://user:pw@h.example", "showbatch: error: --base-url must not hold a user or password: give the server's address, such as http://127.0.0.1:8080 or https://staging.example.com"),
        ("http://127.0.0.1:99999", "showbatch: error: --base-url has an invalid port"),
    ])
    func addressesItRefuses(url: String, message: String) {
        #expect(throws: UsageError(message: String(message.dropFirst("showbatch: error: ".count)), command: "run")) {
            _ = try ArgumentParser.parse(["run", "m.yaml", "--base-url", url])
        }
    }

    @Test func aLiveManifestRunsAgainstALocalServerAndSaysSo() async throws {
        var configuration = EmulatorConfiguration()
        configuration.aliases = ["tok_live_1": "4111111111111111"]
        let server = try Emulator(configuration: configuration)
        server.start()
        defer { server.stop() }
        let work = Workspace(["m.yaml": """
        vault: tntlive01
        environment: live
        output: {path: out/r.csv, columns: [request, card, status]}
        requests: [{name: a, path: /post, payload: {card: tok_live_1}, labels: {card: json.card}}]
        """])
        defer { work.remove() }
        let run = try await showbatch(["run", "m.yaml", "--base-url", server.baseURL], in: work.path)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.hasPrefix("showbatch: warning: every request goes to \(server.baseURL) (--base-url), not to the vault: for testing only\n"))
        #expect(work.read("out/r.csv") == "request,card,status\na,4111111111111111,ok\n")
    }

    /// `emulate --manifest`: the manifest's emulator section (its aliases and its answer's shape),
    /// for a run with --base-url; the fault flags do not go with it.
    @Test func theEmulatorAnswersAsAManifestSays() throws {
        let work = Workspace(["m.yaml": """
        vault: t
        headers: {Authorization: "Bearer ${SB_UNSET_IN_THIS_TEST}"}
        emulator: {aliases: {tok_p: "4111111111111111"}, response: {result: {pan: "${body.pan}"}}}
        requests: [{name: a, path: /p}]
        """])
        defer { work.remove() }
        guard case .emulate(let arguments) = try ArgumentParser.parse(["emulate", "--manifest", work.path + "/m.yaml", "--port", "0"]) else {
            Issue.record("not emulate")
            return
        }
        let configuration = try EmulateCommand.configuration(arguments)
        #expect(configuration.aliases == ["tok_p": "4111111111111111"] && configuration.response != nil)
        #expect(throws: UsageError(message: "--manifest gives the aliases, the response and the faults: only --port and --cname go with it", command: "emulate")) {
            _ = try ArgumentParser.parse(["emulate", "--manifest", "m.yaml", "--fail-rate", "0.1"])
        }
    }
}
