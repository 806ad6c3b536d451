import ShowbatchBasics
import ShowbatchManifest
import ShowbatchCore

/// The hand-written command-line parser: subcommand, then `--flag value` or `--flag=value`, with
/// each command's flags declared once in a table that the help text is made from too.
enum ArgumentParser {
    static var commands: [String] { Command.allCases.map(\.rawValue) }

    static let runFlags: [Flag<RunArguments>] = [
        Flag("--output", "PATH", "write rows here (- for standard output); beats the manifest") { $0.options.output = $1 }.short("-o"),
        Flag("--format", "csv|json|jsonl", "output format (default: from the extension)") { (arguments, text) throws(UsageError) in
            arguments.options.format = try FlagValue.choice(text, "--format", command: "run")
        },
        Flag("--concurrency", "N", "requests in flight, 1...1024 (default: manifest, else 8)") { (arguments, text) throws(UsageError) in
            arguments.options.concurrency = try FlagValue.integer(text, "--concurrency", 1...1024, command: "run")
        }.short("-c"),
        Flag("--connections", "N", "most connections per host, 1...1024 (default: manifest, else concurrency)") { (arguments, text) throws(UsageError) in
            arguments.options.connections = try FlagValue.integer(text, "--connections", 1...1024, command: "run")
        },
        Flag("--rate", "N/s|N/m", "start at most N requests per second or minute") { (arguments, text) throws(UsageError) in
            arguments.options.rate = try FlagValue.rate(text, "--rate", example: "50/s", command: "run")
        },
        Flag("--timeout", "D", "per-attempt timeout: 500ms, 30s, 2m or seconds") { (arguments, text) throws(UsageError) in
            arguments.options.timeout = try FlagValue.duration(text, "--timeout", command: "run")
        },
        Flag("--fail-fast", "stop at the first failed row") { $0.options.failFast = true },
        Flag("--resume", optional: "auto", "go on from the journal of an interrupted run; =auto: when one matches, else start afresh") { (arguments, text) throws(UsageError) in
            guard text == nil || text == "auto" else {
                throw UsageError(message: "--resume takes no value, or =auto; got \"\(text!)\"", command: "run")
            }
            arguments.options.resume = true
            arguments.options.resumeAuto = text == "auto"
        },
        Flag("--retry-failed", "send the failed rows of a finished run again, keeping the rest") { $0.options.retryFailed = true },
        Flag("--max-failed", "N|P%", "rows not ok (failed or partial) the run may end with and still exit 0") { (arguments, text) throws(UsageError) in
            arguments.options.maxFailed = try FlagValue.allowance(text, of: "run", command: "run")
        },
        Flag("--limit", "N", "send only the first N work items (of this shard): a canary run, written in a canary folder beside each output unless --output is given") { (arguments, text) throws(UsageError) in
            arguments.options.limit = try FlagValue.integer(text, "--limit", 1...Int.max, command: "run")
        },
        Flag("--date", "YYYY-MM-DD|yesterday|today", "the night ${run.date} and ${run.seq} name (default: today in TZ)") { (arguments, text) throws(UsageError) in
            arguments.options.night = try FlagValue.night(text, "--date", command: "run")
        },
        Flag("--allow-future", "take a --date more than a day after today (refused by default: a mistyped year)") { $0.options.allowFuture = true },
        Flag("--allow-repeat", "send a night whose data files are those of another night of the output") { $0.options.allowRepeat = true },
        Flag("--rebuild-ledger", "rebuild each output's ledger of nights from the files and delivery records beside it (after it was lost or rolled back)") { $0.options.rebuildLedger = true },
        Flag("--shard", "I/N|auto/N", "take work items whose ordinal mod N is I (auto: JOB_COMPLETION_INDEX)") { $0.shard = $1 },
        Flag("--emulate", "run against the built-in emulator on a free loopback port") { $0.emulate = true },
        Flag("--base-url", "URL", "send every request here instead of the vault (testing: http:// for loopback only)") { (arguments, text) throws(UsageError) in
            switch BaseURLOverride.check(text) {
            case .success(let url): arguments.baseURL = url
            case .failure(let problem): throw UsageError(message: problem.message, command: "run")
            }
        },
        Flag("--strict-hostname", "exit 3 when the custom hostname is not activated") { $0.options.strictHostname = true },
        Flag("--progress", "auto|always|never", "live progress on stderr (auto: when it is a terminal)") { (arguments, text) throws(UsageError) in
            arguments.options.progress = try FlagValue.choice(text, "--progress", command: "run")
        },
        Flag("--log-format", "text|json", "how log lines and the summary are written") { (arguments, text) throws(UsageError) in
            arguments.options.logFormat = try FlagValue.choice(text, "--log-format", command: "run")
        },
        Flag("--progress-every", "D", "a progress event this often in JSON logs (default 10s)") { (arguments, text) throws(UsageError) in
            arguments.progressEvery = try FlagValue.duration(text, "--progress-every", command: "run")
        },
        Flag("--metrics", "PATH", "write a Prometheus text file (node_exporter textfile) when the run ends") { $0.metrics = $1 },
        Flag("--report", "PATH", "write the run's summary as one JSON document when the run ends") { $0.report = $1 },
        Flag("--metrics-push", "URL", "push the metrics to a Prometheus Pushgateway when the run ends (job showbatch)") { (arguments, text) throws(UsageError) in
            if let problem = MetricsPush.problem(with: text) { throw UsageError(message: problem, command: "run") }
            arguments.metricsPush = text
        },
        Flag("--audit", "PATH", "append the run's audit entries to this file (beats the manifest's audit.path)") { $0.options.audit = $1 },
        Flag("--quiet", "print only errors") { $0.options.quiet = true }.short("-q"),
        Flag("--verbose", "print a line per attempt: method, URL, status, duration") { $0.options.verbose = true }.short("-v"),
        Flag("--transport", "curl", "HTTP client: curl, the only one (kept for scripts that name it)") { (_, text) throws(UsageError) in
            let _: TransportKind = try FlagValue.choice(text, "--transport", command: "run")
        },
    ]

