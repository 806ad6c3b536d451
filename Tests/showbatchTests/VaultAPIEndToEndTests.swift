import Foundation
import Testing
import TestSupport

/// A night of `rows` rows revealed through the Vault API: each row names its card and expiry
/// aliases, the emulator knows every alias but those `unknown` lists, and the alias of each row
/// in `refused` has a character the API refuses (its call is answered 400).
private func vaultAPIWorkspace(rows: Int, version: Int = 2, unknown: Set<Int> = [], refused: Set<Int> = [], extra: String = "") -> Workspace {
    var data = "id,card,exp\n"
    var aliases = "alias,value\n"
    for row in 0..<rows {
        let card = refused.contains(row) ? "tok.c\(row)" : unknown.contains(row) ? "tok_gone_\(row)" : "tok_c\(row)"
        data += "\(row),\(card),tok_e\(row)\n"
        aliases += "tok_c\(row),4\(String(row).leftPadded(15))\ntok_e\(row),\(String(row % 12 + 1).leftPadded(2))/2031\n"
    }
    let auth = version == 2 ? "auth: {client_id: night, client_secret: \"${VAULT_SECRET}\", scope: \"aliases:read\"}"
                            : "auth: {username: night, password: \"${VAULT_SECRET}\"}"
    return Workspace([
        "d.csv": data,
        "aliases.csv": aliases,
        "m.yaml": """
        vault: tntaq8uft80
        environment: live
        vault_api: {version: \(version)}
        \(auth)
        \(extra)output:
          path: "out/cards.csv"
          rejects: "out/rejects.csv"
          columns: [{id: "${row.id}"}, card_number, exp_date]
        emulator: {aliases: aliases.csv}
        requests:
          - name: "customer-${row.id}"
            each: {csv: d.csv}
            reveal: {card_number: "${row.card}", exp_date: "${row.exp}"}
            labels:
              exp_date: {expect: {pattern: '\\d{2}/\\d{4}'}}

        """,
    ])
}

private extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}

/// The Vault API's night, run by the CLI against the built-in emulator.
@Suite(.serialized) struct VaultAPIEndToEndTests {
    private let env = ["VAULT_SECRET": "sk_vault_api_secret_value"]

