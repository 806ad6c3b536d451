import ShowbatchBasics
import ShowbatchManifest
import ShowbatchCore

/// One command-line flag, declared once: the parser reads its name and whether it takes a value,
/// the help text its value's placeholder and description, and `apply` stores what it says.
struct Flag<Arguments>: Sendable {
    /// How the flag stores its value.
    enum Action {
        /// `--flag VALUE` or `--flag=VALUE`; the closure checks and stores the value.
        case value(String, @Sendable (inout Arguments, String) throws(UsageError) -> Void)
        /// `--flag` alone.
        case toggle(@Sendable (inout Arguments) -> Void)
        /// `--flag` alone (nil) or `--flag=VALUE`: a toggle with a variant.
        case toggleOrValue(String, @Sendable (inout Arguments, String?) throws(UsageError) -> Void)
    }

    let name: String
    let action: Action
    let help: String
    /// The one-letter spelling (`-o`), for the common flags.
    private(set) var short: String?

    /// The flag, also spelled `letter` (`-o`).
    func short(_ letter: String) -> Flag {
        var flag = self
        flag.short = letter
        return flag
    }

    /// The one-letter spelling, if the flag has one.
    var shortName: String? { short }

    /// Whether `spelling` names this flag.
    func named(_ spelling: String) -> Bool { spelling == name || spelling == short }

    init(_ name: String, _ placeholder: String, _ help: String, _ apply: @escaping @Sendable (inout Arguments, String) throws(UsageError) -> Void) {
        self.name = name
        action = .value(placeholder, apply)
        self.help = help
    }

    init(_ name: String, _ help: String, _ apply: @escaping @Sendable (inout Arguments) -> Void) {
        self.name = name
        action = .toggle(apply)
        self.help = help
    }

    init(_ name: String, optional placeholder: String, _ help: String,
         _ apply: @escaping @Sendable (inout Arguments, String?) throws(UsageError) -> Void) {
        self.name = name
        action = .toggleOrValue(placeholder, apply)
        self.help = help
    }

    /// The flag as the help lists it: `--output PATH`.
    var synopsis: String {
        let names = short.map { "\($0), \(name)" } ?? name
        switch action {
        case .value(let placeholder, _): return "\(names) \(placeholder)"
        case .toggle: return names
        case .toggleOrValue(let placeholder, _): return "\(names)[=\(placeholder)]"
        }
    }

    /// The help line, its description aligned in a column.
    var helpLine: String {
        let left = synopsis
        let padding = left.count < 27 ? String(repeating: " ", count: 27 - left.count) : "   "
        return "  \(left)\(padding)\(help)"
    }
}

/// Checks of flag values, with messages that name the flag, what was expected and what was given.
enum FlagValue {
    /// An integer in `range`; `noun` says what it is ("an integer", "an HTTP status").
    static func integer(_ text: String, _ flag: String, _ range: ClosedRange<Int>, noun: String = "an integer",
                        command: String) throws(UsageError) -> Int {
        guard let value = Int(text), range.contains(value) else {
            throw UsageError(message: "\(flag) must be \(noun) from \(range.lowerBound) to \(range.upperBound); got \"\(text)\"", command: command)
        }
        return value
    }

    /// A fraction from 0 to 1.
    static func probability(_ text: String, _ flag: String, command: String) throws(UsageError) -> Double {
        guard let value = Double(text), (0...1).contains(value) else {
            throw UsageError(message: "\(flag) must be a probability from 0 to 1, such as 0.05; got \"\(text)\"", command: command)
        }
        return value
    }

    /// One of an enumeration's raw values.
    static func choice<T: RawRepresentable & CaseIterable>(_ text: String, _ flag: String, command: String) throws(UsageError) -> T
        where T.RawValue == String {
        if let value = T(rawValue: text) { return value }
        throw UsageError(message: "\(flag) must be \(choices(T.allCases.map(\.rawValue))); got \"\(text)\"", command: command)
    }

    /// `--max-failed`: a number of rows, or a percentage of the `whole`'s rows.
    static func allowance(_ text: String, of whole: String, command: String) throws(UsageError) -> FailureAllowance {
        guard let allowance = FailureAllowance.parse(text) else {
            throw UsageError(message: "--max-failed must be a number of rows (25) or a percentage of the \(whole)'s rows (0.1%); got \"\(text)\"", command: command)
        }
        return allowance
    }

    /// A calendar date, `YYYY-MM-DD`.
    static func night(_ text: String, _ flag: String, command: String) throws(UsageError) -> NightChoice {
        guard let night = NightChoice(parsing: text) else {
            throw UsageError(message: "\(flag) must be a date YYYY-MM-DD (such as 2026-12-01), yesterday or today; got \"\(text)\"", command: command)
        }
        return night
    }

    /// A positive duration.
    static func duration(_ text: String, _ flag: String, command: String) throws(UsageError) -> Duration {
        switch Units.parseDuration(text) {
        case .success(let value): return value
        case .failure(.malformed):
            throw UsageError(message: "\(flag) must be a positive duration such as 500ms, 30s or 2m; got \"\(text)\"", command: command)
        case .failure(.outOfRange):
            throw UsageError(message: "\(flag) must be a duration \(Units.durationRangeText); got \"\(text)\"", command: command)
        }
    }

    /// A rate: N/s or N/m.
    static func rate(_ text: String, _ flag: String, example: String, command: String) throws(UsageError) -> Rate {
        guard let rate = Units.rate(text) else {
            throw UsageError(message: "\(flag) must be N/s or N/m, such as \(example); got \"\(text)\"", command: command)
        }
        return rate
    }
}