    static let planFlags: [Flag<PlanArguments>] = [
        Flag("--no-env", "take an unset ${NAME} as a placeholder, as validate --no-env does") { $0.noEnvironment = true },
        Flag("--date", "YYYY-MM-DD|yesterday|today", "the night whose file names and numbers are shown (default: today in TZ)") { (arguments, text) throws(UsageError) in
            arguments.night = try FlagValue.night(text, "--date", command: "plan")
        },
        Flag("--format", "text|json", "text (default) or one JSON object") { (arguments, text) throws(UsageError) in
            guard text == "text" || text == "json" else {
                throw UsageError(message: "--format for plan must be text or json; got \"\(text)\"", command: "plan")
            }
            arguments.json = text == "json"
        },
    ]

    static let validateFlags: [Flag<ValidateArguments>] = [
        Flag("--no-env", "take an unset ${NAME} as a placeholder: check a manifest without its secrets") { $0.noEnvironment = true },
        Flag("--format", "text|json", "text (default), or the problems as one JSON document") { (arguments, text) throws(UsageError) in
            guard text == "text" || text == "json" else {
                throw UsageError(message: "--format for validate must be text or json; got \"\(text)\"", command: "validate")
            }
            arguments.json = text == "json"
        },
    ]

    static let mergeFlags: [Flag<MergeArguments>] = [
        Flag("--shards", "N", "the number of shards the manifest was run in (the N of --shard I/N); required") { (arguments, text) throws(UsageError) in
            arguments.shards = try FlagValue.integer(text, "--shards", 1...10_000, command: "merge")
        },
        Flag("--output", "PATH", "the --output the shards were run with, if any") { $0.output = $1 },
        Flag("--format", "csv|json|jsonl", "the --format the shards were run with, if any") { (arguments, text) throws(UsageError) in
            arguments.format = try FlagValue.choice(text, "--format", command: "merge")
        },
        Flag("--date", "YYYY-MM-DD|yesterday|today", "the night the shards were run for (--date of run; default: today in TZ)") { (arguments, text) throws(UsageError) in
            arguments.night = try FlagValue.night(text, "--date", command: "merge")
        },
        Flag("--keep-shards", "keep the shards' files and state once merged (and delivered)") { $0.keepShards = true },
        Flag("--rebuild-ledger", "rebuild each output's ledger of nights from the files and delivery records beside it (after it was lost or rolled back)") { $0.rebuildLedger = true },
        Flag("--log-format", "text|json", "how log lines and the summary are written") { (arguments, text) throws(UsageError) in
            arguments.logFormat = try FlagValue.choice(text, "--log-format", command: "merge")
        },
        Flag("--metrics", "PATH", "write a Prometheus text file (node_exporter textfile) when the merge ends") { $0.metrics = $1 },
        Flag("--report", "PATH", "write the merge's summary as one JSON document when it ends") { $0.report = $1 },
        Flag("--metrics-push", "URL", "push the metrics to a Prometheus Pushgateway when the merge ends (the job's group)") { (arguments, text) throws(UsageError) in
            if let problem = MetricsPush.problem(with: text) { throw UsageError(message: problem, command: "merge") }
            arguments.metricsPush = text
        },
        Flag("--verbose", "print notes too") { $0.verbose = true }.short("-v"),
        Flag("--audit", "PATH", "append the merge's audit entries to this file (beats the manifest's audit.path)") { $0.audit = $1 },
        Flag("--max-failed", "N|P%", "the --max-failed the shards were run with: rows not ok the night may have and still exit 0") { (arguments, text) throws(UsageError) in
            arguments.maxFailed = try FlagValue.allowance(text, of: "night", command: "merge")
        },
        Flag("--quiet", "print only errors") { $0.quiet = true }.short("-q"),
    ]

