import Foundation
import Synchronization
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// The cards the emulator reveals in these tests: none may be found in the clear in any file.
private let cards = ["4000000000000000", "4111111111111111", "4222222222222222"]

/// A run over `rows` data rows; every 13th row is malformed (a failed row) and `tok_3` has no
/// value (a partial row). `output` is the output section, `{path}` and `{encrypt}` filled in.
private func exportManifest(output: String, rows: Int = 120, latency: String = "0ms", labelFile: Bool = false, failRate: String = "0") -> String {
    """
    vault: tnt1
    concurrency: 4
    \(output)
    emulator: {aliases: {tok_0: "4000000000000000", tok_1: "4111111111111111", tok_2: "4222222222222222", tok_doc: "\(Data("scan of 4111111111111111".utf8).base64EncodedString())"}, latency: \(latency), fail_rate: \(failRate), seed: 5}
    retry: {attempts: 1}
    requests:
      - name: "r${row.id}"
        each: {csv: d.csv}
        path: /post
        payload: {c: "${row.alias}", id: "${row.id}", doc: tok_doc}
        labels:
          c: json.c
          last4: {path: json.c, mask: {ranges: [[0, 11]]}}
          id: {path: json.id, revealed: optional}\(labelFile ? "\n      doc: {path: json.doc, decode: base64, file: \"docs/${row.id}.txt.pgp\"}" : "")
    """
}

private func rows(_ count: Int) -> String {
    "id,alias\n" + (0..<count).map { $0 % 13 == 5 ? "\($0)" : "\($0),tok_\($0 % 4)" }.joined(separator: "\n") + "\n"
}

/// Every file under `folder` (recursively) that holds a card in the clear, or in a gzip stream
/// (as much of it as can be decompressed).
private func filesWithCards(_ folder: String) -> [String] {
    var found: [String] = []
    guard let walker = FileManager.default.enumerator(atPath: folder) else { return [] }
    for case let name as String in walker {
        guard let data = FileManager.default.contents(atPath: folder + "/" + name) else { continue }
        var text = String(decoding: data, as: UTF8.self)
        if data.starts(with: [0x1F, 0x8B]) { text += String(decoding: gunzipped(Array(data), partly: true) ?? [], as: UTF8.self) }
        if cards.contains(where: text.contains) { found.append(name) }
    }
    return found
}

/// Whether the OpenPGP message in `file` decrypts to `expected` (compared here, so that a failure
/// prints no card: callers keep the result in a Bool before `#expect`, which would print the
/// arguments of a call it is given); with `gunzip`, the decompressed bytes of both are compared (gzip members end
/// at checkpoints, which come with time, so only the content is the same from run to run).
private func decrypts(_ file: String, to expected: [UInt8]?, gunzip: Bool = false) -> Bool {
    guard let plain = GPGFixture.shared.decrypt(file), let expected else { return false }
    return gunzip ? gunzipped(plain) == gunzipped(expected) : plain == expected
}

/// `gzip -dc` of `bytes`; `partly`: what it gives before an error (a stream cut short).
func gunzipped(_ bytes: [UInt8], partly: Bool = false) -> [UInt8]? {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/gzip")
    process.arguments = ["-dc"]
    let input = Pipe(), output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    guard (try? process.run()) != nil else { return nil }
    let writer = Thread {
        try? input.fileHandleForWriting.write(contentsOf: Data(bytes))
        try? input.fileHandleForWriting.close()
    }
    writer.start()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return process.terminationStatus == 0 || partly ? Array(data) : nil
}

/// An encrypt section to the test's recipient, with the state key from the environment.
private func encrypt(stateKey: Bool = true, armor: Bool = false, recipients: [String] = [GPGFixture.shared.alice.file]) -> String {
    "encrypt: {recipients: [\(recipients.map { "\"\($0)\"" }.joined(separator: ", "))]\(stateKey ? ", state_key: \"${SHOWBATCH_STATE_KEY}\"" : "")\(armor ? ", armor: true" : "")}"
}

private let stateKeyEnvironment = ["SHOWBATCH_STATE_KEY": Data((0..<32).map { UInt8($0 * 7 % 256) }).base64EncodedString()]

