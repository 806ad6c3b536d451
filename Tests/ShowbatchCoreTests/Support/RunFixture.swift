import Foundation
import Synchronization
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import ShowbatchEmulator
import TestSupport

/// A manifest in a temp folder, run against an in-process emulator on 127.0.0.1.
struct RunFixture {
    let dir = TempDir()
    let log = EventLog()

    func manifest(_ text: String, files: [String: String] = [:], environment: [String: String] = [:]) throws -> Manifest {
        for (name, content) in files { _ = dir.file(name, content) }
        return try loadManifest(text, in: dir, environment: environment)
    }

    /// Runs `manifest` against an emulator set up by `configure` (its token endpoint the run's),
    /// logging to `log`; the summary and the emulator's counts.
    func runCounting(_ manifest: Manifest, options: RunOptions = RunOptions(),
                     configure: (inout EmulatorConfiguration) -> Void = { _ in }) async throws -> (RunSummary, Emulator.Counts) {
        let (emulator, pointed) = try emulator(for: manifest, options: options, configure: configure)
        defer { emulator.stop() }
        var withToken = pointed
        withToken.tokenURLOverride = emulator.baseURL + "/oauth/token"
        let log = self.log
        let summary = try await Runner(manifest: manifest, options: withToken, environment: [:]) { log.record($0) }.run()
        return (summary, emulator.snapshot)
    }

    /// Starts the emulator `manifest`'s `emulator:` section describes, and the options that point
    /// a run at it. The caller stops the emulator.
    func emulator(for manifest: Manifest, options: RunOptions = RunOptions(),
                  configure: (inout EmulatorConfiguration) -> Void = { _ in }) throws -> (Emulator, RunOptions) {
        var configuration = try EmulatorConfiguration(spec: manifest.emulator)
        configure(&configuration)
        let emulator = try Emulator(configuration: configuration)
        emulator.start()
        var options = options
        options.baseURLOverride = emulator.baseURL
        options.progress = .never
        return (emulator, options)
    }

    /// Runs `manifest` with the emulator its `emulator:` section describes.
    func run(_ manifest: Manifest, options: RunOptions = RunOptions(), configure: (inout EmulatorConfiguration) -> Void = { _ in }) async throws -> RunSummary {
        let (emulator, options) = try emulator(for: manifest, options: options, configure: configure)
        defer { emulator.stop() }
        let log = self.log
        let runner = Runner(manifest: manifest, options: options, environment: [:]) { log.record($0) }
        return try await runner.run()
    }

    func read(_ name: String) -> String? { dir.read(name) }

    func mode(_ name: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: dir.path + "/" + name)[.posixPermissions] as? Int)
    }
}

extension RunFixture {
    /// Runs `manifest` against its emulator and interrupts it as the `after`-th request is sent.
    /// Returns the emulator (still running, for a resume), the summary and the options used.
    func interruptedRun(_ manifest: Manifest, after: Int) async throws -> (Emulator, RunSummary, RunOptions) {
        let (emulator, options) = try emulator(for: manifest)
        let inner = CurlTransport(maxConnections: 8)
        let interrupting = InterruptingTransport(inner: inner, after: after)
        let runner = Runner(manifest: manifest, options: options, transport: interrupting, environment: [:])
        let task = Task {
            // Start only once the interrupt is armed.
            while interrupting.cancel.withLock({ $0 == nil }) { await Task.yield() }
            return try await runner.run()
        }
        interrupting.cancel.withLock { $0 = { task.cancel() } }
        return (emulator, try await task.value, options)
    }
}

/// Collects run events for assertions.
final class EventLog: Sendable {
    private let events = Mutex<[String]>([])
    private let quieter = Mutex<[String]>([])

    func record(_ event: RunEvent) {
        let text: String
        switch event {
        case .started(let start):
            quieter.withLock { $0.append("started: \(start.mode) \(start.rows.map(String.init) ?? "?") rows to \(start.outputs.joined(separator: ","))") }
            return
        case .note(let message):
            quieter.withLock { $0.append("note: \(message)") }
            return
        case .warning(let message): text = "warning: \(message)"
        case .attempt(let record): text = "attempt: \(record.method) \(record.url) \(record.status.map(String.init) ?? record.failure ?? "-") \(record.request) #\(record.attempt)"
        case .progress(let progress): text = "progress: \(progress.done)"
        }
        events.withLock { $0.append(text) }
    }

    var all: [String] { events.withLock { $0 } }
    /// The start event and notes, kept apart so that `all` stays the warnings, attempts and progress.
    var notes: [String] { quieter.withLock { $0 } }
}

/// Wraps a transport and cancels the run when the `after`-th request is sent.
final class InterruptingTransport: Transport, Sendable {
    let inner: any Transport
    let after: Int
    let sent = Atomic<Int>(0)
    let cancel: Mutex<(@Sendable () -> Void)?> = Mutex(nil)

    init(inner: any Transport, after: Int) {
        self.inner = inner
        self.after = after
    }

    func send(_ request: PreparedRequest, timeout: Duration) async -> TransportResult {
        if sent.add(1, ordering: .relaxed).newValue == after {
            cancel.withLock { $0 }?()
        }
        return await inner.send(request, timeout: timeout)
    }
}
