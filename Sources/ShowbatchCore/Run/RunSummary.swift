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
    /// Output files written (or "-").
    package var outputs: [String] = []
    /// True when SIGINT/SIGTERM stopped the run: outputs were not renamed into place.
    package var interrupted = false
    /// Why the circuit breaker stopped the run (outputs left `.partial`, journals kept), if it did.
    package var stopReason: String?
    /// The rows written by this run (not those from a journal) by error code and HTTP status.
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

    /// Requests per second over the run.
    package var rate: Double { elapsed.seconds > 0 ? Double(rows) / elapsed.seconds : 0 }
}

/// Rows counted by what went wrong and what was answered, for logs, metrics and reports.
package struct RowTally: Sendable, Equatable {
    /// Rows holding each error code (a row with two codes counts under both, once each).
    package var byErrorCode: [ErrorCode: Int] = [:]
    /// Rows by the HTTP status of their last attempt; rows that got no answer are not here.
    package var byHTTPStatus: [Int: Int] = [:]
    /// Rows whose last attempt got no HTTP answer (network, timeout, TLS) or that were never sent.
    package var withoutAnswer = 0

    /// No rows.
    package init() {}

    /// Counts `row`.
    mutating func add(_ row: ResultRow) {
        if let status = row.httpStatus { byHTTPStatus[status, default: 0] += 1 } else { withoutAnswer += 1 }
        guard !row.errors.isEmpty else { return }
        var seen: Set<ErrorCode> = []
        for error in row.errors where seen.insert(error.code).inserted { byErrorCode[error.code, default: 0] += 1 }
    }
}