/// Encrypted exports (`output.encrypt`): the file is one OpenPGP message that the real gpg
/// decrypts to exactly the bytes an unencrypted run writes, and no card is ever on disk in the
/// clear, not while the run lasts, not after a kill, not in a shard.
@Suite(.serialized) struct EncryptedExportTests {
    /// The unencrypted run's files, read and removed.
    private func plainRun(_ work: Workspace, _ output: String, files: [String], rows count: Int = 120, labelFile: Bool = false) async throws -> [[UInt8]?] {
        work.write("plain.yaml", exportManifest(output: output, rows: count, labelFile: labelFile))
        let plain = try await showbatch(["run", "plain.yaml", "--emulate", "--quiet"], in: work.path)
        #expect(plain.status == 1, "\(plain.stderr)")
        defer { try? FileManager.default.removeItem(atPath: work.path + "/out") }
        return files.map { name in FileManager.default.contents(atPath: work.path + "/" + name).map { Array($0) } }
    }

    @Test(arguments: [
        ("output: {path: out/r.csv, csv: {delimiter: \";\", line_ending: crlf}}", ["out/r.csv"]),
        ("output: {path: out/r.json}", ["out/r.json"]),
        ("output: {path: out/r.jsonl, columns: [request, status, c, {row_id: \"${row.id}\"}]}", ["out/r.jsonl"]),
        ("output: {path: out/r.jsonl.gz}", ["out/r.jsonl.gz"]),
        ("output: {path: out/r.csv, rejects: out/rejects.csv, reject_partial: true}", ["out/r.csv", "out/rejects.csv"]),
    ])
    func anEncryptedOutputDecryptsToTheUnencryptedRunsBytes(output: String, files: [String]) async throws {
        let work = Workspace(["d.csv": rows(120)])
        defer { work.remove() }
        let expected = try await plainRun(work, output, files: files)
        // The same output encrypted: each file named .pgp, the rejects file too.
        var encrypted = output.replacingOccurrences(of: "}", with: ", \(encrypt())}", options: .backwards, range: output.range(of: "}", options: .backwards))
        for file in files { encrypted = encrypted.replacingOccurrences(of: file.dropFirst(4) + ",", with: file.dropFirst(4) + ".pgp,") }
        encrypted = encrypted.replacingOccurrences(of: "rejects.csv,", with: "rejects.csv.pgp,")
        work.write("m.yaml", exportManifest(output: encrypted))
        let run = try await showbatch(["run", "m.yaml", "--emulate", "--quiet"], in: work.path, environment: stateKeyEnvironment)
        #expect(run.status == 1, "\(run.stderr)")
        for (file, bytes) in zip(files, expected) {
                let matches = decrypts(work.path + "/" + file + ".pgp", to: bytes, gunzip: file.hasSuffix(".gz"))
            #expect(matches, "\(file)")
        }
        #expect(filesWithCards(work.path + "/out").isEmpty)
        // What is left: the messages and, since rows failed, the journal and each message's rows
        // still sealed (showbatch cannot read a message back): what --retry-failed rewrites from.
        let left = try FileManager.default.contentsOfDirectory(atPath: work.path + "/out").sorted()
        let messages = files.map { String($0.dropFirst(4)) + ".pgp" }
        #expect(left == (messages + messages.map { $0 + ".sealed" } + [messages[0] + ".journal"]).sorted())
    }

    /// The journal records a MAC of the rows' hash at each checkpoint and at the end, never the
    /// FNV-1a of what was written: its running state at two checkpoints would let anyone try card
    /// numbers offline until one fits the bytes between them.
    @Test func theJournalGivesNoWayToTestGuessesOfTheRows() async throws {
        let work = Workspace(["d.csv": rows(1_000)])
        defer { work.remove() }
        let plain = try #require(try await plainRun(work, "output: {path: out/r.csv}", files: ["out/r.csv"], rows: 1_000)[0])
        work.write("m.yaml", exportManifest(output: "output: {path: out/r.csv.pgp, \(encrypt())}", rows: 1_000, latency: "20ms"))
        // Interrupted after its second checkpoint (one a second): the journal stays, as after a crash.
        let path = work.path + "/out/r.csv.pgp.journal"
        let run = try await showbatch(["run", "m.yaml", "--emulate", "--quiet"], in: work.path, environment: stateKeyEnvironment) { _ in
            ((try? String(contentsOfFile: path, encoding: .utf8))?.components(separatedBy: "\"checkpoint\"").count ?? 0) > 2
        }
        #expect(run.status == 130, "\(run.stderr)")
        let journal = try #require(FileManager.default.contents(atPath: path))
        let checkpoint = try #require(try JournalCodec.read(Array(journal))?.lastCheckpoint)
        let inRange = checkpoint.offset > 0 && checkpoint.offset <= plain.count
        let notFNV = inRange && checkpoint.hash != fnv1a(plain[..<checkpoint.offset])
        #expect(inRange && notFNV)
        // No hash of any prefix of the rows is in the journal.
        let text = String(decoding: journal, as: UTF8.self)
        var prefix = fnvOffsetBasis
        var found = 0
        for byte in plain {
            prefix = fnv1a(CollectionOfOne(byte), seed: prefix)
            if text.contains("\"\(String(prefix, radix: 16))\"") { found += 1 }
        }
        #expect(found == 0)
    }