    static let deliverFlags: [Flag<DeliverArguments>] = [
        Flag("--date", "YYYY-MM-DD|yesterday|today", "the night to deliver (the --date it was run with; default: today in TZ)") { (arguments, text) throws(UsageError) in
            arguments.night = try FlagValue.night(text, "--date", command: "deliver")
        },
        Flag("--audit", "PATH", "append the deliveries' audit entries to this file (beats the manifest's audit.path)") { $0.audit = $1 },
        Flag("--mark-delivered", "record the night as delivered, nothing sent: the processor told you they have it") { $0.marked.insert(.markDelivered) },
        Flag("--check", "try each delivery target as a delivery would (connect, host key, login, write and remove a probe file), no card data; exit 0, 5 or 6") { $0.check = true },
        Flag("--log-format", "text|json", "how log lines and the summary are written") { (arguments, text) throws(UsageError) in
            arguments.logFormat = try FlagValue.choice(text, "--log-format", command: "deliver")
        },
        Flag("--metrics", "PATH", "write a Prometheus text file (node_exporter textfile) when the delivery ends") { $0.metrics = $1 },
        Flag("--report", "PATH", "write the delivery's summary as one JSON document when it ends") { $0.report = $1 },
        Flag("--metrics-push", "URL", "push the metrics to a Prometheus Pushgateway when the delivery ends (the job's group: a night delivered by hand clears its alerts)") { (arguments, text) throws(UsageError) in
            if let problem = MetricsPush.problem(with: text) { throw UsageError(message: problem, command: "deliver") }
            arguments.metricsPush = text
        },
        Flag("--rebuild-ledger", "rebuild each output's ledger of nights from the files and delivery records beside it (after it was lost or rolled back)") { $0.rebuildLedger = true },
        Flag("--send-again", "deliver a night whose hand-over could not be known: the processor told you they do not have it") { $0.marked.insert(.sendAgain) },
        Flag("--quiet", "print only errors") { $0.quiet = true }.short("-q"),
    ]

