import Foundation
import Testing
import ShowbatchYAML
@testable import ShowbatchBasics
@testable import ShowbatchManifest
import TestSupport

@Suite struct NightNameTests {
    @Test(arguments: [
        ("2026-12-01", "20261201"), ("2024-02-29", "20240229"), ("0001-01-01", "00010101"),
    ])
    func datesTheCalendarHas(text: String, compact: String) throws {
        let date = try #require(NightDate(parsing: text))
        #expect(date.compact == compact && date.description == text)
        #expect(NightDate(compact: compact) == date)
    }

    @Test(arguments: ["2025-02-29", "2026-13-01", "2026-00-10", "2026-12-32", "2026-1-01", "26-12-01", "2026/12/01", "2026-12-01 ", "", "２０２６-12-01"])
    func datesItRefuses(text: String) {
        #expect(NightDate(parsing: text) == nil)
    }

    @Test func namesFillInTheNight() throws {
        let date = try #require(NightDate(parsing: "2026-12-03"))
        #expect(NightName.expand("out/cards-${run.date}-${run.seq:6}.csv", date: date, seq: 42) == "out/cards-20261203-000042.csv")
        #expect(NightName.expand("f${run.seq}_${run.seq:2}", date: date, seq: 1234) == "f1234_1234")
        #expect(NightName.expand("plain.csv", date: date, seq: 1) == "plain.csv")
        #expect(NightName.stateName(of: "out/cards-${run.date}-${run.seq:6}.csv.pgp") == ".cards-{date}-{seq:6}.csv.pgp.sequence")
        #expect(NightName.stateName(of: "c-${run.seq:4}.csv") != NightName.stateName(of: "c-${run.seq:6}.csv"))
        #expect(NightName.names("a-${run.date}.csv") && !NightName.numbers("a-${run.date}.csv"))
        #expect(NightName.numbers("a-${run.seq:3}.csv"))
    }

    private static let base = "vault: tnt1\nrequests: [{name: a, path: /p}]\n"

    @Test(arguments: [
        ("output: {path: \"out/c-${run.day}.csv\"}\n",
         "m.yaml:1:16: error: output.path: ${run.day} is not valid; expected ${run.date}, ${run.seq} or ${run.seq:N} (N from 1 to 12: zero-padded to N digits)\n  output: {path: \"out/c-${run.day}.csv\"}\n                 ^"),
        ("output: {path: \"out/c-${run.seq:13}.csv\"}\n",
         "m.yaml:1:16: error: output.path: ${run.seq:13} is not valid; expected ${run.date}, ${run.seq} or ${run.seq:N} (N from 1 to 12: zero-padded to N digits)\n  output: {path: \"out/c-${run.seq:13}.csv\"}\n                 ^"),
        ("output: {path: \"out/${run.date}/c.csv\"}\n",
         "m.yaml:1:16: error: output.path may name the night (${run.date}, ${run.seq}) in its file name only: the folder keeps the night's sequence state, so it is the same folder every night\n  output: {path: \"out/${run.date}/c.csv\"}\n                 ^"),
        ("output: {path: out/c.csv, rejects: \"out/r-${run.seq}.csv\"}\n",
         "m.yaml:1:36: error: output.rejects holds ${run.seq}, the number of the output's nights, but output.path names no night; put ${run.date} or ${run.seq} in the path too\n  output: {path: out/c.csv, rejects: \"out/r-${run.seq}.csv\"}\n                                     ^"),
        ("headers: {X-Night: \"${run.date}\"}\noutput: {path: out/c.csv}\n",
         // A header's value is a secret: what is wrong with it is said without it.
         "m.yaml:1:20: error: headers.X-Night: the value has a malformed ${…} reference\n  headers: {X-Night: <redacted>}\n                     ^"),
        ("output: {path: out/c.csv}\nrequests: [{name: \"a-${run.seq}\", path: /p}]\nvault: tnt1\n",
         "m.yaml:2:19: error: request 1 name: ${run.seq} names the night a run writes: only output.path, output.rejects, output.header, output.trailer and output.deliver.done take it\n  requests: [{name: \"a-${run.seq}\", path: /p}]\n                    ^"),
    ])
    func misnamedNights(section: String, expected: String) {
        #expect(manifestErrors(section + (section.contains("requests") ? "" : Self.base)) == expected)
    }

