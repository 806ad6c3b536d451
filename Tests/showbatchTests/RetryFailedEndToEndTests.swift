import Foundation
import Testing
import TestSupport

/// A night of `rows` customers: every 7th data row has one field of two (it cannot be sent, so it
/// fails again whenever it is sent again), and `lone`, the first work item, is partial. The
/// endpoint fails rows at `failRate` (seeded). `output` is the output section's inside.
private func nightManifest(output: String, failRate: String) -> String {
    """
    vault: tnt1
    concurrency: 1
    retry: {attempts: 1}
    output: {\(output)}
    emulator: {aliases: {tok_0: "4000000000000000", tok_1: "4111111111111111"}, fail_rate: \(failRate), seed: 3}
    requests:
      - {name: lone, path: /p, payload: {c: tok_0}, labels: {card: json.nope}}
      - {name: "r${row.id}", each: {csv: d.csv}, path: /p, payload: {c: "${row.alias}"}, labels: {card: json.c}}
    """
}

private func customers(_ count: Int) -> String {
    "id,alias\n" + (0..<count).map { $0 % 7 == 3 ? "\($0)" : "\($0),tok_\($0 % 2)" }.joined(separator: "\n") + "\n"
}

private let stateKey = ["SHOWBATCH_STATE_KEY": Data((0..<32).map { UInt8($0 * 5 % 256) }).base64EncodedString()]

/// The paths in `text` named as OpenPGP messages.
private func pgp(_ text: String) -> String {
    text.replacingOccurrences(of: ".csv", with: ".csv.pgp").replacingOccurrences(of: ".jsonl.gz", with: ".jsonl.gz.pgp")
}

/// The output section `output`, encrypted to the test's recipient with a state key.
private func encrypted(_ output: String) -> String {
    pgp(output) + ", encrypt: {recipients: [\"\(GPGFixture.shared.alice.file)\"], state_key: \"${SHOWBATCH_STATE_KEY}\"}"
}

/// What a reader of `path` gets: its bytes, decrypted (a message) and decompressed (gzip, whose
/// members end at checkpoints, which come with time).
private func rows(_ path: String) -> [UInt8]? {
    var bytes = path.hasSuffix(".pgp") ? GPGFixture.shared.decrypt(path) : FileManager.default.contents(atPath: path).map { Array($0) }
    if path.replacingOccurrences(of: ".pgp", with: "").hasSuffix(".gz"), let compressed = bytes {
        bytes = gunzipped(compressed)
    }
    return bytes
}

/// Every file under `folder` holding a card in the clear.
private func filesWithCards(_ folder: String) -> [String] {
    let walker = FileManager.default.enumerator(atPath: folder)
    var found: [String] = []
    while let name = walker?.nextObject() as? String {
        let text = String(decoding: FileManager.default.contents(atPath: folder + "/" + name) ?? Data(), as: UTF8.self)
        if text.contains("4000000000000000") || text.contains("4111111111111111") { found.append(name) }
    }
    return found
}

/// `--retry-failed` of the outputs it used to refuse: with rejects, gzip, encrypted, and per
/// shard before a merge. An exit-1 night is completed by sending its failed rows only, and its
/// files end as a night without those failures writes them.
@Suite(.serialized) struct RetryFailedEndToEndTests {
    /// The files of a run of `output` without the endpoint's failures, read and removed.
    private func cleanNight(_ work: Workspace, _ output: String, _ files: [String]) async throws -> [[UInt8]?] {
        work.write("clean.yaml", nightManifest(output: output, failRate: "0"))
        let run = try await showbatch(["run", "clean.yaml", "--emulate", "--quiet"], in: work.path)
        #expect(run.status == 1, "\(run.stderr)")
        defer { try? FileManager.default.removeItem(atPath: work.path + "/out") }
        return files.map { rows(work.path + "/" + $0) }
    }