    static let emulateFlags: [Flag<EmulateArguments>] = [
        Flag("--manifest", "PATH", "answer as the manifest's emulator section says (aliases, response, faults)") { $0.manifest = $1 },
        Flag("--port", "N", "port to listen on (default 8080; 0 picks a free one)") { (arguments, text) throws(UsageError) in
            arguments.port = try FlagValue.integer(text, "--port", 0...65535, command: "emulate")
        },
        Flag("--aliases", "FILE", "aliases to reveal: CSV alias,value with a header, or a JSON object") { $0.aliases = $1 },
        Flag("--cname", "HOST=VAULT", "answer the custom hostname check for HOST (repeatable)") { (arguments, text) throws(UsageError) in
            let parts = text.split(separator: "=", omittingEmptySubsequences: false)
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw UsageError(message: "--cname must be HOST=VAULT, such as reveal.example.com=tntaq8uft80; got \"\(text)\"", command: "emulate")
            }
            arguments.cnames.append(text)
        },
        Flag("--latency", "D[±J]", "delay every answer by D, plus or minus up to J") { $0.latency = $1 },
        Flag("--fail-rate", "P", "answer a fraction P of requests with --fail-status") { (arguments, text) throws(UsageError) in
            arguments.failRate = try FlagValue.probability(text, "--fail-rate", command: "emulate")
        },
        Flag("--fail-status", "S", "status for --fail-rate (default 500)") { (arguments, text) throws(UsageError) in
            arguments.failStatus = try FlagValue.integer(text, "--fail-status", 100...599, noun: "an HTTP status", command: "emulate")
        },
        Flag("--throttle", "N/s", "answer 429 with Retry-After past N requests per second") { (arguments, text) throws(UsageError) in
            arguments.throttle = try FlagValue.rate(text, "--throttle", example: "100/s", command: "emulate")
        },
        Flag("--drop-rate", "P", "close a fraction P of connections without an answer") { (arguments, text) throws(UsageError) in
            arguments.dropRate = try FlagValue.probability(text, "--drop-rate", command: "emulate")
        },
        Flag("--malformed-rate", "P", "answer a fraction P of requests with a body that is not JSON") { (arguments, text) throws(UsageError) in
            arguments.malformedRate = try FlagValue.probability(text, "--malformed-rate", command: "emulate")
        },
        Flag("--seed", "N", "seed of the fault choices (default 1)") { (arguments, text) throws(UsageError) in
            guard let seed = UInt64(text) else {
                throw UsageError(message: "--seed must be a non-negative integer; got \"\(text)\"", command: "emulate")
            }
            arguments.seed = seed
        },
    ]

    /// Parses the arguments after the program name.
    static func parse(_ arguments: [String]) throws(UsageError) -> Invocation {
        guard let first = arguments.first else { return .help(nil) }
        let rest = Array(arguments.dropFirst())
        if first == "--help" || first == "-h" { return .help(nil) }
        if first == "--version" || first == "-V" { return .version }
        switch try command(named: first) {
        case .help:
            guard let topic = rest.first else { return .help(nil) }
            guard commands.contains(topic) else {
                throw UsageError(message: "no help for \"\(topic)\"; commands are \(choices(commands))", command: nil)
            }
            return .help(topic)
        case .run: return try parseRun(rest)
        case .validate:
            var validate = ValidateArguments()
            let scanned = try scan(rest, validateFlags, into: &validate, command: "validate")
            if scanned.help { return .help("validate") }
            guard !scanned.positionals.isEmpty else {
                throw UsageError(message: "validate needs at least one MANIFEST", command: "validate")
            }
            validate.manifests = scanned.positionals
            return .validate(validate)
        case .plan:
            var plan = PlanArguments()
            let scanned = try scan(rest, planFlags, into: &plan, command: "plan")
            if scanned.help { return .help("plan") }
            plan.manifest = try single(scanned.positionals, command: "plan")
            return .plan(plan)
        case .merge: return try parseMerge(rest)
        case .deliver: return try parseDeliver(rest)
        case .schema:
            if rest.first == "--help" || rest.first == "-h" { return .help("schema") }
            guard rest.isEmpty else { throw UsageError(message: "schema takes no arguments", command: "schema") }
            return .schema
        case .completions:
            if rest.first == "--help" || rest.first == "-h" { return .help("completions") }
            guard rest.count == 1, Completions.shells.contains(rest[0]) else {
                throw UsageError(message: "completions takes one of \(choices(Completions.shells))", command: "completions")
            }
            return .completions(rest[0])
        case .audit: return try parseAudit(rest)
        case .emulate: return try parseEmulate(rest)
        }
    }

    /// The command `word` names; an unknown one is refused with the nearest name, if any.
    private static func command(named word: String) throws(UsageError) -> Command {
        if let command = Command(rawValue: word) { return command }
        if word.hasPrefix("-") {
            throw UsageError(message: "unknown option \(word); expected a command (\(choices(commands))), --help or --version", command: nil)
        }
        var message = "unknown command \"\(word)\""
        if let suggestion = closest(word, in: commands) { message += "; did you mean \"\(suggestion)\"?" }
        else { message += "; expected \(choices(commands))" }
        throw UsageError(message: message, command: nil)
    }

    /// `run`: its flags, one manifest, and the flags that exclude each other.
    private static func parseRun(_ rest: [String]) throws(UsageError) -> Invocation {
        var run = RunArguments()
        let scanned = try scan(rest, runFlags, into: &run, command: "run")
        if scanned.help { return .help("run") }
        run.manifest = try single(scanned.positionals, command: "run")
        if run.options.quiet && run.options.verbose {
            throw UsageError(message: "--quiet and --verbose cannot be used together", command: "run")
        }
        if run.emulate && run.baseURL != nil {
            throw UsageError(message: "--emulate and --base-url cannot be used together: each says where the requests go", command: "run")
        }
        if run.options.resume && run.options.retryFailed {
            throw UsageError(message: "--resume and --retry-failed cannot be used together: finish an interrupted run with --resume first", command: "run")
        }
        return .run(run)
    }

    /// `merge`: its flags, one manifest, the shard count, and files only.
    private static func parseMerge(_ rest: [String]) throws(UsageError) -> Invocation {
        var merge = MergeArguments()
        let scanned = try scan(rest, mergeFlags, into: &merge, command: "merge")
        if scanned.help { return .help("merge") }
        merge.manifest = try single(scanned.positionals, command: "merge")
        guard merge.shards != nil else {
            throw UsageError(message: "merge needs --shards N, the number of shards the manifest was run in", command: "merge")
        }
        if merge.quiet && merge.verbose {
            throw UsageError(message: "--quiet and --verbose cannot be used together", command: "merge")
        }
        if merge.output == "-" {
            throw UsageError(message: "merge writes files: --output - (standard output) cannot be merged into; give the --output the shards were run with", command: "merge")
        }
        return .merge(merge)
    }

    /// `deliver`: its flags, one manifest, and at most one of the processor's answers.
    private static func parseDeliver(_ rest: [String]) throws(UsageError) -> Invocation {
        var deliver = DeliverArguments()
        let scanned = try scan(rest, deliverFlags, into: &deliver, command: "deliver")
        if scanned.help { return .help("deliver") }
        deliver.manifest = try single(scanned.positionals, command: "deliver")
        guard deliver.marked.count <= 1 else { throw UsageError(message: "--mark-delivered and --send-again exclude each other: give the one the processor's answer asks for", command: "deliver") }
        deliver.what = deliver.marked.first ?? .deliver
        deliver.marked = []
        return .deliver(deliver)
    }

    /// `audit verify FILE [--manifest MANIFEST]`.
    private static func parseAudit(_ rest: [String]) throws(UsageError) -> Invocation {
        if rest.first == "--help" || rest.first == "-h" { return .help("audit") }
        guard rest.first == "verify", rest.count == 2 || (rest.count == 4 && rest[2] == "--manifest") || (rest.count == 3 && rest[2].hasPrefix("--manifest=")) else {
            throw UsageError(message: "audit takes verify FILE [--manifest MANIFEST]", command: "audit")
        }
        let manifest = rest.count == 4 ? rest[3] : rest.count == 3 ? String(rest[2].dropFirst("--manifest=".count)) : nil
        return .auditVerify(file: rest[1], manifest: manifest)
    }

    /// `emulate`: its flags, no arguments; with --manifest, only --port and --cname beside it.
    private static func parseEmulate(_ rest: [String]) throws(UsageError) -> Invocation {
        var emulate = EmulateArguments()
        let scanned = try scan(rest, emulateFlags, into: &emulate, command: "emulate")
        if scanned.help { return .help("emulate") }
        if let extra = scanned.positionals.first {
            throw UsageError(message: "emulate takes no arguments; got \"\(extra)\"", command: "emulate")
        }
        if emulate.manifest != nil {
            var plain = EmulateArguments()
            (plain.port, plain.manifest, plain.cnames) = (emulate.port, emulate.manifest, emulate.cnames)
            guard plain == emulate else {
                throw UsageError(message: "--manifest gives the aliases, the response and the faults: only --port and --cname go with it", command: "emulate")
            }
        }
        return .emulate(emulate)
    }

    private static func single(_ positionals: [String], command: String) throws(UsageError) -> String {
        guard let manifest = positionals.first else {
            throw UsageError(message: "\(command) needs a MANIFEST", command: command)
        }
        guard positionals.count == 1 else {
            throw UsageError(message: "\(command) takes one MANIFEST; got \(positionals.count) arguments", command: command)
        }
        return manifest
    }

    /// Applies each flag in order (a repeated flag's last value wins, unless the flag collects)
    /// and returns the positional arguments and whether help was asked for.
    private static func scan<Arguments>(_ arguments: [String], _ flags: [Flag<Arguments>], into target: inout Arguments,
                                        command: String) throws(UsageError) -> (positionals: [String], help: Bool) {
        var positionals: [String] = []
        var help = false
        var index = 0
        var flagsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if flagsEnded || !argument.hasPrefix("-") || argument == "-" {
                positionals.append(argument)
                continue
            }
            if argument == "--" { flagsEnded = true; continue }
            if argument == "--help" || argument == "-h" { help = true; continue }
            var name = argument
            var inlineValue: String?
            if let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inlineValue = String(argument[argument.index(after: equals)...])
            }
            guard let flag = flags.first(where: { $0.named(name) }) else {
                let names = flags.map(\.name)
                var message = "unknown flag \(name) for \(command)"
                if let suggestion = closest(name, in: names) { message += "; did you mean \(suggestion)?" }
                else if names.isEmpty { message += "; it takes no flags" }
                else { message += "; expected \(choices(names))" }
                throw UsageError(message: message, command: command)
            }
            switch flag.action {
            case .value(_, let apply):
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else {
                    guard index < arguments.count else { throw UsageError(message: "\(name) needs a value", command: command) }
                    value = arguments[index]
                    index += 1
                }
                try apply(&target, value)
            case .toggle(let apply):
                if inlineValue != nil { throw UsageError(message: "\(name) takes no value", command: command) }
                apply(&target)
            case .toggleOrValue(_, let apply):
                try apply(&target, inlineValue)
            }
        }
        return (positionals, help)
    }
}
