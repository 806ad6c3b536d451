import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore

/// The one retry policy: every caller's backoff and which answers are worth another try.
@Suite struct RetryTests {
    /// The longest wait doubles from the base up to the cap, for each caller's numbers.
    @Test(arguments: [
        (RetryPolicy.service.backoff, [500, 1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]),
        (RetryPolicy.push.backoff, [250, 500, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000]),
        (RetryPolicy().backoff, [200, 400, 800, 1_600, 3_200, 6_400, 10_000, 10_000]),
    ])
    func theLongestWaitDoublesUpToTheCap(backoff: Backoff, milliseconds: [Int]) {
        #expect((1...8).map { Int((backoff.longest(after: $0).seconds * 1000).rounded()) } == milliseconds)
        // A try count far past any cap does not overflow.
        #expect(backoff.longest(after: 10_000) == backoff.cap)
    }

    /// Full jitter draws between none and the longest wait, half jitter between half and all of
    /// it, none takes it whole; the draws are the seeded generator's.
    @Test(arguments: [Backoff.Jitter.full, .half, .none])
    func theJitterKeepsToItsRange(jitter: Backoff.Jitter) {
        let backoff = Backoff(base: .seconds(1), cap: .seconds(8), jitter: jitter)
        var random = SeededGenerator(seed: 47)
        var again = SeededGenerator(seed: 47)
        for attempt in 1...200 {
            let longest = backoff.longest(after: attempt % 6 + 1)
            let delay = backoff.delay(after: attempt % 6 + 1, random: &random)
            #expect(delay == backoff.delay(after: attempt % 6 + 1, random: &again))
            switch jitter {
            case .full: #expect(delay >= .zero && delay <= longest)
            case .half: #expect(delay >= longest / 2 && delay <= longest)
            case .none: #expect(delay == longest)
            }
        }
    }

    /// A service is asked again after a 5xx, a 429 or a 408, never after its word (another 4xx).
    @Test(arguments: [(408, true), (429, true), (500, true), (502, true), (599, true), (600, true), (999, true),
                      (400, false), (401, false), (403, false), (404, false), (409, false), (413, false)])
    func aServersTroubleIsWorthAnotherTryAndItsWordIsNot(status: Int, retried: Bool) {
        #expect(RetryPolicy.service.retries(status: status) == retried)
        #expect(RetryPolicy.push.retries(status: status) == retried)
        #expect(RetryPolicy().forOneServiceRequest.retries(status: status) == retried)
    }

    /// The hostname check takes the manifest's attempts and waits whole: one request, nothing to
    /// spread it from.
    @Test func theHostnameCheckTakesTheManifestsNumbersWithoutJitter() {
        var manifest = RetryPolicy()
        manifest.attempts = 5
        manifest.backoff.base = .seconds(1)
        manifest.backoff.cap = .seconds(3)
        let check = manifest.forOneServiceRequest
        #expect(check.attempts == 5 && check.backoff == Backoff(base: .seconds(1), cap: .seconds(3), jitter: .none))
    }
}
