import Foundation
import Synchronization
@testable import ShowbatchCore
import ShowbatchEmulator

/// Collects run events for assertions.
final class EventLog: Sendable {
    private let events = Mutex<[String]>([])

    func record(_ event: RunEvent) {
        let text: String
        switch event {
        case .warning(let message): text = "warning: \(message)"
        case .attempt(let record): text = "attempt: \(record.method) \(record.url) \(record.status.map(String.init) ?? record.failure ?? "-") \(record.request) #\(record.attempt)"
        case .progress(let progress): text = "progress: \(progress.done)"
        }
        events.withLock { $0.append(text) }
    }

    var all: [String] { events.withLock { $0 } }
}

/// A manifest in a temp folder, run against an in-process emulator on 127.0.0.1.
struct RunFixture {
    let dir = TempDir()
    let log = EventLog()
    /// The HTTP client the runs use; engine tests run with each.
    var transport: TransportKind = .curl

    func manifest(_ text: String, files: [String: String] = [:], environment: [String: String] = [:]) throws -> Manifest {
        for (name, content) in files { _ = dir.file(name, content) }
        return try loadManifest(text, in: dir, environment: environment)
    }

    /// Starts the emulator `manifest`'s `emulator:` section describes, and the options that point
    /// a run at it with this fixture's transport. The caller stops the emulator.
    func emulator(for manifest: Manifest, options: RunOptions = RunOptions(),
                  configure: (inout EmulatorConfiguration) -> Void = { _ in }) throws -> (Emulator, RunOptions) {
        var configuration = try EmulatorConfiguration(spec: manifest.emulator)
        configure(&configuration)
        let emulator = try Emulator(configuration: configuration)
        emulator.start()
        var options = options
        options.baseURLOverride = emulator.baseURL
        options.progress = .never
        options.transport = options.transport ?? transport
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
