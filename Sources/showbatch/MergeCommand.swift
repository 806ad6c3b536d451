import Foundation
import ShowbatchBasics
import ShowbatchManifest
import ShowbatchCore

/// `showbatch merge`: the library writes the unsharded outputs; this prints (as text or JSON
/// lines), maps the exit code, and records the merge as a run records itself (`--metrics`,
/// `--report`, `--metrics-push` to the job's group), however it ends: a merge that fails is seen
/// failed where the shards were seen succeeding.
struct MergeCommand {
    let arguments: MergeArguments
    let runID = RunOptions.newRunID()
    let started = Date()
    let printer: EventPrinter
    /// What a signal does, from the command's start to the end of the process.
    let signals: CommandSignals<Void>

    init(_ arguments: MergeArguments) {
        self.arguments = arguments
        printer = EventPrinter(format: arguments.logFormat, progress: false, quiet: arguments.quiet, verbose: arguments.verbose, runID: runID)
        signals = CommandSignals<Void>(printer: printer)
    }

    private var json: Bool { arguments.logFormat == .json }

    func execute() -> ExitCode {
        // Heard from the first moment to the last (`CommandSignals`): a signal before the merge
        // begins finishes the command; then it stops the merge, which removes what it had
        // written, or cuts its delivery short; then it gives the push up.
        let sideFiles = [("--metrics", arguments.metrics), ("--report", arguments.report)].compactMap { flag, path in path.map { (flag: flag, path: $0) } }
        // Decided once: the command and a signal's finisher write the same side files, or none.
        let sideFileProblem = RunReport.sideFileProblem(sideFiles, manifest: arguments.manifest)
        signals.listen { [self] in
            // A refused --metrics or --report path is not written to.
            record(.interrupted, error: "interrupted before anything was sent", job: nil,
                   files: sideFileProblem == nil)
        }
        if let problem = sideFileProblem {
            guard signals.ending() else { signals.parked() }
            printer.invalid(UsageError(message: problem, command: "merge").description)
            return end(.usage, error: problem, job: nil, files: false)
        }
        let manifest: Manifest
        switch CLI.manifestSendingNothing(arguments.manifest) {
        case .success(let loaded): manifest = loaded
        case .failure(let failure):
            guard signals.ending() else { signals.parked() }
            failure.print()
            return end(failure.code, error: "the manifest cannot be merged", job: nil)
        }
        guard signals.begin() else { signals.parked() }
        let shards = arguments.shards ?? 1
        let summary: MergeSummary
        do {
            var options = MergeOptions(shards: shards, output: arguments.output, format: arguments.format, night: arguments.night,
                                       keepShards: arguments.keepShards, maxFailed: arguments.maxFailed)
            options.audit = arguments.audit
            options.rebuildLedger = arguments.rebuildLedger
            options.runID = runID
            summary = try ShardMerge.merge(manifest: manifest, options: options, note: { [printer] in printer.handle(.warning($0)) },
                                           isCancelled: { Signals.fired })
        } catch {
            if json { printer.error(error.description) } else { CLI.print(error) }
            return end(error.exitCode, error: error.description, job: manifest.job)
        }
        if summary.interrupted {
            if json { printer.error("interrupted: nothing was written") } else { Console.err("showbatch: interrupted: nothing was written\n") }
            return end(.interrupted, summary: summary, error: "interrupted: nothing was written", job: manifest.job)
        }
        // A delivery a signal cut short ends the merge as interrupted (130), as it ends a run and
        // `deliver`: the night is merged and recorded, and the next try delivers it.
        let code: ExitCode = summary.deliveries.cutShort ? .interrupted
            : !summary.complete ? .rowsFailed
            : summary.deliveries.contains { if case .refused = $0.result { return true } else { return false } } ? .deliveryRefused
            : summary.deliveries.contains(where: \.result.isFailure) ? .undelivered : .ok
        report(summary, shards: shards)
        return end(code, summary: summary, job: manifest.job)
    }

    /// What the merge did, in text lines or JSON events.
    private func report(_ summary: MergeSummary, shards: Int) {
        // A delivered night is not merged again: the delivery lines say so.
        let deliveredBefore = !summary.deliveries.isEmpty && summary.deliveries.allSatisfy { if case .already = $0.result { return true } else { return false } }
            && summary.outputs.allSatisfy(\.unchanged)
        var lines: [String] = []
        if !arguments.quiet && !deliveredBefore {
            let outputs = summary.outputs.map { output in
                "\(output.path) (\(output.rows) row\(output.rows == 1 ? "" : "s")\(output.unchanged ? ", already whole: its one shard is this file" : ""))"
            }
            lines.append("showbatch: merged \(shards) shard\(shards == 1 ? "" : "s") into \(outputs.joined(separator: ", "))")
        }
        // The night's rows not ok, judged as a run judges its own.
        if summary.notOk > 0, let rows = summary.rows, !summary.complete || !arguments.quiet {
            let allowance = summary.allowance.map { "max_failed (\($0.text))" } ?? "max_failed (0: none set)"
            lines.append("showbatch: the night has \(summary.notOk) row\(summary.notOk == 1 ? "" : "s") not ok of \(rows), \(summary.complete ? "within" : "beyond") \(allowance)")
        }
        let deliver = summary.night.map { RunCommand.deliverCommand(arguments.manifest, night: $0) }
        lines += EventPrinter.deliveryLines(summary.deliveries, deliver: deliver).filter { !arguments.quiet || $0.hasPrefix("showbatch: error:") }
        guard !json else {
            printer.summary(summary.runSummary(elapsed: .seconds(Date().timeIntervalSince(started))))
            return
        }
        if !lines.isEmpty { Console.err(lines.map(TerminalText.escaped).joined(separator: "\n") + "\n") }
    }

    /// Ends the command with `code`: its records written and pushed, then nothing a signal does
    /// changes it.
    private func end(_ code: ExitCode, summary: MergeSummary? = nil, error: String? = nil, job: String?, files: Bool = true) -> ExitCode {
        defer { signals.done() }
        return record(code, summary: summary, error: error, job: job, files: files)
    }

    /// Writes and pushes the merge's records, as a run's; the command's exit code.
    private func record(_ code: ExitCode, summary: MergeSummary? = nil, error: String? = nil, job: String?, files: Bool = true) -> ExitCode {
        let records = RunRecords(metrics: arguments.metrics, report: arguments.report, push: arguments.metricsPush)
        guard !records.isEmpty else { return code }
        let report = RunReport(runID: runID, manifest: arguments.manifest, shard: nil, started: started, ended: Date(), exitCode: code,
                               summary: summary?.runSummary(elapsed: .seconds(Date().timeIntervalSince(started))), error: error, job: job)
        return records.record(report, files: files, beforePush: { [signals] result in signals.pushing(result) }, problem: { problem in
            switch problem {
            case .error(let text): printer.error(text)
            case .warning(let text): printer.unquietWarning(text)
            }
        })
    }
}
