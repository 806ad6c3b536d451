import Foundation
import ShowbatchBasics
import ShowbatchManifest
#if canImport(Glibc)
import Glibc
#endif

/// Which night a command names: `--date YYYY-MM-DD`, `--date today` or `--date yesterday` (the
/// nightly job at 02:15 exports the day that just ended); no `--date` is today.
package enum NightChoice: Sendable, Equatable, CustomStringConvertible {
    case today
    case yesterday
    case day(NightDate)

    /// `today`, `yesterday` or `YYYY-MM-DD`; nil otherwise.
    package init?(parsing text: String) {
        switch text {
        case "today": self = .today
        case "yesterday": self = .yesterday
        default:
            guard let date = NightDate(parsing: text) else { return nil }
            self = .day(date)
        }
    }

    /// As `--date` takes it.
    package var description: String {
        switch self {
        case .today: return "today"
        case .yesterday: return "yesterday"
        case .day(let date): return date.description
        }
    }
}

/// Where a command reads the time of day from: the system's clock, or one a test sets. A command
/// reads it once, when it decides its `Night`; every later use of the night's date is that one.
package struct NightClock: Sendable {
    /// Seconds since the epoch.
    package let now: @Sendable () -> time_t

    package init(now: @escaping @Sendable () -> time_t) { self.now = now }

    /// The system's clock.
    package static let system = NightClock { time(nil) }

    /// The date in the local time zone (`TZ`, else the system's), read now.
    package var today: NightDate {
        var seconds = now()
        var parts = tm()
        localtime_r(&seconds, &parts)
        return NightDate(year: Int(parts.tm_year) + 1900, month: Int(parts.tm_mon) + 1, day: Int(parts.tm_mday))!
    }
}

/// The night one command works on, decided once before anything is sent or written: its date
/// (`--date`, else today in `TZ`, read once), the day it was decided on, and whether the command
/// is a test run (a canary with `--limit`, or `--output`), which goes to no processor and is
/// recorded nowhere. Run, merge, deliver, the audit trail, the report, the metrics and every hint
/// read the date from here.
package struct Night: Sendable, Equatable {
    package let date: NightDate
    /// Today in `TZ`, when the command decided its night.
    package let today: NightDate
    /// A canary (`--limit`) or `--output`: no number is taken, nothing is recorded or delivered,
    /// and yesterday's data is fine.
    package let testRun: Bool

    /// Nights this far after today are refused unless `--allow-future`: tomorrow is allowed, for
    /// a job that runs just before midnight in another time zone than its data's.
    package static let daysAheadAllowed = 1

    package init(date: NightDate, today: NightDate, testRun: Bool = false) {
        self.date = date
        self.today = today
        self.testRun = testRun
    }

    /// Decides the night from `--date` (`choice`, nil: today) and `clock`, read once. A night
    /// beginning more than a day after today (a mistyped year: every real night after it would be
    /// refused as out of order) is refused unless `allowFuture`; `beginning` is false for the
    /// commands that only find a night that began (merge, deliver).
    package static func decide(_ choice: NightChoice?, clock: NightClock = .system, allowFuture: Bool = false,
                               testRun: Bool = false, beginning: Bool = true) throws(RunError) -> Night {
        let today = clock.today
        let date: NightDate
        switch choice ?? .today {
        case .today: date = today
        case .yesterday: date = today.adding(days: -1)
        case .day(let day): date = day
        }
        let ahead = today.days(to: date)
        if beginning && !allowFuture && !testRun && ahead > daysAheadAllowed {
            throw RunError.usage(NightError.dateAhead(date: date, days: ahead, today: today, zone: zoneName))
        }
        return Night(date: date, today: today, testRun: testRun)
    }

    /// The time zone the day is read in, as a person set it.
    private static var zoneName: String {
        ProcessInfo.processInfo.environment["TZ"].map { $0.isEmpty ? "UTC" : "TZ=\($0)" } ?? "the system's time zone"
    }
}
