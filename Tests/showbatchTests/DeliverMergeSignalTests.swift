import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A night's export delivered by SFTP, with a trigger file after it; `retry` as given.
private func deliveredManifest(retry: String = "{attempts: 2, backoff: 50ms, max_backoff: 100ms}") -> String {
    """
    vault: tnt1
    retry: \(retry)
    output:
      path: "out/cards-${run.date}-${run.seq:4}.csv"
      columns: [{id: "${row.id}"}, card]
      deliver:
        sftp: "${SB_SFTP_URL}"
        user: "${SB_SFTP_USER}"
        key_file: "${SB_SFTP_KEY}"
        known_hosts: "${SB_KNOWN_HOSTS}"
        done: "${file}.done"
    emulator:
      aliases: {tok_a: "4111111111111111", tok_b: "5555555555554444"}
    requests:
      - name: "c-${row.id}"
        each: {csv: in/customers.csv}
        path: /post
        payload: {card: "${row.alias}"}
        labels: {card: json.card}
    """
}

private let night = "2026-12-01"
private let file = "cards-20261201-0001.csv"
private let customers = "id,alias\n1,tok_a\n2,tok_b\n3,tok_a\n"
private let gaveUpThePush = "showbatch: error: interrupted while pushing the metrics to the Pushgateway: they were not pushed\n"

/// What `deliver` and `merge` do with a signal, as `run` does: one during the metrics push gives
/// the push up at once with the command's own exit code, and one that came before it and
/// interrupted nothing gives it up at its start.
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
        let work = Workspace(["m.yaml": deliveredManifest(), "in/customers.csv": customers])
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
        #expect(child.errors.hasPrefix("m.yaml:2:"), "\(child.errors)")
        #expect(child.errors.hasSuffix(gaveUpThePush), "\(child.errors)")
        #expect(!child.errors.contains("interrupted before anything was sent"))
    }
}
