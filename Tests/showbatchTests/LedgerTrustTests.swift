import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

private let manifest = """
vault: tnt1
output:
  path: "out/cards-${run.date}-${run.seq:4}.csv"
  columns: [{id: "${row.id}"}, card, status]
  deliver:
    sftp: "${SB_SFTP_URL}"
    user: "${SB_SFTP_USER}"
    key_file: "${SB_SFTP_KEY}"
    known_hosts: "${SB_KNOWN_HOSTS}"
emulator:
  aliases: {tok_a: "4111111111111111"}
requests:
  - {name: "c-${row.id}", each: {csv: in/customers.csv}, path: /post, payload: {card: "${row.alias}"}, labels: {card: json.card}}
"""

private let ledger = "out/.cards-{date}-{seq:4}.csv.sequence"

/// The ledger is the one record of the nights, and the files beside it vouch for it: no side
/// file lost, and no ledger lost or rolled back, sends a delivered night again or numbers one anew.
@Suite(.serialized) struct LedgerTrustTests {
    private func night(_ work: Workspace, _ server: SFTPServer, _ day: Int, _ extra: [String] = []) async throws -> Execution {
        work.write("in/customers.csv", "id,alias\n\(day),tok_a\n")
        return try await showbatch(["run", "m.yaml", "--emulate", "--date", "2026-11-0\(day)"] + extra, in: work.path,
                                   environment: ["SB_SFTP_URL": server.url, "SB_SFTP_USER": server.user, "SB_SFTP_KEY": server.clientKey,
                                                 "SB_KNOWN_HOSTS": server.knownHosts])
    }

    private func setUp() throws -> (Workspace, SFTPServer) { (Workspace(["m.yaml": manifest]), try SFTPServer()) }

    /// The delivery record beside a file is a copy: without it the ledger still says delivered.
    @Test func aLostDeliveryRecordSendsNothingAgain() async throws {
        let (work, server) = try setUp()
        defer { work.remove(); server.remove() }
        #expect(try await night(work, server, 1).status == 0)
        unlink(work.path + "/out/cards-20261101-0001.csv.delivered")
        let again = try await night(work, server, 1)
        #expect(again.status == 0)
        #expect(again.stderr.contains(": nothing is delivered again\n"), "\(again.stderr)")
        #expect(server.uploaded == ["cards-20261101-0001.csv"])
    }

    /// A deleted ledger is refused (exit 3), not started again at 1; rebuilt from the files and
    /// records beside it, the next night is number 2 and the first is never sent again.
    @Test func aDeletedLedgerIsRefusedAndRebuiltFromTheRecords() async throws {
        let (work, server) = try setUp()
        defer { work.remove(); server.remove() }
        #expect(try await night(work, server, 1).status == 0)
        unlink(work.path + "/" + ledger)
        let refused = try await night(work, server, 2)
        #expect(refused.status == 3)
        #expect(refused.stderr == "showbatch: error: out/.cards-{date}-{seq:4}.csv.sequence, the ledger of out/cards-${run.date}-${run.seq:4}.csv's nights, is missing, but out/cards-20261101-0001.csv.delivered records a night of it: the ledger was deleted; nothing is numbered anew or sent again from nothing: check the volume was not restored from an older copy, then run again with --rebuild-ledger, which rebuilds it from these records\n")
        #expect(!work.exists("out/cards-20261102-0001.csv"))
        let rebuilt = try await night(work, server, 2, ["--rebuild-ledger"])
        #expect(rebuilt.status == 0, "\(rebuilt.stderr)")
        #expect(server.uploaded == ["cards-20261101-0001.csv", "cards-20261102-0002.csv"])
        // The first night, run again, is the processor's already.
        let first = try await night(work, server, 1)
        #expect(first.status == 0 && first.stderr.contains(": nothing is delivered again\n"), "\(first.stderr)")
        #expect(server.uploaded == ["cards-20261101-0001.csv", "cards-20261102-0002.csv"])
    }

    /// A ledger copied back from before the second night: refused, never numbering the third
    /// night 2 again; rebuilt, the third night is number 3.
    @Test func aRolledBackLedgerIsRefused() async throws {
        let (work, server) = try setUp()
        defer { work.remove(); server.remove() }
        #expect(try await night(work, server, 1).status == 0)
        let old = try #require(work.read(ledger))
        #expect(try await night(work, server, 2).status == 0)
        work.write(ledger, old)
        chmod(work.path + "/" + ledger, 0o600)
        let refused = try await night(work, server, 3)
        #expect(refused.status == 3)
        #expect(refused.stderr.hasPrefix("showbatch: error: out/.cards-{date}-{seq:4}.csv.sequence is older than out/cards-20261102-0002.csv.delivered (the ledger's generation "), "\(refused.stderr)")
        #expect(refused.stderr.contains("): it was rolled back; check the volume was not restored from an older copy, then run again with --rebuild-ledger"))
        // Without the record either, the file's number says it.
        unlink(work.path + "/out/cards-20261102-0002.csv.delivered")
        let numbered = try await night(work, server, 3)
        #expect(numbered.status == 3)
        #expect(numbered.stderr.contains("numbers nights up to 1, but out/cards-20261102-0002.csv is numbered 2"), "\(numbered.stderr)")
        let rebuilt = try await night(work, server, 3, ["--rebuild-ledger"])
        #expect(rebuilt.status == 0, "\(rebuilt.stderr)")
        #expect(server.uploaded == ["cards-20261101-0001.csv", "cards-20261102-0002.csv", "cards-20261103-0003.csv"])
    }
}
