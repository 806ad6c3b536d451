import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// How `RunOutputs.init` opens each output: the `OutputStart` decided, then carried out.
extension RunOutputs {
    /// Finishes what an interrupted rewrite of `target` left, then opens its journal, unless
    /// the output begins without one (the decision, and no journal).
    static func openJournal(of target: OutputTarget, identity: (OutputTarget) -> Journal.Identity, mode: RunMode,
                                    staleAfter: Duration?, waitingForLock: (String) -> Void) throws(RunError) -> (OutputStart?, Journal?) {
        if target.path != "-" { try Journal.finishInterruptedRewrite(of: target) }
        var files = OutputStart.Files(path: target.path)
        files.finishedNight = target.finishedNight
        if target.path != "-" && mode == .retryFailed {
            files.encryptedWithoutStateKey = target.publishesMessage && target.encrypt?.stateKey == nil
            files.hasJournal = PrivateFile.inspect(SideFile.journal.of(target.path)) != .none
            if case .regular = PrivateFile.inspect(target.path) {} else { files.outputExists = false }
        }
        if let start = OutputStart.withoutJournal(files, mode: mode) {
            if case .refused(let problem) = start { throw RunError.usage(problem) }
            return (start, nil)
        }
        let journal = try Journal(output: target.path, identity: identity(target), mode: mode,
                                  staleAfter: mode == .resume ? staleAfter : nil,
                                  sealing: target.encrypt.map { Journal.Sealing(stateKey: $0.stateKey) },
                                  waiting: { waitingForLock(target.path) })
        return (nil, journal)
    }

    /// What `init` gathers, output by output, as it carries out each one's `OutputStart`.
    struct Opened {
        var files: [OutputFile?] = []
        var skips: [SkipRule] = []
        var modes: [OutputMode] = []
        var carried = RowCounts()
        var carriedTally = RowTally()
        var complete: Set<Int> = []
        var kept: [KeptRows?]
        var finishedBefore: [FinishedOutput] = []

        init(count: Int) { kept = Array(repeating: nil, count: count) }

        /// Carries out `start` for the output of `target` (the `index`th).
        mutating func begin(_ target: OutputTarget, index: Int, start: OutputStart, journal: Journal?, sealing: () -> OutputFile.Sealing?,
                            check: () -> OutputCheck, staleAfter: Duration?, note: (String) -> Void) throws(RunError) {
            if let mode = start.mode(path: target.path) { modes.append(mode) }
            switch start {
            case .standardOutput:
                files.append(.standardOutput(layout: target.layout, rejectPartial: target.rejects != nil && target.rejectPartial))
                skips.append(.none)
            case .unchanged:
                files.append(nil)
                skips.append(.all)
            case .fresh:
                files.append(try RunOutputs.create(target, sealing: sealing()))
                skips.append(.none)
            case .discard(let reason):
                // The files of its own that hold another run's rows go; the output starts afresh.
                let stale = target.paths.map(SideFile.partial.of).filter { PrivateFile.inspect($0) != .none }
                for file in stale where PrivateFile.inspect(file) != .directory { unlink(file) }
                note("\(target.path) is started afresh, what an earlier run left of it discarded\(stale.isEmpty ? "" : " (\(stale.joined(separator: ", ")))"): \(reason)")
                files.append(try RunOutputs.create(target, sealing: sealing()))
                skips.append(.none)
            case .resume:
                guard let journal, let checkpoint = journal.lastCheckpoint else { preconditionFailure("a resume without a checkpoint") }
                do throws(RunError) {
                    try resume(target, index: index, journal: journal, checkpoint: checkpoint, check: check(), sealing: sealing())
                } catch {
                    guard let again = OutputStart.afterFailedResume(error.description, staleAfter: staleAfter) else { throw error }
                    try journal.restart(because: error.description)
                    try begin(target, index: index, start: again, journal: journal, sealing: sealing, check: check,
                              staleAfter: staleAfter, note: note)
                }
            case .retry:
                guard let journal else { preconditionFailure("a retry without a journal") }
                let (file, rows, counts) = try RunOutputs.rewrite(target, journal: journal, check: check(), sealing: sealing())
                files.append(file)
                kept[index] = rows
                skips.append(file == nil ? .all : .allBut(Set(journal.failedRows.map(\.ordinal))))
                carried.add(counts)
                modes.append(OutputMode(path: target.path, mode: file == nil ? "unchanged" : "retried",
                                        reason: file == nil ? "it has no failed rows" : "\(journal.failedRows.count) failed rows are sent again"))
            case .refused(let problem):
                throw RunError.usage(problem)
            }
        }

        /// Goes on from the journal's last checkpoint: the output cut back to it and checked.
        private mutating func resume(_ target: OutputTarget, index: Int, journal: Journal, checkpoint: Journal.Checkpoint,
                                     check: OutputCheck, sealing: OutputFile.Sealing?) throws(RunError) {
            let (resumed, tally) = try RunOutputs.resume(target, index: index, journal: journal, checkpoint: checkpoint,
                                                         check: check, sealing: sealing)
            files.append(resumed)
            if resumed != nil && journal.ended != nil { complete.insert(index) }
            skips.append(journal.ended != nil ? .all : .through(checkpoint.ordinal))
            carried.add(checkpoint.counts)
            carriedTally.add(tally)
            if journal.ended != nil {
                modes.append(OutputMode(path: target.path, mode: "finished", reason: "an earlier run finished it: nothing is sent"))
                finishedBefore.append(FinishedOutput(path: target.path, finished: RunOutputs.modified(target.path), failed: checkpoint.counts.failed))
            } else {
                modes.append(OutputMode(path: target.path, mode: "resumed", reason: "\(checkpoint.counts.rows) rows from the journal"))
            }
        }
    }

    /// A new output file for `target`, with its rejects file attached when it has one.
    static func create(_ target: OutputTarget, sealing: OutputFile.Sealing?) throws(RunError) -> OutputFile {
        let file = try OutputFile.create(path: target.path, layout: target.layout, sealing: sealing)
        if let rejects = target.rejects {
            do {
                file.attachRejects(try OutputFile.create(path: rejects.path, layout: rejects.layout, sealing: sealing),
                                   partial: target.rejectPartial)
            } catch {
                file.abandon()
                throw error
            }
        }
        return file
    }
}
