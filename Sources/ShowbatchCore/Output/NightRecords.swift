import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// What a run does with the nights its outputs name: a finished or delivered night is left as
/// it is, and a night put in place is recorded in its output's sequence state.
enum NightRecords {
    /// Marks each output whose night needs nothing sent: one delivered (its file is the
    /// processor's now, whether or not it is still here; `--retry-failed` is refused), or one
    /// finished with these data files whose file is as it was then and has no journal left (no
    /// failed row to send again). Returns a warning for a finished night whose data changed,
    /// which is written again under its number.
    static func markFinished(_ targets: inout [OutputTarget], nights: Nights, mode: RunMode, data: String) throws(RunError) -> [String] {
        var warnings: [String] = []
        for index in targets.indices {
            guard let night = targets[index].night, night.records || night.shard, let recorded = nights.night(of: night.template) else { continue }
            let target = targets[index]
            if night.shard {
                if let finished = finishedForShards(recorded, night: night, mode: mode, data: data, warnings: &warnings) {
                    targets[index].finishedNight = finished
                }
                continue
            }
            if target.deliver != nil && !recorded.delivered.isEmpty {
                let record = try DeliveryRecord.read(beside: target.path)
                let where_ = record.map { " to \($0.to)\($0.file)" } ?? ""
                if mode == .retryFailed {
                    throw RunError.usage("\(target.path) was delivered\(where_) at \(recorded.delivered): a processor takes a night's file once, so --retry-failed does not rewrite it; its failed rows are in its rejects file or journal")
                }
                targets[index].finishedNight = "it was delivered\(where_) at \(recorded.delivered)"
                if !data.isEmpty && recorded.data != data {
                    warnings.append("\(target.path): the data files changed since the night of \(night.date) was delivered: their rows are NOT sent (a delivered night is the processor's; send them as another night, with its own --date)")
                }
                targets[index].deliveredAt = recorded.delivered
                continue
            }
            guard mode != .retryFailed, recorded.isFinished, recorded.file == (target.path as NSString).lastPathComponent,
                  PrivateFile.inspect(SideFile.journal.of(target.path)) == .none,
                  PrivateFile.inspect(SideFile.partial.of(target.path)) == .none,
                  case .regular = PrivateFile.inspect(target.path),
                  let digest = try? FileDigest.of(target.path), digest.sha256 == recorded.sha256 else { continue }
            guard recorded.data == data else {
                warnings.append("\(target.path): the data files changed since the night of \(night.date) was finished at \(recorded.finished): it is written again, as sequence \(recorded.seq)")
                continue
            }
            targets[index].finishedNight = "the night of \(night.date) (sequence \(recorded.seq)) was finished at \(recorded.finished), and the file is as it was then"
        }
        return warnings
    }

    /// Why a shard of the night `recorded` sends nothing, or nil: the night was delivered (its
    /// rows are the processor's), or merged with these data files into a file still as it was
    /// then. Revealing a shard again would only leave card data for a merge that has nothing
    /// to do.
    private static func finishedForShards(_ recorded: NightLedger.Night, night: NightTarget, mode: RunMode, data: String,
                                          warnings: inout [String]) -> String? {
        guard mode != .retryFailed, recorded.isFinished else { return nil }
        if !recorded.delivered.isEmpty {
            if !data.isEmpty && recorded.data != data {
                warnings.append("the data files changed since the night of \(night.date) was delivered: their rows are NOT sent (a delivered night is the processor's; send them as another night, with its own --date)")
            }
            return "the night of \(night.date) (sequence \(recorded.seq)) was delivered at \(recorded.delivered)"
        }
        let folder = (night.template as NSString).deletingLastPathComponent
        let merged = folder.isEmpty ? recorded.file : folder + "/" + recorded.file
        guard recorded.data == data, case .regular = PrivateFile.inspect(merged), let digest = try? FileDigest.of(merged),
              digest.sha256 == recorded.sha256 else { return nil }
        return "the night of \(night.date) (sequence \(recorded.seq)) was merged into \(merged) at \(recorded.finished), and that file is as it was then"
    }

    /// Records the night of each output this run put in place (`data`: its data files' hash;
    /// `complete`: every row ok or within `max_failed`, so it may be delivered).
    static func record(_ targets: [OutputTarget], data: String, complete: Bool) throws(RunError) {
        for target in targets where target.finishedNight == nil {
            guard let night = target.night, night.records, case .regular = PrivateFile.inspect(target.path) else { continue }
            let digest = try FileDigest.of(target.path)
            try NightLedger.record(NightLedger.Night(date: night.date, seq: night.seq, data: data,
                                                     file: (target.path as NSString).lastPathComponent, size: digest.size,
                                                     sha256: digest.sha256, finished: Timestamp.rfc3339(), complete: complete,
                                                     deliver: target.deliver != nil),
                                   template: night.template)
        }
    }
}
