/// The `emulator:` section: what `run --emulate` reveals and which faults it injects.
public struct EmulatorSpec: Sendable, Equatable {
    /// Where the aliases come from.
    public enum Aliases: Sendable, Equatable {
        case inline([String: String])
        case file(String)
    }

    /// The aliases; nil uses the built-in sample aliases.
    public var aliases: Aliases?
    /// The faults.
    public var faults = EmulatorFaults()

    /// No aliases, no faults.
    public init() {}
}

/// Faults the emulator injects, each drawn from one seeded sequence so a run can be replayed.
public struct EmulatorFaults: Sendable, Equatable {
    /// Delay of every answer.
    public var latency: Duration = .zero
    /// Plus or minus this much on the latency.
    public var jitter: Duration = .zero
    /// Fraction of requests answered with `failStatus`.
    public var failRate = 0.0
    /// Status of injected failures.
    public var failStatus = 500
    /// Requests per interval before 429 with Retry-After.
    public var throttle: Rate?
    /// Fraction of requests whose connection is closed without an answer.
    public var dropRate = 0.0
    /// Fraction of requests answered 200 with a body that is not JSON.
    public var malformedRate = 0.0
    /// Seed of the fault choices.
    public var seed: UInt64 = 1

    /// No faults.
    public init() {}
}