    /// 4,000 rows of two aliases in about 400 calls (8,000 aliases, 20 a call), every value in
    /// its row; the summary says the calls.
    @Test(arguments: [1, 2])
    func aNightIsRevealedTwentyAliasesACall(version: Int) async throws {
        let work = vaultAPIWorkspace(rows: 4_000, version: version)
        defer { work.remove() }
        let run = try await showbatch(["run", "m.yaml", "--emulate"], in: work.path, environment: env)
        #expect(run.status == 0, "\(run.stderr)")
        let calls = try #require(run.stderr.split(separator: ";").first { $0.hasSuffix("Vault API calls") }
            .flatMap { Int($0.split(separator: " ").first!) })
        // 400 to 420 on a quiet machine; a loaded one feeds rows slower than a call waits for
        // them (50 ms), and a few calls go part full.
        #expect((400...460).contains(calls), "\(calls) calls")
        let lines = try #require(work.read("out/cards.csv")).split(separator: "\n")
        #expect(lines.count == 4_001 && lines[0] == "id,card_number,exp_date")
        for (row, line) in lines.dropFirst().enumerated() where line != "\(row),4\(String(row).leftPadded(15)),\(String(row % 12 + 1).leftPadded(2))/2031" {
            Issue.record("row \(row) is not its own values")
            break
        }
        #expect(work.read("out/rejects.csv") == "request,status,http_status,attempts,error,id,card,exp\n")
        #expect(!run.stderr.contains("sk_vault_api_secret_value"))
    }

    /// An alias the API does not return fails its own row (1408); an alias the API refuses
    /// (its call answered 400) is split out until it is its row's alone. Every other row of
    /// those calls is revealed; the rejects file holds the failed rows' data rows.
    @Test func aRowFailsForItsOwnAliasAlone() async throws {
        let work = vaultAPIWorkspace(rows: 200, unknown: [17, 18], refused: [33])
        defer { work.remove() }
        let run = try await showbatch(["run", "m.yaml", "--emulate", "--quiet"], in: work.path, environment: env)
        #expect(run.status == 1)
        #expect(work.read("out/rejects.csv") == """
        request,status,http_status,attempts,error,id,card,exp
        customer-17,failed,200,1,1408 not_revealed: label card_number: not revealed: the Vault API's answer has no value for its alias,17,tok_gone_17,tok_e17
        customer-18,failed,200,1,1408 not_revealed: label card_number: not revealed: the Vault API's answer has no value for its alias,18,tok_gone_18,tok_e18
        customer-33,failed,400,1,1500 http_status: HTTP 400,33,tok.c33,tok_e33

        """)
        #expect(work.read("out/cards.csv")?.split(separator: "\n").count == 198)
    }

    /// Shards split the rows, and their merge is the unsharded night byte for byte.
    @Test func threeShardsMergedAreTheNight() async throws {
        let work = vaultAPIWorkspace(rows: 300)
        defer { work.remove() }
        let whole = try await showbatch(["run", "m.yaml", "--emulate", "--quiet"], in: work.path, environment: env)
        #expect(whole.status == 0)
        let expected = try #require(work.read("out/cards.csv"))
        try FileManager.default.removeItem(atPath: work.path + "/out")
        for index in 0..<3 {
            let shard = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--shard", "\(index)/3"], in: work.path, environment: env)
            #expect(shard.status == 0, "\(shard.stderr)")
        }
        let merge = try await showbatch(["merge", "m.yaml", "--shards", "3", "--quiet"], in: work.path, environment: env)
        #expect(merge.status == 0, "\(merge.stderr)")
        #expect(work.read("out/cards.csv") == expected)
    }

    /// validate and plan say the calls the night takes, and show each row's call.
    @Test func validateAndPlanShowTheCalls() async throws {
        let work = vaultAPIWorkspace(rows: 45)
        defer { work.remove() }
        let check = try await showbatch(["validate", "m.yaml"], in: work.path, environment: env)
        #expect(check.stdout == "m.yaml: ok (1 request, 45 data rows; 45 rows, 90 aliases: 5 Vault API calls of up to 20 aliases)\n")
        let plan = try await showbatch(["plan", "m.yaml"], in: work.path, environment: env)
        #expect(plan.stdout.hasPrefix("""
        base_url: https://tntaq8uft80.live.vault-api.verygoodvault.com
        GET https://tntaq8uft80.live.vault-api.verygoodvault.com/aliases?aliases=tok_c0,tok_e0 customer-0

        """))
        #expect(plan.stdout.contains("""
        vault_api: 45 rows, 90 aliases: 5 Vault API calls of up to 20 aliases
        pace: 3000/m (VGS's documented Vault API limit; not under --emulate or --base-url)

        """))
    }

    /// Against a stand-in written apart from showbatch (`Tests/Fixtures/vault_api.py`): OAuth2
    /// tokens from its endpoint, 40 calls a second said only by `x-ratelimit-remaining`, 429
    /// past it with no Retry-After. 2,000 rows in about 200 calls, none over 20 values, a few
    /// answered 429 at most, every value right, exit 0.
    @Test(.timeLimit(.minutes(2))) func aStandInWithAWindowLimit() async throws {
        let work = vaultAPIWorkspace(rows: 2_000)
        defer { work.remove() }
        let stats = work.path + "/stats.json"
        let server = Process()
        try requireTool("/usr/bin/python3", package: "python3")
        server.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        server.arguments = [repository + "/Tests/Fixtures/vault_api.py", "--limit", "40", "--window", "1", "--stats", stats]
        let output = Pipe()
        server.standardOutput = output
        try server.run()
        defer { if server.isRunning { server.terminate() } }
        let line = output.fileHandleForReading.availableData
        let port = try #require(Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
        let manifest = try #require(work.read("m.yaml"))
            .replacingOccurrences(of: "scope: \"aliases:read\"}", with: "scope: \"aliases:read\", token_url: \"http://127.0.0.1:\(port)/oauth/token\"}")
        work.write("m.yaml", manifest)
        let run = try await showbatch(["run", "m.yaml", "--base-url", "http://127.0.0.1:\(port)", "--progress", "never"],
                                      in: work.path, environment: env)
        #expect(run.status == 0, "\(run.stderr)")
        server.terminate()
        server.waitUntilExit()
        let counts = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: stats))) as? [String: Int])
        let calls = try #require(counts["calls"]), refused = try #require(counts["refused_429"])
        #expect((200...210).contains(calls - refused), "\(counts)")
        #expect(refused <= calls / 5 && counts["refused_400"] == 0 && counts["most_values"]! <= 20, "\(counts)")
        let lines = try #require(work.read("out/cards.csv")).split(separator: "\n")
        #expect(lines.count == 2_001)
        for (row, line) in lines.dropFirst().enumerated() where line != "\(row),4\(String(row).leftPadded(15)),\(String(row % 12 + 1).leftPadded(2))/2031" {
            Issue.record("row \(row) is not its own values")
            break
        }
    }
}
