import ShowbatchBasics
import ShowbatchManifest
import ShowbatchCore

/// A command line that cannot be run; printed with a pointer to the command's help. Exit 2.
struct UsageError: Error, Equatable, CustomStringConvertible {
    let message: String
    let command: String?

    var description: String {
        "showbatch: error: \(TerminalText.escaped(message))\nRun 'showbatch help\(command.map { " " + $0 } ?? "")' for usage."
    }

    /// A usage error ends the command with exit 2.
    var exitCode: ExitCode { .usage }
}

/// Arguments of `run`: the library's options, plus what the command resolves itself.
struct RunArguments: Equatable {
    var manifest = ""
    var options = RunOptions()
    /// `--shard` as written; `auto/N` needs the environment, read when the run starts.
    var shard: String?
    var emulate = false
    /// `--base-url URL`: every request goes there instead of the vault's URL (testing only).
    var baseURL: String?
    /// `--metrics PATH`: a Prometheus text file written when the run ends.
    var metrics: String?
    /// `--report PATH`: the summary as one JSON document, written when the run ends.
    var report: String?
    /// `--metrics-push URL`: a Prometheus Pushgateway the metrics are pushed to when the run ends.
    var metricsPush: String?
    /// `--progress-every D`: how often JSON logs carry a progress event.
    var progressEvery: Duration = .seconds(10)
}

/// Arguments of `plan`.
struct PlanArguments: Equatable {
    var manifest = ""
    var json = false
    /// `--no-env`: an unset `${NAME}` is a placeholder, as for `validate --no-env`.
    var noEnvironment = false
    /// `--date`: the night whose file names and numbers are shown; nil: today in `TZ`.
    var night: NightChoice?
}

/// Arguments of `merge`.
struct MergeArguments: Equatable {
    var manifest = ""
    /// `--shards N`; required.
    var shards: Int?
    /// `--output PATH`, as the shards were run with it.
    var output: String?
    /// `--format`, as the shards were run with it.
    var format: OutputFormat?
    /// `--date`, as the shards were run with it.
    var night: NightChoice?
    /// `--quiet`: print only errors.
    var quiet = false
    /// `--keep-shards`: the shards' files stay once merged.
    var keepShards = false
    /// `--rebuild-ledger`.
    var rebuildLedger = false
    /// `--max-failed`, as the shards were run with it.
    var maxFailed: FailureAllowance?
    /// `--metrics`, `--report` and `--metrics-push`, as a run has them.
    var metrics: String?
    var report: String?
    var metricsPush: String?
    /// `--log-format`: text, or one JSON object per line.
    var logFormat = LogFormat.text
    /// `--verbose`: notes too.
    var verbose = false
    /// `--audit PATH`.
    var audit: String?
}

/// Arguments of `deliver`.
struct DeliverArguments: Equatable {
    var manifest = ""
    /// `--date`: the night; nil: today in `TZ`.
    var night: NightChoice?
    /// `--quiet`: print only errors.
    var quiet = false
    /// `--audit PATH`.
    var audit: String?
    /// `--mark-delivered` or `--send-again`, after a person checked with the processor.
    var what = NightDelivery.Choice.deliver
    /// The choices the flags named (one at most).
    var marked: Set<NightDelivery.Choice> = []
    /// `--rebuild-ledger`.
    var rebuildLedger = false
    /// `--metrics`, `--report` and `--metrics-push`, as a run has them.
    var metrics: String?
    var report: String?
    var metricsPush: String?
    /// `--log-format`: text, or one JSON object per line.
    var logFormat = LogFormat.text
    /// `--check`: try each delivery target (connect, host key, login, write and remove a probe), nothing delivered.
    var check = false
}

/// Arguments of `validate`.
struct ValidateArguments: Equatable {
    var manifests: [String] = []
    /// `--no-env`: an unset `${NAME}` is a placeholder, not a problem (CI without the secrets).
    var noEnvironment = false
    /// `--format json`: the problems as one JSON document, for CI annotations.
    var json = false
}

/// Arguments of `emulate`.
struct EmulateArguments: Equatable {
    var port = 8080
    /// `--manifest PATH`: the manifest's `emulator:` section (aliases, response, faults).
    var manifest: String?
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
    case validate(ValidateArguments)
    case plan(PlanArguments)
    case merge(MergeArguments)
    case deliver(DeliverArguments)
    case emulate(EmulateArguments)
    /// `audit verify FILE`.
    case auditVerify(file: String, manifest: String?)
    /// `completions SHELL`.
    case completions(String)
    /// `schema`.
    case schema
    case help(String?)
    case version
}
