import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// A run's night, with one owner for the run: decided before anything is sent (each night-named
/// output's verdict, from its ledger and files), begun just before the first row is sent (its
/// numbers taken), and handed over once the files are in place (their rows counted and checked,
/// the night recorded, whole nights delivered).
struct RunNight {
    private(set) var book: NightBook
    /// Each night-named output's verdict, by template.
    private(set) var verdicts: [String: NightVerdict] = [:]
    /// Tonight's data files' rows (`Manifest.nightRowsHash`); empty without data files.
    let data: String
    /// The manifest's row identity, as the ledger keeps it.
    let manifestIdentity: String

    var night: Night { book.night }

    /// Decides the night of a run of `manifest` with `options`: refuses (exit 2) a night that
    /// would come after a later one, a repeat of another night's rows, and a `--retry-failed` of
    /// a night delivered or never written. Nil when interrupted while the data files are read.
    static func decide(manifest: Manifest, night: Night, options: RunOptions) throws(RunError) -> RunNight? {
        let book = try NightBook(manifest: manifest, night: night, rebuild: options.rebuildLedger)
        var data = ""
        if !book.isEmpty && manifest.requests.contains(where: { $0.each != nil }) {
            guard let rows = try manifest.nightRowsHash() else { return nil }
            data = rows
        }
        var decided = RunNight(book: book, data: data, manifestIdentity: String(manifest.rowIdentity, radix: 16))
        let flags = NightFlags(mode: options.mode, allowRepeat: options.allowRepeat, shard: options.shard != nil)
        for template in book.templates {
            let facts = book.facts(of: template, data: data, manifest: decided.manifestIdentity, shard: options.shard)
            let verdict = NightDecision.run(facts, flags, path: book.expand(template, template: template))
            if case .refuse(let refusal) = verdict { throw refusal.error }
            decided.verdicts[template] = verdict
        }
        return decided
    }

    private init(book: NightBook, data: String, manifestIdentity: String) {
        self.book = book
        self.data = data
        self.manifestIdentity = manifestIdentity
    }

    /// Whether the run takes its night's numbers as it starts sending: it writes the night (not
    /// a test run) and some output names one.
    var begins: Bool { !book.isEmpty && !night.testRun }

    /// Takes the night's numbers (see `NightBook.begin`); true when one differs from the number
    /// the outputs were planned with (another night began meanwhile), so they are planned again.
    mutating func begin(manifest: Manifest, isCancelled: () -> Bool) throws(RunError) -> Bool {
        let delivered = Set(manifest.nightNamedOutputs.filter { $0.deliver != nil }.map(\.path))
        return try book.begin(data: data, delivered: delivered, isCancelled: isCancelled)
    }

    /// Marks each target as its night's verdict says: what is left as it is says why (and a
    /// delivered night when it was delivered). Returns the warnings of nights written again.
    func apply(to targets: inout [OutputTarget]) -> [String] {
        var warnings: [String] = []
        for index in targets.indices {
            guard let target = targets[index].night, target.records || target.shard, let verdict = verdicts[target.template],
                  let record = book.record(of: target.template) else { continue }
            let path = targets[index].path
            switch verdict {
            case .leave(.finished):
                targets[index].finishedNight = "the night of \(target.date) (sequence \(record.seq)) was finished at \(record.finished), and the file is as it was then"
            case .leave(.delivered(let dataChanged)):
                targets[index].finishedNight = target.shard
                    ? "the night of \(target.date) (sequence \(record.seq)) was delivered at \(record.deliveredAt)"
                    : "it was delivered\(record.deliveredWhere) at \(record.deliveredAt)"
                // A trigger file still to write goes to the delivery, which writes only that.
                if record.delivery?.done != false { targets[index].deliveredAt = record.deliveredAt }
                if dataChanged {
                    warnings.append("\(target.shard ? "" : path + ": ")the data files changed since the night of \(target.date) was delivered: their rows are NOT sent (a delivered night is the processor's; send them as another night, with its own --date)")
                }
            case .leave(.handing):
                targets[index].finishedNight = "the night of \(target.date) (sequence \(record.seq)) was being put in place on the server at \(record.deliveredAt), its answer not recorded"
            case .leave(.merged):
                let folder = (target.template as NSString).deletingLastPathComponent
                let merged = folder.isEmpty ? record.file : folder + "/" + record.file
                targets[index].finishedNight = "the night of \(target.date) (sequence \(record.seq)) was merged into \(merged) at \(record.finished), and that file is as it was then"
            case .write(again: .dataChanged?):
                warnings.append("\(path): the data files changed since the night of \(target.date) was finished at \(record.finished): it is written again, as sequence \(record.seq)")
            case .write(again: .manifestChanged?):
                warnings.append("\(path): the manifest makes other rows than when the night of \(target.date) was finished at \(record.finished) (its labels, paths or columns changed): it is written again, as sequence \(record.seq)")
            case .write(again: .notWhole(let notOk, let rows)?):
                warnings.append("\(path): the night of \(target.date) was finished at \(record.finished) with \(notOk) row\(notOk == 1 ? "" : "s") not ok of \(rows), and was not delivered: it is written again under its number (sequence \(record.seq)), every row sent again")
            case .write(again: nil), .begin, .refuse:
                break
            }
        }
        return warnings
    }

