import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// How many rows of each status an output holds.
struct RowCounts: Equatable, Sendable {
    var rows = 0
    var ok = 0
    var partial = 0
    var failed = 0

    mutating func count(_ status: RowStatus) {
        rows += 1
        switch status {
        case .ok: ok += 1
        case .partial: partial += 1
        case .failed: failed += 1
        }
    }
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
