import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import ShowbatchEmulator
import TestSupport

/// A data file of `rows` rows naming two aliases each, and the emulator's aliases for them.
private func night(_ rows: Int) -> [String: String] {
    var data = "id,card,exp\n"
    var aliases = "alias,value\n"
    for row in 0..<rows {
        data += "\(row),tok_c\(row),tok_e\(row)\n"
        aliases += "tok_c\(row),card-\(row)\ntok_e\(row),exp-\(row)\n"
    }
    return ["d.csv": data, "aliases.csv": aliases]
}

private let manifestText = """
vault: tnt1
vault_api: {version: 2}
auth: {client_id: a, client_secret: b}
output: {path: out/r.csv, columns: [{id: "${row.id}"}, status, card, exp]}
emulator: {aliases: aliases.csv}
requests:
  - name: "r${row.id}"
    each: {csv: d.csv}
    reveal: {card: "${row.card}", exp: "${row.exp}"}
"""

/// The file a night of `rows` rows writes when every row is revealed.
private func revealed(_ rows: Int) -> String {
    "id,status,card,exp\n" + (0..<rows).map { "\($0),ok,card-\($0),exp-\($0)\n" }.joined()
}

/// Runs with the emulator's token endpoint (the manifest has client credentials).
private func run(_ fixture: RunFixture, _ manifest: Manifest, options: RunOptions = RunOptions(),
                 configure: (inout EmulatorConfiguration) -> Void = { _ in }) async throws -> (RunSummary, Emulator.Counts) {
    try await fixture.runCounting(manifest, options: options) { configuration in
        configuration.auth = configuration.auth ?? EmulatorAuth()
        configure(&configuration)
    }
}

/// The Vault API's calls through the run's failure paths: a window limit said only by
/// `x-ratelimit-remaining`, tokens that run out, an outage, an interrupt.
@Suite(.serialized) struct VaultAPIRunTests {
    /// 20 calls a second, said only by `x-ratelimit-remaining` (no reset header, no
    /// Retry-After, as the Vault API): every row ok, and a few calls answered 429 at most. The
    /// night's pace is measured by bench/vaultapi.py and by the simulations in virtual time, not
    /// here: a loaded machine's clock is no measure.
    @Test(.timeLimit(.minutes(1))) func aWindowLimitSaidOnlyByRemainingIsKept() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(manifestText, files: night(1_000))
        let (summary, _) = try await run(fixture, manifest) {
            $0.faults.windowLimit = 20
            $0.faults.windowLength = .seconds(1)
        }
        #expect(summary.ok == 1_000 && summary.exitCode == .ok && summary.stopReason == nil)
        #expect(fixture.read("out/r.csv") == revealed(1_000))
        // Calls answered 429 are made again; the others reveal the night, 20 aliases a call.
        let calls = try #require(summary.calls)
        #expect((100...105).contains(calls - summary.answered429), "\(calls) calls, \(summary.answered429) answered 429")
        // Few, even on a loaded machine (the tight bounds are the simulations', in virtual time).
        #expect(summary.answered429 <= calls / 5, "\(summary.answered429) of \(calls) calls answered 429")
    }

    /// Tokens good for 7 requests each: every call's rows are sent again with a renewed token
    /// (without using an attempt), and every row is revealed.
    @Test func aRefusedTokenIsRenewedForTheCallsRows() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(manifestText, files: night(300))
        let (summary, _) = try await run(fixture, manifest) { configuration in
            var auth = EmulatorAuth()
            auth.tokenUses = 7
            configuration.auth = auth
        }
        #expect(summary.ok == 300 && summary.exitCode == .ok && summary.tokenRenewals > 0)
        #expect(fixture.read("out/r.csv") == revealed(300))
    }

    /// An outage of the API (every call 503 for 2 s) fails no row: the calls' rows wait out the
    /// pause and are sent again.
    @Test(.timeLimit(.minutes(1))) func anOutageFailsNoRow() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(manifestText.replacingOccurrences(of: "vault: tnt1", with: "vault: tnt1\nretry: {attempts: 3, backoff: 20ms, max_backoff: 100ms}"),
                                            files: night(2_000))
        let (summary, counts) = try await run(fixture, manifest) {
            $0.faults.outageAfter = 40
            $0.faults.outageFor = .seconds(2)
        }
        #expect(summary.ok == 2_000 && summary.failed == 0 && summary.exitCode == .ok, "\(summary.stopReason ?? "")")
        #expect(counts.failed > 0)
        #expect(fixture.read("out/r.csv") == revealed(2_000))
    }

    /// Interrupted while calls are out: the journal has whole rows, and the resumed night is
    /// the uninterrupted one byte for byte.
    @Test(.timeLimit(.minutes(1)), arguments: [3, 40])
    func anInterruptedNightResumesToTheSameFile(after: Int) async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        // No auth: the interrupted run's emulator hands out no tokens.
        let manifest = try fixture.manifest(manifestText.replacingOccurrences(of: "auth: {client_id: a, client_secret: b}\n", with: ""),
                                            files: night(1_000))
        _ = try await fixture.run(manifest)
        let expected = try #require(fixture.read("out/r.csv"))
        try FileManager.default.removeItem(atPath: fixture.dir.path + "/out")
        let (emulator, interrupted, baseOptions) = try await fixture.interruptedRun(manifest, after: after)
        defer { emulator.stop() }
        #expect(interrupted.interrupted && interrupted.rows < 1_000)
        var options = baseOptions
        options.resume = true
        let resumed = try await Runner(manifest: manifest, options: options, environment: [:]).run()
        #expect(resumed.rows == 1_000 && resumed.replayed == interrupted.rows && !resumed.interrupted)
        #expect(fixture.read("out/r.csv") == expected)
    }
}

