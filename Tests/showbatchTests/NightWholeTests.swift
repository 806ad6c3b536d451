import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The first user's night: 300 cards, a header and a trailer, rejects, delivered by SFTP, and a
/// label path that is not in the answer (`LABEL`), so that every row comes back partial.
/// `encrypted`: to the processor's key (alice), with a state key and signed by our key.
private func nightManifest(label: String, encrypted: Bool) -> String {
    let keys = GPGFixture.shared
    let pgp = encrypted ? ".pgp" : ""
    let encrypt = encrypted ? """
      encrypt:
        recipients: ["\(keys.alice.file)"]
        state_key: "${SB_STATE_KEY}"
        sign: {key_file: "\(keys.signerSecret)", passphrase: "${SIGN_PASSPHRASE}"}

    """ : ""
    return """
    vault: tnt1
    max_failed: 0
    output:
      path: "out/cards-${run.date}-${run.seq:4}.csv\(pgp)"
      rejects: "out/rejects-${run.date}.csv\(pgp)"
      columns: [{id: "${row.id}"}, card]
      header: "HDR,${run.date},${run.seq:4}"
      trailer: "TRL,${run.rows}"
    \(encrypt)  deliver:
        sftp: "${SB_SFTP_URL}"
        user: "${SB_SFTP_USER}"
        key_file: "${SB_SFTP_KEY}"
        known_hosts: "${SB_KNOWN_HOSTS}"
    emulator:
      aliases: in/aliases.csv
      response: {data: {card: "${body.card}"}}
    requests:
      - name: "c-${row.id}"
        each: {csv: in/customers.csv}
        path: /post
        payload: {card: "${row.alias}"}
        labels: {card: \(label)}
    """
}

private let count = 300
private let customers = "id,alias\n" + (0..<count).map { "\($0),tok_\($0)\n" }.joined()
private let aliases = "alias,value\n" + (0..<count).map { "tok_\($0),41111111111\(String(format: "%05d", $0))\n" }.joined()
private let night = "2026-12-01"

@Suite(.serialized) struct NightWholeTests {
    private func environment(_ server: SFTPServer) -> [String: String] {
        ["SB_SFTP_URL": server.url, "SB_SFTP_USER": server.user, "SB_SFTP_KEY": server.clientKey, "SB_KNOWN_HOSTS": server.knownHosts,
         "SB_STATE_KEY": Data(repeating: 9, count: 32).base64EncodedString(), "SIGN_PASSPHRASE": GPGFixture.signerPassphrase]
    }

    /// The lines of a file the night wrote, decrypted when it is a message.
    private func lines(_ path: String, encrypted: Bool) throws -> [String] {
        let read: [UInt8]? = encrypted ? GPGFixture.shared.decrypt(path) : FileManager.default.contents(atPath: path).map { Array($0) }
        let bytes = try #require(read)
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// Every row partial: the night is not delivered, and `--retry-failed` (which sends failed
    /// rows, and a partial row's answer would be the same) neither delivers it nor loses a row;
    /// the message says what to run once the label is fixed, and that delivers it whole.
    @Test(arguments: [true, false])
    func aNightOfPartialRowsIsNeverDeliveredUntilItIsFixed(encrypted: Bool) async throws {
        let pgp = encrypted ? ".pgp" : ""
        let work = Workspace(["m.yaml": nightManifest(label: "data.card_number", encrypted: encrypted),
                              "in/customers.csv": customers, "in/aliases.csv": aliases])
        let server = try SFTPServer()
        defer { work.remove(); server.remove() }
        let environment = environment(server)
        let file = "cards-20261201-0001.csv\(pgp)"
        let rejects = work.path + "/out/rejects-20261201.csv\(pgp)"

        let first = try await showbatch(["run", "m.yaml", "--emulate", "--date", night], in: work.path, environment: environment)
        #expect(first.status == 1)
        #expect(server.uploaded.isEmpty)
        #expect(try lines(rejects, encrypted: encrypted).count == count + 1)
        let fix = "showbatch: next: \(count) of the night's rows not ok are partial (1403), which a retry answers the same: fix the manifest's labels or the data, then run the night again (showbatch run m.yaml --date \(night) --emulate)\n"
        #expect(first.stderr.contains("showbatch: the night of \(night) in out/\(file) (sequence 1) has \(count) rows not ok of \(count), beyond max_failed (0): it is not finished for the processor\n" + fix),
                "\(first.stderr)")

        let retry = try await showbatch(["run", "m.yaml", "--emulate", "--date", night, "--retry-failed"], in: work.path, environment: environment)
        #expect(retry.status == 1)
        #expect(server.uploaded.isEmpty)
        #expect(retry.stderr.contains("showbatch: the night of \(night) in out/\(file) (sequence 1) has \(count) rows not ok of \(count), beyond max_failed (0)"),
                "\(retry.stderr)")
        #expect(retry.stderr.contains("then run the night again (showbatch run m.yaml --date \(night) --emulate)\n"))
        // No row lost: the rejects file holds every row, as before.
        #expect(try lines(rejects, encrypted: encrypted).count == count + 1)