    /// An encrypted output is rewritten from the rows kept sealed beside its message, never from
    /// the message (which showbatch cannot decrypt: here it is even replaced by junk first); the
    /// new messages decrypt to the files of a night without the endpoint's failures, and no card
    /// is on disk in the clear at any point.
    @Test(arguments: [
        ("path: out/r.csv, rejects: out/rejects.csv, reject_partial: true", ["out/r.csv", "out/rejects.csv"]),
        ("path: out/r.jsonl.gz", ["out/r.jsonl.gz"]),
    ])
    func anEncryptedNightIsCompletedFromItsSealedRows(output: String, files: [String]) async throws {
        let work = Workspace(["d.csv": customers(80)])
        defer { work.remove() }
        let expected = try await cleanNight(work, output, files)
        let messages = files.map(pgp)
        work.write("m.yaml", nightManifest(output: encrypted(output), failRate: "0.4"))
        let night = try await showbatch(["run", "m.yaml", "--emulate", "--quiet"], in: work.path, environment: stateKey)
        #expect(night.status == 1, "\(night.stderr)")
        let differs = messages.map { rows(work.path + "/" + $0) } != expected
        #expect(differs, "the night with failures already wrote the clean files")
        for message in messages { #expect(work.exists(message + ".sealed")) }
        #expect(filesWithCards(work.path + "/out").isEmpty)
        for message in messages { work.write(message, "not an OpenPGP message") }
        work.write("m.yaml", nightManifest(output: encrypted(output), failRate: "0"))
        let retry = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--retry-failed"], in: work.path, environment: stateKey)
        // The rows of one field fail again.
        #expect(retry.status == 1, "\(retry.stderr)")
        let same = messages.map { rows(work.path + "/" + $0) } == expected
        #expect(same, "the rewritten messages do not decrypt to the clean night's files (compared here: a failure prints no row)")
        #expect(filesWithCards(work.path + "/out").isEmpty)
        let left = try FileManager.default.contentsOfDirectory(atPath: work.path + "/out").sorted()
        let names = messages.map { String($0.dropFirst(4)) }
        #expect(left == (names + names.map { $0 + ".sealed" } + [names[0] + ".journal"]).sorted())
        for name in left { #expect((try? FileManager.default.attributesOfItem(atPath: work.path + "/out/" + name))?[.posixPermissions] as? Int == 0o600) }
    }

    /// Each shard's failed rows are sent again into its own files (with rejects, gzip, sealed),
    /// and the merge then writes what one unsharded night without those failures writes.
    @Test(arguments: [
        ("path: out/r.csv, rejects: out/rejects.csv, reject_partial: true", ["out/r.csv", "out/rejects.csv"], false),
        ("path: out/r.jsonl.gz, rejects: out/rejects.csv", ["out/r.jsonl.gz", "out/rejects.csv"], false),
        ("path: out/r.csv, rejects: out/rejects.csv", ["out/r.csv", "out/rejects.csv"], true),
    ])
    func shardsRetriedThenMergedAreTheCleanNight(output: String, files: [String], encrypt: Bool) async throws {
        let work = Workspace(["d.csv": customers(90)])
        defer { work.remove() }
        let expected = try await cleanNight(work, output, files)
        let section = encrypt ? encrypted(output) : output
        let merged = encrypt ? files.map(pgp) : files
        work.write("m.yaml", nightManifest(output: section, failRate: "0.4"))
        for index in 0..<3 {
            let shard = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--shard", "\(index)/3"], in: work.path, environment: stateKey)
            #expect(shard.status == 1, "\(shard.stderr)")
        }
        work.write("m.yaml", nightManifest(output: section, failRate: "0"))
        for index in 0..<3 {
            let retry = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--shard", "\(index)/3", "--retry-failed"], in: work.path,
                                            environment: stateKey)
            #expect(retry.status == 1, "\(retry.stderr)")
        }
        let merge = try await showbatch(["merge", "m.yaml", "--shards", "3"], in: work.path, environment: stateKey)
        // The rows of one field fail again: the night is beyond max_failed, as the unsharded one is.
        #expect(merge.status == 1, "\(merge.stderr)")
        let same = merged.map { rows(work.path + "/" + $0) } == expected
        #expect(same, "the merged files are not the clean unsharded night's (compared here: a failure prints no row)")
        if encrypt { #expect(filesWithCards(work.path + "/out").isEmpty) }
    }
}
