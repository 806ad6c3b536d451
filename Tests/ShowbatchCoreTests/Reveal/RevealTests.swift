import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

@Suite struct RevealTests {
    let labels = [LabelBinding(name: "x", path: try! ContentPath(parsing: "json.x"), transforms: [], mask: nil)]

    @Test(arguments: [
        ("", "1401 unexpected_response_data_format: empty response body"),
        ("  \n", "1401 unexpected_response_data_format: empty response body"),
        ("[1]", "1402 response_invalid_json: response body is JSON but not an object"),
        ("{\"json\":", "1402 response_invalid_json: response body is not valid JSON (unexpected end of input at byte 8)"),
        ("{\"json\":{}}", "1403 field_not_found: label x: no value at json.x"),
        ("{\"json\":{\"x\":null}}", "1403 field_not_found: label x: no value at json.x"),
    ])
    func bodyErrors(body: String, error: String) {
        let row = Reveal.row(ordinal: 0, request: "r", status: 200, attempts: 1, body: Array(body.utf8), labels: labels)
        #expect(row.errors.map(\.text) == [error])
    }

    @Test func retryAfterAcceptsSecondsAndDates() {
        #expect(RetryAfter.parse("3") == .seconds(3))
        #expect(RetryAfter.parse("Wed, 21 Oct 2015 07:28:00 GMT") == .zero)
        #expect(RetryAfter.parse("soon") == nil)
    }
}
