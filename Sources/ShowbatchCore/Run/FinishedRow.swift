import ShowbatchBasics
import ShowbatchManifest

/// When a 2xx answer's labels are extracted, decided once for a run: on the writer's thread
/// (the default: the thread that drives the transfers spends no time parsing answers), or as
/// the answer arrives with `--fail-fast`, whose dispatch must know a failed row at once. Binary
/// labels' files are written only by the writer, just before their row, either way.
struct RevealTiming: Sendable {
    /// Labels are extracted as answers arrive.
    let early: Bool

    /// The timing of a run: early with `--fail-fast`.
    init(failFast: Bool) { early = failFast }

    /// What an attempt hands back for a 2xx answer.
    func finished(_ answer: FinishedRow.Answer) -> FinishedRow {
        guard early else { return .answer(answer) }
        // A row with files to write goes to the writer as an answer; it is never failed, so
        // --fail-fast loses nothing by waiting for it.
        let row = answer.revealed()
        return answer.hasFiles && row.status != .failed ? .answer(answer) : .row(row)
    }
}

/// A finished work item: its row, or a 2xx answer whose labels are still to be extracted.
enum FinishedRow: Sendable {
    /// An answer to reveal.
    struct Answer: Sendable {
        let ordinal: Int
        let request: String
        let status: Int
        let attempts: Int
        let body: [UInt8]
        let labels: [LabelBinding]
        /// The request's `extras`, carried into the row.
        var extras: [String] = []
        /// Where each binary label goes (nil for a text label); empty when there is none.
        var files: [LabelFileTarget?] = []
        /// The request's JSON body: a label that comes back as one of its strings was not revealed.
        var sent: [UInt8]? = nil

        /// The row: labels extracted, transformed and masked.
        func revealed() -> ResultRow {
            var row = Reveal.row(ordinal: ordinal, request: request, status: status, attempts: attempts, body: body, labels: labels,
                                 sent: sent)
            row.extras = extras
            return row
        }

        /// True when the answer has binary labels to write to files.
        var hasFiles: Bool { files.contains { $0 != nil } }

        /// The row, and the decoded bytes of its binary labels with their files.
        func revealedWithFiles() -> (row: ResultRow, files: [PendingLabelFile]) {
            var (row, pending) = Reveal.rowAndFiles(ordinal: ordinal, request: request, status: status, attempts: attempts, body: body,
                                                    labels: labels, files: files, sent: sent)
            row.extras = extras
            return (row, pending)
        }
    }

    case row(ResultRow)
    case answer(Answer)

    /// Attempts made.
    var attempts: Int {
        switch self {
        case .row(let row): return row.attempts
        case .answer(let answer): return answer.attempts
        }
    }

    /// The row the writer writes, for target `target`: an answer is revealed here, its binary
    /// labels' files written first (a file that cannot be written fails its label).
    func row(labelFiles: LabelFileWriter?, target: Int) throws(RunError) -> ResultRow {
        switch self {
        case .row(let row): return row
        case .answer(let answer):
            if let labelFiles, answer.hasFiles { return try labelFiles.reveal(answer, target: target) }
            return answer.revealed()
        }
    }
}
