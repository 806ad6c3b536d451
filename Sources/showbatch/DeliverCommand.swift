import Foundation
import ShowbatchBasics
import ShowbatchManifest
import ShowbatchCore

/// `showbatch deliver`: the library uploads the night's files (or records what a person says of
/// them); this prints (as text or JSON lines), maps the exit code, and records the delivery as a
/// run records itself (`--metrics`, `--report`, `--metrics-push` to the job's group), so that a
/// night delivered by hand clears the alerts its run raised at once.
struct DeliverCommand {
    let arguments: DeliverArguments
    let runID = RunOptions.newRunID()
    let started = Date()
    let printer: EventPrinter
    /// What a signal does, from the command's start to the end of the process.
    let signals: CommandSignals<Void>

    init(_ arguments: DeliverArguments) {
        self.arguments = arguments
        printer = EventPrinter(format: arguments.logFormat, progress: false, quiet: arguments.quiet, runID: runID)
        signals = CommandSignals<Void>(printer: printer)
    }

    func execute() async -> ExitCode {
        // Heard from the first moment to the last (`CommandSignals`): a signal before the
        // delivery begins finishes the command; then it is the delivery's, then the push's.
        let sideFiles = [("--metrics", arguments.metrics), ("--report", arguments.report)].compactMap { flag, path in path.map { (flag: flag, path: $0) } }
        // Decided once: the command and a signal's finisher write the same side files, or none.
        let sideFileProblem = RunReport.sideFileProblem(sideFiles, manifest: arguments.manifest)
        signals.listen { [self] in
            // A refused --metrics or --report path is not written to.
            recordNow(.interrupted, error: "interrupted before anything was sent", job: nil,
                      files: sideFileProblem == nil)
        }
        if let problem = sideFileProblem {
            guard signals.ending() else { await signals.parked() }
            printer.invalid(UsageError(message: problem, command: "deliver").description)
            return await end(.usage, error: problem, job: nil, files: false)
        }
        let manifest: Manifest
        switch CLI.manifestSendingNothing(arguments.manifest) {
        case .success(let loaded): manifest = loaded
        case .failure(let failure):
            guard signals.ending() else { await signals.parked() }
            failure.print()
            return await end(failure.code, error: "the manifest cannot be delivered from", job: nil)
        }
        guard signals.begin() else { await signals.parked() }
        if arguments.check {
            let code = check(manifest)
            signals.done()
            return code
        }
        var summary: RunSummary
        do {
            summary = try await NightDelivery.deliver(manifest: manifest, night: arguments.night, audit: arguments.audit, what: arguments.what,
                                                      rebuildLedger: arguments.rebuildLedger,
                                                      note: { [printer] in printer.handle(.warning($0)) },
                                                      isCancelled: { Signals.fired })
        } catch {
            if arguments.logFormat == .json { printer.error(error.description) } else { CLI.print(error) }
            return await end(error.exitCode, error: error.description, job: manifest.job)
        }
        // Interrupted (130) only when a signal cut a delivery short (`NightDelivery`): one that
        // came after the last had ended does not undo a delivered night; it gives the push up.
        summary.elapsed = .seconds(Date().timeIntervalSince(started))
        let code = summary.exitCode
        if arguments.logFormat == .json {
            printer.summary(summary)
        } else if !arguments.quiet || code != .ok {
            let lines = EventPrinter.deliveryLines(summary.deliveries, deliver: nil).filter { !arguments.quiet || $0.hasPrefix("showbatch: error:") }
            if !lines.isEmpty { Console.err(lines.map(TerminalText.escaped).joined(separator: "\n") + "\n") }
        }
        return await end(code, summary: summary, job: manifest.job)
    }

    /// `--check`: each target tried, each step said; 0, or the delivery failure's code.
    private func check(_ manifest: Manifest) -> ExitCode {
        let results: [DeliveryCheck.Result]
        do {
            results = try DeliveryCheck.run(manifest: manifest, step: { destination, step in
                if !arguments.quiet { Console.err("showbatch: check \(TerminalText.escaped(destination)): \(TerminalText.escaped(step))\n") }
            }, isCancelled: { Signals.fired })
        } catch {
            CLI.print(error)
            return error.exitCode
        }
        var code = ExitCode.ok
        for result in results {
            guard let failure = result.failure else { continue }
            Console.err("showbatch: error: check \(TerminalText.escaped(result.destination)): \(TerminalText.escaped(failure))\n")
            code = result.needsPerson ? .deliveryRefused : (code == .deliveryRefused ? code : .undelivered)
        }
        // Interrupted when a signal cut a check short, as a delivery is.
        return results.contains(where: \.interrupted) ? .interrupted : code
    }

    /// Ends the command with `code`: its records written and pushed (on a thread of its own: the
    /// push waits on the network and between its tries), then nothing a signal does changes it.
    private func end(_ code: ExitCode, summary: RunSummary? = nil, error: String? = nil, job: String?, files: Bool = true) async -> ExitCode {
        guard !records.isEmpty else {
            signals.done()
            return code
        }
        // Done on that thread too: a signal that gave the push up holds it until its exit.
        return await Blocking.run("showbatch-records") {
            let result = recordNow(code, summary: summary, error: error, job: job, files: files)
            signals.done()
            return result
        }
    }

    private var records: RunRecords { RunRecords(metrics: arguments.metrics, report: arguments.report, push: arguments.metricsPush) }

    /// Writes and pushes the delivery's records, as a run's (into the job's group: the night's
    /// own series); the command's exit code.
    private func recordNow(_ code: ExitCode, summary: RunSummary? = nil, error: String? = nil, job: String?, files: Bool = true) -> ExitCode {
        guard !records.isEmpty else { return code }
        let report = RunReport(runID: runID, manifest: arguments.manifest, shard: nil, started: started, ended: Date(), exitCode: code,
                               summary: summary, error: error, job: job)
        return records.record(report, files: files, beforePush: { [signals] result in signals.pushing(result) }, problem: { problem in
            switch problem {
            case .error(let text): printer.error(text)
            case .warning(let text): printer.unquietWarning(text)
            }
        })
    }
}
