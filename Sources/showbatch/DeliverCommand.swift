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

    init(_ arguments: DeliverArguments) {
        self.arguments = arguments
        printer = EventPrinter(format: arguments.logFormat, progress: false, quiet: arguments.quiet, runID: runID)
    }

    func execute() async -> ExitCode {
        let sideFiles = [("--metrics", arguments.metrics), ("--report", arguments.report)].compactMap { flag, path in path.map { (flag: flag, path: $0) } }
        if let problem = RunReport.sideFileProblem(sideFiles, manifest: arguments.manifest) {
            printer.invalid(UsageError(message: problem, command: "deliver").description)
            return await record(.usage, error: problem, job: nil, files: false)
        }
        let manifest: Manifest
        switch CLI.manifestSendingNothing(arguments.manifest) {
        case .success(let loaded): manifest = loaded
        case .failure(let failure): return await record(failure.code, error: "the manifest cannot be delivered from", job: nil)
        }
        Signals.listen {}
        defer { Signals.listen(nil) }
        if arguments.check { return check(manifest) }
        var summary: RunSummary
        do {
            summary = try await NightDelivery.deliver(manifest: manifest, night: arguments.night, audit: arguments.audit, what: arguments.what,
                                                      rebuildLedger: arguments.rebuildLedger,
                                                      note: { [printer] in printer.handle(.warning($0)) },
                                                      isCancelled: { Signals.fired })
        } catch {
            if arguments.logFormat == .json { printer.error(error.description) } else { CLI.print(error) }
            return await record(error.exitCode, error: error.description, job: manifest.job)
        }
        summary.interrupted = Signals.fired
        summary.elapsed = .seconds(Date().timeIntervalSince(started))
        let code = summary.exitCode
        if arguments.logFormat == .json {
            printer.summary(summary)
        } else if !arguments.quiet || code != .ok {
            let lines = EventPrinter.deliveryLines(summary.deliveries, deliver: nil).filter { !arguments.quiet || $0.hasPrefix("showbatch: error:") }
            if !lines.isEmpty { Console.err(lines.map(TerminalText.escaped).joined(separator: "\n") + "\n") }
        }
        return await record(code, summary: summary, job: manifest.job)
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
        return Signals.fired ? .interrupted : code
    }

    /// Writes and pushes the delivery's records, as a run's (into the job's group: the night's
    /// own series); the command's exit code.
    private func record(_ code: ExitCode, summary: RunSummary? = nil, error: String? = nil, job: String?, files: Bool = true) async -> ExitCode {
        let records = RunRecords(metrics: arguments.metrics, report: arguments.report, push: arguments.metricsPush)
        guard !records.isEmpty else { return code }
        let report = RunReport(runID: runID, manifest: arguments.manifest, shard: nil, started: started, ended: Date(), exitCode: code,
                               summary: summary, error: error, job: job)
        // On a thread of its own: the push waits on the network and between its tries.
        return await Blocking.run("showbatch-records") {
            records.record(report, files: files, problem: { problem in
                switch problem {
                case .error(let text): printer.error(text)
                case .warning(let text): printer.unquietWarning(text)
                }
            })
        }
    }
}
