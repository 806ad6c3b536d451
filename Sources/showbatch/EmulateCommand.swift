import Foundation
import ShowbatchBasics
import ShowbatchManifest
import ShowbatchCore
import ShowbatchEmulator
import Synchronization

/// `showbatch emulate`: serve the emulator in the foreground until SIGINT or SIGTERM.
enum EmulateCommand {
    static func configuration(_ arguments: EmulateArguments) throws(UsageError) -> EmulatorConfiguration {
        if let path = arguments.manifest {
            // Read as validate --no-env reads it: the emulator needs none of the run's secrets.
            let manifest: Manifest
            do {
                manifest = try ManifestLoader.load(path: path, use: .check)
            } catch {
                throw UsageError(message: "--manifest \(path) cannot be read:\n\(error.description)", command: "emulate")
            }
            var configuration: EmulatorConfiguration
            do {
                configuration = try EmulatorConfiguration(manifest: manifest, tokens: false)
            } catch {
                throw UsageError(message: "--manifest \(path): \(error.message)", command: "emulate")
            }
            configuration.port = arguments.port
            for cname in arguments.cnames {
                let parts = cname.split(separator: "=", maxSplits: 1)
                configuration.cnames[String(parts[0]).lowercased()] = String(parts[1])
            }
            return configuration
        }
        var configuration = EmulatorConfiguration()
        configuration.port = arguments.port
        if let path = arguments.aliases {
            do {
                configuration.aliases = try AliasFile.load(path: path)
            } catch {
                throw UsageError(message: "--aliases \(error.message)", command: "emulate")
            }
        } else {
            configuration.aliases = EmulatorConfiguration.sampleAliases
        }
        for cname in arguments.cnames {
            let parts = cname.split(separator: "=", maxSplits: 1)
            configuration.cnames[String(parts[0]).lowercased()] = String(parts[1])
        }
        if let latency = arguments.latency {
            guard let (base, jitter) = Units.latency(latency) else {
                throw UsageError(message: "--latency must be a duration with optional jitter, such as 50ms or 50ms±10ms, each at most 24h; got \"\(latency)\"", command: "emulate")
            }
            configuration.faults.latency = base
            configuration.faults.jitter = jitter
        }
        configuration.faults.failRate = arguments.failRate
        configuration.faults.failStatus = arguments.failStatus
        configuration.faults.throttle = arguments.throttle
        configuration.faults.dropRate = arguments.dropRate
        configuration.faults.malformedRate = arguments.malformedRate
        configuration.faults.seed = arguments.seed
        return configuration
    }

    static func execute(_ arguments: EmulateArguments) async -> ExitCode {
        let emulator: Emulator
        do {
            emulator = try Emulator(configuration: try configuration(arguments))
        } catch let error as UsageError {
            Console.err(error.description + "\n")
            return .usage
        } catch {
            Console.err("showbatch: error: \(error)\n")
            return .runtime
        }
        // Heard, not fatal: the loop below notices and stops the emulator. Set before it says
        // it serves: a script that stops it on that line must find it listening.
        Signals.listen {}
        emulator.start()
        Console.out("showbatch emulator serving \(emulator.baseURL) (\(emulator.configuration.aliases.count) aliases); stop with Ctrl-C\n")
        var last = emulator.snapshot
        while !(await Signals.wait(for: .seconds(60))) {
            let now = emulator.snapshot
            Console.out("requests \(now.requests - last.requests)/min: failed \(now.failed - last.failed), throttled \(now.throttled - last.throttled), dropped \(now.dropped - last.dropped), malformed \(now.malformed - last.malformed)\n")
            last = now
        }
        emulator.stop()
        let total = emulator.snapshot
        Console.out("stopped after \(total.requests) requests\n")
        return .ok
    }
}
