import Foundation
import Testing
import ShowbatchBasics
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A processor's night: a header record and a trailer record with the row count and the exact
/// sum of the amounts, around rows of one card and one amount each. `fail` is the endpoint's
/// seeded failure rate; `output` adds to the output section.
private func envelopeManifest(fail: String = "0", output: String = "path: \"out/night-${run.date}-${run.seq:3}.csv\"") -> String {
    """
    vault: tnt1
    concurrency: 4
    retry: {attempts: 1}
    output:
      \(output)
      header: "H,${run.date},${run.seq:3},${BATCH}"
      trailer: "T,${run.rows},${run.sum.amount},${run.sum.attempts},$${literal}"
      columns: [request, card, {amount: "${row.amount}"}, attempts]
    emulator: {aliases: {tok_0: "4000000000000000", tok_1: "4111111111111111"}, latency: 2ms, fail_rate: \(fail), seed: 5}
    requests:
      - name: "r${row.id}"
        each: {csv: d.csv}
        path: /post
        payload: {c: "${row.alias}"}
        labels: {card: json.c}
    """
}

/// An amount in thousandths, written as the data file has it: whole, 2 or 3 decimals, negative.
private func amount(_ id: Int) -> (text: String, thousandths: Int) {
    switch id % 4 {
    case 0: return ("\(id)", id * 1000)
    case 1: return ("\(id).50", id * 1000 + 500)
    case 2: return ("-\(id).125", -(id * 1000 + 125))
    default: return ("0.0\(id % 10)", (id % 10) * 10)
    }
}

/// `rows` customers; the one with id `notANumber` has an amount written with a thousands separator.
private func customers(_ rows: Int, notANumber: Int? = nil) -> String {
    "id,alias,amount\n" + (0..<rows).map { id in
        "\(id),tok_\(id % 2),\(id == notANumber ? "\"1,000\"" : amount(id).text)"
    }.joined(separator: "\n") + "\n"
}

/// `thousandths` as the trailer writes the sum: three decimals, the most any amount has.
private func decimal(_ thousandths: Int) -> String {
    let sign = thousandths < 0 ? "-" : ""
    let magnitude = abs(thousandths)
    let fraction = String(magnitude % 1000)
    return sign + String(magnitude / 1000) + "." + String(repeating: "0", count: 3 - fraction.count) + fraction
}

private let batch = ["BATCH": "B7"]

@Suite(.serialized) struct EnvelopeTests {
    /// The lines are exact: the night's date and number, the rows in the file, the exact sum of a
    /// column written with 0, 2 and 3 decimals and of `attempts`, a `$${` literal. A cell that is
    /// not a number fails its row (1410), its cell empty, and adds nothing.
    @Test func theHeaderAndTrailerHoldTheNightAndTheExactTotals() async throws {
        let work = Workspace(["m.yaml": envelopeManifest(), "d.csv": customers(12, notANumber: 5)])
        defer { work.remove() }
        let run = try await showbatch(["run", "m.yaml", "--emulate", "--date", "2026-12-01"], in: work.path, environment: batch)
        #expect(run.status == 1)
        #expect(run.stderr.contains("\nshowbatch: 1410 not_a_number: 1 row, the first: column amount of request r5: the value is not a decimal number, and the file's header or trailer sums it\nshowbatch: the night of 2026-12-01 in out/night-20261201-001.csv (sequence 1) has 1 row not ok of 12, beyond max_failed (0): it is not finished for the processor\nshowbatch: next: the failed rows are the data file's to fix (1410): correct them, then run the night again (showbatch run m.yaml --date 2026-12-01 --emulate)\n"),
                "\(run.stderr)")
        let cards = ["4000000000000000", "4111111111111111"]
        let rows = (0..<12).map { id in "r\(id),\(cards[id % 2]),\(id == 5 ? "" : amount(id).text),1\n" }.joined()
        let sum = (0..<12).filter { $0 != 5 }.map { amount($0).thousandths }.reduce(0, +)
        #expect(work.read("out/night-20261201-001.csv") == "H,20261201,001,B7\nrequest,card,amount,attempts\n" + rows + "T,12,\(decimal(sum)),12,${literal}\n")
        // The rows the journal counts are kept beside it, without the lines, for --retry-failed.
        #expect(work.read("out/night-20261201-001.csv.rows") == "request,card,amount,attempts\n" + rows)
        #expect(!work.exists("out/night-20261201-001.csv.partial") && !work.exists("out/night-20261201-001.csv.enveloping"))