    /// Once the run's files are in place: each output that writes the night is judged on the
    /// whole night, from its files' rows (`counted`) or, when it was left as it is, its ledger's
    /// record; a night whose rows add up is recorded finished (complete when within `allowance`).
    /// Returns each night's outcome.
    /// `dataChanged`: a data file changed while the run read it, so no night it wrote is recorded.
    func handOver(_ targets: [OutputTarget], counted: [NightFileRows?], manifest: Manifest, byRequest: [Int],
                  selection: WorkSelection, allowance: FailureAllowance?, dataChanged: Bool,
                  retryable: (Int) -> Bool) throws(RunError) -> [NightOutcome] {
        var outcomes: [NightOutcome] = []
        for (index, target) in targets.enumerated() {
            guard let night = target.night, night.records, let verdict = verdicts[night.template] else { continue }
            let record = book.record(of: night.template)
            var outcome = NightOutcome(path: target.path, date: night.date, seq: night.seq, rows: 0, notOk: 0, failed: 0,
                                       retryable: false, state: .whole)
            if case .leave(let left) = verdict {
                if let rows = record?.rows { (outcome.rows, outcome.notOk, outcome.failed) = (rows.data, rows.notOk, rows.failed) }
                if case .delivered(dataChanged: true) = left { outcome.state = .deliveredOtherData }
                outcomes.append(outcome)
                continue
            }
            let expected = NightCount.expected(manifest, output: index, byRequest: byRequest, selection: selection)
            let allowed = allowance?.rows(of: expected) ?? 0
            guard let files = counted[index] else {
                // Left as it is by this run (`--retry-failed` with no failed row to send): the
                // night is what its record says.
                guard let record, record.isFinished, let rows = record.rows else {
                    outcome.state = .notFinished
                    outcome.rows = expected
                    outcomes.append(outcome)
                    continue
                }
                (outcome.rows, outcome.notOk, outcome.failed) = (rows.data, rows.notOk, rows.failed)
                outcome.retryable = rows.failed > 0 && retryable(index)
                if !record.complete { outcome.state = .beyondMaxFailed(allowed: allowed) }
                outcomes.append(outcome)
                continue
            }
            let rows = NightRecord.NightRows(data: expected, output: files.output, rejects: files.rejects ?? 0,
                                             ok: files.counts.ok, partial: files.counts.partial, failed: files.counts.failed)
            (outcome.rows, outcome.notOk, outcome.failed) = (rows.data, rows.notOk, rows.failed)
            outcome.retryable = rows.failed > 0 && retryable(index)
            let finish = NightDecision.finish(rows, allowed: allowed)
            if dataChanged {
                outcome.state = .dataChanged
                outcomes.append(outcome)
                continue
            }
            switch finish {
            case .doesNotAddUp(let count, _):
                outcome.state = .doesNotAddUp(counted: count)
                outcomes.append(outcome)
                continue
            case .beyondMaxFailed:
                outcome.state = .beyondMaxFailed(allowed: allowed)
            case .whole:
                break
            }
            guard case .regular = PrivateFile.inspect(target.path) else { continue }
            let digest = try FileDigest.of(target.path)
            try NightLedger.finish(NightRecord(date: night.date, seq: night.seq, data: data, manifest: manifestIdentity,
                                               file: (target.path as NSString).lastPathComponent, size: digest.size,
                                               sha256: digest.sha256, finished: Timestamp.rfc3339(), rows: rows,
                                               complete: finish == .whole, deliver: target.deliver != nil),
                                   template: night.template)
            outcomes.append(outcome)
        }
        return outcomes
    }
}
