import Foundation
import Testing
import ShowbatchBasics
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A night's export delivered by SFTP to a real OpenSSH server, with a trigger file after it.
private let deliveredManifest = """
vault: tnt1
output:
  path: "out/cards-${run.date}-${run.seq:4}.csv"
  columns: [{id: "${row.id}"}, card]
  rejects: "out/rejects-${run.date}.csv"
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

private let night = "2026-12-01"
private let file = "cards-20261201-0001.csv"
private let rows = "id,card\n1,4111111111111111\n2,5555555555554444\n"

@Suite(.serialized) struct NightDeliveryTests {
    private func setUp() throws -> (Workspace, SFTPServer) {
        let work = Workspace(["m.yaml": deliveredManifest, "in/customers.csv": "id,alias\n1,tok_a\n2,tok_b\n"])
        return (work, try SFTPServer())
    }

    private func environment(_ server: SFTPServer, knownHosts: String? = nil) -> [String: String] {
        ["SB_SFTP_URL": server.url, "SB_SFTP_USER": server.user, "SB_SFTP_KEY": server.clientKey,
         "SB_KNOWN_HOSTS": knownHosts ?? server.knownHosts]
    }

    private func run(_ work: Workspace, _ server: SFTPServer, _ extra: [String] = [], knownHosts: String? = nil) async throws -> Execution {
        try await showbatch(["run", "m.yaml", "--emulate", "--date", night] + extra, in: work.path,
                            environment: environment(server, knownHosts: knownHosts))
    }

    private func uploaded(_ server: SFTPServer, _ name: String) -> String? {
        FileManager.default.contents(atPath: server.uploads + "/" + name).map { String(decoding: $0, as: UTF8.self) }
    }

    @Test func aNightIsDeliveredOnceUnderItsOwnName() async throws {
        let (work, server) = try setUp()
        defer { work.remove(); server.remove() }
        let first = try await run(work, server)
        #expect(first.status == 0)
        #expect(first.stderr.hasSuffix("; wrote out/\(file), out/rejects-20261201.csv (rejects: 0 rows)\nshowbatch: delivered out/\(file) to \(server.url)\(file) (\(rows.utf8.count) bytes)\n"))
        // Byte for byte, under its own name, the trigger after it, nothing else left behind.
        #expect(server.uploaded == [file, file + ".done"])
        #expect(uploaded(server, file) == rows && uploaded(server, file + ".done") == "")
        #expect(work.read("out/\(file)") == rows)
        var info = stat()
        #expect(stat(work.path + "/out/\(file).delivered", &info) == 0 && info.st_mode & 0o777 == 0o600)
        let record = try #require(work.read("out/\(file).delivered"))
        #expect(record.hasPrefix("{\"showbatch_delivery\":1,\"file\":\"\(file)\",\"to\":\"\(server.url)\",\"size\":\(rows.utf8.count),\"sha256\":\""))
        var before = stat()
        _ = stat(server.uploads + "/" + file, &before)

        // The same night again: nothing sent, nothing delivered.
        let again = try await run(work, server)
        #expect(again.status == 0)
        #expect(again.stderr.contains("showbatch: 0 rows: 0 ok"))
        #expect(again.stderr.hasSuffix("showbatch: out/\(file) was delivered to \(server.url)\(file) at \(record.components(separatedBy: "\"delivered\":\"")[1].prefix(24)): nothing is delivered again\n"))
        var after = stat()
        _ = stat(server.uploads + "/" + file, &after)
        #expect(after.st_ino == before.st_ino && after.st_mtim.tv_sec == before.st_mtim.tv_sec && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec)
        #expect(server.uploaded == [file, file + ".done"])
        // A delivered night is the processor's: --retry-failed does not rewrite it.
        let retry = try await run(work, server, ["--retry-failed"])
        #expect(retry.status == 2)
        #expect(retry.stderr.hasPrefix("showbatch: error: out/\(file) was delivered to \(server.url)\(file) at "))
        #expect(retry.stderr.contains(": a processor takes a night's file once, so --retry-failed does not rewrite it; its failed rows are in its rejects file or journal\n"))
    }

    @Test func aServerDownKeepsTheFileAndTheNextRunDeliversWithoutRevealing() async throws {
        let (work, server) = try setUp()
        defer { work.remove(); server.remove() }
        server.stop()
        let down = try await run(work, server, ["--resume=auto"])
        #expect(down.status == 5)
        #expect(down.stderr.contains("showbatch: error: cannot deliver out/\(file): cannot list the folder \(server.url): 127.0.0.1:\(server.port) refused the connection (curl: "))
        #expect(down.stderr.hasSuffix("; the file is kept: once that is fixed, the next run (or showbatch deliver m.yaml --date \(night)) delivers it without revealing anything again\n"))
        // Tried as often as requests are (3 attempts by default), with their backoff.
        #expect(down.stderr.components(separatedBy: "showbatch: warning: delivering out/\(file) failed").count == 3)
        #expect(work.read("out/\(file)") == rows && !work.exists("out/\(file).delivered"))
        #expect(server.uploaded.isEmpty)

        try server.start()
        let next = try await run(work, server, ["--resume=auto"])
        #expect(next.status == 0)
        // Nothing is revealed again: no row is sent.
        #expect(next.stderr.contains("nothing is sent for it\nshowbatch: 0 rows: 0 ok, 0 partial, 0 failed"))
        #expect(next.stderr.hasSuffix("showbatch: delivered out/\(file) to \(server.url)\(file) (\(rows.utf8.count) bytes)\n"))
        #expect(server.uploaded == [file, file + ".done"] && uploaded(server, file) == rows)
    }

    /// SIGTERM while a delivery waits to try again ends the run with 130, as any signal does (the
    /// scheduler's retry then delivers the night without revealing anything).
    ///
    /// The signal is sent by a thread of the test's own (`Child`) as soon as the wait's note is on
    /// stderr. The wait is 24 h drawn with full jitter from a generator seeded by the file's size
    /// (46 bytes: 17.5 h), checked below, so the window does not rest on the draw being kind.
    @Test func aSignalDuringTheDeliveryEndsTheRunAsInterrupted() async throws {
        let (work, server) = try setUp()
        defer { work.remove(); server.remove() }
        work.write("m.yaml", deliveredManifest + "\nretry: {attempts: 3, backoff: 24h, max_backoff: 24h}\n")
        var random = SeededGenerator(seed: UInt64(rows.utf8.count))
        let wait = Backoff(base: .seconds(86_400), cap: .seconds(86_400), jitter: .full).delay(after: 1, random: &random)
        try #require(wait > .seconds(3_600), "the file's size draws a wait of \(wait): too short a window for the signal")
        server.stop()
        let child = try Child(["run", "m.yaml", "--emulate", "--date", night], in: work.path, environment: environment(server),
                              signal: (trigger: "trying again in", number: SIGTERM))
        let (status, _) = await child.finish()
        try #require(child.signalled, "no retry's wait was seen: \(child.errors)")
        #expect(status == 130)
        #expect(child.errors.contains("interrupted while waiting to try again"), "\(child.errors)")
        #expect(work.read("out/\(file)") == rows && !work.exists("out/\(file).delivered"))

        try server.start()
        let next = try await run(work, server, ["--resume=auto"])
        #expect(next.status == 0, "\(next.stderr)")
        #expect(next.stderr.contains("nothing is sent for it\nshowbatch: 0 rows: 0 ok, 0 partial, 0 failed"))
        #expect(server.uploaded == [file, file + ".done"] && uploaded(server, file) == rows)
    }

    /// A night not delivered (the server was down) goes first when the next night is delivered:
    /// the processor gets 1 then 2, never 2 with 1 missing.
    @Test func anUndeliveredNightIsDeliveredBeforeTheNextOne() async throws {
        let (work, server) = try setUp()
        defer { work.remove(); server.remove() }
        server.stop()
        let down = try await run(work, server)
        #expect(down.status == 5)
        try server.start()
        work.write("in/customers.csv", "id,alias\n3,tok_b\n")
        let next = try await showbatch(["run", "m.yaml", "--emulate", "--date", "2026-12-02"], in: work.path, environment: environment(server))
        #expect(next.status == 0, "\(next.stderr)")
        let second = "cards-20261202-0002.csv"
        #expect(next.stderr.contains("showbatch: delivered out/\(file) to \(server.url)\(file) (\(rows.utf8.count) bytes)\nshowbatch: delivered out/\(second) to \(server.url)\(second) ("),
                "\(next.stderr)")
        #expect(server.uploaded == [file, file + ".done", second, second + ".done"])
        #expect(uploaded(server, second) == "id,card\n3,5555555555554444\n")
    }

    /// A night that cannot be delivered (its rows not ok beyond max_failed) holds the next one
    /// back, and the failure says which night and what to do.
    @Test func aNightThatCannotGoHoldsTheNextOneBack() async throws {
        let (work, server) = try setUp()
        defer { work.remove(); server.remove() }
        work.write("in/customers.csv", "id,alias\n1,tok_a\n2,tok_unknown\n")
        let first = try await run(work, server)
        #expect(first.status == 1)
        #expect(first.stderr.contains("showbatch: warning: out/\(file) is not delivered: the night has 1 row not ok of 2, beyond max_failed\n"))
        work.write("in/customers.csv", "id,alias\n3,tok_b\n")
        let next = try await showbatch(["run", "m.yaml", "--emulate", "--date", "2026-12-02"], in: work.path, environment: environment(server))
        #expect(next.status == 5)
        #expect(next.stderr.contains("showbatch: error: cannot deliver out/cards-20261202-0002.csv: the night of 2026-12-01 (sequence 1) comes before it and has rows not ok beyond max_failed: send its failed rows again first (showbatch run m.yaml --date 2026-12-01 --retry-failed); a processor rejects a gap in the sequence, so this night is delivered after it; the file is kept"),
                "\(next.stderr)")
        #expect(server.uploaded.isEmpty)
    }

    @Test func theDeliverCommandDeliversAFinishedNight() async throws {
        let (work, server) = try setUp()
        defer { work.remove(); server.remove() }
        server.stop()
        let down = try await run(work, server)
        #expect(down.status == 5)
        try server.start()
        let never = try await showbatch(["deliver", "m.yaml", "--date", "2026-12-02"], in: work.path, environment: environment(server))
        #expect(never.status == 2)
        #expect(never.stderr == "showbatch: error: out/cards-20261202-0002.csv was never finished for the night of 2026-12-02: run it first (showbatch run m.yaml --date 2026-12-02)\n")
        let deliver = try await showbatch(["deliver", "m.yaml", "--date", night, "--audit", "audit.jsonl"], in: work.path, environment: environment(server))
        #expect(deliver.status == 0)
        #expect(deliver.stderr == "showbatch: delivered out/\(file) to \(server.url)\(file) (\(rows.utf8.count) bytes)\n")
        // The delivery is in the audit trail: where it went, never the user's key.
        let trail = work.read("audit.jsonl") ?? ""
        #expect(trail.contains("\"event\":\"delivered\",\"outcome\":\"delivered\"") && trail.contains("\"to\":\"\(server.url)\(file)\""), "\(trail)")
        #expect(!trail.contains(server.clientKey))
        #expect(server.uploaded == [file, file + ".done"] && uploaded(server, file) == rows)
        let again = try await showbatch(["deliver", "m.yaml", "--date", night, "--quiet"], in: work.path, environment: environment(server))
        #expect(again.status == 0 && again.stderr == "")
    }

    /// `plan` says where each night goes and which host key it trusts; `validate` warns, as ssh
    /// would refuse, of a private key others can read and a known_hosts file others can write.
    @Test func planShowsTheTargetAndValidateWarnsOfOpenKeys() async throws {
        let (work, server) = try setUp()
        defer { work.remove(); server.remove() }
        let plan = try await showbatch(["plan", "m.yaml", "--date", night], in: work.path, environment: environment(server))
        #expect(plan.status == 0)
        #expect(plan.stdout.contains("\ndeliver: out/cards-${run.date}-${run.seq:4}.csv to sftp://\(server.user)@127.0.0.1:\(server.port)\(server.uploads)/ (host key from \(server.knownHosts))\n"), "\(plan.stdout)")
        #expect(plan.stdout.contains("\nnight: \(night): out/cards-20261201-0001.csv (sequence 1): a new night"))
        #expect(try await showbatch(["validate", "m.yaml"], in: work.path, environment: environment(server)).stderr == "")
        chmod(server.clientKey, 0o644)
        chmod(server.knownHosts, 0o666)
        let validate = try await showbatch(["validate", "m.yaml"], in: work.path, environment: environment(server))
        #expect(validate.status == 0)
        #expect(validate.stderr.contains("warning: output.deliver.key_file \(server.clientKey) can be read by others (mode 0644): ssh refuses a private key so open; make it 0600 (a Kubernetes Secret: defaultMode 0400)"), "\(validate.stderr)")
        #expect(validate.stderr.contains("warning: output.deliver.known_hosts \(server.knownHosts) can be written by others (mode 0666): anyone who can write it can make showbatch trust another server; make it 0644 or less"))
    }

    /// `deliver --check` before the first night: each step said, a probe written and removed,
    /// nothing else left; a host key not known is exit 6, a server down exit 5.
    @Test func theCheckTriesTheServerAsADeliveryWould() async throws {
        let (work, server) = try setUp()
        defer { work.remove(); server.remove() }
        let checked = try await showbatch(["deliver", "m.yaml", "--check"], in: work.path, environment: environment(server))
        #expect(checked.status == 0, "\(checked.stderr)")
        let lines = checked.stderr.split(separator: "\n").map(String.init)
        #expect(lines.count == 4 && lines.allSatisfy { $0.hasPrefix("showbatch: check \(server.url): ") }, "\(checked.stderr)")
        #expect(lines.first?.hasSuffix(": connected to 127.0.0.1:\(server.port), its host key is in \(server.knownHosts), logged in as \(server.user) with \(server.clientKey)") == true)
        #expect(lines.last?.contains("a night can be delivered here") == true)
        #expect(server.uploaded.isEmpty && !work.exists("out"))
        let unknown = try await showbatch(["deliver", "m.yaml", "--check"], in: work.path, environment: environment(server, knownHosts: server.otherKnownHosts))
        #expect(unknown.status == 6)
        #expect(unknown.stderr == "showbatch: error: check \(server.url): the host key of 127.0.0.1:\(server.port) differs from the one there (line 1): it changed, or this is another server (known hosts file \(server.otherKnownHosts)): nothing was uploaded (no key is trusted on first use; check the processor's host key with them)\n")
        server.stop()
        let down = try await showbatch(["deliver", "m.yaml", "--check"], in: work.path, environment: environment(server))
        #expect(down.status == 5)
        #expect(down.stderr.contains("refused the connection"))
    }

    @Test func anUnknownHostKeyIsRefusedWithNothingUploaded() async throws {
        let (work, server) = try setUp()
        defer { work.remove(); server.remove() }
        let refused = try await run(work, server, knownHosts: server.otherKnownHosts)
        // Only a person can fix it: exit 6, which a scheduler does not retry.
        #expect(refused.status == 6)
        #expect(refused.stderr.hasSuffix("showbatch: error: cannot deliver out/\(file): the host key of 127.0.0.1:\(server.port) differs from the one there (line 1): it changed, or this is another server (known hosts file \(server.otherKnownHosts)): nothing was uploaded (no key is trusted on first use; check the processor's host key with them); no retry fixes this, a person must (exit 6); the file is kept, and once that is done the next run (or showbatch deliver m.yaml --date \(night)) delivers it without revealing anything again\n"))
        // Not retried: no retry makes the key known.
        #expect(!refused.stderr.contains("trying again"))
        #expect(server.uploaded.isEmpty)
        // Nothing of the key material is in what was said.
        let key = try String(contentsOfFile: server.clientKey, encoding: .utf8)
        for line in key.split(separator: "\n") where !line.hasPrefix("-----") { #expect(!refused.stderr.contains(line)) }
    }

    @Test func whatAKillDuringTheUploadLeavesIsReplacedByOneWholeFile() async throws {
        let (work, server) = try setUp()
        defer { work.remove(); server.remove() }
        // Killed while uploading: the temporary name holds part of the file, the record is absent.
        server.stop()
        #expect(try await run(work, server).status == 5)
        try server.start()
        try Data(rows.utf8.prefix(9)).write(to: URL(fileURLWithPath: server.uploads + "/." + file + ".part"))
        let next = try await run(work, server)
        #expect(next.status == 0)
        #expect(server.uploaded == [file, file + ".done"] && uploaded(server, file) == rows)
    }

    @Test func whatAKillAfterTheRenameLeavesIsRecordedNotUploadedAgain() async throws {
        let (work, server) = try setUp()
        defer { work.remove(); server.remove() }
        #expect(try await run(work, server).status == 0)
        // Killed after the rename, before its answer was recorded: the ledger says the rename was
        // asked for, not that it was done, and no record is beside the file.
        unlink(work.path + "/out/\(file).delivered")
        let state = "out/.cards-{date}-{seq:4}.csv.sequence"
        let marked = try #require(work.read(state))
        let unmarked = marked.replacingOccurrences(of: #""delivered":\{"to":("[^"]*"),[^}]*\}"#, with: #""handing":{"to":$1,"part":".cards-20261201-0001.csv.0.part","at":"2026-12-01T02:20:00.000Z"}"#,
                                                   options: .regularExpression)
        #expect(unmarked != marked)
        work.write(state, unmarked)
        chmod(work.path + "/" + state, 0o600)
        unlink(server.uploads + "/" + file + ".done")
        var before = stat()
        _ = stat(server.uploads + "/" + file, &before)
        let next = try await run(work, server)
        #expect(next.status == 0)
        #expect(next.stderr.hasSuffix("showbatch: out/\(file) was on the server already, whole (a run stopped after putting it there): recorded as delivered to \(server.url)\(file)\n"))
        var after = stat()
        _ = stat(server.uploads + "/" + file, &after)
        #expect(after.st_ino == before.st_ino)
        #expect(server.uploaded == [file, file + ".done"] && work.exists("out/\(file).delivered"))
    }

    @Test func anotherFileUnderTheNameIsNeverReplaced() async throws {
        let (work, server) = try setUp()
        defer { work.remove(); server.remove() }
        try Data("someone else's file\n".utf8).write(to: URL(fileURLWithPath: server.uploads + "/" + file))
        let refused = try await run(work, server)
        #expect(refused.status == 6)
        #expect(refused.stderr.contains("showbatch: error: cannot deliver out/\(file): \(server.url)\(file) is on the server already, and is not this file (20 bytes, not these \(rows.utf8.count)): it is not replaced"))
        #expect(uploaded(server, file) == "someone else's file\n" && server.uploaded == [file])
        // Of the same size, but other bytes (card files of one row count often are): not ours either.
        let sameSize = String(repeating: "x", count: rows.utf8.count)
        try Data(sameSize.utf8).write(to: URL(fileURLWithPath: server.uploads + "/" + file))
        let again = try await run(work, server)
        #expect(again.status == 6)
        #expect(again.stderr.contains("is on the server already, and is not this file (\(rows.utf8.count) bytes, not these \(rows.utf8.count) of another SHA-256): it is not replaced"))
        #expect(uploaded(server, file) == sameSize && !work.exists("out/\(file).delivered"))
    }

    /// A night with rows not ok beyond max_failed is not delivered by `showbatch deliver` either.
    @Test func aNightWithFailedRowsIsNotDeliveredByHand() async throws {
        let (work, server) = try setUp()
        defer { work.remove(); server.remove() }
        work.write("in/customers.csv", "id,alias\n1,tok_a\n2,tok_unknown\n")
        let run = try await run(work, server)
        #expect(run.status == 1 && server.uploaded.isEmpty)
        #expect(run.stderr.contains("showbatch: warning: out/\(file) is not delivered: the night has 1 row not ok of 2, beyond max_failed\n"))
        #expect(run.stderr.contains("showbatch: the night of \(night) in out/\(file) (sequence 1) has 1 row not ok of 2, beyond max_failed (0): it is not finished for the processor\nshowbatch: next: showbatch run m.yaml --retry-failed --date \(night) --emulate sends the 1 failed row again\n"))
        let deliver = try await showbatch(["deliver", "m.yaml", "--date", night], in: work.path, environment: environment(server))
        #expect(deliver.status == 2)
        #expect(deliver.stderr == "showbatch: error: out/\(file) was finished with rows not ok beyond max_failed, so it is not delivered: send its failed rows again first (showbatch run m.yaml --date \(night) --retry-failed)\n")
        #expect(server.uploaded.isEmpty)
    }

    /// Delivered card files are removed from the volume as a matter of course: the night's state
    /// still says it was delivered, and a rerun sends nothing.
    @Test func aDeliveredNightWhoseFileWasRemovedIsNotSentAgain() async throws {
        let (work, server) = try setUp()
        defer { work.remove(); server.remove() }
        #expect(try await run(work, server).status == 0)
        unlink(work.path + "/out/\(file)")
        let rerun = try await run(work, server)
        #expect(rerun.status == 0)
        #expect(rerun.stderr.hasPrefix("showbatch: warning: out/\(file): it was delivered to \(server.url)\(file) at "))
        #expect(rerun.stderr.contains("showbatch: 0 rows: 0 ok"))
        #expect(!work.exists("out/\(file)") && server.uploaded == [file, file + ".done"])
        // With other data: still not sent, and said loudly: exit 1, rows were left unsent.
        work.write("in/customers.csv", "id,alias\n7,tok_a\n")
        let changed = try await run(work, server)
        #expect(changed.status == 1)
        #expect(changed.stderr.contains("showbatch: warning: out/\(file): the data files changed since the night of \(night) was delivered: their rows are NOT sent (a delivered night is the processor's; send them as another night, with its own --date)\n"))
        #expect(changed.stderr.contains("showbatch: 0 rows: 0 ok"))
    }
}

/// The Kubernetes sample's shape: an encrypted night run in 3 shards, merged and delivered by the
/// merge pod; the processor decrypts what is on its server.
/// The delivered manifest, its files encrypted to keys/processor.asc.
private let encryptedManifest = deliveredManifest
    .replacingOccurrences(of: "\"out/cards-${run.date}-${run.seq:4}.csv\"", with: "\"out/cards-${run.date}-${run.seq:4}.csv.pgp\"")
    .replacingOccurrences(of: "\"out/rejects-${run.date}.csv\"", with: "\"out/rejects-${run.date}.csv.pgp\"")
    .replacingOccurrences(of: "  deliver:\n", with: "  encrypt: {recipients: [keys/processor.asc], state_key: \"${SB_STATE_KEY}\"}\n  deliver:\n")

/// What the shards and the merge of a sealed night are given: the server, its host key, the state key.
private func sealedNightEnvironment(_ server: SFTPServer) -> [String: String] {
    ["SB_SFTP_URL": server.url, "SB_SFTP_USER": server.user, "SB_SFTP_KEY": server.clientKey,
     "SB_KNOWN_HOSTS": server.knownHosts, "SB_STATE_KEY": Data(repeating: 7, count: 32).base64EncodedString()]
}

@Suite(.serialized) struct MergedNightDeliveryTests {
    @Test func threeShardsMergedIntoOneMessageAreDeliveredOnce() async throws {
        let manifest = encryptedManifest
        let ids = Array(1...10)
        let work = Workspace(["m.yaml": manifest, "in/customers.csv": "id,alias\n" + ids.map { "\($0),tok_\($0 % 2 == 0 ? "a" : "b")\n" }.joined()])
        work.write("keys/processor.asc", try String(contentsOfFile: GPGFixture.shared.alice.file, encoding: .utf8))
        let server = try SFTPServer()
        defer { work.remove(); server.remove() }
        let environment = sealedNightEnvironment(server)
        for shard in 0..<3 {
            let run = try await showbatch(["run", "m.yaml", "--emulate", "--date", night, "--shard", "\(shard)/3", "--quiet"], in: work.path, environment: environment)
            #expect(run.status == 0 && run.stderr == "")
        }
        // A shard never delivers.
        #expect(server.uploaded.isEmpty)
        let merge = try await showbatch(["merge", "m.yaml", "--shards", "3", "--date", night], in: work.path, environment: environment)
        let name = "cards-20261201-0001.csv.pgp"
        #expect(merge.status == 0)
        #expect(merge.stderr.hasPrefix("showbatch: merged 3 shards into out/\(name) (10 rows)\nshowbatch: delivered out/\(name) to \(server.url)\(name) ("))
        #expect(server.uploaded == [name, name + ".done"])
        let plain = try #require(GPGFixture.shared.decrypt(server.uploads + "/" + name))
        let cards = ["4111111111111111", "5555555555554444"]
        #expect(String(decoding: plain, as: UTF8.self) == "id,card\n" + ids.map { "\($0),\(cards[$0 % 2 == 0 ? 0 : 1])\n" }.joined())
        // The merge pod retried after the night was delivered: nothing is merged or sent again.
        let again = try await showbatch(["merge", "m.yaml", "--shards", "3", "--date", night], in: work.path, environment: environment)
        #expect(again.status == 0)
        #expect(again.stderr.hasPrefix("showbatch: out/\(name) was delivered to \(server.url)\(name) at "))
        #expect(again.stderr.hasSuffix(": nothing is delivered again\n"))
        #expect(server.uploaded == [name, name + ".done"])
    }

    /// A shard of a night that was delivered sends nothing again, even once the night's files are
    /// gone from the volume; a merge of it says it was delivered.
    @Test func aShardOfADeliveredNightSendsNothing() async throws {
        let work = Workspace(["m.yaml": encryptedManifest, "in/customers.csv": "id,alias\n1,tok_a\n2,tok_b\n3,tok_a\n"])
        work.write("keys/processor.asc", try String(contentsOfFile: GPGFixture.shared.alice.file, encoding: .utf8))
        let server = try SFTPServer()
        defer { work.remove(); server.remove() }
        let environment = sealedNightEnvironment(server)
        for shard in 0..<2 {
            let run = try await showbatch(["run", "m.yaml", "--emulate", "--date", night, "--shard", "\(shard)/2", "--quiet"], in: work.path, environment: environment)
            #expect(run.status == 0)
        }
        let merge = try await showbatch(["merge", "m.yaml", "--shards", "2", "--date", night, "--quiet"], in: work.path, environment: environment)
        #expect(merge.status == 0 && server.uploaded.count == 2)
        // Delivered card files are removed from the volume: the night's state still knows.
        for name in ["cards-20261201-0001.csv.pgp", "cards-20261201-0001.csv.pgp.delivered", "rejects-20261201.csv.pgp"] {
            try? FileManager.default.removeItem(atPath: work.path + "/out/" + name)
        }
        let again = try await showbatch(["run", "m.yaml", "--emulate", "--date", night, "--shard", "0/2"], in: work.path, environment: environment)
        #expect(again.status == 0)
        #expect(again.stderr.hasPrefix("showbatch: warning: out/cards-20261201-0001-shard-0.csv.sealed: the night of \(night) (sequence 1) was delivered at "), "\(again.stderr)")
        #expect(again.stderr.contains(": nothing is sent for it\nshowbatch: 0 rows: 0 ok"))
        #expect(!work.exists("out/cards-20261201-0001-shard-0.csv.sealed"))
        let remerge = try await showbatch(["merge", "m.yaml", "--shards", "2", "--date", night], in: work.path, environment: environment)
        #expect(remerge.status == 0, "\(remerge.stderr)")
        #expect(remerge.stderr.hasSuffix(": nothing is delivered again\n"))
        #expect(server.uploaded.count == 2)
    }

    /// max_failed is the night's: three failed rows over three shards are one each (each shard
    /// within `max_failed: 1`, exit 0), and three for the merge (exit 1, not delivered, the
    /// shards kept); sent again shard by shard, the night merges complete and is delivered.
    @Test func theNightsMaxFailedIsAppliedByMerge() async throws {
        let manifest = encryptedManifest.replacingOccurrences(of: "vault: tnt1", with: "vault: tnt1\nmax_failed: 1")
        let data = "id,alias\n1,tok_c\n2,tok_c\n3,tok_c\n4,tok_a\n5,tok_b\n6,tok_a\n"
        let work = Workspace(["m.yaml": manifest, "in/customers.csv": data])
        work.write("keys/processor.asc", try String(contentsOfFile: GPGFixture.shared.alice.file, encoding: .utf8))
        let server = try SFTPServer()
        defer { work.remove(); server.remove() }
        let environment = sealedNightEnvironment(server)
        for shard in 0..<3 {
            let run = try await showbatch(["run", "m.yaml", "--emulate", "--date", night, "--shard", "\(shard)/3", "--quiet"], in: work.path, environment: environment)
            #expect(run.status == 0, "shard \(shard): \(run.stderr)")
        }
        let merge = try await showbatch(["merge", "m.yaml", "--shards", "3", "--date", night], in: work.path, environment: environment)
        #expect(merge.status == 1)
        #expect(merge.stderr == "showbatch: warning: out/cards-20261201-0001.csv.pgp is not delivered: the night's rows not ok (3 of 6) are beyond max_failed; send them again shard by shard (showbatch run m.yaml --shard I/3 --retry-failed --date \(night)), then merge again\nshowbatch: merged 3 shards into out/cards-20261201-0001.csv.pgp (3 rows)\nshowbatch: the night has 3 rows not ok of 6, beyond max_failed (1)\n")
        #expect(server.uploaded.isEmpty && work.exists("out/cards-20261201-0001-shard-0.csv.sealed"))
        // The night's state says it is not complete: it is not delivered by hand either.
        let byHand = try await showbatch(["deliver", "m.yaml", "--date", night], in: work.path, environment: environment)
        #expect(byHand.status == 2 && server.uploaded.isEmpty)

        // The alias is known now: each shard's failed row is sent again, and the night merges complete.
        work.write("m.yaml", manifest.replacingOccurrences(of: "tok_a: ", with: "tok_c: \"4012888888881881\", tok_a: "))
        for shard in 0..<3 {
            let retry = try await showbatch(["run", "m.yaml", "--emulate", "--date", night, "--shard", "\(shard)/3", "--retry-failed", "--quiet"],
                                            in: work.path, environment: environment)
            #expect(retry.status == 0, "shard \(shard): \(retry.stderr)")
        }
        let complete = try await showbatch(["merge", "m.yaml", "--shards", "3", "--date", night, "--quiet"], in: work.path, environment: environment)
        #expect(complete.status == 0, "\(complete.stderr)")
        #expect(server.uploaded == ["cards-20261201-0001.csv.pgp", "cards-20261201-0001.csv.pgp.done"])
        #expect(!work.exists("out/cards-20261201-0001-shard-0.csv.sealed"))
    }

    /// The sealed shards and their state stay while the merged night is not delivered (the merge
    /// pod's retry merges it again from them), and go once it is; `--keep-shards` keeps them.
    @Test func theShardsGoOnceTheMergedNightIsDelivered() async throws {
        let work = Workspace(["m.yaml": encryptedManifest, "in/customers.csv": "id,alias\n1,tok_a\n2,tok_b\n3,tok_a\n"])
        work.write("keys/processor.asc", try String(contentsOfFile: GPGFixture.shared.alice.file, encoding: .utf8))
        let server = try SFTPServer()
        defer { work.remove(); server.remove() }
        // The server's port is new each time it starts.
        var environment: [String: String] { sealedNightEnvironment(server) }
        for shard in 0..<2 {
            let run = try await showbatch(["run", "m.yaml", "--emulate", "--date", night, "--shard", "\(shard)/2", "--quiet"], in: work.path, environment: environment)
            #expect(run.status == 0)
        }
        func shardFiles() throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: work.path + "/out").filter { $0.contains("-shard-") }.sorted()
        }
        let shards = try shardFiles()
        #expect(shards == ["cards-20261201-0001-shard-0.csv.sealed", "cards-20261201-0001-shard-0.csv.sealed.identity",
                           "cards-20261201-0001-shard-1.csv.sealed", "cards-20261201-0001-shard-1.csv.sealed.identity",
                           "rejects-20261201-shard-0.csv.sealed", "rejects-20261201-shard-1.csv.sealed"])
        server.stop()
        let down = try await showbatch(["merge", "m.yaml", "--shards", "2", "--date", night, "--quiet"], in: work.path, environment: environment)
        #expect(down.status == 5)
        #expect(try shardFiles() == shards)
        try server.start()
        let kept = try await showbatch(["merge", "m.yaml", "--shards", "2", "--date", night, "--quiet", "--keep-shards"], in: work.path, environment: environment)
        #expect(kept.status == 0 && server.uploaded == ["cards-20261201-0001.csv.pgp", "cards-20261201-0001.csv.pgp.done"], "\(kept.stderr)")
        #expect(try shardFiles() == shards)
        // The night is delivered: a merge without --keep-shards only removes them.
        let again = try await showbatch(["merge", "m.yaml", "--shards", "2", "--date", night], in: work.path, environment: environment)
        #expect(again.status == 0 && again.stderr.hasSuffix(": nothing is delivered again\n"))
        #expect(try shardFiles() == [])
        #expect(work.exists("out/cards-20261201-0001.csv.pgp") && work.exists("out/cards-20261201-0001.csv.pgp.delivered"))
    }

    /// The processor's key changed between the shards and the merge: the night is not made into
    /// a message to a key its shards were not sealed for.
    @Test func aMergeToOtherRecipientsThanTheShardsIsRefused() async throws {
        let manifest = encryptedManifest
        let work = Workspace(["m.yaml": manifest, "in/customers.csv": "id,alias\n1,tok_a\n2,tok_b\n3,tok_a\n"])
        work.write("keys/processor.asc", try String(contentsOfFile: GPGFixture.shared.alice.file, encoding: .utf8))
        let server = try SFTPServer()
        defer { work.remove(); server.remove() }
        let environment = sealedNightEnvironment(server)
        for shard in 0..<2 {
            let run = try await showbatch(["run", "m.yaml", "--emulate", "--date", night, "--shard", "\(shard)/2", "--quiet"], in: work.path, environment: environment)
            #expect(run.status == 0)
        }
        work.write("keys/processor.asc", try String(contentsOfFile: GPGFixture.shared.bob.file, encoding: .utf8))
        let merge = try await showbatch(["merge", "m.yaml", "--shards", "2", "--date", night], in: work.path, environment: environment)
        let (alice, bob) = (GPGFixture.shared.alice.fingerprint, GPGFixture.shared.bob.fingerprint)
        #expect(merge.status == 2)
        #expect(merge.stderr == "showbatch: error: cannot merge out/cards-20261201-0001.csv.pgp: its shard 0/2, out/cards-20261201-0001-shard-0.csv.sealed, is not of this manifest: its identity out/cards-20261201-0001-shard-0.csv.sealed.identity says it was sealed for \(alice), and the manifest's recipients are now \(bob): a night is encrypted only to the keys it was sealed for (run it again for the new keys)\n")
        #expect(!work.exists("out/cards-20261201-0001.csv.pgp") && server.uploaded.isEmpty)
    }
}
