import Foundation
import ShowbatchBasics
import ShowbatchManifest
import ShowbatchCore
import ShowbatchEmulator
import Synchronization

/// `showbatch run`: load, optionally start the emulator, run, print the summary, map the exit code,
/// and write `--metrics` and `--report` (and push `--metrics-push`) however the run ended.
enum RunCommand {
    /// The command line that sends a finished run's failed rows again: this one's manifest and
    /// the flags that name its files (`--output`, `--format`, `--shard`, `--limit`), its endpoint,
    /// and `--max-failed` (which decides whether the night is complete, and so delivered).
    static func retryCommand(_ arguments: RunArguments, shard: Shard?, night: NightDate? = nil) -> String {
        var words = ["showbatch", "run", arguments.manifest, "--retry-failed"]
        // Tomorrow's default date names another file: the night is named.
        if let night { words += ["--date", night.description] }
        if let allowance = arguments.options.maxFailed { words += ["--max-failed", allowance.text] }
        if let output = arguments.options.output { words += ["--output", output] }
        if let format = arguments.options.format { words += ["--format", format.rawValue] }
        if let shard { words += ["--shard", "\(shard.index)/\(shard.count)"] }
        if let limit = arguments.options.limit { words += ["--limit", String(limit)] }
        if arguments.emulate { words.append("--emulate") }
        if let base = arguments.baseURL { words += ["--base-url", base] }
        return words.map(shellWord).joined(separator: " ")
    }

    /// The command that delivers the night's files without running it again.
    static func deliverCommand(_ manifest: String, night: NightDate) -> String {
        ["showbatch", "deliver", manifest, "--date", night.description].map(shellWord).joined(separator: " ")
    }

    /// `word` as a shell reads it back: as it is when it is plain, else in single quotes.
    private static func shellWord(_ word: String) -> String {
        let plain = !word.isEmpty && word.unicodeScalars.allSatisfy { scalar in
            CharacterSet.alphanumerics.contains(scalar) && scalar.isASCII || "-_./=:@%+,".unicodeScalars.contains(scalar)
        }
        return plain ? word : "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    static func execute(_ arguments: RunArguments) async -> ExitCode {
        await RunSession(arguments).execute()
    }
}

/// One `showbatch run` from start to exit code: who finishes it (the command or a signal), what
/// it records however it ends, and the run between.
private final class RunSession: Sendable {
    let arguments: RunArguments
    let started = Date()
    let runID: String
    /// Who ends the command: it, a signal that came before the run existed, or one during the push.
    let signals: CommandSignals<Task<Result<RunSummary, RunError>, Never>>
    /// `--shard`, once read (before the manifest): a signal's finisher records it too.
    let shard = Mutex<Shard?>(nil)
    /// Prints until the run's own printer (with its progress line) takes over.
    let printer: EventPrinter
    let records: RunRecords
    /// The job the metrics are grouped by, once the manifest is read (before, its file name).
    let job = Mutex<String?>(nil)

    init(_ arguments: RunArguments) {
        self.arguments = arguments
        runID = arguments.options.runID ?? RunOptions.newRunID()
        printer = EventPrinter(format: arguments.options.logFormat, progress: false, quiet: arguments.options.quiet,
                               verbose: arguments.options.verbose, runID: runID, progressEvery: arguments.progressEvery)
        records = RunRecords(metrics: arguments.metrics, report: arguments.report, push: arguments.metricsPush)
        signals = CommandSignals(printer: printer) { $0.cancel() }
    }

