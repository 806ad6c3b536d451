import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
@testable import showbatch

@Suite struct ArgumentParserTests {
    /// The common flags have one-letter spellings, declared in the flag table (and so in the help).
    @Test func shortFlags() throws {
        guard case .run(let run) = try ArgumentParser.parse(["run", "m.yaml", "-o", "x.csv", "-q", "-c", "4"]) else {
            Issue.record("not a run")
            return
        }
        #expect(run.options.output == "x.csv" && run.options.quiet && run.options.concurrency == 4)
        guard case .run(let verbose) = try ArgumentParser.parse(["run", "m.yaml", "-v"]) else { return }
        #expect(verbose.options.verbose)
        #expect(Help.text("run").contains("  -o, --output PATH "))
    }

    @Test func runFlagsInBothSpellings() throws {
        let invocation = try ArgumentParser.parse(["run", "m.yaml", "--output=out.csv", "--format", "jsonl", "--concurrency=32",
                                                   "--rate", "50/s", "--timeout=500ms", "--fail-fast", "--resume", "--shard", "auto/4",
                                                   "--emulate", "--strict-hostname", "--progress=never", "--log-format", "json", "--verbose"])
        guard case .run(let run) = invocation else { Issue.record("expected run"); return }
        #expect(run.manifest == "m.yaml")
        #expect(run.emulate)
        #expect(run.shard == "auto/4")
        var expected = RunOptions()
        expected.output = "out.csv"
        expected.format = .jsonl
        expected.concurrency = 32
        expected.rate = Rate(count: 50, per: .seconds(1))
        expected.timeout = .milliseconds(500)
        expected.failFast = true
        expected.resume = true
        expected.strictHostname = true
        expected.progress = .never
        expected.logFormat = .json
        expected.verbose = true
        #expect(run.options == expected)
    }

    @Test func mergeFlags() throws {
        let invocation = try ArgumentParser.parse(["merge", "m.yaml", "--shards=3", "--output", "o.csv", "--format", "csv", "--quiet"])
        var expected = MergeArguments()
        expected.manifest = "m.yaml"
        expected.shards = 3
        expected.output = "o.csv"
        expected.format = .csv
        expected.quiet = true
        #expect(invocation == .merge(expected))
        #expect(try ArgumentParser.parse(["merge", "m.yaml", "--help"]) == .help("merge"))
    }

    @Test(arguments: [
        ([String](), Invocation.help(nil)),
        (["--help"], .help(nil)),
        (["help", "run"], .help("run")),
        (["run", "--help"], .help("run")),
        (["plan", "-h"], .help("plan")),
        (["--version"], .version),
        (["validate", "a.yaml", "b.yaml"], .validate(ValidateArguments(manifests: ["a.yaml", "b.yaml"]))),
        (["validate", "--no-env", "--format", "json", "a.yaml"], .validate(ValidateArguments(manifests: ["a.yaml"], noEnvironment: true, json: true))),
        (["plan", "m.yaml", "--format=json"], .plan(PlanArguments(manifest: "m.yaml", json: true))),
        (["plan", "m.yaml"], .plan(PlanArguments(manifest: "m.yaml"))),
        (["plan", "m.yaml", "--date", "yesterday"], .plan(PlanArguments(manifest: "m.yaml", night: .yesterday))),
    ])
    func invocations(arguments: [String], expected: Invocation) throws {
        #expect(try ArgumentParser.parse(arguments) == expected)
    }

    @Test func emulateFlags() throws {
        let invocation = try ArgumentParser.parse(["emulate", "--port", "0", "--cname", "a.io=tnt1", "--cname=b.io=tnt2", "--latency", "50ms±10ms",
                                                   "--fail-rate", "0.1", "--fail-status", "503", "--throttle", "100/s", "--drop-rate=0.01",
                                                   "--malformed-rate", "0.02", "--seed", "7", "--aliases", "a.csv"])
        var expected = EmulateArguments()
        expected.port = 0
        expected.cnames = ["a.io=tnt1", "b.io=tnt2"]
        expected.latency = "50ms±10ms"
        expected.failRate = 0.1
        expected.failStatus = 503
        expected.throttle = Rate(count: 100, per: .seconds(1))
        expected.dropRate = 0.01
        expected.malformedRate = 0.02
        expected.seed = 7
        expected.aliases = "a.csv"
        #expect(try ArgumentParser.parse(["emulate"] + []) == .emulate(EmulateArguments()))
        #expect(invocation == .emulate(expected))
    }