    /// An interrupt while encrypted label files are written (a gpg run each, the writer far
    /// behind the requests): the row in hand is the last written, not the thousands queued, and
    /// `--resume` writes the rest. (Before, the writer wrote every queued row first: 30 s.)
    @Test func anInterruptDoesNotWaitForQueuedLabelFiles() async throws {
        let count = 600
        let work = Workspace(["d.csv": rows(count)])
        defer { work.remove() }
        work.write("m.yaml", exportManifest(output: "output: {path: out/r.csv.pgp, \(encrypt())}", rows: count, labelFile: true))
        let atSignal = Mutex<Int?>(nil)
        let docs = work.path + "/out/docs"
        let run = try await showbatch(["run", "m.yaml", "--emulate", "--quiet"], in: work.path, environment: stateKeyEnvironment) { _ in
            let written = (try? FileManager.default.contentsOfDirectory(atPath: docs).count) ?? 0
            guard written >= 40 else { return false }
            atSignal.withLock { $0 = written }
            return true
        }
        #expect(run.status == 130, "\(run.stderr)")
        let before = try #require(atSignal.withLock { $0 })
        let after = try FileManager.default.contentsOfDirectory(atPath: docs).filter { $0.hasSuffix(".txt.pgp") }.count
        #expect(after - before < 40, "\(before) label files when interrupted, \(after) at the end")
        let resumed = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--resume"], in: work.path, environment: stateKeyEnvironment)
        #expect(resumed.status == 1, "\(resumed.stderr)")
        // Rows without an alias fail before they are sent; tok_3 is no alias the emulator knows, so
        // its rows come back unrevealed and fail (1408) with no file written.
        let documents = (0..<count).filter { $0 % 13 != 5 && $0 % 4 != 3 }.count
        #expect(try FileManager.default.contentsOfDirectory(atPath: docs).count == documents)
        #expect(filesWithCards(work.path + "/out").isEmpty)
    }

    /// A machine that cannot run GnuPG (no folder for its private home, here) is not a manifest
    /// problem: validate warns, and a run stops with exit 3 (this machine), not 2.
    @Test func aMachineThatCannotRunGnuPGIsNotAManifestProblem() async throws {
        let work = Workspace(["d.csv": rows(3), "m.yaml": exportManifest(output: "output: {path: out/r.csv.pgp, \(encrypt(stateKey: false))}", rows: 3)])
        defer { work.remove() }
        let noHome = ["TMPDIR": work.path + "/missing"]
        let validate = try await showbatch(["validate", "m.yaml"], in: work.path, environment: noHome)
        #expect(validate.status == 0)
        #expect(validate.stderr.hasPrefix("m.yaml:3:40: warning: the recipients' keys of output.encrypt cannot be checked on this machine: cannot make a private GnuPG home in \(work.path)/missing: No such file or directory\n"), "\(validate.stderr)")
        let run = try await showbatch(["run", "m.yaml", "--emulate", "--quiet"], in: work.path, environment: noHome)
        #expect(run.status == 3)
        #expect(run.stderr == "showbatch: error: cannot encrypt out/r.csv.pgp: cannot make a private GnuPG home in \(work.path)/missing: No such file or directory\n")
        #expect(!work.exists("out/r.csv.pgp"))
    }

    /// A run killed with SIGKILL leaves its private GnuPG home (public keys only); the next run
    /// removes such homes once they are an hour old and their owner is gone, and no other.
    @Test func abandonedGnuPGHomesAreRemoved() async throws {
        let work = Workspace(["d.csv": rows(3), "m.yaml": exportManifest(output: "output: {path: out/r.csv.pgp, \(encrypt(stateKey: false))}", rows: 3)])
        defer { work.remove() }
        let tmp = work.path + "/tmp"
        let ended = Process()
        ended.executableURL = URL(fileURLWithPath: "/bin/true")
        try ended.run()
        ended.waitUntilExit()
        let twoHoursAgo = timespec(tv_sec: time(nil) - 2 * 3600, tv_nsec: 0)
        // name: (owner pid or nil, old)
        let homes: [(String, pid_t?, Bool)] = [("abandoned", ended.processIdentifier, true), ("running", getpid(), true),
                                                ("young", ended.processIdentifier, false), ("unowned", nil, true)]
        for (name, pid, old) in homes {
            let home = tmp + "/showbatch-gnupg-" + name
            work.write("tmp/showbatch-gnupg-\(name)/pubring.kbx", "keys")
            if let pid { work.write("tmp/showbatch-gnupg-\(name)/showbatch.pid", "\(pid)\n") }
            if old {
                var times = [twoHoursAgo, twoHoursAgo]
                #expect(utimensat(AT_FDCWD, home, &times, 0) == 0)
            }
        }
        let run = try await showbatch(["run", "m.yaml", "--emulate", "--quiet"], in: work.path, environment: ["TMPDIR": tmp])
        #expect(run.status == 0 || run.status == 1, "\(run.stderr)")
        let left = try FileManager.default.contentsOfDirectory(atPath: tmp).sorted()
        #expect(left == ["showbatch-gnupg-running", "showbatch-gnupg-unowned", "showbatch-gnupg-young"])
    }