    func execute() async -> ExitCode {
        // Checked before anything else: even a manifest that cannot be read gets its metrics, and
        // they must never replace it.
        let sideFiles = [("--metrics", arguments.metrics), ("--report", arguments.report)].compactMap { flag, path in path.map { (flag: flag, path: $0) } }
        // Decided once: the command and a signal's finisher write the same side files, or none.
        let sideFileProblem = RunReport.sideFileProblem(sideFiles, manifest: arguments.manifest)
        // Caught from the first moment: reading a big manifest or data file takes a while.
        signals.listen { [self] in
            // A refused --metrics or --report path is not written to.
            record(.interrupted, error: "interrupted before anything was sent", shard: shard.withLock { $0 },
                   files: sideFileProblem == nil)
        }
        if let problem = sideFileProblem {
            let usage = UsageError(message: problem, command: "run")
            return await finish(usage.exitCode, error: problem, files: false) { printer.invalid(usage.description) }
        }
        let environment = ProcessInfo.processInfo.environment
        var options = arguments.options
        // Read before the manifest: a signal while it loads records the shard's own exit.
        if let text = arguments.shard {
            switch Shard.parse(text, environment: environment) {
            case .success(let parsed):
                options.shard = parsed
                shard.withLock { $0 = parsed }
            case .failure(let error):
                let usage = UsageError(message: error.message, command: "run")
                return await finish(usage.exitCode, error: error.message) { printer.invalid(usage.description) }
            }
        }
        let manifest: Manifest
        do {
            manifest = try ManifestLoader.load(path: arguments.manifest, environment: environment, use: .run)
        } catch {
            let count = error.diagnostics.count
            return await finish(error.exitCode, error: "the manifest has \(count) problem\(count == 1 ? "" : "s")", shard: options.shard) {
                printer.invalid(error.description, diagnostics: error.diagnostics)
            }
        }
        for warning in manifest.warnings { printer.handle(.warning(warning.line)) }
        job.withLock { $0 = manifest.job }
        options.runID = runID
        for (flag, path) in sideFiles { options.sideFiles[flag] = path }
        let stderrIsTerminal = isatty(STDERR_FILENO) == 1
        options.interactive = stderrIsTerminal
        if options.progress == .auto {
            options.progress = stderrIsTerminal && options.logFormat == .text && !options.quiet ? .always : .never
        }
        if let base = arguments.baseURL {
            options.baseURLOverride = base
            printer.handle(.warning("every request goes to \(MetricsPush.address(of: base)) (--base-url), not to the vault: for testing only"))
        }
        var emulator: Emulator?
        if arguments.emulate {
            switch await startEmulator(for: manifest, options: &options) {
            case .success(let started): emulator = started
            case .failure(let failure): return failure.code
            }
        }
        defer { emulator?.stop() }
        return await run(manifest, options: options, environment: environment)
    }

    /// Starts the built-in emulator for `manifest` and points the run at it; the command's exit
    /// code when it cannot start.
    private func startEmulator(for manifest: Manifest, options: inout RunOptions) async -> Result<Emulator, ExitCodeError> {
        do {
            let configuration = try EmulatorConfiguration(manifest: manifest, tokens: true)
            let started = try Emulator(configuration: configuration)
            started.start()
            options.baseURLOverride = started.baseURL
            options.tokenURLOverride = started.baseURL + "/oauth/token"
            return .success(started)
        } catch {
            let message = "cannot start the emulator: \(error)"
            return .failure(ExitCodeError(code: await finish(.runtime, error: message, shard: options.shard) { printer.error(message) }))
        }
    }

