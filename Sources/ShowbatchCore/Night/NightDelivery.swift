import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// `showbatch deliver`: delivers the files of a finished night without revealing anything.
package enum NightDelivery {
    /// Delivers each output of `manifest` with `output.deliver`, as the night of `date` wrote it.
    /// Refused (exit 2) when no output delivers, or the night was never finished; a file changed
    /// since its night was finished is refused too (exit 3), as it is not what the run wrote.
    /// Each delivery goes to the audit trail (`audit`, else the manifest's `audit.path`).
    package static func deliver(manifest: Manifest, night choice: NightChoice?, clock: NightClock = .system, audit: String? = nil,
                                note: @escaping @Sendable (String) -> Void = { _ in },
                                isCancelled: @escaping @Sendable () -> Bool = { false }) async throws(RunError) -> [DeliveryOutcome] {
        let night = try Night.decide(choice, clock: clock, beginning: false)
        let outcomes = try await deliverUnaudited(manifest: manifest, night: night, note: note, isCancelled: isCancelled)
        if let path = audit ?? manifest.auditPath {
            let trail = AuditTrail(path: path, runID: RunOptions.newRunID(), manifest: manifest)
            for outcome in outcomes {
                do { try trail.append(outcome) } catch { note(error.description) }
            }
        }
        return outcomes
    }

    private static func deliverUnaudited(manifest: Manifest, night: Night, note: @escaping @Sendable (String) -> Void,
                                         isCancelled: @escaping @Sendable () -> Bool) async throws(RunError) -> [DeliveryOutcome] {
        let date = night.date
        let nights = try NightBook(manifest: manifest, night: night)
        let plan = try OutputPlanner(manifest: manifest, output: nil, format: nil, shard: nil, nights: nights)
        let targets = plan.targets.filter { $0.deliver != nil && $0.night != nil }
        guard !targets.isEmpty else { throw RunError.usage("no output of \(manifest.file) has output.deliver: there is nothing to deliver") }
        try PrivateFile.requireTrusted(sideFilesOf: targets.map(\.path))
        for target in targets {
            let night = target.night!
            let name = (target.path as NSString).lastPathComponent
            guard let recorded = nights.record(of: night.template), recorded.isFinished, recorded.file == name else {
                throw RunError.usage("\(target.path) was never finished for the night of \(date): run it first (showbatch run \(manifest.file) --date \(date))")
            }
            guard recorded.complete else {
                throw RunError.usage("\(target.path) was finished with rows not ok beyond max_failed, so it is not delivered: \(NightRecord.fix(recorded, manifest: manifest.file))")
            }
            guard case .regular = PrivateFile.inspect(target.path) else {
                throw RunError.runtime("\(target.path), finished at \(recorded.finished), is not there any more: run the night again to write it")
            }
            let digest = try FileDigest.of(target.path)
            guard digest.sha256 == recorded.sha256 else {
                throw RunError.runtime("\(target.path) is not the file its night wrote at \(recorded.finished) (its SHA-256 differs): it is not delivered")
            }
        }
        let (retry, timeout) = (manifest.retry, manifest.timeout)
        let redactor = Redactor(manifest: manifest)
        return await Blocking.run("showbatch-deliver") { () -> [DeliveryOutcome] in
            targets.flatMap { target in
                Deliverer.deliverInOrder(target.path, spec: target.deliver!, night: target.night!, manifest: manifest.file, retry: retry,
                                         timeout: timeout, note: note, isCancelled: { Task.isCancelled || isCancelled() }).map { redactor.redacted($0) }
            }
        }
    }
}
