import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// What a run does with the nights its outputs name: a finished night is left as it is, and a
/// night put in place is recorded in its output's sequence state.
enum NightRecords {
    /// Marks each output whose night was finished already, with its file as it was then and no
    /// journal left (no failed row to send again): the run sends nothing for it. `--retry-failed`
    /// decides from its journal as before.
    /// A delivered night is never written again: its file is the processor's now.
    static func markFinished(_ targets: inout [OutputTarget], mode: RunMode) throws(RunError) {
        for index in targets.indices {
            guard let night = targets[index].night, night.records else { continue }
            let target = targets[index]
            if target.deliver != nil, let record = try DeliveryRecord.read(beside: target.path), case .regular = PrivateFile.inspect(target.path),
               let digest = try? FileDigest.of(target.path), digest.sha256 == record.sha256 {
                if mode == .retryFailed {
                    throw RunError.usage("\(target.path) was delivered to \(record.to)\(record.file) at \(record.delivered): a processor takes a night's file once, so --retry-failed does not rewrite it; its failed rows are in its rejects file or journal")
                }
                targets[index].finishedNight = "it was delivered to \(record.to)\(record.file) at \(record.delivered)"
                continue
            }
            guard mode != .retryFailed else { continue }
            let ledger = try NightLedger.read(template: night.template)
            guard let recorded = ledger.night(on: night.date), recorded.file == (target.path as NSString).lastPathComponent,
                  PrivateFile.inspect(SideFile.journal.of(target.path)) == .none,
                  PrivateFile.inspect(SideFile.partial.of(target.path)) == .none,
                  case .regular = PrivateFile.inspect(target.path),
                  let digest = try? FileDigest.of(target.path), digest.sha256 == recorded.sha256 else { continue }
            targets[index].finishedNight = "the night of \(night.date) (sequence \(recorded.seq)) was finished at \(recorded.finished), and the file is as it was then"
        }
    }

    /// Records the night of each output this run put in place (`data`: its data files' hash).
    static func record(_ targets: [OutputTarget], data: String) throws(RunError) {
        for target in targets where target.finishedNight == nil {
            guard let night = target.night, night.records, case .regular = PrivateFile.inspect(target.path) else { continue }
            let digest = try FileDigest.of(target.path)
            try NightLedger.record(NightLedger.Night(date: night.date, seq: night.seq, data: data,
                                                     file: (target.path as NSString).lastPathComponent, size: digest.size,
                                                     sha256: digest.sha256, finished: Timestamp.rfc3339()),
                                   template: night.template)
        }
    }
}
