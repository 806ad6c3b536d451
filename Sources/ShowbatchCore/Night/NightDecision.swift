import ShowbatchBasics
import ShowbatchManifest

/// Why a command does not take a night: a usage error (exit 2), with nothing sent.
enum NightRefusal: RunProblem, Equatable {
    /// A new night dated before the latest the output has: it would be numbered after it.
    case outOfOrder(NightDate, latest: NightRecord)
    /// Tonight's data files hold the rows of another night of the output.
    case repeated(NightDate, of: NightRecord)
    /// `--retry-failed` of a night that was delivered (or was being put on the server).
    case retryDelivered(path: String, NightRecord)
    /// `--retry-failed` of a night that never began for the output.
    case neverWritten(path: String, NightDate)

    var error: RunError { .usage(self) }

    var description: String {
        switch self {
        case .outOfOrder(let date, let latest):
            return "the night of \(date) would come after the night of \(latest.date) (\(latest.file.isEmpty ? "begun" : latest.file), sequence \(latest.seq)), which is later: a processor takes nights in order; check --date and TZ"
        case .repeated(let date, let night):
            return "the data files of the night of \(date) are the same as those of the night of \(night.date) (\(night.file.isEmpty ? "begun, not finished" : night.file), sequence \(night.seq)): the export upstream may not have run since; nothing was sent (--allow-repeat sends them again)"
        case .retryDelivered(let path, let night):
            return "\(path) was delivered\(night.deliveredWhere) at \(night.deliveredAt): a processor takes a night's file once, so --retry-failed does not rewrite it; its failed rows are in its rejects file or journal"
        case .neverWritten(let path, let date):
            return "\(path) was never written for the night of \(date), so it has no failed rows to send again; run without --retry-failed"
        }
    }

    func redacted(_ redact: (String) -> String) -> NightRefusal {
        switch self {
        case .outOfOrder(let date, let latest): return .outOfOrder(date, latest: latest.redacted(redact))
        case .repeated(let date, let night): return .repeated(date, of: night.redacted(redact))
        case .retryDelivered(let path, let night): return .retryDelivered(path: redact(path), night.redacted(redact))
        case .neverWritten(let path, let date): return .neverWritten(path: redact(path), date)
        }
    }
}

/// Why a finished night is written again under its number (said in a warning).
enum NightRewrite: Equatable {
    /// Its data files hold other rows now.
    case dataChanged
    /// The manifest makes other rows now (labels, paths, columns).
    case manifestChanged
    /// It was finished with rows not ok beyond `max_failed` (or rows missing), and nothing is
    /// left to send again from (no journal): run again, its rows are all sent again.
    case notWhole(notOk: Int, rows: Int)
}

/// What a run leaves as it is, sending nothing for it.
enum NightLeave: Equatable {
    /// Finished with these data files and this manifest, its file as it was, whole.
    case finished
    /// Delivered (its file is the processor's); `dataChanged`: tonight's data files hold other
    /// rows, which are not sent (exit 1).
    case delivered(dataChanged: Bool)
    /// Being put in place on the processor's server when a run stopped: the delivery step finds out.
    case handing
    /// A shard's night merged into a file still as it was then.
    case merged
}

/// What a command does with an output's night.
enum NightVerdict: Equatable {
    case refuse(NightRefusal)
    /// A new night: its number is taken, then it is written.
    case begin
    /// The night has its number; it is written as the run's mode says (fresh, resumed or its
    /// failed rows sent again), `again` saying why a finished one is written again.
    case write(again: NightRewrite?)
    /// Nothing is sent for it.
    case leave(NightLeave)
}

/// What is known of an output's night before a command decides on it: its ledger, its files,
/// tonight's data and manifest. Gathered by `NightBook`; the decision is a pure function of it.
struct NightFacts: Equatable {
    var night: Night
    /// The ledger's record of this date.
    var record: NightRecord?
    /// The ledger's latest night.
    var latest: NightRecord?
    /// A night of another date whose data files held tonight's rows.
    var repeatOf: NightRecord?
    /// Tonight's data files' rows (`Manifest.nightRowsHash`), and the manifest's row identity.
    var data: String
    var manifest: String
    /// The file the record names is in place with the recorded SHA-256 (a shard's: the merged file).
    var fileAsRecorded = false
    /// A journal or `.partial` of the output is there: a run of it is unfinished or kept rows.
    var leftovers = false
}

/// How a run was asked to take its night.
struct NightFlags: Equatable {
    var mode: RunMode
    var allowRepeat = false
    /// A shard of the night: merge finishes it.
    var shard = false
}