    /// Runs `manifest`, prints its summary or error, and finishes with its exit code.
    private func run(_ manifest: Manifest, options: RunOptions, environment: [String: String]) async -> ExitCode {
        let live = EventPrinter(format: options.logFormat, progress: options.progress == .always, quiet: options.quiet,
                                verbose: options.verbose, runID: runID, progressEvery: arguments.progressEvery)
        let runner = Runner(manifest: manifest, options: options, environment: environment) { live.handle($0) }
        // Made under the phase's lock: a signal from here on cancels the run, never ends the
        // process as if nothing had started; one that came while the manifest loaded is
        // finishing the command already, and nothing starts.
        let made = signals.begin {
            Task { () -> Result<RunSummary, RunError> in
                do throws(RunError) { return .success(try await runner.run()) } catch { return .failure(error) }
            }
        }
        guard let task = made else { await signals.parked() }
        switch await task.value {
        case .success(let summary):
            live.endProgress()
            // A delivered night is not rewritten: no --retry-failed hint for it.
            let delivered = summary.deliveries.contains { !$0.result.isFailure }
            live.summary(summary, retry: delivered ? nil : RunCommand.retryCommand(arguments, shard: options.shard, night: summary.night),
                         deliver: summary.night.map { RunCommand.deliverCommand(arguments.manifest, night: $0) })
            // Labels not found under the emulator's echo are its shape's, not the route's.
            if arguments.emulate, manifest.emulator?.response == nil, summary.tally.byErrorCode[.fieldNotFound] != nil,
               manifest.requests.flatMap(\.labels).contains(where: { !$0.path.text.hasPrefix("json.") }) {
                live.unquietWarning("the emulator answers {\"json\": <the request's body, revealed>, …}: a label whose path is not under json. is not found; give emulator.response your route's answer, such as {data: {card: \"${body.card}\"}}")
            }
            return await finish(summary.exitCode, summary: summary, shard: options.shard)
        case .failure(let error):
            live.endProgress()
            // A manifest's problem is recorded without its quoted line.
            var message = error.description
            if case .manifest(let diagnostic) = error { message = diagnostic.message }
            switch error {
            case .usage:
                // A refusal of the run, not of its command line (which the parser refused before):
                // no pointer to the flags' help.
                live.invalid("showbatch: error: \(TerminalText.escaped(message))")
            case .sideFile:
                // A --metrics or --report path: the command line's.
                live.invalid(UsageError(message: message, command: "run").description)
            case .manifest(let diagnostic):
                live.invalid(diagnostic.description, diagnostics: [diagnostic])
            case .runtime:
                live.error(message)
            }
            // A refused --metrics or --report path is not written to.
            var files = true
            if case .sideFile = error { files = false }
            return await finish(error.exitCode, error: message, shard: options.shard, files: files)
        }
    }

    /// Ends the command with `code`, saying why (`say`) and writing what `record` writes (on a
    /// thread of its own: the push waits on the network), unless a signal that came before the
    /// run existed is finishing it already: then nothing is said (its "interrupted" is), and
    /// that finisher's exit ends the process (both writing the same files through one temporary
    /// name was the alternative).
    func finish(_ code: ExitCode, summary: RunSummary? = nil, error: String? = nil, shard: Shard? = nil,
                files: Bool = true, saying say: () -> Void = {}) async -> ExitCode {
        guard signals.ending() else { await signals.parked() }
        say()
        if records.isEmpty { return code }
        // Done on that thread too: a signal that gave the push up holds it until its exit.
        return await Blocking.run("showbatch-records") {
            let result = record(code, summary: summary, error: error, shard: shard, files: files)
            signals.done()
            return result
        }
    }

    /// Writes the metrics and the report, and pushes the metrics, for a run that ended with
    /// `code` (`files: false` when a refused path is the error: only the push is made); the
    /// command's exit code (`RunRecords` says how their failures weigh).
    func record(_ code: ExitCode, summary: RunSummary? = nil, error: String? = nil, shard: Shard? = nil,
                files: Bool = true) -> ExitCode {
        guard !records.isEmpty else { return code }
        let report = RunReport(runID: runID, manifest: arguments.manifest, shard: shard.map { "\($0.index)/\($0.count)" },
                               started: started, ended: Date(), exitCode: code, summary: summary, error: error,
                               job: job.withLock { $0 })
        return records.record(report, files: files, beforePush: { [signals] result in signals.pushing(result, workEndedWith: code) },
                              problem: { [printer] problem in
            switch problem {
            case .error(let text): printer.error(text)
            case .warning(let text): printer.unquietWarning(text)
            }
        })
    }
}

/// An exit code carried as an error, for a `Result`.
private struct ExitCodeError: Error {
    let code: ExitCode
}