    /// A journal left beside a finished encrypted output (a kill between the rename and the
    /// journal's removal, or an older showbatch) is not trusted blindly: the message cannot be
    /// checked against it, so `--resume` refuses and `--resume=auto` writes the output again.
    @Test func aJournalLeftBesideAFinishedMessageIsNotTrusted() async throws {
        let work = Workspace(["d.csv": rows(600)])
        defer { work.remove() }
        let plain = try await plainRun(work, "output: {path: out/r.csv}", files: ["out/r.csv"], rows: 600)
        work.write("m.yaml", exportManifest(output: "output: {path: out/r.csv.pgp, \(encrypt())}", rows: 600, latency: "10ms"))
        let path = work.path + "/out/r.csv.pgp.journal"
        let interrupted = try await showbatch(["run", "m.yaml", "--emulate", "--quiet"], in: work.path, environment: stateKeyEnvironment) { _ in
            (try? String(contentsOfFile: path, encoding: .utf8))?.contains("\"checkpoint\"") ?? false
        }
        #expect(interrupted.status == 130)
        let saved = try #require(FileManager.default.contents(atPath: path))
        let finished = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--resume"], in: work.path, environment: stateKeyEnvironment)
        // Rows failed: the journal stays with the sealed rows; an older showbatch kept neither.
        #expect(finished.status == 1 && work.exists("out/r.csv.pgp.journal") && work.exists("out/r.csv.pgp.sealed"))
        try FileManager.default.removeItem(atPath: work.path + "/out/r.csv.pgp.sealed")
        // The journal as a run killed right after its rename would leave it: ended at its checkpoint.
        let contents = try #require(try JournalCodec.read(Array(saved)))
        let checkpoint = try #require(contents.lastCheckpoint)
        var bytes = Array(saved.prefix(contents.length))
        var writer = JournalCodec.Writer(chain: contents.chain)
        writer.encode(.end(size: checkpoint.offset, hash: checkpoint.hash), into: &bytes)
        #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o600]))
        try Data().write(to: URL(fileURLWithPath: work.path + "/out/r.csv.pgp"))
        let strict = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--resume"], in: work.path, environment: stateKeyEnvironment)
        #expect(strict.status == 2)
        #expect(strict.stderr.hasPrefix("showbatch: error: out/r.csv.pgp was finished, but an encrypted output cannot be checked against the journal left beside it; run without --resume to write it again\n"), "\(strict.stderr)")
        let auto = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--resume=auto"], in: work.path, environment: stateKeyEnvironment)
        #expect(auto.status == 1, "\(auto.stderr)")
        let written = decrypts(work.path + "/out/r.csv.pgp", to: plain[0])
        #expect(written, "the output written again is not the unencrypted run's (compared here: a failure prints no row)")
    }

    /// GPGME's debug log (`GPGME_DEBUG`, level 8 and up) would hold every plaintext byte given to
    /// gpg, and a core file the rows in memory: the process turns both off before anything else,
    /// whatever the shell allowed.
    @Test func noDebugLogAndNoCoreFile() async throws {
        let work = Workspace(["d.csv": rows(200), "m.yaml": exportManifest(output: "output: {path: out/r.csv.pgp, \(encrypt(stateKey: false))}", rows: 200, latency: "20ms")])
        defer { work.remove() }
        let script = """
            ulimit -c unlimited
            GPGME_DEBUG=9:gpgme.log '\(binary)' run m.yaml --emulate --quiet & pid=$!
            seen=
            while kill -0 $pid 2>/dev/null; do
              seen=$(grep 'Max core file size' /proc/$pid/limits 2>/dev/null) || true
              case "$seen" in *" 0 "*) break;; esac
              sleep 0.01
            done
            echo "$seen"
            wait $pid
            echo "exit $?"
            """
        let run = try await showbatch(["-c", script], in: work.path, shell: true)
        let lines = run.stdout.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ") }
        #expect(lines == ["Max core file size 0 0 bytes", "exit 1"], "\(run.stdout)")
        #expect(!work.exists("gpgme.log"))
        #expect(GPGFixture.shared.decrypt(work.path + "/out/r.csv.pgp") != nil)
    }