/// What a call's answer gives each of its rows.
@Suite struct AliasAnswerTests {
    private let v2 = Array(#"{"data":{"tok_a":{"value":"4111","aliases":[{"value":"tok_a","format":"UUID"}]},"tok_b":{"value":"12/30"}}}"#.utf8)
    private let v1 = Array(#"{"data":[{"value":"4111","aliases":[{"alias":"tok_a"}]},{"value":"12/30","aliases":[{"value":"tok_b"}]}]}"#.utf8)

    @Test(arguments: [true, false])
    func eachRowGetsItsAliasesByLabel(keyedByAlias: Bool) {
        let answer = TransportResult.response(status: 200, headers: ["x-ratelimit-remaining": "7"], body: keyedByAlias ? v2 : v1)
        guard case .response(200, let headers, let body) = AliasAnswer.forRow(answer, aliases: ["tok_b", "tok_a", "tok_z"],
                                                                              labels: ["exp", "card", "name"]) else {
            Issue.record("not an answer")
            return
        }
        // An alias not in the answer leaves its label out: the row fails it (1408).
        #expect(String(decoding: body, as: UTF8.self) == #"{"exp":"12/30","card":"4111"}"#)
        #expect(headers == ["x-ratelimit-remaining": "7"])
    }

    /// What is not a 2xx of the API's shape is each row's as it is: a 429, a 401, a 5xx, no
    /// answer, a body of another shape.
    @Test func anythingElseIsTheRowsAsItIs() {
        let others: [TransportResult] = [
            .response(status: 429, headers: [:], body: []), .response(status: 401, headers: [:], body: Array("{}".utf8)),
            .failure(.timeout), .response(status: 200, headers: [:], body: Array(#"{"json":{}}"#.utf8)),
        ]
        for result in others {
            let row = AliasAnswer.forRow(result, aliases: ["tok_a"], labels: ["card"])
            switch (row, result) {
            case (.response(let a, _, let x), .response(let b, _, let y)): #expect(a == b && x == y)
            case (.failure(let a), .failure(let b)): #expect(a == b)
            default: Issue.record("\(result) changed")
            }
        }
    }
}
