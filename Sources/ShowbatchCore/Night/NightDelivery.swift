import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// `showbatch deliver`: delivers the files of a finished night without revealing anything.
package enum NightDelivery {
    /// What `deliver` is asked to do.
    package enum Choice: Sendable, Hashable {
        /// Deliver the night (settling a hand-over a stopped run left, where the server shows how it ended).
        case deliver
        /// `--mark-delivered`: a person checked with the processor, who has the file: record it delivered.
        case markDelivered
        /// `--send-again`: a person checked with the processor, who does not have it: forget the
        /// hand-over whose outcome could not be known, and deliver.
        case sendAgain
    }

    /// Delivers each output of `manifest` with `output.deliver`, as the night of `date` wrote it.
    /// Refused (exit 2) when no output delivers, or the night was never finished; a file changed
    /// since its night was finished is refused too (exit 3), as it is not what the run wrote.
    /// Each delivery goes to the audit trail (`audit`, else the manifest's `audit.path`). Returns
    /// a summary as a run's, for the command's records: the deliveries, the night, and its rows
    /// as its ledger counted them (so that metrics pushed to the job's group say the night).
    package static func deliver(manifest: Manifest, night choice: NightChoice?, clock: NightClock = .system, audit: String? = nil,
                                what: Choice = .deliver, rebuildLedger: Bool = false, note: @escaping @Sendable (String) -> Void = { _ in },
                                isCancelled: @escaping @Sendable () -> Bool = { false }) async throws(RunError) -> RunSummary {
        // What a delivery says (its errors and notes) is cleared of the manifest's secrets, as a run's is.
        let redactor = Redactor(manifest: manifest)
        do {
            return try await deliverRedacted(manifest: manifest, night: choice, clock: clock, audit: audit, what: what, rebuildLedger: rebuildLedger,
                                             note: { note(redactor.redact($0)) }, isCancelled: isCancelled)
        } catch {
            throw redactor.redact(error)
        }
    }

    private static func deliverRedacted(manifest: Manifest, night choice: NightChoice?, clock: NightClock, audit: String?, what: Choice,
                                        rebuildLedger: Bool, note: @escaping @Sendable (String) -> Void,
                                        isCancelled: @escaping @Sendable () -> Bool) async throws(RunError) -> RunSummary {
        let night = try Night.decide(choice, clock: clock, beginning: false)
        var summary = RunSummary()
        summary.night = night.date
        summary.allowance = manifest.maxFailed
        for spec in manifest.nightNamedOutputs where spec.deliver != nil {
            guard let rows = try NightLedger.read(template: spec.path).night(on: night.date)?.rows else { continue }
            summary.rows += rows.data
            summary.ok += rows.ok
            summary.partial += rows.partial
            summary.failed += rows.failed
        }
        let outcomes = try await deliverUnaudited(manifest: manifest, night: night, what: what, rebuildLedger: rebuildLedger, note: note,
                                                  isCancelled: isCancelled)
        summary.deliveries = outcomes
        // Interrupted (130) as a run is: when a signal cut a delivery short, not when one came
        // after the last had ended.
        summary.interrupted = outcomes.cutShort
        summary.outputs = outcomes.map(\.path)
        summary.leftAsTheyWere = summary.outputs
        if let path = audit ?? manifest.auditPath {
            let trail = AuditTrail(path: path, runID: RunOptions.newRunID(), manifest: manifest)
            for outcome in outcomes {
                do { try trail.append(outcome) } catch { note(error.description) }
            }
        }
        return summary
    }

    private static func deliverUnaudited(manifest: Manifest, night: Night, what: Choice, rebuildLedger: Bool, note: @escaping @Sendable (String) -> Void,
                                         isCancelled: @escaping @Sendable () -> Bool) async throws(RunError) -> [DeliveryOutcome] {
        let date = night.date
        let nights = try NightBook(manifest: manifest, night: night, rebuild: rebuildLedger)
        let plan = try OutputPlanner(manifest: manifest, output: nil, format: nil, shard: nil, nights: nights)
        let targets = plan.targets.filter { $0.deliver != nil && $0.night != nil }
        guard !targets.isEmpty else { throw RunError.usage(DeliveryError.nothingToDeliver(manifest: manifest.file, checking: false)) }
        try PrivateFile.requireTrusted(sideFilesOf: targets.map(\.path))
        var outcomes: [DeliveryOutcome] = []
        var pending: [OutputTarget] = []
        for target in targets {
            let night = target.night!
            let name = (target.path as NSString).lastPathComponent
            guard let recorded = nights.record(of: night.template), recorded.isFinished, recorded.file == name else {
                throw RunError.usage(NightError.neverFinished(path: target.path, date: date, manifest: manifest.file))
            }
            // Delivered: the ledger says so, whether or not its file is still here.
            if let delivery = recorded.delivery, delivery.done {
                outcomes.append(DeliveryOutcome(path: target.path, destination: target.deliver!.destination.url(of: delivery.file.isEmpty ? name : delivery.file),
                                                size: delivery.size, result: .already(delivery.at)))
                continue
            }
            guard recorded.complete else {
                throw RunError.usage(NightError.finishedNotWhole(path: target.path, fix: NightRecord.fix(recorded, manifest: manifest.file)))
            }
            guard case .regular = PrivateFile.inspect(target.path) else {
                throw RunError.runtime(NightError.finishedFileGone(path: target.path, finished: recorded.finished))
            }
            let digest = try FileDigest.of(target.path)
            guard digest.sha256 == recorded.sha256 else {
                throw RunError.runtime(NightError.finishedFileChanged(path: target.path, finished: recorded.finished))
            }
            switch what {
            case .deliver:
                pending.append(target)
            case .sendAgain:
                if recorded.handing != nil { try NightLedger.markHanding(date, nil, template: night.template) }
                pending.append(target)
            case .markDelivered:
                let delivery = NightRecord.Delivery(to: target.deliver!.destination.description, file: name, size: digest.size,
                                                    sha256: digest.sha256, at: Timestamp.rfc3339(), byHand: true)
                let generation = try NightLedger.markDelivered(date, delivery, template: night.template)
                try DeliveryRecord(file: name, to: delivery.to, size: delivery.size, sha256: delivery.sha256, delivered: delivery.at,
                                   generation: generation, date: date, seq: night.seq).write(beside: target.path)
                outcomes.append(DeliveryOutcome(path: target.path, destination: target.deliver!.destination.url(of: name), size: digest.size,
                                                result: .markedDelivered))
            }
        }
        let done = outcomes
        let (retry, timeout) = (manifest.retry, manifest.timeout)
        let redactor = Redactor(manifest: manifest)
        return await Blocking.run("showbatch-deliver") { () -> [DeliveryOutcome] in
            done + pending.flatMap { target in
                Deliverer.deliverInOrder(target.path, spec: target.deliver!, night: target.night!, manifest: manifest.file, retry: retry,
                                         timeout: timeout, note: note, isCancelled: { Task.isCancelled || isCancelled() }).map { redactor.redacted($0) }
            }
        }
    }
}