        // The next night is number 2; with every row ok nothing is kept beside it.
        work.write("d.csv", customers(3))
        let next = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--date", "2026-12-02"], in: work.path, environment: batch)
        #expect(next.status == 0 && next.stderr == "")
        #expect(work.read("out/night-20261202-002.csv")?.hasPrefix("H,20261202,002,B7\n") == true)
        #expect(work.read("out/night-20261202-002.csv")?.hasSuffix("\nT,3,\(decimal((0..<3).map { amount($0).thousandths }.reduce(0, +))),3,${literal}\n") == true)
        #expect(!work.exists("out/night-20261202-002.csv.rows") && !work.exists("out/night-20261202-002.csv.journal"))
    }

    /// Killed (SIGKILL) at seeded moments and resumed, the night ends with the lines of one that
    /// was never stopped.
    @Test func killedAndResumedTheLinesAreThoseOfOneRun() async throws {
        let work = Workspace(["m.yaml": envelopeManifest(), "d.csv": customers(600)])
        defer { work.remove() }
        let file = "out/night-20261201-001.csv"
        let clean = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--date", "2026-12-01"], in: work.path, environment: batch)
        #expect(clean.status == 0, "\(clean.stderr)")
        let expected = try #require(work.read(file))
        #expect(expected.hasSuffix("\nT,600,\(decimal((0..<600).map { amount($0).thousandths }.reduce(0, +))),600,${literal}\n"))
        try FileManager.default.removeItem(atPath: work.path + "/" + file)
        var environment = ProcessInfo.processInfo.environment
        environment["BATCH"] = "B7"
        var random = SeededGenerator(seed: 29)
        for round in 0..<2 {
            let process = try launch(["run", "m.yaml", "--emulate", "--quiet", "--date", "2026-12-01"] + (round > 0 ? ["--resume"] : []),
                                     in: work.path, environment: environment)
            let wait = UInt32(random.unit() * 150_000)
            let partial = work.path + "/" + file + ".partial"
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                Thread {
                    while process.isRunning && !FileManager.default.fileExists(atPath: partial) { usleep(1_000) }
                    usleep(wait)
                    kill(process.processIdentifier, SIGKILL)
                    done.resume()
                }.start()
            }
            await exited(process)
            #expect(process.terminationReason == .uncaughtSignal && !work.exists(file), "round \(round) finished before the kill")
        }
        let resumed = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--date", "2026-12-01", "--resume"], in: work.path, environment: batch)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(work.read(file) == expected)
        #expect(!work.exists(file + ".partial") && !work.exists(file + ".rows"))
    }

    /// A night with failed rows, completed by `--retry-failed`, ends as a night without them.
    @Test func aNightCompletedByRetryFailedHasTheLinesOfACleanNight() async throws {
        let work = Workspace(["m.yaml": envelopeManifest(), "d.csv": customers(60)])
        defer { work.remove() }
        let file = "out/night-20261201-001.csv"
        let clean = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--date", "2026-12-01"], in: work.path, environment: batch)
        #expect(clean.status == 0)
        let expected = try #require(work.read(file))
        try FileManager.default.removeItem(atPath: work.path + "/out")

        work.write("m.yaml", envelopeManifest(fail: "0.3"))
        let night = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--date", "2026-12-01"], in: work.path, environment: batch)
        #expect(night.status == 1)
        #expect(work.read(file) != expected && work.exists(file + ".rows"))
        work.write("m.yaml", envelopeManifest())
        let retry = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--date", "2026-12-01", "--retry-failed"], in: work.path, environment: batch)
        #expect(retry.status == 0, "\(retry.stderr)")
        #expect(work.read(file) == expected)
        #expect(!work.exists(file + ".rows") && !work.exists(file + ".journal"))
    }

    /// Three shards merged give the night's lines, totalled over every shard's rows; one shard of
    /// one is merged too (its file is not the night's).
    @Test(arguments: [1, 3])
    func mergedShardsHaveTheLinesOfOneRun(shards: Int) async throws {
        let work = Workspace(["m.yaml": envelopeManifest(), "d.csv": customers(50)])
        defer { work.remove() }
        let file = "out/night-20261201-001.csv"
        let whole = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--date", "2026-12-01"], in: work.path, environment: batch)
        #expect(whole.status == 0)
        let expected = try #require(work.read(file))
        try FileManager.default.removeItem(atPath: work.path + "/out")
        for index in 0..<shards {
            let shard = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--date", "2026-12-01", "--shard", "\(index)/\(shards)"],
                                            in: work.path, environment: batch)
            #expect(shard.status == 0, "\(shard.stderr)")
            // A shard's file is rows only: the night's lines are merge's to write.
            #expect(work.read("out/night-20261201-001-shard-\(index).csv")?.hasPrefix("request,card,amount,attempts\n") == true)
        }
        let merge = try await showbatch(["merge", "m.yaml", "--shards", "\(shards)", "--date", "2026-12-01"], in: work.path, environment: batch)
        #expect(merge.status == 0, "\(merge.stderr)")
        #expect(merge.stderr == "showbatch: merged \(shards) shard\(shards == 1 ? "" : "s") into \(file) (50 rows)\n")
        #expect(work.read(file) == expected)
        #expect(!work.exists(file + ".partial") && !work.exists(file + ".enveloping"))
    }

    /// An encrypted, compressed JSON Lines night: the lines are inside the message, each a gzip
    /// member, and the plaintext is the plain night's.
    @Test func theLinesAreInsideTheEncryption() async throws {
        let work = Workspace(["m.yaml": envelopeManifest(output: "path: \"out/n-${run.date}-${run.seq:3}.jsonl.gz\""), "d.csv": customers(20)])
        defer { work.remove() }
        let plain = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--date", "2026-12-01"], in: work.path, environment: batch)
        #expect(plain.status == 0)
        let compressed = try #require(FileManager.default.contents(atPath: work.path + "/out/n-20261201-001.jsonl.gz"))
        let expected = try #require(gunzipped(Array(compressed)))
        #expect(String(decoding: expected, as: UTF8.self).hasPrefix("H,20261201,001,B7\n{\"request\":\"r0\",\"card\":\"4000000000000000\",\"amount\":\"0\",\"attempts\":1}\n"))
        try FileManager.default.removeItem(atPath: work.path + "/out")
        work.write("m.yaml", envelopeManifest(output: "path: \"out/n-${run.date}-${run.seq:3}.jsonl.gz.pgp\"\n  encrypt: {recipients: [\"\(GPGFixture.shared.alice.file)\"]}"))
        let run = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--date", "2026-12-01"], in: work.path, environment: batch)
        #expect(run.status == 0, "\(run.stderr)")
        let message = try #require(GPGFixture.shared.decrypt(work.path + "/out/n-20261201-001.jsonl.gz.pgp"))
        #expect(gunzipped(message) == expected)
    }

    /// What cannot be written is a positioned error before anything is sent.
    @Test(arguments: [
        ("header: \"H,${run.sum.amont}\"", "m.yaml:5:11: error: ${run.sum.amont} names no column of this output; its columns are request, card, status"),
        ("header: \"H,${run.sum.request}\"", "m.yaml:5:11: error: ${run.sum.request} cannot sum the column request: it holds no number"),
    ])
    func aTotalOfNoNumberIsRefused(line: String, message: String) async throws {
        let work = Workspace(["m.yaml": """
        vault: tnt1
        output:
          path: out/n.csv
          columns: [request, card, status]
          \(line)
        emulator: {aliases: {tok_0: "4000000000000000"}}
        requests: [{name: a, path: /post, payload: {c: tok_0}, labels: {card: json.c}}]
        """])
        defer { work.remove() }
        let run = try await showbatch(["run", "m.yaml", "--emulate"], in: work.path)
        #expect(run.status == 2)
        #expect(run.stderr == message + "\n    \(line)\n            ^\n")
        #expect(!work.exists("out"))
    }
}
