import Foundation
import ShowbatchBasics

/// The date of a night (`--date YYYY-MM-DD`; which one a command works on is decided once, by
/// `Night`).
package struct NightDate: Sendable, Hashable, Comparable, CustomStringConvertible {
    package let year: Int
    package let month: Int
    package let day: Int

    /// `YYYY-MM-DD`, a day the calendar has; nil otherwise.
    package init?(parsing text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              parts.allSatisfy({ $0.utf8.allSatisfy { (48...57).contains($0) } }),
              let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]) else { return nil }
        self.init(year: year, month: month, day: day)
    }

    /// A day the calendar has; nil otherwise.
    package init?(year: Int, month: Int, day: Int) {
        guard (1...9999).contains(year), (1...12).contains(month), day >= 1 else { return nil }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        guard day <= days else { return nil }
        (self.year, self.month, self.day) = (year, month, day)
    }

    /// `YYYYMMDD`, as `${run.date}` writes it (and the sequence state keeps it); nil otherwise.
    package init?(compact text: String) {
        guard text.utf8.count == 8 else { return nil }
        let digits = Array(text)
        self.init(parsing: String(digits[0..<4]) + "-" + String(digits[4..<6]) + "-" + String(digits[6..<8]))
    }

    /// The day `days` after this one (before it, when negative).
    package func adding(days: Int) -> NightDate {
        let shifted = NightDate.civil(fromDays: daysSinceEpoch + days)
        return NightDate(year: shifted.year, month: shifted.month, day: shifted.day) ?? self
    }

    /// Days from this one to `other` (negative when `other` is earlier).
    package func days(to other: NightDate) -> Int { other.daysSinceEpoch - daysSinceEpoch }

    /// Days since 1970-01-01 (Howard Hinnant's `days_from_civil`).
    private var daysSinceEpoch: Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date `days` after 1970-01-01 (`civil_from_days`).
    private static func civil(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// `YYYYMMDD`: what `${run.date}` writes.
    package var compact: String { pad(year, 4) + pad(month, 2) + pad(day, 2) }

    /// `YYYY-MM-DD`.
    package var description: String { pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) }

    package static func < (lhs: NightDate, rhs: NightDate) -> Bool {
        (lhs.year, lhs.month, lhs.day) < (rhs.year, rhs.month, rhs.day)
    }

    private func pad(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }
}

/// What names a night in an output's file name: `${run.date}` and `${run.seq}` (`${run.seq:N}`,
/// zero-padded to N digits). A path keeps them as written until a run knows its night.
package enum NightName {
    /// The widest zero-padding `${run.seq:N}` takes.
    package static let maxWidth = 12

    /// One reference to the night.
    package enum Reference: Sendable, Equatable {
        case date
        case seq(width: Int)

        /// The reference as a path keeps it.
        package var text: String {
            switch self {
            case .date: return "${run.date}"
            case .seq(let width): return width == 0 ? "${run.seq}" : "${run.seq:\(width)}"
            }
        }
    }

    /// The reference `${run.NAME}` names (`NAME` without `run.`), or what is wrong with it.
    package static func reference(_ name: Substring) -> Result<Reference, TemplateSyntaxError> {
        if name == "date" { return .success(.date) }
        if name == "seq" { return .success(.seq(width: 0)) }
        if name.hasPrefix("seq:"), let width = Int(name.dropFirst(4)), (1...maxWidth).contains(width),
           name.dropFirst(4).utf8.allSatisfy({ (48...57).contains($0) }) {
            return .success(.seq(width: width))
        }
        return .failure(TemplateSyntaxError(message: "${run.\(name)} is not valid; expected ${run.date}, ${run.seq} or ${run.seq:N} (N from 1 to \(maxWidth): zero-padded to N digits)"))
    }

    /// Each `${run.…}` in `text` with where it is, in order; a `$${` is a literal and skipped.
    package static func references(in text: String) -> [(range: Range<String.Index>, reference: Result<Reference, TemplateSyntaxError>)] {
        runReferences(in: text).map { found in (found.range, found.name.flatMap(reference)) }
    }

    /// Each `${run.NAME}` in `text`: where it is and its `NAME`, or that it is not closed; a
    /// `$${` is a literal and skipped.
    package static func runReferences(in text: String) -> [(range: Range<String.Index>, name: Result<Substring, TemplateSyntaxError>)] {
        var found: [(Range<String.Index>, Result<Substring, TemplateSyntaxError>)] = []
        var rest = text.startIndex
        while let start = text.range(of: "${run.", range: rest..<text.endIndex) {
            if start.lowerBound > text.startIndex && text[text.index(before: start.lowerBound)] == "$" {
                rest = start.upperBound
                continue
            }
            guard let close = text[start.upperBound...].firstIndex(of: "}") else {
                found.append((start.lowerBound..<text.endIndex, .failure(TemplateSyntaxError(message: "\"${\" is not closed by \"}\" (write $${ for a literal ${)"))))
                break
            }
            found.append((start.lowerBound..<text.index(after: close), .success(text[start.upperBound..<close])))
            rest = text.index(after: close)
        }
        return found
    }

    /// Whether `path` names the night.
    package static func names(_ path: String) -> Bool {
        path.contains("${run.") && !references(in: path).isEmpty
    }

    /// Whether `path` holds `${run.seq…}`.
    package static func numbers(_ path: String) -> Bool {
        references(in: path).contains { if case .success(.seq) = $0.reference { return true } else { return false } }
    }

    /// `text` with the night filled in.
    package static func expand(_ text: String, date: NightDate, seq: Int) -> String {
        guard text.contains("${run.") else { return text }
        var out = ""
        var last = text.startIndex
        for (range, reference) in references(in: text) {
            out += text[last..<range.lowerBound]
            switch reference {
            case .success(.date): out += date.compact
            case .success(.seq(let width)):
                let digits = String(seq)
                out += String(repeating: "0", count: max(0, width - digits.count)) + digits
            case .failure: out += text[range]
            }
            last = range.upperBound
        }
        return out + text[last...]
    }

    /// The name the sequence state of an output named `template` has, in the output's folder:
    /// `.cards-{date}-{seq:6}.csv.sequence` for `cards-${run.date}-${run.seq:6}.csv` (each
    /// reference kept, so that two outputs of one folder never share one).
    package static func stateName(of template: String) -> String {
        let name = (template as NSString).lastPathComponent
        var out = ""
        var last = name.startIndex
        for (range, reference) in references(in: name) {
            out += name[last..<range.lowerBound]
            switch reference {
            case .success(.date): out += "{date}"
            case .success(.seq(let width)): out += width == 0 ? "{seq}" : "{seq:\(width)}"
            case .failure: out += "{run}"
            }
            last = range.upperBound
        }
        return "." + out + name[last...] + ".sequence"
    }
}
