import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A night encrypted to Alice and signed by our key (`encrypt.sign`), its passphrase from the
/// environment; `sign` replaces the signing section.
private func signedManifest(sign: String? = nil, stateKey: Bool = false) -> String {
    let keys = GPGFixture.shared
    return """
    vault: tnt1
    output:
      path: out/cards.csv.pgp
      rejects: out/rejects.csv.pgp
      encrypt:
        recipients: ["\(keys.alice.file)"]
        \(stateKey ? "state_key: \"${SHOWBATCH_STATE_KEY}\"" : "armor: false")
        sign: \(sign ?? "{key_file: \"\(keys.signerSecret)\", passphrase: \"${SIGN_PASSPHRASE}\"}")
    emulator: {aliases: {tok_0: "4000000000000000", tok_1: "4111111111111111"}}
    requests:
      - {name: "r${row.id}", each: {csv: d.csv}, path: /post, payload: {c: "${row.alias}"}, labels: {card: json.c}}
    """
}

private let rows = "id,alias\n1,tok_0\n2,tok_1\n3,tok_9\n"
private let passphrase = ["SIGN_PASSPHRASE": GPGFixture.signerPassphrase]

@Suite(.serialized) struct SignedExportTests {
    /// gpg decrypts the night and its rejects file and finds a good signature by our key; the
    /// passphrase is printed nowhere.
    @Test func aSignedNightIsVerifiedByGPG() async throws {
        let work = Workspace(["m.yaml": signedManifest(), "d.csv": rows])
        defer { work.remove() }
        let run = try await showbatch(["run", "m.yaml", "--emulate"], in: work.path, environment: passphrase)
        #expect(run.status == 1)  // tok_9 is unknown: its row is rejected
        #expect(!run.stderr.contains(GPGFixture.signerPassphrase) && !run.stdout.contains(GPGFixture.signerPassphrase))
        let night = try #require(GPGFixture.shared.decryptVerifying(work.path + "/out/cards.csv.pgp"))
        #expect(String(decoding: night.plain, as: UTF8.self) == "request,status,http_status,attempts,error,card\nr1,ok,200,1,,4000000000000000\nr2,ok,200,1,,4111111111111111\n")
        #expect(night.signedBy == GPGFixture.shared.signer.fingerprint)
        let rejects = try #require(GPGFixture.shared.decryptVerifying(work.path + "/out/rejects.csv.pgp"))
        #expect(rejects.signedBy == GPGFixture.shared.signer.fingerprint)
    }

    /// `plan` names the keys a night is encrypted to and signed with, by fingerprint.
    @Test func planShowsTheKeysByFingerprint() async throws {
        let work = Workspace(["m.yaml": signedManifest(), "d.csv": rows])
        defer { work.remove() }
        let plan = try await showbatch(["plan", "m.yaml"], in: work.path, environment: passphrase)
        #expect(plan.status == 0)
        #expect(plan.stdout.contains("\nencrypt: out/cards.csv.pgp to \(GPGFixture.shared.alice.fingerprint), signed by \(GPGFixture.shared.signer.fingerprint)\n"), "\(plan.stdout)")
    }

    /// A key without a passphrase signs too, and the shards of a night merged are signed by merge.
    @Test func mergeSignsTheMergedNight() async throws {
        let key = ["SHOWBATCH_STATE_KEY": Data((0..<32).map { UInt8($0 * 7 % 256) }).base64EncodedString()]
        let work = Workspace(["m.yaml": signedManifest(sign: "{key_file: \"\(GPGFixture.shared.aliceSecret)\"}", stateKey: true), "d.csv": rows])
        defer { work.remove() }
        for index in 0..<2 {
            let shard = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--shard", "\(index)/2"], in: work.path, environment: key)
            #expect(shard.status == 0 || shard.status == 1, "\(shard.stderr)")
        }
        let merge = try await showbatch(["merge", "m.yaml", "--shards", "2", "--quiet", "--max-failed", "1"], in: work.path, environment: key)
        #expect(merge.status == 0, "\(merge.stderr)")
        let night = try #require(GPGFixture.shared.decryptVerifying(work.path + "/out/cards.csv.pgp"))
        #expect(night.signedBy == GPGFixture.shared.alice.fingerprint)
        #expect(String(decoding: night.plain, as: UTF8.self).hasSuffix("r2,ok,200,1,,4111111111111111\n"))
    }

