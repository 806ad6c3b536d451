import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A data-driven export whose file names say which night: `${run.date}` and `${run.seq:4}`.
private let nightManifest = """
vault: tnt1
output: {path: "out/cards-${run.date}-${run.seq:4}.csv", columns: [{id: "${row.id}"}, card, status]}
emulator:
  aliases: {tok_a: "4111111111111111", tok_b: "5555555555554444", tok_c: "4012888888881881"}
requests:
  - name: "c-${row.id}"
    each: {csv: in/customers.csv}
    path: /post
    payload: {card: "${row.alias}"}
    labels: {card: json.card}
"""

private func data(_ ids: [Int]) -> String {
    "id,alias\n" + ids.map { "\($0),tok_\(["a", "b", "c"][$0 % 3])\n" }.joined()
}

private func expectedRows(_ ids: [Int]) -> String {
    let cards = ["4111111111111111", "5555555555554444", "4012888888881881"]
    return "id,card,status\n" + ids.map { "\($0),\(cards[$0 % 3]),ok\n" }.joined()
}

/// The files in `out/` of `work`, sorted, dot files included.
private func outFiles(_ work: Workspace) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: work.path + "/out")) ?? []).sorted()
}

@Suite(.serialized) struct NightSequenceTests {
    private func workspace() -> Workspace {
        Workspace(["m.yaml": nightManifest])
    }

    @Test func threeNightsAreNumberedOneTwoThreeAndARerunKeepsItsNumber() async throws {
        let work = workspace()
        defer { work.remove() }
        for (night, ids) in [("2026-12-01", [1, 2]), ("2026-12-02", [3, 4, 5]), ("2026-12-03", [6])] {
            work.write("in/customers.csv", data(ids))
            let run = try await showbatch(["run", "m.yaml", "--emulate", "--date", night, "--quiet"], in: work.path)
            #expect(run.status == 0 && run.stderr == "")
        }
        #expect(outFiles(work) == [".cards-{date}-{seq:4}.csv.sequence", ".cards-{date}-{seq:4}.csv.sequence.lock", "cards-20261201-0001.csv", "cards-20261202-0002.csv", "cards-20261203-0003.csv"])
        #expect(work.read("out/cards-20261202-0002.csv") == expectedRows([3, 4, 5]))
        var info = stat()
        #expect(stat(work.path + "/out/.cards-{date}-{seq:4}.csv.sequence", &info) == 0 && info.st_mode & 0o777 == 0o600)

        // The second night again (its data back in place): its number, and nothing sent.
        work.write("in/customers.csv", data([3, 4, 5]))
        let rerun = try await showbatch(["run", "m.yaml", "--emulate", "--date", "2026-12-02"], in: work.path)
        #expect(rerun.status == 0)
        #expect(rerun.stderr.hasPrefix("showbatch: warning: out/cards-20261202-0002.csv: the night of 2026-12-02 (sequence 2) was finished at 20"))
        #expect(rerun.stderr.contains(", and the file is as it was then: nothing is sent for it\nshowbatch: 0 rows: 0 ok"))
        #expect(rerun.stderr.hasSuffix("; left out/cards-20261202-0002.csv as it was\n"), "\(rerun.stderr)")
        #expect(outFiles(work).count == 5)

        // A night whose file was lost is written again under its own number.
        unlink(work.path + "/out/cards-20261202-0002.csv")
        let again = try await showbatch(["run", "m.yaml", "--emulate", "--date", "2026-12-02", "--quiet"], in: work.path)
        #expect(again.status == 0 && again.stderr == "")
        #expect(work.read("out/cards-20261202-0002.csv") == expectedRows([3, 4, 5]))
        // The next new night goes on from the highest number.
        work.write("in/customers.csv", data([7]))
        let fourth = try await showbatch(["run", "m.yaml", "--emulate", "--date", "2026-12-05", "--quiet"], in: work.path)
        #expect(fourth.status == 0 && work.read("out/cards-20261205-0004.csv") == expectedRows([7]))
    }

