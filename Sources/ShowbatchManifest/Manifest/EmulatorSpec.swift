import ShowbatchBasics
/// The `emulator:` section: what `run --emulate` reveals and which faults it injects.
package struct EmulatorSpec: Sendable, Equatable {
    /// Where the aliases come from.
    package enum Aliases: Sendable, Equatable {
        case inline([String: String])
        case file(String)
    }

    /// The aliases; nil uses the built-in sample aliases.
    package var aliases: Aliases?
    /// The faults.
    package var faults = EmulatorFaults()
    /// Whether it demands tokens (and hands them out), as an OAuth 2.0 server.
    package var auth: EmulatorAuth?
    /// The answer's shape (`emulator.response`): JSON whose strings may hold `${body.PATH}`, a
    /// value of the request's JSON body (its aliases revealed); nil: the echo
    /// `{"json": body, "method", "path", "headers"}`.
    package var response: JSONValue?

    /// No aliases, no faults.
    package init() {}
}

/// Faults the emulator injects, each drawn from one seeded sequence so a run can be replayed.
package struct EmulatorFaults: Sendable, Equatable {
    /// Delay of every answer.
    package var latency: Duration = .zero
    /// Plus or minus this much on the latency.
    package var jitter: Duration = .zero
    /// Fraction of requests answered with `failStatus`.
    package var failRate = 0.0
    /// Status of injected failures.
    package var failStatus = 500
    /// Requests per interval before 429 with Retry-After.
    package var throttle: Rate?
    /// A rate limit of fixed windows, as the VGS proxy keeps one per client and minute: this many
    /// requests per `windowLength`, then 429 until the window resets (tests only).
    package var windowLimit: Int?
    package var windowLength: Duration = .seconds(60)
    /// The window's 429s say `Retry-After` (the seconds to its reset, rounded up).
    package var windowRetryAfter = false
    /// Every answer says `x-ratelimit-remaining` and `x-ratelimit-reset` (seconds to the reset).
    package var windowHeaders = false
    /// Fraction of requests whose connection is closed without an answer.
    package var dropRate = 0.0
    /// Fraction of requests answered 200 with a body that is not JSON.
    package var malformedRate = 0.0
    /// Seed of the fault choices.
    package var seed: UInt64 = 1
    /// An outage: after this many requests, every request is answered 503 for `outageFor`.
    package var outageAfter: Int?
    /// The outage's 503s say `Retry-After` this many seconds (tests only).
    package var outageRetryAfter: Int?
    /// The outage answers nothing: a request waits until the outage ends, then its connection is
    /// closed (tests only).
    package var outageHangs = false
    /// The outage resets every connection that sends a request, with no answer, as a server that
    /// was killed does (tests only).
    package var outageResets = false
    /// How long the outage lasts.
    package var outageFor: Duration = .zero
    /// Paths always answered with `failStatus` (a row that can never succeed).
    package var failPaths: Set<String> = []
    /// Each connection is reset (TCP RST) right after a number of answers drawn from 1…this,
    /// as a load balancer that resets idle keep-alive connections does.
    package var resetAfter: Int?
    /// Each connection is closed without a word (FIN) right after a number of answers drawn from
    /// 1…this, although each answer promised to keep it open.
    package var closeAfter: Int?

    /// No faults.
    package init() {}
}

/// The emulator as an OAuth 2.0 server: it hands out tokens at `POST /oauth/token` and answers
/// 401 to any other request without a valid one.
package struct EmulatorAuth: Sendable, Equatable {
    /// The client id it accepts; nil accepts any client.
    package var clientID: String?
    /// The client secret it accepts; nil accepts any.
    package var clientSecret: String?
    /// Requests a token is good for before it is refused (401); nil: no limit.
    package var tokenUses: Int?
    /// The `expires_in` it states, in seconds; nil states none.
    package var expiresIn: Int?
    /// After this many requests, every token is refused (401) for `refuseFor`, new ones too, as
    /// while an authentication backend restarts.
    package var refuseAfter: Int?
    /// How long tokens are refused.
    package var refuseFor: Duration = .zero
    /// After this many token requests, the token endpoint answers 503 for `unavailableFor`.
    package var unavailableAfter: Int?
    /// How long the token endpoint is unavailable.
    package var unavailableFor: Duration = .zero

    /// Tokens for any client, without limit.
    package init() {}
}
