import Foundation

/// How many rows that are not ok (failed or partial) a run may end with and still exit 0:
/// `max_failed` or `--max-failed`, a count (`25`) or a share of the run's rows (`0.1%`).
package enum FailureAllowance: Sendable, Equatable {
    case count(Int)
    /// A percentage, 0…100.
    case percent(Double)

    /// Parses `25` or `0.1%`; nil when it is neither.
    package static func parse(_ text: String) -> FailureAllowance? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasSuffix("%") {
            guard let value = Double(trimmed.dropLast()), value.isFinite, (0...100).contains(value) else { return nil }
            return .percent(value)
        }
        guard let count = Int(trimmed), count >= 0 else { return nil }
        return .count(count)
    }

    /// The rows allowed out of `rows`.
    package func rows(of rows: Int) -> Int {
        switch self {
        case .count(let count): return count
        case .percent(let value): return Int((Double(rows) * value / 100).rounded(.down))
        }
    }

    /// As written: `25` or `0.1%`.
    package var text: String {
        switch self {
        case .count(let count): return String(count)
        case .percent(let value): return (value == value.rounded() ? String(Int(value)) : String(value)) + "%"
        }
    }
}

/// The outcome of a run.
package struct RunSummary: Sendable {
    /// Rows written.
    package var rows = 0
    /// Rows with status ok.
    package var ok = 0
    /// Rows with status partial.
    package var partial = 0
    /// Rows with status failed.
    package var failed = 0
    /// Attempts beyond the first, over all rows.
    package var retries = 0
    /// Rows taken from the journal instead of being sent.
    package var replayed = 0
    /// Work items not sent because `--fail-fast` stopped the run.
    package var skipped = 0
    /// Wall time.
    package var elapsed: Duration = .zero
    /// Files written (or "-"): each output, its rejects file, and where its binary labels' files
    /// go (`out/pdf/${row.id}.pdf`).
    package var outputs: [String] = []
    /// Each rejects file written, with the rows it holds.
    package var rejects: [RejectsFile] = []
    /// True when SIGINT/SIGTERM stopped the run: outputs were not renamed into place.
    package var interrupted = false
    /// Why the circuit breaker stopped the run (outputs left `.partial`, journals kept), if it did.
    package var stopReason: String?
    /// The outputs' rows by error code and HTTP status: this run's, and after `--resume` those an
    /// earlier run left in the outputs too (read back from them).
    package var tally = RowTally()
    /// Rows not ok the run may end with and still exit 0 (`max_failed`).
    package var allowance: FailureAllowance?
    /// Requests sent again because an answer refused their token (401).
    package var resentAfter401 = 0
    /// Requests sent again because the endpoint answered 429 (rate limited).
    package var resentAfter429 = 0
    /// Access tokens fetched again (renewals), the first one not counted.
    package var tokenRenewals = 0
    /// Work items whose request was under way when the run stopped or was interrupted: not
    /// written, sent again by `--resume`.
    package var unfinished = 0
    /// What changed in a data file while the run read it (cut, grown, rewritten), one message
    /// per file: the run's files are not that file's rows, whatever `max_failed` allows.
    package var dataChanged: [String] = []

    /// True when every work item was sent and written, and no data file changed under the run.
    package var whole: Bool { skipped == 0 && unfinished == 0 && dataChanged.isEmpty }

    /// True when the rows not ok are within `allowance` (and there are some).
    package var withinAllowance: Bool {
        guard let allowance, whole, ok < rows else { return false }
        return rows - ok <= allowance.rows(of: rows)
    }

    /// Requests per second over the run: the rows this run sent, not those taken from a journal.
    package var rate: Double { elapsed.seconds > 0 ? Double(max(0, rows - replayed)) / elapsed.seconds : 0 }
}

/// A rejects file a run wrote, and the rows it holds.
package struct RejectsFile: Sendable, Equatable {
    package var path: String
    package var rows: Int
}

/// An output whose run had finished before this one (a rerun of a finished night).
package struct FinishedOutput: Sendable, Equatable {
    package var path: String
    /// When it was finished (its file's time).
    package var finished: Date
    /// The failed rows it holds (its rejects file's included).
    package var failed: Int
}

/// What a run does with one output, for the `run_started` event: `fresh`, `resumed` (from a
/// checkpoint), `restarted` (what an earlier run left discarded, `reason` saying why),
/// `finished` (an earlier run finished it: nothing is sent), `retried` (`--retry-failed`
/// rewrites it) or `unchanged` (`--retry-failed`, and it has no failed rows).
package struct OutputMode: Sendable, Equatable {
    package var path: String
    package var mode: String
    package var reason: String?
}

/// Rows counted by what went wrong and what was answered, for logs, metrics and reports.
package struct RowTally: Sendable, Equatable {
    /// Rows holding each error code (a row with two codes counts under both, once each).
    package var byErrorCode: [ErrorCode: Int] = [:]
    /// Rows by the HTTP status of their last attempt; rows that got no answer are not here.
    package var byHTTPStatus: [Int: Int] = [:]
    /// Rows whose last attempt got no HTTP answer (network, timeout, TLS) or that were never sent.
    package var withoutAnswer = 0
    /// The message of the first row holding each error code (messages name no value).
    package var firstMessage: [ErrorCode: String] = [:]

    /// No rows.
    package init() {}

    /// Counts `row`.
    mutating func add(_ row: ResultRow) {
        if let status = row.httpStatus { byHTTPStatus[status, default: 0] += 1 } else { withoutAnswer += 1 }
        guard !row.errors.isEmpty else { return }
        add(errors: row.errors.map { ($0.code, $0.message) })
    }

    /// Counts one row's errors (a code twice in it counts once).
    mutating func add(errors: [(code: ErrorCode, message: String)]) {
        var seen: Set<ErrorCode> = []
        for error in errors where seen.insert(error.code).inserted {
            byErrorCode[error.code, default: 0] += 1
            if firstMessage[error.code] == nil { firstMessage[error.code] = error.message }
        }
    }

    /// These rows and those of `later`.
    func adding(_ later: RowTally) -> RowTally {
        var sum = self
        sum.add(later)
        return sum
    }

    /// Adds the rows of `later` (their first messages come after these).
    mutating func add(_ later: RowTally) {
        for (code, count) in later.byErrorCode { byErrorCode[code, default: 0] += count }
        for (status, count) in later.byHTTPStatus { byHTTPStatus[status, default: 0] += count }
        withoutAnswer += later.withoutAnswer
        for (code, message) in later.firstMessage where firstMessage[code] == nil { firstMessage[code] = message }
    }
}
