import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// What an attempt's result means for the breaker and for the row, under the default retry
/// policy (3 attempts; 429, 502, 503 and 504 retried; network failures and timeouts retried).
@Suite struct AttemptDecisionTests {
    private static func answer(_ status: Int, _ headers: [String: String] = [:]) -> TransportResult {
        .response(status: status, headers: headers, body: Array("{}".utf8))
    }

    private static func httpStatus(_ status: Int) -> RowError { RowError(code: .httpStatus, label: nil, message: "HTTP \(status)") }

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let result: TransportResult
        var attempt = 1
        var probe = false
        var failedBefore = false
        var credentials = false
        var paced = false
        let signal: AttemptSignal
        let weighs: Bool
        let next: AttemptDecision.Next
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "200", result: answer(200), signal: .answered, weighs: true, next: .reveal(status: 200, body: Array("{}".utf8))),
        Case(name: "404 fails at once", result: answer(404), signal: .answered, weighs: true, next: .fail(status: 404, httpStatus(404))),
        Case(name: "503 retried", result: answer(503), signal: .transient, weighs: true, next: .retry(after: nil)),
        Case(name: "503 with Retry-After", result: answer(503, ["retry-after": "2"]), signal: .transient, weighs: true, next: .retry(after: .seconds(2))),
        Case(name: "503 on the last attempt", result: answer(503), attempt: 3, signal: .transient, weighs: true, next: .fail(status: 503, httpStatus(503))),
        Case(name: "500 is not retried", result: answer(500), signal: .answered, weighs: true, next: .fail(status: 500, httpStatus(500))),
        Case(name: "429 paced", result: answer(429), paced: true, signal: .answered, weighs: true, next: .throttled),
        Case(name: "429 unpaced, last", result: answer(429), attempt: 3, signal: .answered, weighs: true,
             next: .fail(status: 429, RowError(code: .rateLimited, label: nil, message: "HTTP 429 after 3 attempts"))),
        Case(name: "401 with credentials", result: answer(401), credentials: true, signal: .none, weighs: true, next: .renewToken),
        Case(name: "401 without", result: answer(401), signal: .answered, weighs: true, next: .fail(status: 401, httpStatus(401))),
        Case(name: "a first reset weighs nothing", result: .failure(.network("reset")), signal: .transient, weighs: false, next: .retry(after: nil)),
        Case(name: "a second reset weighs", result: .failure(.network("reset")), attempt: 2, failedBefore: true, signal: .transient, weighs: true, next: .retry(after: nil)),
        Case(name: "a reset on the last attempt", result: .failure(.network("reset")), attempt: 3, signal: .transient, weighs: true,
             next: .fail(status: nil, RowError(code: .network, label: nil, message: "reset"))),
        Case(name: "a probe's timeout", result: .failure(.timeout), probe: true, signal: .transient, weighs: true, next: .retry(after: nil)),
        Case(name: "a timeout, last", result: .failure(.timeout), attempt: 3, signal: .transient, weighs: true,
             next: .fail(status: nil, RowError(code: .timeout, label: nil, message: "no answer within 5s"))),
        Case(name: "a body too large", result: .failure(.bodyTooLarge(16 << 20)), signal: .none, weighs: false,
             next: .fail(status: nil, RowError(code: .unexpectedResponseDataFormat, label: nil, message: "response body is over 16 MiB"))),
        Case(name: "cancelled", result: .failure(.cancelled), signal: .none, weighs: false, next: .cancelled),
    ]

    @Test(arguments: cases)
    func eachResultIsDecided(_ item: Case) {
        let decision = AttemptDecision.of(item.result, attempt: item.attempt, policy: RetryPolicy(), timeout: .seconds(5), probe: item.probe,
                                          failedBefore: item.failedBefore, credentials: item.credentials, paced: item.paced)
        #expect(decision == AttemptDecision(signal: item.signal, weighs: item.weighs, next: item.next))
    }

    /// An untrusted certificate stops the run, whatever is left of the row's attempts.
    @Test func anUntrustedCertificateStopsTheRun() {
        let decision = AttemptDecision.of(.failure(.certificate("unknown CA")), attempt: 1, policy: RetryPolicy(), timeout: .seconds(5))
        #expect(decision.next == .stop(TransportFailure.certificate("unknown CA").words) && decision.signal == .none)
    }
}