    /// Armored, to two recipients: either decrypts.
    @Test func anArmoredOutputToTwoRecipients() async throws {
        let work = Workspace(["d.csv": rows(40)])
        defer { work.remove() }
        let expected = try await plainRun(work, "output: {path: out/r.csv}", files: ["out/r.csv"])
        let keys = GPGFixture.shared
        work.write("m.yaml", exportManifest(output: "output: {path: out/r.csv.asc, \(encrypt(stateKey: false, armor: true, recipients: [keys.alice.file, keys.bob.file]))}"))
        let run = try await showbatch(["run", "m.yaml", "--emulate", "--quiet"], in: work.path)
        #expect(run.status == 1, "\(run.stderr)")
        #expect(work.read("out/r.csv.asc")?.hasPrefix("-----BEGIN PGP MESSAGE-----\n") == true)
        let alice = keys.decrypt(work.path + "/out/r.csv.asc", as: .alice) == expected[0]
        let bob = keys.decrypt(work.path + "/out/r.csv.asc", as: .bob) == expected[0]
        #expect(alice && bob)
    }

    /// A binary label's files beside an encrypted output are OpenPGP messages of their bytes.
    @Test func labelFilesAreEncryptedToo() async throws {
        let work = Workspace(["d.csv": rows(20)])
        defer { work.remove() }
        let plainOutput = "output: {path: out/r.csv}"
        work.write("plain.yaml", exportManifest(output: plainOutput, labelFile: true).replacingOccurrences(of: ".txt.pgp", with: ".txt"))
        let plain = try await showbatch(["run", "plain.yaml", "--emulate", "--quiet"], in: work.path)
        #expect(plain.status == 1, "\(plain.stderr)")
        let document = try #require(work.read("out/docs/1.txt"))
        let plainRows = try #require(work.read("out/r.csv"))
        try FileManager.default.removeItem(atPath: work.path + "/out")
        work.write("m.yaml", exportManifest(output: "output: {path: out/r.csv.pgp, \(encrypt())}", labelFile: true))
        let run = try await showbatch(["run", "m.yaml", "--emulate", "--quiet"], in: work.path, environment: stateKeyEnvironment)
        #expect(run.status == 1, "\(run.stderr)")
        let documentMatches = decrypts(work.path + "/out/docs/1.txt.pgp", to: Array(document.utf8))
        #expect(documentMatches)
        let rowsMatch = decrypts(work.path + "/out/r.csv.pgp", to: Array(plainRows.replacingOccurrences(of: ".txt", with: ".txt.pgp").utf8))
        #expect(rowsMatch)
        #expect(filesWithCards(work.path + "/out").isEmpty)
        #expect(!work.exists("out/docs/1.txt"))
    }

