import Foundation
import ShowbatchCore
import ShowbatchEmulator
import Synchronization

/// `showbatch run`: load, optionally start the emulator, run, print the summary, map the exit code.
enum RunCommand {
    /// Where the command is, for a signal: before the run exists nothing has been sent or opened,
    /// so the process can end at once; once it runs, the run is cancelled and winds down.
    private enum Phase {
        case starting
        case running(Task<RunSummary, any Error>)
    }

    static func execute(_ arguments: RunArguments) async -> ExitCode {
        let phase = Mutex(Phase.starting)
        // Caught from the first moment: reading a big manifest or data file takes a while.
        Signals.listen {
            let task = phase.withLock { phase -> Task<RunSummary, any Error>? in
                if case .running(let task) = phase { return task } else { return nil }
            }
            guard let task else {
                Console.err("showbatch: interrupted before anything was sent\n")
                exit(ExitCode.interrupted.rawValue)
            }
            task.cancel()
        }
        let environment = ProcessInfo.processInfo.environment
        let manifest: Manifest
        do {
            manifest = try ManifestLoader.load(path: arguments.manifest, environment: environment)
        } catch {
            Console.err(TerminalText.escapedLines(error.description) + "\n")
            return error.exitCode
        }
        var options = arguments.options
        let stderrIsTerminal = isatty(STDERR_FILENO) == 1
        if options.progress == .auto {
            options.progress = stderrIsTerminal && options.logFormat == .text && !options.quiet ? .always : .never
        }
        if let text = arguments.shard {
            switch Shard.parse(text, environment: environment) {
            case .success(let shard): options.shard = shard
            case .failure(let error):
                let usage = UsageError(message: error.message, command: "run")
                Console.err(usage.description + "\n")
                return usage.exitCode
            }
        }
        var emulator: Emulator?
        if arguments.emulate {
            do {
                var configuration = try EmulatorConfiguration(spec: manifest.emulator)
                // A manifest with client credentials gets tokens from the emulator (any client).
                if case .clientCredentials? = manifest.auth?.source, configuration.auth == nil { configuration.auth = EmulatorAuth() }
                let started = try Emulator(configuration: configuration)
                started.start()
                emulator = started
                options.baseURLOverride = started.baseURL
                options.tokenURLOverride = started.baseURL + "/oauth/token"
            } catch {
                Console.err("showbatch: error: cannot start the emulator: \(TerminalText.escaped("\(error)"))\n")
                return .runtime
            }
        }
        defer { emulator?.stop() }

        let printer = EventPrinter(format: options.logFormat, progress: options.progress == .always, quiet: options.quiet)
        let runner = Runner(manifest: manifest, options: options, environment: environment) { printer.handle($0) }
        let task = Task { () throws(RunError) -> RunSummary in try await runner.run() }
        phase.withLock { $0 = .running(task) }
        if Signals.fired { task.cancel() }
        let summary: RunSummary
        do {
            summary = try await task.value
        } catch {
            printer.endProgress()
            guard let error = error as? RunError else {
                printer.error("\(error)")
                return .runtime
            }
            switch error {
            case .usage(let message):
                Console.err(UsageError(message: message, command: "run").description + "\n")
                return .usage
            case .manifest(let diagnostic):
                Console.err(diagnostic.description + "\n")
                return .usage
            case .runtime(let message):
                printer.error(message)
                return .runtime
            }
        }
        printer.endProgress()
        printer.summary(summary)
        if summary.interrupted { return .interrupted }
        return summary.ok == summary.rows && summary.skipped == 0 ? ExitCode.ok : ExitCode.rowsFailed
    }
}
