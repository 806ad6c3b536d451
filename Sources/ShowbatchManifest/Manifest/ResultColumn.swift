/// The fixed result columns, named once: outputs write them before the labels, and no label may
/// take one of their names.
package enum ResultColumn: String, Sendable, CaseIterable {
    case request, status
    case httpStatus = "http_status"
    case attempts, error

    /// The column names in output order.
    package static let names = allCases.map(\.rawValue)
}
