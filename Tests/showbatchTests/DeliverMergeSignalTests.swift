import Foundation
import Testing
import TestSupport
import ShowbatchBasics
#if canImport(Glibc)
import Glibc
#endif

private let night = "2026-12-01"
private let file = "cards-20261201-0001.csv"
private let customers = "id,alias\n1,tok_a\n2,tok_b\n3,tok_a\n"
/// The night's ledger.
private let ledger = "out/.cards-{date}-{seq:4}.csv.sequence"
private let gaveUpThePush = "showbatch: error: interrupted while pushing the metrics to the Pushgateway: they were not pushed\n"

/// What `deliver` and `merge` do with a signal, as `run` does: one during the metrics push gives
/// the push up at once with the command's own exit code, one that came before it and interrupted
/// nothing gives it up at its start, and a command is interrupted (130) when a signal cut its work
/// or a delivery short, not merely when one came.
@Suite(.serialized) struct DeliverMergeSignalTests {
    private func environment(_ server: SFTPServer) -> [String: String] {
        ["SB_SFTP_URL": server.url, "SB_SFTP_USER": server.user, "SB_SFTP_KEY": server.clientKey, "SB_KNOWN_HOSTS": server.knownHosts]
    }

    /// A night written and not delivered (the server was down): what `deliver` is for.
    private func undeliveredNight(_ work: Workspace, _ server: SFTPServer) async throws {
        server.stop()
        let down = try await showbatch(["run", "m.yaml", "--emulate", "--date", night, "--quiet"], in: work.path, environment: environment(server))
        #expect(down.status == 5, "\(down.stderr)")
        try server.start()
    }

    /// SIGTERM once `deliver` has delivered the night and pushes its metrics to a Pushgateway that
    /// never answers: the push is given up at once, not waited out over its tries, and the
    /// delivery's own code (0) stands.
    @Test(.timeLimit(.minutes(2))) func aSignalWhileDeliverPushesGivesThePushUp() async throws {
        let listener = try SilentListener()
        let work = Workspace(["m.yaml": sftpNightManifest(), "in/customers.csv": customers])
        let server = try SFTPServer()
        defer { listener.stop(); work.remove(); server.remove() }
        try await undeliveredNight(work, server)
        let child = try Child(["deliver", "m.yaml", "--date", night, "--metrics-push", "http://127.0.0.1:\(listener.port)"], in: work.path,
                              environment: environment(server), signal: (trigger: "showbatch: delivered out/", number: SIGTERM))
        let (status, _) = await child.finish()
        #expect(status == 0, "\(child.errors)")
        #expect(child.errors.hasSuffix("(\(work.read("out/\(file)")?.utf8.count ?? 0) bytes)\n" + gaveUpThePush), "\(child.errors)")
        #expect(server.uploaded == [file, file + ".done"])
    }

    /// SIGTERM once `merge` has written the night and pushes its metrics to a Pushgateway that
    /// never answers: the push is given up at once, and the merge's own code (0) stands.
    @Test(.timeLimit(.minutes(2))) func aSignalWhileMergePushesGivesThePushUp() async throws {
        let listener = try SilentListener()
        let work = Workspace(["m.yaml": """
        vault: tnt1
        output: {path: out/r.csv}
        requests: [{name: "r${row.id}", each: {csv: d.csv}, path: /p, labels: {p: path}}]
        """, "d.csv": "id\n1\n2\n3\n"])
        defer { listener.stop(); work.remove() }
        for shard in 0..<2 {
            let run = try await showbatch(["run", "m.yaml", "--emulate", "--shard", "\(shard)/2", "--quiet"], in: work.path)
            #expect(run.status == 0, "\(run.stderr)")
        }
        let child = try Child(["merge", "m.yaml", "--shards", "2", "--metrics-push", "http://127.0.0.1:\(listener.port)"], in: work.path,
                              signal: (trigger: "showbatch: merged 2 shards", number: SIGTERM))
        let (status, _) = await child.finish()
        #expect(status == 0, "\(child.errors)")
        #expect(child.errors == "showbatch: merged 2 shards into out/r.csv (3 rows)\n" + gaveUpThePush, "\(child.errors)")
        #expect(work.read("out/r.csv")?.split(separator: "\n").count == 4)
    }

    /// `deliver` and `merge` that fail before their work begins (a manifest that cannot be read)
    /// still push their metrics, and hear a signal then: it gives the push up, and the failure's
    /// own code (2) stands; never "interrupted before anything was sent" and 130 (no one was
    /// listening).
    @Test(.timeLimit(.minutes(2)), arguments: [["deliver", "m.yaml"], ["merge", "m.yaml", "--shards", "2"]])
    func aSignalAfterAnEarlyFailureGivesThePushUp(command: [String]) async throws {
        let listener = try SilentListener()
        let work = Workspace(["m.yaml": "vault: tnt1\nrequests: 3\n"])
        defer { listener.stop(); work.remove() }
        let child = try Child(command + ["--metrics-push", "http://127.0.0.1:\(listener.port)"], in: work.path,
                              signal: (trigger: "error:", number: SIGTERM))
        let (status, _) = await child.finish()
        #expect(status == 2, "\(child.errors)")
        #expect(child.errors == "m.yaml:2:11: error: requests must be a list of requests; found an integer\n  requests: 3\n            ^\n" + gaveUpThePush)
    }

