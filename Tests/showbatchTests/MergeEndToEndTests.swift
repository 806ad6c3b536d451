import Foundation
import Testing

/// A manifest with static requests around two data-driven ones, one of which writes to its own
/// output. Revealed values hold commas, quotes, a line break and a CRLF, so CSV records span lines;
/// a CSV id with a comma makes a quoted request cell; a JSON Lines row without `alias` is a failed
/// row, so its shard keeps a journal (a finished run with failed rows).
private func mergeManifest(_ format: String, first: String = "first", ownData: String = "d.jsonl") -> String {
    #"""
    vault: tnt1
    concurrency: 4
    output: {path: out/r.FORMAT}
    emulator:
      aliases: {tok_a: "4111111111111111", tok_b: "two\nlines, \"quoted\"", tok_c: "a\r\nb"}
    requests:
      - name: FIRST
        path: /post
        payload: {card: tok_a}
        labels: {card: json.card}
      - name: "row-${row.id}"
        each: {csv: d.csv}
        path: /post
        payload: {card: "${row.alias}"}
        labels: {card: json.card, missing: json.nope}
      - name: "own-${row.id}"
        each: {jsonl: OWNDATA}
        path: /post
        payload: {card: "${row.alias}"}
        labels: {value: json.card}
        output: {path: out/own.FORMAT}
      - name: last
        path: /post
        payload: {card: tok_c}
        labels: {card: json.card}
    """#
    .replacingOccurrences(of: "FORMAT", with: format)
    .replacingOccurrences(of: "FIRST", with: first)
    .replacingOccurrences(of: "OWNDATA", with: ownData)
}

private let csvData = "id,alias\n1,tok_a\n2,tok_b\n3,tok_c\n4,=cmd\n\"5,x\",tok_a\n6,tok_b\n7,tok_unknown\n8,tok_c\n"
private let jsonlData = #"{"id":1,"alias":"tok_b"}"# + "\n" + #"{"id":2}"# + "\n" + #"{"id":3,"alias":"tok_a"}"# + "\n" + #"{"id":4,"alias":"tok_c"}"# + "\n"

/// A work folder with the merge manifest as `m.yaml` and its data files.
private func mergeWorkspace(_ format: String = "csv") -> Workspace {
    Workspace(["m.yaml": mergeManifest(format), "d.csv": csvData, "d.jsonl": jsonlData,
               "d2.jsonl": #"{"id":1,"alias":"tok_a"}"# + "\n"])
}

private func bytes(_ work: Workspace, _ name: String) -> Data? {
    FileManager.default.contents(atPath: work.path + "/" + name)
}

private func mode(_ work: Workspace, _ name: String) -> Int? {
    (try? FileManager.default.attributesOfItem(atPath: work.path + "/" + name))?[.posixPermissions] as? Int
}

/// Runs every shard of `manifest` in `shards` (all of them unless `only` says which).
private func runShards(_ work: Workspace, _ shards: Int, manifest: String = "m.yaml", only: [Int]? = nil) async throws {
    for index in only ?? Array(0..<shards) {
        let run = try await showbatch(["run", manifest, "--emulate", "--quiet", "--shard", "\(index)/\(shards)"], in: work.path)
        // 1: some rows are partial or failed, as in the unsharded run.
        #expect(run.status == 0 || run.status == 1, "shard \(index)/\(shards): \(run.stderr)")
    }
}

@Suite(.serialized) struct MergeEndToEndTests {
    @Test(arguments: ["csv", "json", "jsonl"], [1, 2, 3, 7])
    func mergedShardsAreTheUnshardedRunByteForByte(format: String, shards: Int) async throws {
        let work = mergeWorkspace(format)
        defer { work.remove() }
        let whole = try await showbatch(["run", "m.yaml", "--emulate", "--quiet"], in: work.path)
        #expect(whole.status == 1)  // partial rows (json.nope) and one failed row (no alias)
        let expected = try #require(bytes(work, "out/r.\(format)"))
        let expectedOwn = try #require(bytes(work, "out/own.\(format)"))
        try FileManager.default.removeItem(atPath: work.path + "/out")

        try await runShards(work, shards)
        // The failed row's shard keeps its journal, as a finished run with failed rows does.
        let journals = (0..<shards).filter { work.exists(shards == 1 ? "out/own.\(format).journal" : "out/own-shard-\($0).\(format).journal") }
        #expect(journals.count == 1)
        let merge = try await showbatch(["merge", "m.yaml", "--shards", String(shards), "--keep-shards"], in: work.path)
        // The night's rows not ok are judged as the unsharded run judges them: exit 1 as it does.
        #expect(merge.status == 1)
        let judged = "showbatch: the night has 9 rows not ok of 14, beyond max_failed (0: none set)\n"
        if shards == 1 {
            #expect(merge.stderr == "showbatch: merged 1 shard into out/r.\(format) (10 rows, already whole: its one shard is this file), out/own.\(format) (4 rows, already whole: its one shard is this file)\n" + judged)
        } else {
            #expect(merge.stderr == "showbatch: merged \(shards) shards into out/r.\(format) (10 rows), out/own.\(format) (4 rows)\n" + judged)
        }
        // Within the allowance the merged night is complete: exit 0.
        let within = try await showbatch(["merge", "m.yaml", "--shards", String(shards), "--keep-shards", "--max-failed", "9", "--quiet"], in: work.path)
        #expect(within.status == 0 && within.stderr == "")
        // Emulator data only: comparing the bytes in the expectation prints nothing secret.
        #expect(bytes(work, "out/r.\(format)") == expected)
        #expect(bytes(work, "out/own.\(format)") == expectedOwn)
        #expect(mode(work, "out/r.\(format)") == 0o600)
        #expect(mode(work, "out/own.\(format)") == 0o600)
        #expect(!work.exists("out/r.\(format).partial") && !work.exists("out/own.\(format).partial"))

        // An existing output is replaced, as a run replaces it.
        if shards > 1 {
            work.write("out/r.\(format)", "an older file\n")
            let again = try await showbatch(["merge", "m.yaml", "--shards", String(shards), "--quiet"], in: work.path)
            #expect(again.status == 1 && again.stderr == judged)
            #expect(bytes(work, "out/r.\(format)") == expected)
            #expect(mode(work, "out/r.\(format)") == 0o600)
            // A night beyond max_failed keeps its shards, which --retry-failed completes shard by shard.
            let kept = try FileManager.default.contentsOfDirectory(atPath: work.path + "/out").filter { $0.contains("-shard-") }
            #expect(kept.count >= 4 * shards)
            // Within it, the shards' files and state are gone once merged.
            let complete = try await showbatch(["merge", "m.yaml", "--shards", String(shards), "--quiet", "--max-failed", "70%"], in: work.path)
            #expect(complete.status == 0 && complete.stderr == "")
            let left = try FileManager.default.contentsOfDirectory(atPath: work.path + "/out").filter { $0.contains("-shard-") }
            #expect(left == [])
        }

        // Shards run with --output merge with the same --output into what one such run writes.
        if shards == 2 {
            let all = "all.\(format)"
            let single = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--output", all], in: work.path)
            #expect(single.status == 1)
            let expectedAll = try #require(bytes(work, all))
            for index in 0..<2 {
                _ = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--output", all, "--shard", "\(index)/2"], in: work.path)
            }
            #expect(work.exists("all-shard-0.\(format)") && work.exists("all-shard-1.\(format)"))
            work.write(all, "")
            let mergeAll = try await showbatch(["merge", "m.yaml", "--shards", "2", "--output", all], in: work.path)
            #expect(mergeAll.status == 1)
            #expect(mergeAll.stderr == "showbatch: merged 2 shards into \(all) (14 rows)\n" + judged)
            #expect(bytes(work, all) == expectedAll)
        }
    }

    /// Shaped and compressed outputs merge too: a dialect without a header, columns that rename
    /// `request`, and gzip (whose merged file decompresses to the unsharded run's bytes).
    @Test(arguments: [
        "output: {path: out/r.csv, csv: {delimiter: \";\", line_ending: crlf, header: false, quote: all}}",
        "output: {path: out/r.csv, columns: [{name: request}, {id: \"${row.id}\"}, card, status]}",
        "output: {path: out/r.jsonl, columns: [{name: request}, {id: \"${row.id}\"}, card, error]}",
        "output: {path: out/r.csv.gz}",
        "output: {path: out/r.json.gz}",
    ], [2, 3])
    func shapedAndCompressedOutputsMerge(output: String, shards: Int) async throws {
        let work = mergeWorkspace("csv")
        defer { work.remove() }
        work.write("m.yaml", mergeManifest("csv").replacingOccurrences(of: "output: {path: out/r.csv}", with: output))
        let path = String(output.split(separator: ",")[0].dropFirst("output: {path: ".count)).replacingOccurrences(of: "}", with: "")
        func plain(_ name: String) async throws -> String? {
            guard name.hasSuffix(".gz") else { return work.read(name) }
            let result = try await showbatch(["-c", "gzip -dc \(name)"], in: work.path, shell: true)
            return result.status == 0 ? result.stdout : nil
        }
        let whole = try await showbatch(["run", "m.yaml", "--emulate", "--quiet"], in: work.path)
        #expect(whole.status == 1, "\(whole.stderr)")
        let expected = try #require(try await plain(path))
        try FileManager.default.removeItem(atPath: work.path + "/out")
        try await runShards(work, shards)
        let merged = try await showbatch(["merge", "m.yaml", "--shards", "\(shards)"], in: work.path)
        // Rows not ok in the night (as in the unsharded run): exit 1 as it has.
        #expect(merged.status == 1, "\(merged.stderr)")
        #expect(try await plain(path) == expected)
    }

    /// Outputs with a rejects file merge into both files, each in work-item order, byte for byte
    /// what the unsharded run writes: failed rows (and with reject_partial, partial rows) in the
    /// rejects file, the rest in the output; the shards' journals say which went where.
    @Test(arguments: ["output: {path: out/r.csv, rejects: out/rejects.csv}",
                      "output: {path: out/r.csv, rejects: out/rejects.csv, reject_partial: true}",
                      "output: {path: out/r.jsonl, rejects: out/rejects.jsonl, reject_partial: true}",
                      "output: {path: out/r.csv.gz, rejects: out/rejects.csv.gz}"], [2, 3])
    func anOutputWithRejectsMergesBothFiles(output: String, shards: Int) async throws {
        let work = mergeWorkspace("csv")
        defer { work.remove() }
        // The own output's failed row (its data row has no alias) goes to a rejects file of its own.
        work.write("m.yaml", mergeManifest("csv").replacingOccurrences(of: "output: {path: out/r.csv}", with: output)
            .replacingOccurrences(of: "output: {path: out/own.csv}", with: "output: {path: out/own.csv, rejects: out/own-rejects.csv}"))
        let paths = (output.contains("jsonl") ? ["out/r.jsonl", "out/rejects.jsonl"]
            : output.contains(".gz") ? ["out/r.csv.gz", "out/rejects.csv.gz"] : ["out/r.csv", "out/rejects.csv"]) + ["out/own.csv", "out/own-rejects.csv"]
        func plain(_ name: String) async throws -> String? {
            guard name.hasSuffix(".gz") else { return work.read(name) }
            let result = try await showbatch(["-c", "gzip -dc \(name)"], in: work.path, shell: true)
            return result.status == 0 ? result.stdout : nil
        }
        let whole = try await showbatch(["run", "m.yaml", "--emulate", "--quiet"], in: work.path)
        #expect(whole.status == 1, "\(whole.stderr)")
        var expected: [String] = []
        for path in paths { expected.append(try #require(try await plain(path))) }
        // The unsharded run's rejects files hold rows: the test is not of empty ones.
        #expect(expected[3].split(separator: "\n").count == 2)
        if output.contains("reject_partial") { #expect(expected[1].split(separator: "\n").count > 1) }
        try FileManager.default.removeItem(atPath: work.path + "/out")
        try await runShards(work, shards)
        let merged = try await showbatch(["merge", "m.yaml", "--shards", "\(shards)"], in: work.path)
        // Rows not ok in the night (as in the unsharded run): exit 1 as it has.
        #expect(merged.status == 1, "\(merged.stderr)")
        for (path, want) in zip(paths, expected) {
            #expect(try await plain(path) == want, "\(path)")
        }
    }

    @Test func aMissingShardIsRefusedAndNothingIsWritten() async throws {
        let work = mergeWorkspace()
        defer { work.remove() }
        try await runShards(work, 3, only: [0, 1])
        let merge = try await showbatch(["merge", "m.yaml", "--shards", "3"], in: work.path)
        #expect(merge.status == 2)
        #expect(merge.stderr == "showbatch: error: cannot merge out/r.csv: its shard 2/3, out/r-shard-2.csv, is missing (run the manifest with --shard 2/3 first)\n")
        for file in ["out/r.csv", "out/r.csv.partial", "out/own.csv", "out/own.csv.partial"] { #expect(!work.exists(file)) }
    }

    @Test func aShardLeftPartialIsRefused() async throws {
        let work = mergeWorkspace()
        defer { work.remove() }
        try await runShards(work, 3)
        // What an interrupted run of shard 1 leaves: its rows in `.partial`, no final file.
        try FileManager.default.moveItem(atPath: work.path + "/out/own-shard-1.csv", toPath: work.path + "/out/own-shard-1.csv.partial")
        let merge = try await showbatch(["merge", "m.yaml", "--shards", "3"], in: work.path)
        #expect(merge.status == 2)
        #expect(merge.stderr == "showbatch: error: cannot merge out/own.csv: its shard 1/3, out/own-shard-1.csv, is not finished: out/own-shard-1.csv.partial is there (its run is still going, or was interrupted: finish it with --resume)\n")
        // A rerun under way beside a finished file: refused the same way.
        try FileManager.default.copyItem(atPath: work.path + "/out/own-shard-1.csv.partial", toPath: work.path + "/out/own-shard-1.csv")
        let rerun = try await showbatch(["merge", "m.yaml", "--shards", "3"], in: work.path)
        #expect(rerun.status == 2 && rerun.stderr == merge.stderr)
        for file in ["out/r.csv", "out/r.csv.partial", "out/own.csv", "out/own.csv.partial"] { #expect(!work.exists(file)) }
    }

    @Test func aShardOfAnotherManifestIsRefused() async throws {
        let work = mergeWorkspace()
        defer { work.remove() }
        // The same outputs, but the first request has another name (and no row fails).
        work.write("other.yaml", mergeManifest("csv", first: "premier", ownData: "d2.jsonl"))
        try await runShards(work, 3, manifest: "other.yaml")
        let merge = try await showbatch(["merge", "m.yaml", "--shards", "3"], in: work.path)
        #expect(merge.status == 2)
        #expect(merge.stderr == "showbatch: error: cannot merge out/r.csv: its shard 0/3, out/r-shard-0.csv, is not of this manifest: its identity out/r-shard-0.csv.identity says the manifest changed since (its endpoint, requests, labels, outputs or retry rules)\n")
        for file in ["out/r.csv", "out/r.csv.partial", "out/own.csv", "out/own.csv.partial"] { #expect(!work.exists(file)) }

        // Shards run in 3 merged as 2: the rows are not where the manifest puts them.
        let wrongCount = try await showbatch(["merge", "other.yaml", "--shards", "2"], in: work.path)
        #expect(wrongCount.status == 2)
        #expect(wrongCount.stderr == "showbatch: error: cannot merge out/r.csv: its shard 0/2, out/r-shard-0.csv, is not of this manifest: its identity out/r-shard-0.csv.identity says it was written for shard 0/3, and this run is shard 0/2\n")

        // A data row added since the shards ran: a shard holds fewer rows than the manifest now has.
        work.write("d.csv", csvData + "9,tok_a\n10,tok_a\n11,tok_a\n")
        let grown = try await showbatch(["merge", "other.yaml", "--shards", "3"], in: work.path)
        #expect(grown.status == 2)
        #expect(grown.stderr == "showbatch: error: cannot merge out/r.csv: its shard 0/3, out/r-shard-0.csv, is not of this manifest: its identity out/r-shard-0.csv.identity says the content of a data file changed since\n")

        // A shard left alone, without the identity its run leaves (copied from elsewhere, or of
        // an older version): refused too.
        work.write("d.csv", csvData)
        try await runShards(work, 3)
        try FileManager.default.removeItem(atPath: work.path + "/out/r-shard-1.csv.identity")
        let alone = try await showbatch(["merge", "m.yaml", "--shards", "3"], in: work.path)
        #expect(alone.status == 2)
        #expect(alone.stderr == "showbatch: error: cannot merge out/r.csv: its shard 1/3, out/r-shard-1.csv, is not known to be a finished shard: out/r-shard-1.csv.identity, which its run leaves when it finishes, is not beside it (run it with --shard 1/3)\n")
    }

    @Test func aLinkAtTheTargetIsRefused() async throws {
        let work = mergeWorkspace()
        defer { work.remove() }
        try await runShards(work, 2)
        work.write("elsewhere.csv", "not to be touched\n")
        try FileManager.default.createSymbolicLink(atPath: work.path + "/out/r.csv", withDestinationPath: work.path + "/elsewhere.csv")
        let merge = try await showbatch(["merge", "m.yaml", "--shards", "2"], in: work.path)
        #expect(merge.status == 2)
        #expect(merge.stderr == "showbatch: error: cannot merge out/r.csv: out/r.csv is a symbolic link; showbatch never writes through one\n")
        #expect(work.read("elsewhere.csv") == "not to be touched\n")
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: work.path + "/out/r.csv")) != nil)
        #expect(!work.exists("out/r.csv.partial") && !work.exists("out/own.csv"))
    }

    @Test func usageErrorsNameWhatIsExpected() async throws {
        let work = mergeWorkspace()
        defer { work.remove() }
        let noShards = try await showbatch(["merge", "m.yaml"], in: work.path)
        #expect(noShards.status == 2)
        #expect(noShards.stderr == "showbatch: error: merge needs --shards N, the number of shards the manifest was run in\nRun 'showbatch help merge' for usage.\n")
        let zero = try await showbatch(["merge", "m.yaml", "--shards=0"], in: work.path)
        #expect(zero.stderr == "showbatch: error: --shards must be an integer from 1 to 10000; got \"0\"\nRun 'showbatch help merge' for usage.\n")
        let help = try await showbatch(["help", "merge"], in: work.path)
        #expect(help.status == 0 && help.stdout.hasPrefix("usage: showbatch merge MANIFEST --shards N [options]\n"))
    }
}

extension MergeEndToEndTests {
    /// A merge holds a file of every shard open, and of every shard's rejects file: under a limit
    /// of open files it cannot raise, it says how many it needs and writes nothing.
    @Test func tooFewOpenFilesForTheShardsIsSaid() async throws {
        let work = Workspace(["m.yaml": """
        vault: tnt1
        retry: {attempts: 1}
        output: {path: out/r.csv, rejects: out/bad.csv}
        emulator: {fail_rate: 0.2, seed: 3, fail_status: 400}
        requests: [{name: "r${row.id}", each: {csv: d.csv}, path: /p, labels: {p: path}}]
        """, "d.csv": "id\n" + (0..<100).map(String.init).joined(separator: "\n") + "\n"])
        defer { work.remove() }
        try await runShards(work, 10)
        let limited = try await showbatch(["-c", "ulimit -n 24; exec \"$0\" merge m.yaml --shards 10", binary], in: work.path, shell: true)
        #expect(limited.status == 3)
        #expect(limited.stderr == "showbatch: error: merging needs 36 open files (a file of each shard, and of its rejects file), and this process may open 24; raise the limit (ulimit -n)\n")
        #expect(!work.exists("out/r.csv") && !work.exists("out/bad.csv"))
        let merged = try await showbatch(["merge", "m.yaml", "--shards", "10"], in: work.path)
        #expect(merged.status == 1 && merged.stderr.contains(" rows not ok of "), "\(merged.stderr)")
    }
}
