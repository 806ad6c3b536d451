import ShowbatchBasics
import ShowbatchManifest

/// What is wrong with a night's record, its files or the hand-over asked for, put in words here
/// only. A ledger the files beside it contradict says how to mend it.
enum NightError: RunProblem {
    /// The ledger cannot be read: the run does not guess a number.
    case ledgerUnreadable(ledger: String, reason: String)
    /// The ledger holds a number no night can have.
    case numberBeyond(ledger: String, max: Int)
    /// A delivered night (or one being put on the server) is not recorded finished again.
    case deliveredNotRecordedAgain(ledger: String, date: NightDate)
    /// A delivered night is not handed over again.
    case deliveredNotHandedAgain(ledger: String, date: NightDate)
    /// The ledger has no night of the date to deliver, or to record as delivered.
    case noNight(ledger: String, date: NightDate, toRecordDelivered: Bool)
    /// Another run holds the ledger's lock (`waited`: for over 30 s, not cut short by an interrupt).
    case ledgerLocked(path: String, waited: Bool)
    /// The ledger is missing while a file or delivery record of one of its nights is there.
    case ledgerMissing(ledger: String, template: String, witness: String, isDeliveryRecord: Bool)
    /// The ledger is of an older generation than a delivery record beside it.
    case ledgerOlder(ledger: String, record: String, ledgerGeneration: Int, recordGeneration: Int)
    /// The ledger says a night undelivered that a delivery record says was delivered.
    case ledgerSaysUndelivered(ledger: String, date: NightDate, record: String, to: String, at: String)
    /// The ledger numbers nights lower than a file beside it.
    case ledgerNumbersLower(ledger: String, highest: Int, file: String, seq: Int)
    /// `--rebuild-ledger` with no file or delivery record to rebuild from.
    case nothingToRebuild(template: String)
    /// `deliver` of a night that was never finished.
    case neverFinished(path: String, date: NightDate, manifest: String)
    /// `deliver` of a night finished with rows not ok beyond max_failed; `fix` says how to mend it.
    case finishedNotWhole(path: String, fix: String)
    /// A finished night's file is not there any more.
    case finishedFileGone(path: String, finished: String)
    /// A finished night's file is not the one its night wrote.
    case finishedFileChanged(path: String, finished: String)
    /// A written file's rows cannot be counted (to see that the night adds up).
    case cannotCount(path: String, reason: String)
    /// A written file's rows cannot be totalled (for its trailer).
    case cannotTotal(path: String, reason: String)
    /// A summed cell of a written file is not a decimal number.
    case notADecimal(path: String, row: Int, column: String)
    /// `--date` too far ahead of today.
    case dateAhead(date: NightDate, days: Int, today: NightDate, zone: String)

    private static let rebuild = "check the volume was not restored from an older copy, then run again with --rebuild-ledger, which rebuilds it from these records"