    /// SIGTERM after `deliver` has put the night in place (held before it reports by the audit
    /// trail's lock, let go as the signal is sent): nothing was cut short, so the night is delivered, exit 0 and metrics that say
    /// so, not 130; the signal, which the delivery did not take as its interrupt, gives the push
    /// up at its start.
    @Test(.timeLimit(.minutes(2))) func aSignalAfterTheLastUploadLeavesTheNightDelivered() async throws {
        let listener = try SilentListener()
        let work = Workspace(["m.yaml": sftpNightManifest(), "in/customers.csv": customers])
        let server = try SFTPServer()
        defer { listener.stop(); work.remove(); server.remove() }
        try await undeliveredNight(work, server)
        // The trail's lock is held: once delivered, `deliver` waits for it to add its entry.
        let trail = open(work.path + "/audit.jsonl", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        #expect(trail >= 0 && flock(trail, LOCK_EX) == 0)
        // Once the ledger says the trigger file is written (the delivery's last step is done),
        // the trail is let go (its wait is bounded) and the signal sent, from Child's thread.
        let ledgerPath = work.path + "/" + ledger
        let child = try Child(["deliver", "m.yaml", "--date", night, "--audit", "audit.jsonl", "--metrics", "deliver.prom",
                               "--metrics-push", "http://127.0.0.1:\(listener.port)"], in: work.path, environment: environment(server),
                              signalWhen: (condition: { _ in
                                  guard let text = try? String(contentsOfFile: ledgerPath, encoding: .utf8), text.contains("\"done\":true") else { return false }
                                  close(trail)
                                  return true
                              }, number: SIGTERM))
        let (status, _) = await child.finish()
        #expect(child.signalled, "\(child.errors)")
        #expect(status == 0, "\(child.errors)")
        #expect(child.errors.hasPrefix("showbatch: delivered out/\(file) to \(server.url)\(file) ("), "\(child.errors)")
        #expect(child.errors.hasSuffix(gaveUpThePush), "\(child.errors)")
        #expect(work.read("deliver.prom")?.contains("\nshowbatch_run_exit_code{showbatch_job=\"m.yaml\"} 0\n") == true, "\(work.read("deliver.prom") ?? "")")
        #expect(server.uploaded == [file, file + ".done"])
        #expect(work.read("audit.jsonl")?.contains("\"event\":\"delivered\",\"outcome\":\"delivered\"") == true)
    }

    /// SIGTERM while `merge` waits to try its delivery again ends it as interrupted (130), as it
    /// ends a run (and `deliver`), not as undelivered (5): the merged night is in place and
    /// recorded, the shards kept, and the next merge delivers it.
    @Test(.timeLimit(.minutes(3))) func aSignalWhileMergeDeliversEndsItAsInterrupted() async throws {
        let work = Workspace(["m.yaml": sftpNightManifest(retry: "{attempts: 3, backoff: 60s, max_backoff: 60s}"), "in/customers.csv": customers])
        let server = try SFTPServer()
        defer { work.remove(); server.remove() }
        for shard in 0..<2 {
            let run = try await showbatch(["run", "m.yaml", "--emulate", "--date", night, "--shard", "\(shard)/2", "--quiet"], in: work.path,
                                          environment: environment(server))
            #expect(run.status == 0, "\(run.stderr)")
        }
        server.stop()
        let child = try Child(["merge", "m.yaml", "--shards", "2", "--date", night, "--metrics", "merge.prom"], in: work.path,
                              environment: environment(server), signal: (trigger: "trying again in", number: SIGTERM))
        let (status, _) = await child.finish()
        #expect(status == 130, "\(child.errors)")
        #expect(child.errors.contains("interrupted while waiting to try again"), "\(child.errors)")
        #expect(work.read("merge.prom")?.contains("\nshowbatch_run_exit_code{showbatch_job=\"m.yaml\"} 130\n") == true, "\(work.read("merge.prom") ?? "")")
        #expect(work.exists("out/\(file)") && work.exists("out/cards-20261201-0001-shard-0.csv") && server.uploaded.isEmpty)

        try server.start()
        let next = try await showbatch(["merge", "m.yaml", "--shards", "2", "--date", night], in: work.path, environment: environment(server))
        #expect(next.status == 0, "\(next.stderr)")
        #expect(server.uploaded == [file, file + ".done"])
    }
}