    @Test(arguments: [
        (["frobnicate"], "showbatch: error: unknown command \"frobnicate\"; expected run, validate, plan, merge, deliver, emulate, audit, completions, schema or help\nRun 'showbatch help' for usage."),
        (["rnu"], "showbatch: error: unknown command \"rnu\"; did you mean \"run\"?\nRun 'showbatch help' for usage."),
        (["--bogus"], "showbatch: error: unknown option --bogus; expected a command (run, validate, plan, merge, deliver, emulate, audit, completions, schema or help), --help or --version\nRun 'showbatch help' for usage."),
        (["run", "m.yaml", "--outptu", "x"], "showbatch: error: unknown flag --outptu for run; did you mean --output?\nRun 'showbatch help run' for usage."),
        (["run", "m.yaml", "--format", "xml"], "showbatch: error: --format must be csv, json or jsonl; got \"xml\"\nRun 'showbatch help run' for usage."),
        (["run", "m.yaml", "--concurrency", "0"], "showbatch: error: --concurrency must be an integer from 1 to 1024; got \"0\"\nRun 'showbatch help run' for usage."),
        (["run", "m.yaml", "--rate", "fast"], "showbatch: error: --rate must be N/s or N/m, such as 50/s; got \"fast\"\nRun 'showbatch help run' for usage."),
        (["run", "m.yaml", "--timeout"], "showbatch: error: --timeout needs a value\nRun 'showbatch help run' for usage."),
        (["run", "m.yaml", "--progress", "sometimes"], "showbatch: error: --progress must be auto, always or never; got \"sometimes\"\nRun 'showbatch help run' for usage."),
        (["run", "m.yaml", "--transport", "urlsession"], "showbatch: error: --transport must be curl; got \"urlsession\"\nRun 'showbatch help run' for usage."),
        (["run", "m.yaml", "--fail-fast=yes"], "showbatch: error: --fail-fast takes no value\nRun 'showbatch help run' for usage."),
        (["run"], "showbatch: error: run needs a MANIFEST\nRun 'showbatch help run' for usage."),
        (["run", "a.yaml", "b.yaml"], "showbatch: error: run takes one MANIFEST; got 2 arguments\nRun 'showbatch help run' for usage."),
        (["run", "m.yaml", "--quiet", "--verbose"], "showbatch: error: --quiet and --verbose cannot be used together\nRun 'showbatch help run' for usage."),
        (["validate"], "showbatch: error: validate needs at least one MANIFEST\nRun 'showbatch help validate' for usage."),
        (["validate", "m.yaml", "--format", "x"], "showbatch: error: --format for validate must be text or json; got \"x\"\nRun 'showbatch help validate' for usage."),
        (["plan", "m.yaml", "--format", "yaml"], "showbatch: error: --format for plan must be text or json; got \"yaml\"\nRun 'showbatch help plan' for usage."),
        (["emulate", "--port", "99999"], "showbatch: error: --port must be an integer from 0 to 65535; got \"99999\"\nRun 'showbatch help emulate' for usage."),
        (["emulate", "--cname", "a.io"], "showbatch: error: --cname must be HOST=VAULT, such as reveal.example.com=tntaq8uft80; got \"a.io\"\nRun 'showbatch help emulate' for usage."),
        (["emulate", "--fail-rate", "2"], "showbatch: error: --fail-rate must be a probability from 0 to 1, such as 0.05; got \"2\"\nRun 'showbatch help emulate' for usage."),
        (["help", "nope"], "showbatch: error: no help for \"nope\"; commands are run, validate, plan, merge, deliver, emulate, audit, completions, schema or help\nRun 'showbatch help' for usage."),
        (["merge", "m.yaml"], "showbatch: error: merge needs --shards N, the number of shards the manifest was run in\nRun 'showbatch help merge' for usage."),
        (["merge", "--shards", "2"], "showbatch: error: merge needs a MANIFEST\nRun 'showbatch help merge' for usage."),
        (["merge", "m.yaml", "--shards", "two"], "showbatch: error: --shards must be an integer from 1 to 10000; got \"two\"\nRun 'showbatch help merge' for usage."),
        (["merge", "m.yaml", "--shards", "2", "--output", "-"], "showbatch: error: merge writes files: --output - (standard output) cannot be merged into; give the --output the shards were run with\nRun 'showbatch help merge' for usage."),
        (["merge", "m.yaml", "--shard", "0/2"], "showbatch: error: unknown flag --shard for merge; did you mean --shards?\nRun 'showbatch help merge' for usage."),
    ])
    func usageErrors(arguments: [String], message: String) {
        do {
            _ = try ArgumentParser.parse(arguments)
            Issue.record("expected a usage error")
        } catch {
            #expect(error.description == message)
        }
    }
}