    var description: String {
        switch self {
        case .ledgerUnreadable(let ledger, let reason):
            return "cannot read \(ledger), which keeps the sequence numbers of the output's nights: \(reason); the run does not guess a number"
        case .numberBeyond(let ledger, let max):
            return "\(ledger) holds a number beyond \(max): it is not a night's"
        case .deliveredNotRecordedAgain(let ledger, let date):
            return "\(ledger) says the night of \(date) was delivered (or was being put in place on the server): it is not recorded again"
        case .deliveredNotHandedAgain(let ledger, let date):
            return "\(ledger) says the night of \(date) was delivered: it is not handed over again"
        case .noNight(let ledger, let date, let toRecordDelivered):
            return "\(ledger) has no night of \(date) to \(toRecordDelivered ? "record as delivered" : "deliver")"
        case .ledgerLocked(let path, let waited):
            return "\(path) is locked by another run\(waited ? " for over 30 s" : ""): the night's number was not taken"
        case .ledgerMissing(let ledger, let template, let witness, let isDeliveryRecord):
            return "\(ledger), the ledger of \(template)'s nights, is missing, but \(witness)\(isDeliveryRecord ? ".delivered records" : " is") a night of it: the ledger was deleted; nothing is numbered anew or sent again from nothing: \(Self.rebuild)"
        case .ledgerOlder(let ledger, let record, let ledgerGeneration, let recordGeneration):
            return "\(ledger) is older than \(record) (the ledger's generation \(ledgerGeneration), the record's \(recordGeneration)): it was rolled back; \(Self.rebuild)"
        case .ledgerSaysUndelivered(let ledger, let date, let record, let to, let at):
            return "\(ledger) says the night of \(date) was not delivered, but \(record) records its delivery to \(to) at \(at): the ledger was rolled back; \(Self.rebuild)"
        case .ledgerNumbersLower(let ledger, let highest, let file, let seq):
            return "\(ledger) numbers nights up to \(highest), but \(file) is numbered \(seq): the ledger was rolled back, and the next night would take a number a night already has; \(Self.rebuild)"
        case .nothingToRebuild(let template):
            return "there is nothing beside \(template) to rebuild its ledger from (no file or delivery record of a night): a ledger is never rebuilt from nothing"
        case .neverFinished(let path, let date, let manifest):
            return "\(path) was never finished for the night of \(date): run it first (showbatch run \(manifest) --date \(date))"
        case .finishedNotWhole(let path, let fix):
            return "\(path) was finished with rows not ok beyond max_failed, so it is not delivered: \(fix)"
        case .finishedFileGone(let path, let finished):
            return "\(path), finished at \(finished), is not there any more: run the night again to write it"
        case .finishedFileChanged(let path, let finished):
            return "\(path) is not the file its night wrote at \(finished) (its SHA-256 differs): it is not delivered"
        case .cannotCount(let path, let reason):
            return "cannot count the rows of \(path): \(reason)"
        case .cannotTotal(let path, let reason):
            return "cannot total the rows of \(path): \(reason)"
        case .notADecimal(let path, let row, let column):
            return "cannot total the rows of \(path): row \(row)'s column \(column) is not a decimal number (did the file change?)"
        case .dateAhead(let date, let days, let today, let zone):
            return "--date \(date) is \(days) days after today (\(today) in \(zone)): a night is today's, yesterday's or an earlier one's, and a later one would be numbered before every real night after it; check the year and TZ, or give --allow-future"
        }
    }

    func redacted(_ redact: (String) -> String) -> NightError {
        switch self {
        case .ledgerUnreadable(let ledger, let reason): return .ledgerUnreadable(ledger: redact(ledger), reason: redact(reason))
        case .numberBeyond(let ledger, let max): return .numberBeyond(ledger: redact(ledger), max: max)
        case .deliveredNotRecordedAgain(let ledger, let date): return .deliveredNotRecordedAgain(ledger: redact(ledger), date: date)
        case .deliveredNotHandedAgain(let ledger, let date): return .deliveredNotHandedAgain(ledger: redact(ledger), date: date)
        case .noNight(let ledger, let date, let record): return .noNight(ledger: redact(ledger), date: date, toRecordDelivered: record)
        case .ledgerLocked(let path, let waited): return .ledgerLocked(path: redact(path), waited: waited)
        case .ledgerMissing(let ledger, let template, let witness, let isRecord):
            return .ledgerMissing(ledger: redact(ledger), template: redact(template), witness: redact(witness), isDeliveryRecord: isRecord)
        case .ledgerOlder(let ledger, let record, let mine, let theirs):
            return .ledgerOlder(ledger: redact(ledger), record: redact(record), ledgerGeneration: mine, recordGeneration: theirs)
        case .ledgerSaysUndelivered(let ledger, let date, let record, let to, let at):
            return .ledgerSaysUndelivered(ledger: redact(ledger), date: date, record: redact(record), to: redact(to), at: redact(at))
        case .ledgerNumbersLower(let ledger, let highest, let file, let seq):
            return .ledgerNumbersLower(ledger: redact(ledger), highest: highest, file: redact(file), seq: seq)
        case .nothingToRebuild(let template): return .nothingToRebuild(template: redact(template))
        case .neverFinished(let path, let date, let manifest): return .neverFinished(path: redact(path), date: date, manifest: redact(manifest))
        case .finishedNotWhole(let path, let fix): return .finishedNotWhole(path: redact(path), fix: redact(fix))
        case .finishedFileGone(let path, let finished): return .finishedFileGone(path: redact(path), finished: redact(finished))
        case .finishedFileChanged(let path, let finished): return .finishedFileChanged(path: redact(path), finished: redact(finished))
        case .cannotCount(let path, let reason): return .cannotCount(path: redact(path), reason: redact(reason))
        case .cannotTotal(let path, let reason): return .cannotTotal(path: redact(path), reason: redact(reason))
        case .notADecimal(let path, let row, let column): return .notADecimal(path: redact(path), row: row, column: redact(column))
        case .dateAhead(let date, let days, let today, let zone): return .dateAhead(date: date, days: days, today: today, zone: redact(zone))
        }
    }
}