    /// The next night's data file is yesterday's: as it was, exported again with other line
    /// endings, with a blank line more, with a field quoted that was not, with a byte order mark,
    /// or its rows in another order.
    @Test(arguments: ["same", "crlf", "blank line", "quoted", "bom", "reversed"])
    func aRepeatedNightIsRefusedBeforeAnythingIsSent(export: String) async throws {
        let work = workspace()
        defer { work.remove() }
        work.write("in/customers.csv", data([1, 2, 3]))
        let first = try await showbatch(["run", "m.yaml", "--emulate", "--date", "2026-12-01", "--quiet"], in: work.path)
        #expect(first.status == 0)
        switch export {
        case "crlf": work.write("in/customers.csv", data([1, 2, 3]).replacingOccurrences(of: "\n", with: "\r\n"))
        case "blank line": work.write("in/customers.csv", data([1, 2, 3]) + "\n")
        case "quoted": work.write("in/customers.csv", data([1, 2, 3]).replacingOccurrences(of: "tok_a", with: "\"tok_a\""))
        case "bom": work.write("in/customers.csv", "\u{FEFF}" + data([1, 2, 3]))
        case "reversed": work.write("in/customers.csv", data([3, 2, 1]))
        default: break
        }
        // The upstream export did not run: the next night's data file is yesterday's.
        let repeated = try await showbatch(["run", "m.yaml", "--emulate", "--date", "2026-12-02", "--verbose"], in: work.path)
        #expect(repeated.status == 2)
        #expect(repeated.stderr == "showbatch: error: the data files of the night of 2026-12-02 are the same as those of the night of 2026-12-01 (cards-20261201-0001.csv, sequence 1): the export upstream may not have run since; nothing was sent (--allow-repeat sends them again)\n")
        #expect(outFiles(work) == [".cards-{date}-{seq:4}.csv.sequence", ".cards-{date}-{seq:4}.csv.sequence.lock", "cards-20261201-0001.csv"])
        // A test run to another file goes to no processor: yesterday's data is fine there.
        let test = try await showbatch(["run", "m.yaml", "--emulate", "--date", "2026-12-02", "--output", "test/cards.csv", "--quiet"], in: work.path)
        #expect(test.status == 0 && work.exists("test/cards.csv"), "\(test.stderr)")
        let allowed = try await showbatch(["run", "m.yaml", "--emulate", "--date", "2026-12-02", "--allow-repeat", "--quiet"], in: work.path)
        #expect(allowed.status == 0)
        #expect(work.read("out/cards-20261202-0002.csv") == expectedRows(export == "reversed" ? [3, 2, 1] : [1, 2, 3]))
    }

    /// One row more, or one less, is another night.
    @Test(arguments: [[1, 2, 3, 4], [1, 2], [1, 2, 2, 3]])
    func otherRowsAreAnotherNight(ids: [Int]) async throws {
        let work = workspace()
        defer { work.remove() }
        work.write("in/customers.csv", data([1, 2, 3]))
        #expect(try await showbatch(["run", "m.yaml", "--emulate", "--date", "2026-12-01", "--quiet"], in: work.path).status == 0)
        work.write("in/customers.csv", data(ids))
        let next = try await showbatch(["run", "m.yaml", "--emulate", "--date", "2026-12-02", "--quiet"], in: work.path)
        #expect(next.status == 0, "\(next.stderr)")
        #expect(work.read("out/cards-20261202-0002.csv") == expectedRows(ids))
    }

