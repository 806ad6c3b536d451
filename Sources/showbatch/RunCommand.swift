import Foundation
import ShowbatchCore
import ShowbatchEmulator
import Synchronization

/// `showbatch run`: load, optionally start the emulator, run, print the summary, map the exit code.
enum RunCommand {
    static func execute(_ arguments: RunArguments) async -> ExitCode {
        let environment = ProcessInfo.processInfo.environment
        let manifest: Manifest
        do {
            manifest = try ManifestLoader.load(path: arguments.manifest, environment: environment)
        } catch {
            Console.err(error.description + "\n")
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
                let configuration = try EmulatorConfiguration(spec: manifest.emulator)
                let started = try Emulator(configuration: configuration)
                started.start()
                emulator = started
                options.baseURLOverride = started.baseURL
            } catch {
                Console.err("showbatch: error: cannot start the emulator: \(error)\n")
                return .runtime
            }
        }
        defer { emulator?.stop() }

        let printer = EventPrinter(format: options.logFormat, progress: options.progress == .always, quiet: options.quiet)
        let runner = Runner(manifest: manifest, options: options, environment: environment) { printer.handle($0) }
        // Signals are caught before the run starts; one that comes before the task exists cancels it at once.
        let running = Mutex<Task<RunSummary, any Error>?>(nil)
        let signals = SignalWaiter { running.withLock { $0?.cancel() } }
        defer { _ = signals }
        let task = Task { () throws(RunError) -> RunSummary in try await runner.run() }
        running.withLock { $0 = task }
        if signals.fired { task.cancel() }
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
