import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// A request ready to send: URL, headers and body built from the manifest and a data row.
package struct PreparedRequest: Sendable {
    /// The expanded request name.
    package var name: String
    /// The method.
    package var method: HTTPMethod
    /// The full URL.
    package var url: String
    /// Headers in send order (values are secrets: never print them).
    package var headers: [(name: String, value: String)]
    /// The JSON body, when the request has a payload.
    package var body: [UInt8]?
    /// True when every row of the request sends these same headers (none comes from the row),
    /// so a transport may keep what it builds from them for the next request.
    package var fixedHeaders = false
    /// Text made from the data row for the output's template and rejects columns; never sent.
    package var extras: [String] = []
    /// Where each binary label of the answer is written (nil for a text label); empty when the
    /// request has none.
    var labelFiles: [LabelFileTarget?] = []
    /// The Vault API's: the row's aliases, one per label in `reveal:` order; `url` is the API's
    /// `/aliases`, and the call that asks for them (with other rows') is made by `AliasCalls`.
    package var aliases: [String]?
    /// The label each of `aliases` fills.
    package var aliasLabels: [String] = []

    /// Sets the credential header, replacing one of the same name (names ignore case). A
    /// credential changes with each renewal, so the headers are no longer fixed: no transport
    /// keeps a token past the request that sends it.
    mutating func setCredential(_ name: String, _ value: String) {
        headers.removeAll { $0.name.caseInsensitiveCompare(name) == .orderedSame }
        headers.append((name, value))
        fixedHeaders = false
    }
}