/// What each command does with a night, as pure functions of what is known of it: table-tested
/// and driven by a model test, as `OutputStart` and `AttemptDecision` are.
enum NightDecision {
    /// What a run (`path`: the output's file tonight) does with its output's night.
    static func run(_ facts: NightFacts, _ flags: NightFlags, path: String) -> NightVerdict {
        // A test run goes to no processor and is recorded nowhere: it writes as its mode says.
        if facts.night.testRun { return .write(again: nil) }
        guard let record = facts.record else {
            if flags.mode == .retryFailed { return .refuse(.neverWritten(path: path, facts.night.date)) }
            if let latest = facts.latest, latest.date > facts.night.date { return .refuse(.outOfOrder(facts.night.date, latest: latest)) }
            if !flags.allowRepeat, let earlier = facts.repeatOf { return .refuse(.repeated(facts.night.date, of: earlier)) }
            return .begin
        }
        if record.isDelivered || record.handing != nil {
            if flags.mode == .retryFailed { return .refuse(.retryDelivered(path: path, record)) }
            if record.handing != nil && !record.isDelivered { return .leave(.handing) }
            return .leave(.delivered(dataChanged: NightRecord.sameRows(record.data, facts.data) == false))
        }
        // Begun, not finished: a run of it was interrupted, or is going on.
        guard record.isFinished else { return .write(again: nil) }
        let sameData = NightRecord.sameRows(record.data, facts.data) != false
        let sameManifest = record.manifest.isEmpty || record.manifest == facts.manifest
        if flags.shard {
            if flags.mode != .retryFailed && facts.fileAsRecorded && sameData && sameManifest { return .leave(.merged) }
            return .write(again: nil)
        }
        if flags.mode == .retryFailed { return .write(again: nil) }
        let reason: NightRewrite? = !sameData ? .dataChanged : !sameManifest ? .manifestChanged
            : !record.complete ? .notWhole(notOk: record.rows?.notOk ?? 0, rows: record.rows?.data ?? 0) : nil
        // Files a run left (a journal of failed rows, an unfinished rewrite): the mode decides,
        // and a fresh run says why it writes a finished night again.
        if facts.leftovers { return .write(again: flags.mode == .fresh ? reason : nil) }
        // Gone or changed since: written again under its number.
        guard facts.fileAsRecorded else { return .write(again: nil) }
        if let reason { return .write(again: reason) }
        return .leave(.finished)
    }

    /// Whether a night whose rows were counted from its files may be recorded finished, and
    /// whether whole: `output + rejects` must be the night's `data` rows, and its rows not ok
    /// within `allowed`.
    static func finish(_ rows: NightRecord.NightRows, allowed: Int) -> NightFinish {
        let counted = rows.output + rows.rejects
        guard counted == rows.data else { return .doesNotAddUp(counted: counted, expected: rows.data) }
        return rows.notOk <= allowed ? .whole : .beyondMaxFailed(notOk: rows.notOk)
    }
}

/// How a night whose files are in place ends.
enum NightFinish: Equatable {
    /// Its rows add up, all ok or within `max_failed`: recorded complete, and delivered.
    case whole
    /// Its rows add up, but too many are not ok: recorded finished, not complete; not delivered.
    case beyondMaxFailed(notOk: Int)
    /// Its files' rows are not the night's: never recorded finished, never delivered.
    case doesNotAddUp(counted: Int, expected: Int)
}

extension NightRecord {
    /// ` to sftp://host/folder/NAME`, when the delivery says where.
    var deliveredWhere: String {
        guard let delivery, !delivery.to.isEmpty else { return "" }
        return " to \(delivery.to)\(delivery.file)"
    }

    /// When it was delivered (or its rename asked for).
    var deliveredAt: String { delivery?.at ?? handing?.at ?? "" }

    /// The record with every text a message may quote passed through `redact` (its file name,
    /// from a template; the server's folder and names; the times).
    func redacted(_ redact: (String) -> String) -> NightRecord {
        var copy = self
        copy.file = redact(file)
        copy.finished = redact(finished)
        if var handing {
            handing.to = redact(handing.to)
            handing.part = redact(handing.part)
            handing.at = redact(handing.at)
            copy.handing = handing
        }
        if var delivery {
            delivery.to = redact(delivery.to)
            delivery.file = redact(delivery.file)
            delivery.at = redact(delivery.at)
            copy.delivery = delivery
        }
        return copy
    }

    /// What makes a night finished with rows not ok whole: its failed rows sent again, or, when
    /// its rows not ok are the data's or the manifest's (partial: a label not found), the night
    /// run again once they are fixed.
    static func fix(_ night: NightRecord, manifest: String) -> String {
        let rerun = "showbatch run \(manifest) --date \(night.date)"
        guard let rows = night.rows, rows.partial > 0 || rows.failed == 0 else {
            return "send its failed rows again first (\(rerun) --retry-failed)"
        }
        return "its rows not ok are partial (a label not found), which a retry answers the same: fix the manifest's labels or the data, then run the night again (\(rerun))"
    }
}
