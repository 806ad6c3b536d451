import Testing
@testable import ShowbatchCore

/// How an output begins, for every mode and what its files and journal show.
@Suite struct OutputStartTests {
    typealias Files = OutputStart.Files

    static let encryptedRefusal = "--retry-failed cannot rewrite out/r.csv: it is encrypted to its recipients, and without output.encrypt.state_key its sealed rows could not be kept to rewrite it from; run without --retry-failed to write it again"

    /// Before the journal: standard output never has one; a retry refuses what it cannot
    /// rewrite and leaves an output without a journal as it is; everything else opens one (nil).
    /// The refusals say why, in the words a person reads.
    @Test func refusalsSayWhy() {
        #expect(OutputError.retryWithoutStateKey(path: "out/r.csv").description == Self.encryptedRefusal)
        #expect(OutputError.retryNeverWritten(path: "out/r.csv").description
                == "out/r.csv was never written, so it has no failed rows to send again; run without --retry-failed")
    }

    @Test(arguments: [
        (Files(path: "-"), RunMode.fresh, OutputStart?.some(.standardOutput)),
        (Files(path: "-"), .resume, .standardOutput),
        (Files(path: "-", hasJournal: false, outputExists: false), .retryFailed, .standardOutput),
        (Files(path: "out/r.csv"), .fresh, nil),
        (Files(path: "out/r.csv", hasJournal: false), .fresh, nil),
        (Files(path: "out/r.csv", encryptedWithoutStateKey: true), .resume, nil),
        (Files(path: "out/r.csv"), .retryFailed, nil),
        (Files(path: "out/r.csv", hasJournal: false), .retryFailed, .unchanged(reason: "it has no journal, so no failed rows")),
        (Files(path: "out/r.csv", hasJournal: false, outputExists: false), .retryFailed,
         .refused(.retryNeverWritten(path: "out/r.csv"))),
        (Files(path: "out/r.csv", encryptedWithoutStateKey: true), .retryFailed, .refused(.retryWithoutStateKey(path: "out/r.csv"))),
        (Files(path: "out/r.csv", encryptedWithoutStateKey: true, hasJournal: false), .retryFailed, .refused(.retryWithoutStateKey(path: "out/r.csv"))),
        // A finished night (its file as recorded, no journal) is left as it is but by a retry.
        (Files(path: "out/r-7.csv", hasJournal: false, finishedNight: "the night of 2026-12-01 (sequence 7) was finished"), .fresh,
         .unchanged(reason: "the night of 2026-12-01 (sequence 7) was finished: nothing is sent for it")),
        (Files(path: "out/r-7.csv", hasJournal: false, finishedNight: "finished"), .resume, .unchanged(reason: "finished: nothing is sent for it")),
        (Files(path: "out/r-7.csv", hasJournal: false, finishedNight: "finished"), .retryFailed, .unchanged(reason: "it has no journal, so no failed rows")),
    ])
    func withoutJournal(files: Files, mode: RunMode, expected: OutputStart?) {
        #expect(OutputStart.withoutJournal(files, mode: mode) == expected)
    }

    /// With the journal open: a fresh run starts over whatever it shows, a retry rewrites, and a
    /// resume goes on from a checkpoint, discards a stale journal, or starts afresh without one.
    @Test(arguments: [
        (RunMode.fresh, String?.none, false, OutputStart.fresh(reason: nil)),
        (.fresh, "older than 1h", true, .fresh(reason: nil)),
        (.retryFailed, nil, true, .retry),
        (.retryFailed, nil, false, .retry),
        (.resume, nil, true, .resume),
        (.resume, nil, false, .fresh(reason: "its journal has no checkpoint to go on from")),
        (.resume, "it was written by another run", true, .discard(reason: "it was written by another run")),
        (.resume, "it was written by another run", false, .discard(reason: "it was written by another run")),
    ])
    func withJournal(mode: RunMode, discarded: String?, hasCheckpoint: Bool, expected: OutputStart) {
        #expect(OutputStart.start(mode: mode, discarded: discarded, hasCheckpoint: hasCheckpoint) == expected)
    }

    /// A resume that finds its files changed discards them only under `--resume=auto`.
    @Test func aFailedResumeIsDiscardedOnlyWhenAllowed() {
        #expect(OutputStart.afterFailedResume("out/r.csv.partial is gone", staleAfter: .seconds(3_600)) == .discard(reason: "out/r.csv.partial is gone"))
        #expect(OutputStart.afterFailedResume("out/r.csv.partial is gone", staleAfter: nil) == nil)
    }

    /// What the first log line says of each start known before the journal's rows are counted.
    @Test(arguments: [
        (OutputStart.standardOutput, OutputMode?.some(OutputMode(path: "o", mode: "fresh"))),
        (.unchanged(reason: "x"), OutputMode(path: "o", mode: "unchanged", reason: "x")),
        (.fresh(reason: nil), OutputMode(path: "o", mode: "fresh")),
        (.fresh(reason: "y"), OutputMode(path: "o", mode: "fresh", reason: "y")),
        (.discard(reason: "z"), OutputMode(path: "o", mode: "restarted", reason: "z")),
        (.resume, nil),
        (.retry, nil),
        (.refused(.retryNeverWritten(path: "o")), nil),
    ])
    func logLine(start: OutputStart, expected: OutputMode?) {
        #expect(start.mode(path: "o") == expected)
    }
}