    /// A signing key that cannot sign stops the run before anything is sent, saying why, never
    /// with the passphrase.
    @Test(arguments: [
        (["SIGN_PASSPHRASE": "not the words"], nil, ": encrypt.sign.passphrase does not unlock the signing key"),
        ([:], "{key_file: \"SIGNER\"}", ": the signing key is protected by a passphrase: give it in encrypt.sign.passphrase"),
        ([:], "{key_file: \"ALICE\"}", " holds no secret key: give our signing key as gpg --export-secret-keys --armor writes it"),
    ] as [([String: String], String?, String)])
    func aKeyThatCannotSignStopsTheRun(environment: [String: String], sign: String?, message: String) async throws {
        let keys = GPGFixture.shared
        let work = Workspace(["d.csv": rows])
        defer { work.remove() }
        // A public key given as the signing key, private as a key file is (no warning of its mode).
        let alice = work.path + "/alice.asc"
        work.write("alice.asc", try String(contentsOfFile: keys.alice.file, encoding: .utf8))
        chmod(alice, 0o600)
        let section = sign?.replacingOccurrences(of: "SIGNER", with: keys.signerSecret).replacingOccurrences(of: "ALICE", with: alice)
        work.write("m.yaml", signedManifest(sign: section))
        let run = try await showbatch(["run", "m.yaml", "--emulate"], in: work.path, environment: environment)
        let file = sign == nil || sign!.contains("SIGNER") ? keys.signerSecret : alice
        let lines = try #require(work.read("m.yaml")?.split(separator: "\n", omittingEmptySubsequences: false))
        let number = try #require(lines.firstIndex { $0.contains("sign:") })
        // Positioned at the sign section, by the run and by validate alike; the passphrase is
        // never quoted, not even as the reference to it.
        let quoted = lines[number].replacingOccurrences(of: "\"${SIGN_PASSPHRASE}\"", with: "<redacted>")
        let expected = "m.yaml:\(number + 1):11: error: output.encrypt.sign: \(file)\(message)\n  \(quoted)\n            ^\n"
        #expect(run.status == 2)
        #expect(run.stderr == expected)
        #expect(!run.stderr.contains("not the words") && !work.exists("out/cards.csv.pgp"))
        let validate = try await showbatch(["validate", "m.yaml"], in: work.path, environment: environment)
        #expect(validate.status == 2)
        #expect(validate.stderr == expected + "m.yaml: 1 problem\n")
        // Without the environment it cannot be tried: validate --no-env says nothing of it.
        #expect(try await showbatch(["validate", "--no-env", "m.yaml"], in: work.path).status == 0)
    }

    /// A key that cannot sign is found before the night takes its number: the night is not left
    /// begun, holding the next one back.
    @Test func aKeyThatCannotSignTakesNoNumber() async throws {
        let manifest = signedManifest().replacingOccurrences(of: "path: out/cards.csv.pgp", with: "path: \"out/cards-${run.date}-${run.seq:2}.csv.pgp\"")
        let work = Workspace(["m.yaml": manifest, "d.csv": rows])
        defer { work.remove() }
        let run = try await showbatch(["run", "m.yaml", "--emulate", "--date", "2026-12-01"], in: work.path,
                                      environment: ["SIGN_PASSPHRASE": "not the words"])
        #expect(run.status == 2)
        #expect(!work.exists("out/.cards-{date}-{seq:2}.csv.pgp.sequence"))
        let fixed = try await showbatch(["run", "m.yaml", "--emulate", "--date", "2026-12-01", "--quiet"], in: work.path, environment: passphrase)
        #expect(fixed.status == 1)  // tok_9 is unknown
        #expect(work.exists("out/cards-20261201-01.csv.pgp"))
    }

    /// A run killed (SIGKILL) while it holds our signing key leaves its home and gpg-agent: the
    /// next run removes that home at once (not an hour later, as a public-keys-only one) and
    /// stops its agent, which cached no passphrase meanwhile.
    @Test func aKilledSigningRunsKeyIsRemovedByTheNextRun() async throws {
        let data = "id,alias\n" + (0..<400).map { "\($0),tok_\($0 % 2)" }.joined(separator: "\n") + "\n"
        // Slow answers: the run is still going (its home there) however late a loaded machine
        // lets this test look for it.
        let work = Workspace(["m.yaml": signedManifest().replacingOccurrences(of: "emulator: {", with: "emulator: {latency: 500ms, "), "d.csv": data])
        defer { work.remove() }
        let temporary = work.path + "/tmp"
        try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var environment = ProcessInfo.processInfo.environment.merging(passphrase) { $1 }
        environment["TMPDIR"] = temporary
        let process = try launch(["run", "m.yaml", "--emulate", "--quiet"], in: work.path, environment: environment)
        func homes() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: temporary)) ?? []).filter { $0.hasPrefix("showbatch-gnupg-") }
        }
        var home: String?
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if let found = homes().first, !((try? FileManager.default.contentsOfDirectory(atPath: temporary + "/" + found + "/private-keys-v1.d")) ?? []).isEmpty {
                home = temporary + "/" + found
                break
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        let killed = try #require(home, "no private home with the signing key appeared")
        kill(process.processIdentifier, SIGKILL)
        await exited(process)
        #expect(processMentions(killed), "the killed run's gpg-agent is not running: nothing to clean up")
        let next = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--output", "other/cards.csv.pgp"], in: work.path, environment: environment)
        #expect(next.status == 0, "\(next.stderr)")
        #expect(!FileManager.default.fileExists(atPath: killed) && homes().isEmpty)
        #expect(!processMentions(killed))
    }

    /// A signing key that expires soon is a warning on every run.
    @Test func aSigningKeyExpiringSoonIsAWarning() async throws {
        let keys = GPGFixture.shared
        let work = Workspace(["m.yaml": signedManifest(sign: "{key_file: \"\(keys.expiringSoonSecret)\"}"), "d.csv": rows])
        defer { work.remove() }
        let run = try await showbatch(["run", "m.yaml", "--emulate"], in: work.path)
        #expect(run.status == 1)
        #expect(run.stderr.contains("showbatch: warning: the signing key \(keys.expiringSoon.fingerprint) of out/cards.csv.pgp expires on "))
        #expect(run.stderr.contains(" day"), "\(run.stderr)")
        #expect(GPGFixture.shared.decryptVerifying(work.path + "/out/cards.csv.pgp")?.signedBy == keys.expiringSoon.fingerprint)
    }
}
