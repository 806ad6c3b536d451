import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A night in two shards and their merge, each appending to one audit trail.
private let auditedManifest = """
vault: tnt1
name: nightly-cards
headers: {Authorization: "Bearer ${SB_AUDIT_TOKEN}"}
audit: {path: audit/trail.jsonl}
output: {path: out/cards.csv}
emulator: {aliases: {tok_0: "4000000000000000", tok_1: "4111111111111111"}}
requests:
  - {name: "r${row.id}", each: {csv: d.csv}, path: /post, payload: {c: "${row.alias}"}, labels: {card: json.c}}
"""

private let secrets = ["SB_AUDIT_TOKEN": "sk_audit_token_value"]

@Suite(.serialized) struct AuditTrailTests {
    private func events(_ work: Workspace) -> [String] {
        (work.read("audit/trail.jsonl") ?? "").split(separator: "\n").compactMap { line in
            line.range(of: "\"event\":\"").map { String(line[$0.upperBound...].prefix { $0 != "\"" }) }
        }
    }

    @Test func theChainHoldsAndHoldsNoCardDataOrSecret() async throws {
        let work = Workspace(["m.yaml": auditedManifest, "d.csv": "id,alias\n1,tok_0\n2,tok_1\n3,tok_0\n"])
        defer { work.remove() }
        for shard in 0..<2 {
            let run = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--shard", "\(shard)/2"], in: work.path, environment: secrets)
            #expect(run.status == 0, "\(run.stderr)")
        }
        let merge = try await showbatch(["merge", "m.yaml", "--shards", "2", "--quiet"], in: work.path)
        #expect(merge.status == 0, "\(merge.stderr)")
        #expect(events(work) == ["run_started", "output_finished", "run_started", "output_finished", "merge_started", "merged"])
        let verify = try await showbatch(["audit", "verify", "audit/trail.jsonl"], in: work.path)
        #expect(verify.status == 0 && verify.stdout == "audit/trail.jsonl: 6 entries; the chain holds\n")
        let trail = try #require(work.read("audit/trail.jsonl"))
        for value in ["4000000000000000", "4111111111111111", "tok_0", "tok_1", "sk_audit_token_value", "Bearer"] {
            #expect(!trail.contains(value), "the trail holds \(value.prefix(4))…")
        }
        // What an assessor asks of each entry.
        let first = try #require(trail.split(separator: "\n").first)
        for field in ["\"ts\":", "\"event\":\"run_started\"", "\"outcome\":\"started\"", "\"user\":{\"uid\":\(getuid())", "\"host\":{\"name\":",
                      "\"run_id\":", "\"manifest_sha256\":", "\"vault\":\"tnt1\"", "\"environment\":\"sandbox\"", "\"routes\":[\"/post\"]", "\"shard\":\"0/2\""] {
            #expect(first.contains(field), "\(field)")
        }
        #expect(!first.contains("\"prev\""))
        #expect(trail.contains("\"outputs\":[{\"path\":\"out/cards.csv\",\"rows\":3,\"size\":"))
        var info = stat()
        #expect(stat(work.path + "/audit/trail.jsonl", &info) == 0 && info.st_mode & 0o777 == 0o600)
    }

    @Test(arguments: [
        ("edited", "audit/trail.jsonl:2: error: the chain breaks: its prev is not the SHA-256 of line 1: a line was edited or removed\n"),
        ("removed", "audit/trail.jsonl:2: error: the chain breaks: its prev is not the SHA-256 of line 1: a line was edited or removed\n"),
        ("first removed", "audit/trail.jsonl:1: error: the chain breaks: the first line has a prev: lines before it were removed\n"),
    ])
    func anEditedOrRemovedLineBreaksTheChain(change: String, message: String) async throws {
        let work = Workspace(["m.yaml": auditedManifest, "d.csv": "id,alias\n1,tok_0\n"])
        defer { work.remove() }
        for _ in 0..<2 {
            let run = try await showbatch(["run", "m.yaml", "--emulate", "--quiet"], in: work.path, environment: secrets)
            #expect(run.status == 0)
        }
        var lines = (work.read("audit/trail.jsonl") ?? "").split(separator: "\n").map(String.init)
        #expect(lines.count == 4)
        switch change {
        case "edited": lines[0] = lines[0].replacingOccurrences(of: "\"outcome\":\"started\"", with: "\"outcome\":\"skipped\"")
        case "removed": lines.remove(at: 1)
        default: lines.removeFirst()
        }
        work.write("audit/trail.jsonl", lines.joined(separator: "\n") + "\n")
        let verify = try await showbatch(["audit", "verify", "audit/trail.jsonl"], in: work.path)
        #expect(verify.status == 1 && verify.stderr == message, "\(verify.stderr)")
    }

    /// A trail that is a link is never written through, and a run that cannot audit sends nothing.
    @Test func aRunThatCannotAuditSendsNothing() async throws {
        let work = Workspace(["m.yaml": auditedManifest, "d.csv": "id,alias\n1,tok_0\n", "elsewhere.jsonl": ""])
        defer { work.remove() }
        try FileManager.default.createDirectory(atPath: work.path + "/audit", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: work.path + "/audit/trail.jsonl", withDestinationPath: work.path + "/elsewhere.jsonl")
        let run = try await showbatch(["run", "m.yaml", "--emulate"], in: work.path, environment: secrets)
        #expect(run.status == 3)
        #expect(run.stderr == "showbatch: error: cannot write the audit trail audit/trail.jsonl: Too many levels of symbolic links\n", "\(run.stderr)")
        #expect(work.read("elsewhere.jsonl") == "" && !work.exists("out/cards.csv"))
    }

