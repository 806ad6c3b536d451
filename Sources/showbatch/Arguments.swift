import ShowbatchCore

/// A command line that cannot be run; printed with a pointer to the command's help. Exit 2.
struct UsageError: Error, Equatable, CustomStringConvertible {
    let message: String
    let command: String?

    var description: String {
        "showbatch: error: \(message)\nRun 'showbatch help\(command.map { " " + $0 } ?? "")' for usage."
    }
}

/// Arguments of `run`: the library's options, plus what the command resolves itself.
struct RunArguments: Equatable {
    var manifest = ""
    var options = RunOptions()
    /// `--shard` as written; `auto/N` needs the environment, read when the run starts.
    var shard: String?
    var emulate = false
}

/// Arguments of `emulate`.
struct EmulateArguments: Equatable {
    var port = 8080
    var aliases: String?
    var cnames: [String] = []
    var latency: String?
    var failRate = 0.0
    var failStatus = 500
    var throttle: Rate?
    var dropRate = 0.0
    var malformedRate = 0.0
    var seed: UInt64 = 1
}

/// What the command line asks for.
enum Invocation: Equatable {
    case run(RunArguments)
    case validate([String])
    case plan(manifest: String, json: Bool)
    case emulate(EmulateArguments)
    case help(String?)
    case version
}

/// Flags a command accepts: those taking a value and plain switches.
private struct FlagTable {
    let valued: [String]
    let switches: [String]
    var all: [String] { valued + switches }
}

/// Parsed flags of one command.
private struct ScannedFlags {
    var positionals: [String] = []
    var values: [String: [String]] = [:]
    var switches: Set<String> = []
    var help = false

    func last(_ name: String) -> String? { values[name]?.last }
}

/// The hand-written command-line parser: subcommand, then `--flag value` or `--flag=value`.
enum ArgumentParser {
    static let commands = ["run", "validate", "plan", "emulate", "help"]

    private static let runFlags = FlagTable(
        valued: ["--output", "--format", "--concurrency", "--rate", "--timeout", "--shard", "--progress", "--log-format", "--transport"],
        switches: ["--fail-fast", "--resume", "--emulate", "--strict-hostname", "--quiet", "--verbose"])
    private static let planFlags = FlagTable(valued: ["--format"], switches: [])
    private static let validateFlags = FlagTable(valued: [], switches: [])
    private static let emulateFlags = FlagTable(
        valued: ["--port", "--aliases", "--cname", "--latency", "--fail-rate", "--fail-status", "--throttle",
                 "--drop-rate", "--malformed-rate", "--seed"],
        switches: [])

    /// Parses the arguments after the program name.
    static func parse(_ arguments: [String]) throws(UsageError) -> Invocation {
        guard let first = arguments.first else { return .help(nil) }
        let rest = Array(arguments.dropFirst())
        switch first {
        case "--help", "-h": return .help(nil)
        case "--version", "-V": return .version
        case "help":
            guard let topic = rest.first else { return .help(nil) }
            guard commands.contains(topic) else {
                throw UsageError(message: "no help for \"\(topic)\"; commands are \(list(commands))", command: nil)
            }
            return .help(topic)
        case "run": return try parseRun(rest)
        case "validate":
            let flags = try scan(rest, validateFlags, command: "validate")
            if flags.help { return .help("validate") }
            guard !flags.positionals.isEmpty else {
                throw UsageError(message: "validate needs at least one MANIFEST", command: "validate")
            }
            return .validate(flags.positionals)
        case "plan":
            let flags = try scan(rest, planFlags, command: "plan")
            if flags.help { return .help("plan") }
            let manifest = try single(flags, command: "plan")
            let format = flags.last("--format") ?? "text"
            guard format == "text" || format == "json" else {
                throw UsageError(message: "--format for plan must be text or json; got \"\(format)\"", command: "plan")
            }
            return .plan(manifest: manifest, json: format == "json")
        case "emulate": return try parseEmulate(rest)
        default:
            if first.hasPrefix("-") {
                throw UsageError(message: "unknown option \(first); expected a command (\(list(commands))), --help or --version", command: nil)
            }
            var message = "unknown command \"\(first)\""
            if let suggestion = suggest(first, commands) { message += "; did you mean \"\(suggestion)\"?" }
            else { message += "; expected \(list(commands))" }
            throw UsageError(message: message, command: nil)
        }
    }

    private static func parseRun(_ arguments: [String]) throws(UsageError) -> Invocation {
        let flags = try scan(arguments, runFlags, command: "run")
        if flags.help { return .help("run") }
        var run = RunArguments()
        run.manifest = try single(flags, command: "run")
        var options = RunOptions()
        options.output = flags.last("--output")
        if let format = flags.last("--format") {
            options.format = try choice(format, flag: "--format", command: "run")
        }
        if let text = flags.last("--concurrency") {
            guard let value = Int(text), (1...1024).contains(value) else {
                throw UsageError(message: "--concurrency must be an integer from 1 to 1024; got \"\(text)\"", command: "run")
            }
            options.concurrency = value
        }
        if let text = flags.last("--rate") {
            guard let rate = Units.rate(text) else {
                throw UsageError(message: "--rate must be N/s or N/m, such as 50/s; got \"\(text)\"", command: "run")
            }
            options.rate = rate
        }
        if let text = flags.last("--timeout") {
            guard let value = Units.duration(text) else {
                throw UsageError(message: "--timeout must be a positive duration such as 500ms, 30s or 2m; got \"\(text)\"", command: "run")
            }
            options.timeout = value
        }
        run.shard = flags.last("--shard")
        if let text = flags.last("--progress") { options.progress = try choice(text, flag: "--progress", command: "run") }
        if let text = flags.last("--log-format") { options.logFormat = try choice(text, flag: "--log-format", command: "run") }
        if let text = flags.last("--transport") { options.transport = try choice(text, flag: "--transport", command: "run") as TransportKind }
        options.failFast = flags.switches.contains("--fail-fast")
        options.resume = flags.switches.contains("--resume")
        options.strictHostname = flags.switches.contains("--strict-hostname")
        options.quiet = flags.switches.contains("--quiet")
        options.verbose = flags.switches.contains("--verbose")
        if options.quiet && options.verbose {
            throw UsageError(message: "--quiet and --verbose cannot be used together", command: "run")
        }
        if options.resume && options.output == "-" {
            throw UsageError(message: "--resume cannot be used with --output - (standard output is not resumable)", command: "run")
        }
        run.emulate = flags.switches.contains("--emulate")
        run.options = options
        return .run(run)
    }