@Suite struct FlagTableTests {
    /// Each flag is declared once: the help lists every flag of the table the parser reads.
    @Test func helpListsEveryFlagTheParserKnows() {
        let run = Help.text("run"), emulate = Help.text("emulate"), merge = Help.text("merge")
        for flag in ArgumentParser.runFlags { #expect(run.contains("\n" + flag.helpLine + "\n"), "\(flag.name)") }
        for flag in ArgumentParser.mergeFlags { #expect(merge.contains("\n" + flag.helpLine + "\n"), "\(flag.name)") }
        for flag in ArgumentParser.emulateFlags { #expect(emulate.contains("\n" + flag.helpLine + "\n"), "\(flag.name)") }
        #expect(Flag<RunArguments>("--x", "V", "help") { _, _ in }.helpLine == "  --x V                      help")
    }

    @Test(arguments: [
        (["--progress", "never"], "run"), (["--concurrency=1024"], "run"), (["--timeout", "1.5"], "run"),
    ])
    func valuesAreCheckedByTheirDeclaration(flags: [String], command: String) throws {
        guard case .run = try ArgumentParser.parse([command, "m.yaml"] + flags) else { Issue.record("expected run"); return }
    }

    @Test func exitCodesComeWithTheirErrors() {
        #expect(RunError.usage(PathRefusal("x", .link, .cannotWrite)).exitCode == .usage && RunError.runtime(FileError(.write, "x", errno: 5)).exitCode == .runtime)
        #expect(UsageError(message: "x", command: nil).exitCode.rawValue == 2)
        var summary = RunSummary()
        summary.rows = 2
        summary.ok = 2
        #expect(summary.exitCode == .ok)
        summary.ok = 1
        #expect(summary.exitCode == .rowsFailed)
        summary.interrupted = true
        #expect(summary.exitCode.rawValue == 130)
    }
}

/// `--metrics-push URL`: an http(s) address of a Pushgateway, refused at parsing when it is not one
/// or when it could carry a secret (which is then not quoted).
@Suite struct MetricsPushFlagTests {
    @Test(arguments: ["http://pushgateway:9091", "https://metrics.example.com/pushgateway/", "HTTP://127.0.0.1:9091", "http://[::1]:9091"])
    func pushgatewayAddressesAreTaken(url: String) throws {
        guard case .run(let run) = try ArgumentParser.parse(["run", "m.yaml", "--metrics-push", url]) else {
            Issue.record("expected run")
            return
        }
        #expect(run.metricsPush == url)
    }

    @Test(arguments: [
        ("http://user:sk_pass_1@gw:9091", "--metrics-push must not hold a user or password (what is in a URL ends up in logs and process lists): give the Pushgateway's address only, such as http://pushgateway:9091"),
        ("ftp://user@gw", "--metrics-push must not hold a user or password (what is in a URL ends up in logs and process lists): give the Pushgateway's address only, such as http://pushgateway:9091"),
        ("http://gw:9091/?token=sk_token_1", "--metrics-push must not have a query or fragment: give the Pushgateway's address only, such as http://pushgateway:9091"),
        ("http://gw:9091/#x", "--metrics-push must not have a query or fragment: give the Pushgateway's address only, such as http://pushgateway:9091"),
        ("ftp://gw", "--metrics-push must be an http:// or https:// URL, such as http://pushgateway:9091; got \"ftp://gw\""),
        ("gw:9091", "--metrics-push must be an http:// or https:// URL, such as http://pushgateway:9091; got \"gw:9091\""),
        ("http://gw:0", "--metrics-push has an invalid port, such as http://pushgateway:9091; got \"http://gw:0\""),
        ("http://gw:push", "--metrics-push has an invalid port, such as http://pushgateway:9091; got \"http://gw:push\""),
        ("http:///metrics", "--metrics-push needs a host, such as http://pushgateway:9091; got \"http://\""),
        ("http://gw 9091", "--metrics-push must be a URL without spaces or control characters, such as http://pushgateway:9091; got \"http://gw 9091\""),
    ])
    func otherURLsAreUsageErrors(url: String, message: String) {
        #expect(throws: UsageError(message: message, command: "run")) { try ArgumentParser.parse(["run", "m.yaml", "--metrics-push", url]) }
        #expect(!message.contains("sk_"))
    }

    /// The group's address: the job, and the shard for a shard, each plain when it is URL-safe
    /// and in the Pushgateway's base64 form when not.
    @Test(arguments: [
        ("http://gw:9091", "m.yaml", nil, "http://gw:9091/metrics/job/m.yaml"),
        ("http://gw:9091//", "nightly cards", "0/4", "http://gw:9091/metrics/job@base64/bmlnaHRseSBjYXJkcw/shard@base64/MC80"),
        ("https://h/prefix/", "..", "1/2", "https://h/prefix/metrics/job@base64/Li4/shard@base64/MS8y"),
        ("http://gw", "nächtlich.yaml", nil, "http://gw/metrics/job@base64/bsOkY2h0bGljaC55YW1s"),
        ("http://gw", "a?b>", nil, "http://gw/metrics/job@base64/YT9iPg"),
    ] as [(String, String, String?, String)])
    func groupURLs(base: String, job: String, shard: String?, expected: String) {
        #expect(MetricsPush.groupURL(base: base, job: job, shard: shard) == expected)
    }
}