    @Test func shardsAndTheirMergeAreNamedForOneNightAndTheMergeRecordsIt() async throws {
        let work = workspace()
        defer { work.remove() }
        work.write("in/customers.csv", data(Array(1...7)))
        for shard in 0..<3 {
            let run = try await showbatch(["run", "m.yaml", "--emulate", "--date", "2026-11-19", "--shard", "\(shard)/3", "--quiet"], in: work.path)
            #expect(run.status == 0 && run.stderr == "")
        }
        // The shards took the night's number as they began; the merge records the night finished.
        #expect(work.read("out/.cards-{date}-{seq:4}.csv.sequence")?.contains("\"date\":\"20261119\",\"seq\":1,\"data\":") == true)
        #expect(work.read("out/.cards-{date}-{seq:4}.csv.sequence")?.contains("\"finished\":\"\"") == true)
        // A merge for a night no shard ran (the merge pod's "today" after midnight) is refused.
        let wrongNight = try await showbatch(["merge", "m.yaml", "--shards", "3", "--date", "2026-11-20"], in: work.path)
        #expect(wrongNight.status == 2)
        #expect(wrongNight.stderr == "showbatch: error: no run of the night of 2026-11-20 began for out/cards-${run.date}-${run.seq:4}.csv (its sequence state out/.cards-{date}-{seq:4}.csv.sequence has no such night): give merge the --date the shards were run with\n")
        #expect(work.exists("out/cards-20261119-0001-shard-2.csv"))
        let merge = try await showbatch(["merge", "m.yaml", "--shards", "3", "--date", "2026-11-19"], in: work.path)
        #expect(merge.status == 0 && merge.stderr == "showbatch: merged 3 shards into out/cards-20261119-0001.csv (7 rows)\n")
        #expect(work.read("out/cards-20261119-0001.csv") == expectedRows(Array(1...7)))
        #expect(work.read("out/.cards-{date}-{seq:4}.csv.sequence")?.contains("\"date\":\"20261119\",\"seq\":1,") == true)
    }

    /// Two nights run at once each take a number of their own, under the state's lock.
    @Test func twoNightsAtOnceNeverShareANumber() async throws {
        let work = workspace()
        defer { work.remove() }
        work.write("in/customers.csv", data(Array(1...300)))
        async let first = showbatch(["run", "m.yaml", "--emulate", "--date", "2026-12-02", "--allow-repeat", "--quiet"], in: work.path)
        async let second = showbatch(["run", "m.yaml", "--emulate", "--date", "2026-12-03", "--allow-repeat", "--quiet"], in: work.path)
        let (a, b) = try await (first, second)
        let files = outFiles(work).filter { $0.hasPrefix("cards-") }
        if a.status == 0 {
            // The earlier night began first: numbers in date order.
            #expect(b.status == 0 && files == ["cards-20261202-0001.csv", "cards-20261203-0002.csv"])
        } else {
            // The later night took 1 first: the earlier one is refused, never given the same number
            // nor one after the later date's.
            #expect(a.status == 2 && a.stderr.hasPrefix("showbatch: error: the night of 2026-12-02 would come after the night of 2026-12-03 ("))
            #expect(b.status == 0 && files == ["cards-20261203-0001.csv"])
        }
    }

    /// A night that began and was interrupted keeps its number: a later night takes the next,
    /// and the interrupted one goes on under its own.
    @Test func anInterruptedNightKeepsItsNumber() async throws {
        let work = workspace()
        defer { work.remove() }
        work.write("in/customers.csv", data(Array(1...2000)))
        // Answers slow enough that the night is still going when the interrupt comes, however
        // late a loaded machine sees its journal.
        let manifest = try #require(work.read("m.yaml"))
        work.write("m.yaml", manifest.replacingOccurrences(of: "emulator:\n", with: "emulator:\n  latency: 50ms\n"))
        let cut = try await showbatch(["run", "m.yaml", "--emulate", "--date", "2026-12-01", "--quiet"], in: work.path,
                                      interrupt: { FileManager.default.fileExists(atPath: $0 + "/out/cards-20261201-0001.csv.journal") })
        #expect(cut.status == 130)
        work.write("in/customers.csv", data([5000]))
        let next = try await showbatch(["run", "m.yaml", "--emulate", "--date", "2026-12-02", "--quiet"], in: work.path)
        #expect(next.status == 0 && work.exists("out/cards-20261202-0002.csv"))
        work.write("in/customers.csv", data(Array(1...2000)))
        let resumed = try await showbatch(["run", "m.yaml", "--emulate", "--date", "2026-12-01", "--resume", "--quiet"], in: work.path)
        #expect(resumed.status == 0)
        #expect(work.read("out/cards-20261201-0001.csv") == expectedRows(Array(1...2000)))
    }