    @Test func aPathKeepsTheNightForTheRun() throws {
        let manifest = try loadManifest("output: {path: \"out/c-${run.date}-${run.seq:4}-${SB_NIGHT_TEAM}.csv\", rejects: \"out/r-${run.date}.csv\"}\n" + Self.base,
                                        environment: ["SB_NIGHT_TEAM": "blue"])
        #expect(manifest.output?.path.hasSuffix("out/c-${run.date}-${run.seq:4}-blue.csv") == true)
        #expect(manifest.output?.rejects?.hasSuffix("out/r-${run.date}.csv") == true)
    }

    @Test(arguments: [
        ("sftp://files.example.com/uploads/", "files.example.com", 22, "/uploads/"),
        ("sftp://10.0.0.5:2222/in/", "10.0.0.5", 2222, "/in/"),
        ("sftp://[::1]:2200/~/up/", "::1", 2200, "/~/up/"),
    ])
    func deliveryURLs(text: String, host: String, port: Int, folder: String) throws {
        guard case .success(let destination) = SFTPDestination.parse(text) else { Issue.record("refused \(text)"); return }
        #expect(destination.host == host && destination.port == port && destination.folder == folder)
        #expect(destination.description == text.replacingOccurrences(of: ":22/", with: "/"))
    }

    @Test(arguments: [
        ("https://h/up/", "must be an sftp:// URL: sftp://host[:port]/folder/"),
        ("sftp://bob:pw@h/up/", "must not hold a user or password (give deliver.user and deliver.key_file); found one before \"@\""),
        ("sftp://h/up/file.csv", "must end in / : it names the folder files are uploaded into, not a file"),
        ("sftp://h:99999/up/", "has a port that is not a number from 1 to 65535"),
        ("sftp://h", "needs the folder to upload into: sftp://host[:port]/folder/"),
        ("sftp://h/../etc/", "has a folder with ?, #, %, .. or a space; give the folder as it is on the server"),
    ])
    func deliveryURLsItRefuses(text: String, message: String) {
        #expect(SFTPDestination.parse(text) == .failure(FailureText(message)))
    }

    @Test func deliveryNeedsANightInTheName() {
        let text = "output:\n  path: out/c.csv\n  deliver: {sftp: \"sftp://h/up/\", user: u, key_file: k, known_hosts: kh}\n" + Self.base
        #expect(manifestErrors(text) == "m.yaml:2:9: error: output.path must name the night (${run.date} or ${run.seq}) when output.deliver is set: a processor takes each night's file under its own name, and the night's record beside it is what delivers it once\n    path: out/c.csv\n          ^")
    }

    @Test func aDeliveryPassphraseIsASecret() throws {
        let text = "output:\n  path: \"out/c-${run.seq}.csv\"\n  deliver: {sftp: \"sftp://h/up/\", user: u, key_file: k, known_hosts: kh, passphrase: \"${SB_PHRASE}\", done: \"${file}.done\", bogus: 1}\n" + Self.base
        let errors = manifestErrors(text, environment: ["SB_PHRASE": "hunter2-passphrase"])
        #expect(!errors.contains("hunter2-passphrase"))
        #expect(errors.hasPrefix("m.yaml:3:"))
        let manifest = try loadManifest(String(text.replacingOccurrences(of: ", bogus: 1", with: "")), environment: ["SB_PHRASE": "hunter2-passphrase"])
        let deliver = try #require(manifest.output?.deliver)
        #expect(deliver.done == "${file}.done" && deliver.user == "u" && deliver.destination.host == "h")
        #expect(!deliver.description.contains("hunter2"))
        #expect(deliver.doneName(file: "c-7.csv", date: NightDate(parsing: "2026-12-03")!, seq: 7) == "c-7.csv.done")
    }
}
