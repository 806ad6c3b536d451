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
}