    /// A keyed trail anchored in the night's ledger: a delivered event rewritten and the chain
    /// recomputed does not verify without the key; lines cut from its end, the trail moved away,
    /// or a world-writable folder stop the next run (exit 3); a torn last line is cut back and
    /// said.
    @Test func aKeyedAnchoredTrailProvesItself() async throws {
        let manifest = auditedManifest
            .replacingOccurrences(of: "audit: {path: audit/trail.jsonl}", with: "audit: {path: audit/trail.jsonl, key: \"${SB_AUDIT_KEY}\"}")
            .replacingOccurrences(of: "output: {path: out/cards.csv}", with: "output: {path: \"out/cards-${run.date}.csv\"}")
        var environment = secrets
        environment["SB_AUDIT_KEY"] = "a-key-of-the-audit-trail-0123456789"
        let work = Workspace(["m.yaml": manifest, "d.csv": "id,alias\n1,tok_0\n"])
        defer { work.remove() }
        func run(_ date: String) async throws -> Execution {
            try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--date", date, "--allow-repeat"], in: work.path, environment: environment)
        }
        #expect(try await run("2026-11-01").status == 0)
        #expect(try await run("2026-11-02").status == 0)
        let verified = try await showbatch(["audit", "verify", "audit/trail.jsonl", "--manifest", "m.yaml"], in: work.path, environment: environment)
        #expect(verified.stdout == "audit/trail.jsonl: 4 entries; the chain holds under audit.key, and reaches where the ledgers recorded it\n", "\(verified.stderr)")
        let original = try #require(work.read("audit/trail.jsonl"))

        // Rewritten and chained again with plain SHA-256: the key tells.
        var lines = original.split(separator: "\n").map(String.init)
        lines[1] = lines[1].replacingOccurrences(of: "\"outcome\":\"ok\"", with: "\"outcome\":\"rows_failed\"")
        for index in 1..<lines.count {
            let digest = sha256(lines[index - 1])
            lines[index] = lines[index].replacingOccurrences(of: #""prev":"[0-9a-f]*""#, with: "\"prev\":\"\(digest)\"", options: .regularExpression)
        }
        work.write("audit/trail.jsonl", lines.joined(separator: "\n") + "\n")
        chmod(work.path + "/audit/trail.jsonl", 0o600)
        let forged = try await showbatch(["audit", "verify", "audit/trail.jsonl", "--manifest", "m.yaml"], in: work.path, environment: environment)
        #expect(forged.status == 1)
        #expect(forged.stderr == "audit/trail.jsonl:2: error: the chain breaks: its prev is not the HMAC of line 1: a line was edited or removed\n")

        // Its last line cut: verify and the next run both see it.
        let cut = original.split(separator: "\n").dropLast().joined(separator: "\n") + "\n"
        work.write("audit/trail.jsonl", cut)
        chmod(work.path + "/audit/trail.jsonl", 0o600)
        let short = try await showbatch(["audit", "verify", "audit/trail.jsonl", "--manifest", "m.yaml"], in: work.path, environment: environment)
        #expect(short.status == 1)
        #expect(short.stderr.contains("error: it has \(cut.utf8.count) bytes, and out/.cards-{date}.csv.sequence recorded \(original.utf8.count) after its last entry: lines were cut from its end"), "\(short.stderr)")
        let refused = try await run("2026-11-03")
        #expect(refused.status == 3)
        #expect(refused.stderr.hasPrefix("showbatch: error: the audit trail audit/trail.jsonl has \(cut.utf8.count) bytes, and out/.cards-{date}.csv.sequence recorded \(original.utf8.count) after its last entry: it was cut short"), "\(refused.stderr)")
        #expect(!work.exists("out/cards-20261103.csv"))

        // Moved away: the same.
        unlink(work.path + "/audit/trail.jsonl")
        #expect(try await run("2026-11-03").status == 3)

        // Back as it was, with a torn line after it (a full disk): cut back, and said.
        work.write("audit/trail.jsonl", original + "{\"ts\":\"2026-")
        chmod(work.path + "/audit/trail.jsonl", 0o600)
        #expect(try await run("2026-11-03").status == 0)
        #expect(Array(events(work).suffix(3)) == ["repaired", "run_started", "output_finished"])
        #expect(try await showbatch(["audit", "verify", "audit/trail.jsonl", "--manifest", "m.yaml"], in: work.path, environment: environment).status == 0)

        // A folder others can write: a neighbour could move the trail away; refused.
        chmod(work.path + "/audit", 0o777)
        let open = try await run("2026-11-04")
        #expect(open.status == 3)
        #expect(open.stderr == "showbatch: error: cannot use audit/trail.jsonl: the folder audit can be written by other users and has no sticky bit (mode 777), so they can replace the files in it; showbatch keeps its files only where no other user can plant or swap them: use a folder of your own (mode 0700 or 0755), or one with the sticky bit\n", "\(open.stderr)")
    }

    private func sha256(_ text: String) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try? process.run()
        input.fileHandleForWriting.write(Data(text.utf8))
        try? input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(String(decoding: data, as: UTF8.self).prefix(64))
    }
}
