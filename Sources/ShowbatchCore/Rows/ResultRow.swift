import ShowbatchBasics
import ShowbatchManifest

/// One result row: exactly one per work item.
package struct ResultRow: Sendable, Equatable {
    /// The work item's ordinal.
    package var ordinal: Int
    /// The expanded request name.
    package var request: String
    /// ok, partial or failed.
    package var status: RowStatus
    /// The last attempt's HTTP status.
    package var httpStatus: Int?
    /// Attempts made.
    package var attempts: Int
    /// Label values after transform and mask; nil when missing.
    package var labels: [(name: String, value: String?)]
    /// Errors, in order.
    package var errors: [RowError]
    /// Text the feed made from the data row for the output's template columns and rejects
    /// (`output.columns`, `output.rejects`); never sent.
    package var extras: [String] = []

    /// Creates a row.
    package init(ordinal: Int, request: String, status: RowStatus, httpStatus: Int?, attempts: Int,
                labels: [(name: String, value: String?)], errors: [RowError]) {
        self.ordinal = ordinal
        self.request = request
        self.status = status
        self.httpStatus = httpStatus
        self.attempts = attempts
        self.labels = labels
        self.errors = errors
    }

    /// Rows are equal when every field is (labels compared in order).
    package static func == (lhs: ResultRow, rhs: ResultRow) -> Bool {
        lhs.ordinal == rhs.ordinal && lhs.request == rhs.request && lhs.status == rhs.status
            && lhs.httpStatus == rhs.httpStatus && lhs.attempts == rhs.attempts && lhs.errors == rhs.errors
            && lhs.labels.map(\.name) == rhs.labels.map(\.name) && lhs.labels.map(\.value) == rhs.labels.map(\.value)
            && lhs.extras == rhs.extras
    }

    /// The value of a label, if present.
    package func value(of label: String) -> String? {
        labels.first { $0.name == label }?.value ?? nil
    }
}

/// The status of a result row.
package enum RowStatus: String, Sendable {
    case ok, partial, failed
}

/// One error of a result row.
package struct RowError: Error, Sendable, Equatable {
    /// The code.
    package var code: ErrorCode
    /// The label it concerns, for 1403 to 1410.
    package var label: String?
    /// A message that names paths and statuses, never values.
    package var message: String

    /// Creates an error.
    package init(code: ErrorCode, label: String?, message: String) {
        self.code = code
        self.label = label
        self.message = message
    }

    /// `CODE kind: message`, as the CSV `error` column shows it.
    package var text: String { "\(code.rawValue) \(code.kind): \(message)" }
}

/// Error codes of result rows (Show SDK codes where one exists).
package enum ErrorCode: Int, Sendable, CaseIterable {
    case unexpectedResponseType = 1400
    case unexpectedResponseDataFormat = 1401
    case responseInvalidJSON = 1402
    case fieldNotFound = 1403
    /// A binary label's value is not base64.
    case invalidBase64 = 1404
    /// A binary label's decoded value is over its `max_bytes`.
    case valueTooLarge = 1405
    /// A binary label's file cannot be written where its path says (outside the output's
    /// folder, through a link, over something that is not a regular file, over an input or a
    /// file of an output).
    case fileRefused = 1406
    /// A label's value is not what its `expect` says (a pattern, the Luhn check): the row fails.
    case unexpectedValue = 1407
    /// A label's value is one the request sent: the alias came back unrevealed.
    case notRevealed = 1408
    /// A text label's value holds control characters (NUL, escape…), which no cell may carry.
    case controlCharacters = 1409
    /// A cell the file's header or trailer sums (`${run.sum.NAME}`) is not a decimal number.
    case notANumber = 1410
    case invalidConfigurationURL = 1480
    case invalidRow = 1490
    case rateLimited = 1429
    case httpStatus = 1500
    case network = 1501
    case timeout = 1502

    /// The kind word written next to the code.
    package var kind: String {
        switch self {
        case .unexpectedResponseType: return "unexpected_response_type"
        case .unexpectedResponseDataFormat: return "unexpected_response_data_format"
        case .responseInvalidJSON: return "response_invalid_json"
        case .fieldNotFound: return "field_not_found"
        case .invalidBase64: return "invalid_base64"
        case .valueTooLarge: return "value_too_large"
        case .fileRefused: return "file_refused"
        case .unexpectedValue: return "unexpected_value"
        case .notRevealed: return "not_revealed"
        case .controlCharacters: return "control_characters"
        case .notANumber: return "not_a_number"
        case .invalidConfigurationURL: return "invalid_configuration_url"
        case .invalidRow: return "invalid_row"
        case .rateLimited: return "rate_limited"
        case .httpStatus: return "http_status"
        case .network: return "network"
        case .timeout: return "timeout"
        }
    }
}