    /// Shards of an encrypted output stay sealed (no OpenPGP message a processor could be sent
    /// by mistake); merge unseals them in work-item order into one message, rejects too.
    @Test(arguments: [1, 3])
    func shardsMergeIntoOneMessage(shards: Int) async throws {
        let work = Workspace(["d.csv": rows(90)])
        defer { work.remove() }
        let output = "output: {path: out/r.csv, rejects: out/bad.jsonl}"
        let expected = try await plainRun(work, output, files: ["out/r.csv", "out/bad.jsonl"], rows: 90)
        work.write("m.yaml", exportManifest(output: "output: {path: out/r.csv.pgp, rejects: out/bad.jsonl.pgp, \(encrypt())}", rows: 90))
        for index in 0..<shards {
            let shard = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--shard", "\(index)/\(shards)"], in: work.path,
                                            environment: stateKeyEnvironment)
            #expect(shard.status == 1, "\(shard.stderr)")
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: work.path + "/out").sorted()
        let stem = shards == 1 ? "" : "-shard-0"
        #expect(names.contains("r\(stem).csv.sealed") && names.contains("bad\(stem).jsonl.sealed") && names.contains("r\(stem).csv.sealed.identity"))
        #expect(!names.contains { $0.hasSuffix(".pgp") })
        #expect(filesWithCards(work.path + "/out").isEmpty)
        // The identity records a MAC of the rows' hash, not their FNV-1a (with which anyone could
        // try card numbers until one fits).
        if shards == 1, let identity = FileManager.default.contents(atPath: work.path + "/out/r.csv.sealed.identity"), let plain = expected[0] {
            let text = String(decoding: identity, as: UTF8.self)
            let sized = text.contains("\"size\":\(plain.count)"), hashed = text.contains(String(fnv1a(plain), radix: 16))
            #expect(sized && !hashed)
        }
        // Without the state key the shards cannot be read.
        let refused = try await showbatch(["merge", "m.yaml", "--shards", "\(shards)"], in: work.path,
                                          environment: ["SHOWBATCH_STATE_KEY": Data(repeating: 1, count: 32).base64EncodedString()])
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("cannot be read: the state key does not unwrap the data key"))
        let merged = try await showbatch(["merge", "m.yaml", "--shards", "\(shards)"], in: work.path, environment: stateKeyEnvironment)
        // The night has rows not ok, as the unsharded run had: exit 1 as it did.
        #expect(merged.status == 1, "\(merged.stderr)")
        let outputMatches = decrypts(work.path + "/out/r.csv.pgp", to: expected[0])
        #expect(outputMatches)
        let rejectsMatch = decrypts(work.path + "/out/bad.jsonl.pgp", to: expected[1])
        #expect(rejectsMatch)
        #expect(filesWithCards(work.path + "/out").isEmpty)
    }

    /// Killed (SIGKILL) at seeded moments: no card is in the clear in any file at that moment,
    /// and `--resume` (with the state key) ends with the bytes of a run never stopped. Without
    /// a state key, `--resume=auto` says in one line that it starts over, and ends the same.
    @Test(arguments: [(true, "out/r.json"), (false, "out/r.csv.gz")])
    func killedAtSeededMomentsNoCardIsInTheClear(stateKey: Bool, output: String) async throws {
        let count = 2_000
        let work = Workspace(["d.csv": rows(count)])
        defer { work.remove() }
        let expected = try await plainRun(work, "output: {path: \(output), rejects: out/bad.csv}", files: [output, "out/bad.csv"], rows: count)
        work.write("m.yaml", exportManifest(output: "output: {path: \(output).pgp, rejects: out/bad.csv.pgp, \(encrypt(stateKey: stateKey))}",
                                            rows: count, latency: "4ms"))
        var random = SeededGenerator(seed: stateKey ? 22 : 23)
        let resume = stateKey ? "--resume" : "--resume=auto"
        for round in 0..<3 {
            var environment = ProcessInfo.processInfo.environment
            environment.merge(stateKeyEnvironment) { $1 }
            let process = try launch(["run", "m.yaml", "--emulate", "--quiet"] + (round > 0 ? [resume] : []), in: work.path, environment: environment)
            let wait = UInt32(random.unit() * 300_000)
            let journal = work.path + "/" + output + ".pgp.journal"
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                Thread {
                    // A seeded while after the run's first checkpoint: it has rows to lose.
                    while process.isRunning && !hasWholeCheckpoint(journal) {
                        usleep(1_000)
                    }
                    usleep(wait)
                    kill(process.processIdentifier, SIGKILL)
                    done.resume()
                }.start()
            }
            await exited(process)
            #expect(process.terminationReason == .uncaughtSignal, "round \(round) ended on its own")
            #expect(filesWithCards(work.path + "/out").isEmpty, "round \(round)")
        }
        let resumed = try await showbatch(["run", "m.yaml", "--emulate", resume, "--log-format", "json"], in: work.path, environment: stateKeyEnvironment)
        #expect(resumed.status == 1, "\(resumed.stderr)")
        let notes = resumed.stderr.split(separator: "\n").filter { $0.contains("\"event\":\"note\"") && $0.contains("started afresh") }
        if stateKey {
            #expect(notes.isEmpty)
        } else {
            #expect(notes.count == 1)
            #expect(notes.first?.contains("its journal holds no data key: the run that wrote \(output).pgp kept it in memory only (output.encrypt has no state_key), so its sealed rows cannot be read") == true)
        }
        let outputMatches = decrypts(work.path + "/" + output + ".pgp", to: expected[0], gunzip: output.hasSuffix(".gz"))
        #expect(outputMatches)
        let rejectsMatch = decrypts(work.path + "/out/bad.csv.pgp", to: expected[1])
        #expect(rejectsMatch)
        #expect(filesWithCards(work.path + "/out").isEmpty)
    }

    /// A sealed `.partial` changed after a kill (a chunk flipped) is never finished as if whole:
    /// `--resume` refuses it, naming the chunk.
    @Test func aTamperedSealedChunkIsRefused() async throws {
        let work = Workspace(["d.csv": rows(2_000), "m.yaml": exportManifest(output: "output: {path: out/r.csv.pgp, \(encrypt())}", rows: 2_000, latency: "4ms")])
        defer { work.remove() }
        var environment = ProcessInfo.processInfo.environment
        environment.merge(stateKeyEnvironment) { $1 }
        let process = try launch(["run", "m.yaml", "--emulate", "--quiet"], in: work.path, environment: environment)
        let journal = work.path + "/out/r.csv.pgp.journal"
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread {
                // Killed once a checkpoint has been written.
                while process.isRunning && !hasWholeCheckpoint(journal) { usleep(1_000) }
                kill(process.processIdentifier, SIGKILL)
                done.resume()
            }.start()
        }
        await exited(process)
        let partial = work.path + "/out/r.csv.pgp.partial"
        var bytes = try #require(FileManager.default.contents(atPath: partial))
        // A byte of the first chunk's ciphertext (after the 60-byte header and its 16-byte head).
        bytes[80] ^= 0x01
        try bytes.write(to: URL(fileURLWithPath: partial))
        let resumed = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--resume"], in: work.path, environment: stateKeyEnvironment)
        #expect(resumed.status == 3)
        #expect(resumed.stderr.hasPrefix("showbatch: error: out/r.csv.pgp.partial: chunk 1 at byte 60 does not authenticate (it was changed or damaged); remove out/r.csv.pgp.journal and out/r.csv.pgp.partial to start over\n"))
        let auto = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--resume=auto"], in: work.path, environment: stateKeyEnvironment)
        #expect(auto.status == 1, "\(auto.stderr)")
        #expect(GPGFixture.shared.decrypt(work.path + "/out/r.csv.pgp") != nil)
    }

    /// A sealed write that fails part way (past a file-size limit, as a full disk would) says
    /// which file and that the journal is kept; nothing is written to the file after it, and
    /// --resume ends with every row.
    @Test func aFailedSealedWriteIsResumed() async throws {
        let work = Workspace(["d.csv": rows(3_000), "m.yaml": exportManifest(output: "output: {path: out/r.csv.pgp, \(encrypt())}", rows: 3_000)])
        defer { work.remove() }
        let limited = try await showbatch(["-c", "ulimit -f 64; exec \"$0\" run m.yaml --emulate", binary], in: work.path,
                                          environment: stateKeyEnvironment, shell: true)
        #expect(limited.status == 3)
        #expect(limited.stderr.contains("showbatch: error: cannot write out/r.csv.pgp.partial: File too large; the journal out/r.csv.pgp.journal is kept, so the run can go on with --resume once that is fixed\n"), "\(limited.stderr)")
        let resumed = try await showbatch(["run", "m.yaml", "--emulate", "--resume", "--quiet"], in: work.path, environment: stateKeyEnvironment)
        #expect(resumed.status == 1, "\(resumed.stderr)")
        let decrypted = GPGFixture.shared.decrypt(work.path + "/out/r.csv.pgp").map { String(decoding: $0, as: UTF8.self) } ?? ""
        let lines = decrypted.split(separator: "\n")
        // Counted here, so that a failure prints no row.
        let rowCount = lines.count - 1
        let distinct = Set(lines.dropFirst().map { $0.split(separator: ",").first ?? "" }).count
        #expect(rowCount == 3_000 && distinct == 3_000)
    }

    /// What cannot be encrypted is refused before anything is sent: --output to standard output or
    /// a name that is not a message's, --retry-failed, shards without a state key.
    @Test func whatCannotBeEncryptedIsRefused() async throws {
        let work = Workspace(["d.csv": rows(30), "m.yaml": exportManifest(output: "output: {path: out/r.csv.pgp, \(encrypt(stateKey: false))}", rows: 30)])
        defer { work.remove() }
        let cases: [([String], Int32, String)] = [
            (["--output", "-"], 2, "showbatch: error: the output is encrypted (output.encrypt): give --output a file ending in .pgp, .gpg or .asc; standard output is never written encrypted\n"),
            (["--output", "out/x.csv"], 2, "showbatch: error: the output is encrypted (output.encrypt): give --output a file ending in .pgp, .gpg or .asc\n"),
            (["--shard", "0/2"], 2, "m.yaml:3:40: error: an encrypted output run in shards needs encrypt.state_key: merge reads the shards' sealed files with it\n"),
        ]
        for (flags, status, message) in cases {
            let result = try await showbatch(["run", "m.yaml", "--emulate", "--quiet"] + flags, in: work.path)
            #expect(result.status == status, "\(flags)")
            #expect(result.stderr.hasPrefix(message), "\(flags): \(result.stderr)")
        }
        // A run checks the keys when it loads them (validate's check, made once), positioned alike.
        work.write("keys/sign-only.asc", try String(contentsOfFile: GPGFixture.shared.signOnly.file, encoding: .utf8))
        work.write("bad.yaml", exportManifest(output: "output: {path: out/r.csv.pgp, encrypt: {recipients: [keys/sign-only.asc]}}", rows: 30))
        for command in ["validate", "run"] {
            let refused = try await showbatch([command, "bad.yaml"] + (command == "run" ? ["--emulate"] : []), in: work.path)
            #expect(refused.status == 2)
            #expect(refused.stderr.hasPrefix("bad.yaml:3:54: error: output.encrypt.recipients[0]: keys/sign-only.asc: the key \(GPGFixture.shared.signOnly.fingerprint) cannot encrypt: it has no encryption subkey (a signing-only key?)\n"), "\(command): \(refused.stderr)")
        }
        // --output never writes rows a request's own output encrypts in the clear, nor a plain
        // file under a message's name.
        let plainTop = exportManifest(output: "output: {path: out/plain.csv}", rows: 30)
            + "\n  - name: secret\n    path: /post\n    payload: {c: tok_1}\n    labels: {c: json.c}\n    output: {path: out/s.csv.pgp, \(encrypt(stateKey: false))}\n"
        work.write("mixed.yaml", plainTop)
        work.write("plain.yaml", exportManifest(output: "output: {path: out/plain.csv}", rows: 30))
        // The manifest's output to Alice, a request's own to Bob: --output would give Alice Bob's rows.
        work.write("others.yaml", exportManifest(output: "output: {path: out/alice.csv.pgp, \(encrypt(stateKey: false))}", rows: 30)
            + "\n  - name: secret\n    path: /post\n    payload: {c: tok_1}\n    labels: {c: json.c}\n    output: {path: out/bob.csv.pgp, \(encrypt(stateKey: false, recipients: [GPGFixture.shared.bob.file]))}\n")
        let overrides: [(String, [String], String)] = [
            ("mixed.yaml", ["--output", "out/y.csv"], "showbatch: error: request 2 has an encrypted output (output.encrypt), and --output would write its rows to out/y.csv in the clear; encrypt the manifest's output, or run without --output\n"),
            ("mixed.yaml", ["--output", "-"], "showbatch: error: request 2 has an encrypted output (output.encrypt), and --output would write its rows to standard output in the clear; encrypt the manifest's output, or run without --output\n"),
            ("plain.yaml", ["--output", "out/p.csv.pgp"], "showbatch: error: --output out/p.csv.pgp ends in .pgp, .gpg or .asc but the output is not encrypted; add output.encrypt to the manifest, or name the file for what it holds\n"),
            ("others.yaml", ["--output", "out/all.csv.pgp"], "showbatch: error: request 2 has an output encrypted otherwise than the manifest's (other recipients, armor or state key), and --output would write its rows to out/all.csv.pgp as the manifest's is; run without --output\n"),
            ("plain.yaml", ["--output", "out/p.csv.pgp/"], "showbatch: error: --output needs the path of a file, not ending in /; got \"out/p.csv.pgp/\"\n"),
            ("plain.yaml", ["--output", "out/p.csv.pgp "], "showbatch: error: --output needs the path of a file, not ending in a space or a control character; got \"out/p.csv.pgp \"\n"),
            ("plain.yaml", ["--format", "csv", "--output", "out/p.csv.pgp\n"], "showbatch: error: --output needs the path of a file, not ending in a line break; got \"out/p.csv.pgp\\n\"\n"),
        ]
        for (manifest, flags, message) in overrides {
            let result = try await showbatch(["run", manifest, "--emulate", "--quiet"] + flags, in: work.path)
            #expect(result.status == 2 && result.stdout.isEmpty, "\(manifest) \(flags)")
            #expect(result.stderr == message, "\(manifest) \(flags): \(result.stderr)")
        }
        #expect(!work.exists("out"))
        let run = try await showbatch(["run", "m.yaml", "--emulate", "--quiet"], in: work.path)
        #expect(run.status == 1)
        let retry = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--retry-failed"], in: work.path)
        #expect(retry.status == 2)
        #expect(retry.stderr.hasPrefix("showbatch: error: --retry-failed cannot rewrite out/r.csv.pgp: it is encrypted to its recipients, and without output.encrypt.state_key its sealed rows could not be kept to rewrite it from; run without --retry-failed to write it again\n"), "\(retry.stderr)")
    }
}

/// Whether the journal at `path` holds a whole checkpoint line: a kill while one is half written
/// leaves a torn line, which a resume drops (and then starts the file over).
func hasWholeCheckpoint(_ path: String) -> Bool {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return false }
    return text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().contains { $0.contains("\"checkpoint\"") }
}