    /// A finished night rerun with other data is written again under its number, and says so.
    @Test func aFinishedNightWithOtherDataIsWrittenAgain() async throws {
        let work = workspace()
        defer { work.remove() }
        work.write("in/customers.csv", data([1, 2]))
        #expect(try await showbatch(["run", "m.yaml", "--emulate", "--date", "2026-12-01", "--quiet"], in: work.path).status == 0)
        work.write("in/customers.csv", data([1, 2, 3]))
        let rerun = try await showbatch(["run", "m.yaml", "--emulate", "--date", "2026-12-01"], in: work.path)
        #expect(rerun.status == 0)
        #expect(rerun.stderr.hasPrefix("showbatch: warning: out/cards-20261201-0001.csv: the data files changed since the night of 2026-12-01 was finished at "))
        #expect(rerun.stderr.contains(": it is written again, as sequence 1\n"))
        #expect(work.read("out/cards-20261201-0001.csv") == expectedRows([1, 2, 3]))
    }

    /// A new night dated before the latest one (a mistyped --date, a wrong TZ) would be numbered
    /// after it: refused. A rerun of an earlier night that has its number is not.
    @Test func aNewNightBeforeTheLatestIsRefused() async throws {
        let work = workspace()
        defer { work.remove() }
        for (night, ids) in [("2026-12-01", [1]), ("2026-12-02", [2])] {
            work.write("in/customers.csv", data(ids))
            #expect(try await showbatch(["run", "m.yaml", "--emulate", "--date", night, "--quiet"], in: work.path).status == 0)
        }
        work.write("in/customers.csv", data([3]))
        let earlier = try await showbatch(["run", "m.yaml", "--emulate", "--date", "2026-11-30"], in: work.path)
        #expect(earlier.status == 2)
        #expect(earlier.stderr.hasPrefix("showbatch: error: the night of 2026-11-30 would come after the night of 2026-12-02 (cards-20261202-0002.csv, sequence 2), which is later: a processor takes nights in order; check --date and TZ\n"))
        // The first night again, with the second's data back: a rerun, neither a repeat nor out of order.
        work.write("in/customers.csv", data([1]))
        let rerun = try await showbatch(["run", "m.yaml", "--emulate", "--date", "2026-12-01", "--quiet"], in: work.path)
        #expect(rerun.status == 0 && rerun.stderr == "")
        #expect(!outFiles(work).contains { $0.contains("20261130") })
    }

    @Test func theRetryHintNamesTheNight() async throws {
        let work = workspace()
        defer { work.remove() }
        work.write("in/customers.csv", "id,alias\n1,tok_a\n2,tok_unknown\n")
        let run = try await showbatch(["run", "m.yaml", "--emulate", "--date", "2026-12-01"], in: work.path)
        #expect(run.status == 1)
        #expect(run.stderr.hasSuffix("showbatch: next: showbatch run m.yaml --retry-failed --date 2026-12-01 --emulate sends the 1 failed row again\n"))
    }

    @Test func aLinkPlantedAtTheSequenceStateIsRefused() async throws {
        let work = workspace()
        defer { work.remove() }
        work.write("in/customers.csv", data([1]))
        work.write("elsewhere", "{}\n")
        try FileManager.default.createDirectory(atPath: work.path + "/out", withIntermediateDirectories: true)
        #expect(symlink(work.path + "/elsewhere", work.path + "/out/.cards-{date}-{seq:4}.csv.sequence") == 0)
        let run = try await showbatch(["run", "m.yaml", "--emulate", "--date", "2026-12-01"], in: work.path)
        #expect(run.status == 3)
        #expect(run.stderr == "showbatch: error: cannot read out/.cards-{date}-{seq:4}.csv.sequence, which keeps the sequence numbers of the output's nights: it is a symbolic link, which showbatch never follows to its own files; the run does not guess a number\n")
        #expect(work.read("elsewhere") == "{}\n")
        #expect(outFiles(work) == [".cards-{date}-{seq:4}.csv.sequence"])
    }
}