        // The label fixed, the night is run again under its number and delivered whole.
        work.write("m.yaml", nightManifest(label: "data.card", encrypted: encrypted))
        let fixed = try await showbatch(["run", "m.yaml", "--emulate", "--date", night], in: work.path, environment: environment)
        #expect(fixed.status == 0, "\(fixed.stderr)")
        #expect(fixed.stderr.contains("showbatch: warning: out/\(file): the manifest makes other rows than when the night of \(night) was finished at "))
        #expect(server.uploaded == [file])
        let delivered = try lines(server.uploads + "/" + file, encrypted: encrypted)
        #expect(delivered.first == "HDR,20261201,0001" && delivered.last == "TRL,\(count)" && delivered.count == count + 3)
        #expect(try lines(rejects, encrypted: encrypted).count == 1)
    }

    /// `--date` a year out (a typo) is refused, naming today; `--allow-future` takes it;
    /// `yesterday` and `today` are days of the clock.
    @Test func aDateFarAheadIsRefusedAndYesterdayIsTaken() async throws {
        let work = Workspace(["m.yaml": """
        vault: tnt1
        output: {path: "out/c-${run.date}.csv"}
        emulator: {aliases: {tok_0: "4111111111111111"}}
        requests: [{name: "r${row.id}", each: {csv: d.csv}, path: /post, payload: {c: "${row.alias}"}, labels: {card: json.c}}]
        """, "d.csv": "id,alias\n1,tok_0\n"])
        defer { work.remove() }
        let today = utcDay(Date())
        for (word, day) in [("yesterday", utcDay(Date().addingTimeInterval(-86_400))), ("today", today)] {
            let run = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--date", word, "--allow-repeat"], in: work.path, environment: ["TZ": "UTC"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(work.exists("out/c-\(day.replacingOccurrences(of: "-", with: "")).csv"))
        }
        let ahead = utcDay(Date().addingTimeInterval(400 * 86_400))
        let refused = try await showbatch(["run", "m.yaml", "--emulate", "--date", ahead, "--allow-repeat"], in: work.path, environment: ["TZ": "UTC"])
        #expect(refused.status == 2)
        #expect(refused.stderr.hasPrefix("showbatch: error: --date \(ahead) is 400 days after today (\(today) in TZ=UTC): "))
        #expect(!work.exists("out/c-\(ahead.replacingOccurrences(of: "-", with: "")).csv"))
        let allowed = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--date", ahead, "--allow-future", "--allow-repeat"],
                                          in: work.path, environment: ["TZ": "UTC"])
        #expect(allowed.status == 0)
        #expect(work.exists("out/c-\(ahead.replacingOccurrences(of: "-", with: "")).csv"))
        // Taken, it stands before every real night after it: the reason a typo is refused.
        let real = utcDay(Date().addingTimeInterval(-2 * 86_400))
        let next = try await showbatch(["run", "m.yaml", "--emulate", "--date", real, "--allow-repeat"], in: work.path, environment: ["TZ": "UTC"])
        #expect(next.status == 2)
        #expect(next.stderr.hasPrefix("showbatch: error: the night of \(real) would come after the night of \(ahead) ("))
        let wrong = try await showbatch(["run", "m.yaml", "--date", "tomorrow"], in: work.path)
        #expect(wrong.status == 2)
        #expect(wrong.stderr.hasPrefix("showbatch: error: --date must be a date YYYY-MM-DD (such as 2026-12-01), yesterday or today; got \"tomorrow\"\n"))
    }

    /// `--retry-failed` of a night that never began is refused before anything is sent, and takes no number.
    @Test func aRetryOfANightNeverWrittenIsRefused() async throws {
        let work = Workspace(["m.yaml": """
        vault: tnt1
        output: {path: "out/c-${run.date}-${run.seq}.csv"}
        emulator: {aliases: {tok_0: "4111111111111111"}}
        requests: [{name: "r${row.id}", each: {csv: d.csv}, path: /post, payload: {c: "${row.alias}"}, labels: {card: json.c}}]
        """, "d.csv": "id,alias\n1,tok_0\n"])
        defer { work.remove() }
        let retry = try await showbatch(["run", "m.yaml", "--emulate", "--date", night, "--retry-failed"], in: work.path)
        #expect(retry.status == 2)
        #expect(retry.stderr == "showbatch: error: out/c-20261201-1.csv was never written for the night of \(night), so it has no failed rows to send again; run without --retry-failed\n")
        #expect(!work.exists("out/.c-{date}-{seq}.csv.sequence"))
    }
}

/// `YYYY-MM-DD` of `date` in UTC.
private func utcDay(_ date: Date) -> String {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "UTC")
    formatter.dateFormat = "yyyy-MM-dd"
    return formatter.string(from: date)
}