    private static func parseEmulate(_ arguments: [String]) throws(UsageError) -> Invocation {
        let flags = try scan(arguments, emulateFlags, command: "emulate")
        if flags.help { return .help("emulate") }
        if let extra = flags.positionals.first {
            throw UsageError(message: "emulate takes no arguments; got \"\(extra)\"", command: "emulate")
        }
        var emulate = EmulateArguments()
        if let text = flags.last("--port") {
            guard let port = Int(text), (0...65535).contains(port) else {
                throw UsageError(message: "--port must be an integer from 0 to 65535; got \"\(text)\"", command: "emulate")
            }
            emulate.port = port
        }
        emulate.aliases = flags.last("--aliases")
        emulate.cnames = flags.values["--cname"] ?? []
        for cname in emulate.cnames {
            let parts = cname.split(separator: "=", omittingEmptySubsequences: false)
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw UsageError(message: "--cname must be HOST=VAULT, such as reveal.example.com=tntaq8uft80; got \"\(cname)\"", command: "emulate")
            }
        }
        emulate.latency = flags.last("--latency")
        emulate.failRate = try probability(flags.last("--fail-rate"), "--fail-rate") ?? 0
        emulate.dropRate = try probability(flags.last("--drop-rate"), "--drop-rate") ?? 0
        emulate.malformedRate = try probability(flags.last("--malformed-rate"), "--malformed-rate") ?? 0
        if let text = flags.last("--fail-status") {
            guard let status = Int(text), (100...599).contains(status) else {
                throw UsageError(message: "--fail-status must be an HTTP status from 100 to 599; got \"\(text)\"", command: "emulate")
            }
            emulate.failStatus = status
        }
        if let text = flags.last("--throttle") {
            guard let rate = Units.rate(text) else {
                throw UsageError(message: "--throttle must be N/s or N/m, such as 100/s; got \"\(text)\"", command: "emulate")
            }
            emulate.throttle = rate
        }
        if let text = flags.last("--seed") {
            guard let seed = UInt64(text) else {
                throw UsageError(message: "--seed must be a non-negative integer; got \"\(text)\"", command: "emulate")
            }
            emulate.seed = seed
        }
        return .emulate(emulate)
    }

    private static func probability(_ text: String?, _ flag: String) throws(UsageError) -> Double? {
        guard let text else { return nil }
        guard let value = Double(text), (0...1).contains(value) else {
            throw UsageError(message: "\(flag) must be a probability from 0 to 1, such as 0.05; got \"\(text)\"", command: "emulate")
        }
        return value
    }

    private static func choice<T: RawRepresentable & CaseIterable>(_ text: String, flag: String, command: String) throws(UsageError) -> T where T.RawValue == String {
        if let value = T(rawValue: text) { return value }
        throw UsageError(message: "\(flag) must be \(list(T.allCases.map(\.rawValue))); got \"\(text)\"", command: command)
    }

    private static func single(_ flags: ScannedFlags, command: String) throws(UsageError) -> String {
        guard let manifest = flags.positionals.first else {
            throw UsageError(message: "\(command) needs a MANIFEST", command: command)
        }
        guard flags.positionals.count == 1 else {
            throw UsageError(message: "\(command) takes one MANIFEST; got \(flags.positionals.count) arguments", command: command)
        }
        return manifest
    }

    private static func scan(_ arguments: [String], _ table: FlagTable, command: String) throws(UsageError) -> ScannedFlags {
        var result = ScannedFlags()
        var index = 0
        var flagsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if flagsEnded || !argument.hasPrefix("-") || argument == "-" {
                result.positionals.append(argument)
                continue
            }
            if argument == "--" { flagsEnded = true; continue }
            if argument == "--help" || argument == "-h" { result.help = true; continue }
            var name = argument
            var inlineValue: String?
            if let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inlineValue = String(argument[argument.index(after: equals)...])
            }
            if table.valued.contains(name) {
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else {
                    guard index < arguments.count else {
                        throw UsageError(message: "\(name) needs a value", command: command)
                    }
                    value = arguments[index]
                    index += 1
                }
                result.values[name, default: []].append(value)
            } else if table.switches.contains(name) {
                if inlineValue != nil {
                    throw UsageError(message: "\(name) takes no value", command: command)
                }
                result.switches.insert(name)
            } else {
                var message = "unknown flag \(name) for \(command)"
                if let suggestion = suggest(name, table.all) { message += "; did you mean \(suggestion)?" }
                else if table.all.isEmpty { message += "; it takes no flags" }
                else { message += "; expected \(list(table.all))" }
                throw UsageError(message: message, command: command)
            }
        }
        return result
    }

    private static func list(_ items: [String]) -> String { choices(items) }

    private static func suggest(_ word: String, _ candidates: [String]) -> String? { closest(word, in: candidates) }
}
