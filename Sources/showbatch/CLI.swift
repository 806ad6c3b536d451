import Foundation
import ShowbatchBasics
import ShowbatchManifest
import ShowbatchCore

/// Manifests read by `validate` and `plan`, kept until the process exits: freeing the two
/// million objects of a 50,000-request manifest took about a sixth of `validate`'s time, and
/// the operating system takes the memory back at once when the process ends.
nonisolated(unsafe) private var keptUntilExit: [Manifest] = []

/// Runs one invocation and returns its exit code.
enum CLI {
    static func main(_ arguments: [String]) async -> ExitCode {
        let invocation: Invocation
        do {
            invocation = try ArgumentParser.parse(arguments)
        } catch {
            Console.err(TerminalText.escapedLines(error.description) + "\n")
            return error.exitCode
        }
        switch invocation {
        case .help(let topic):
            Console.out(Help.text(topic))
            return .ok
        case .version:
            Console.out("showbatch \(showbatchVersion)\n")
            return .ok
        case .validate(let arguments):
            return validate(arguments)
        case .plan(let arguments):
            return plan(arguments)
        case .run(let run):
            return await RunCommand.execute(run)
        case .merge(let merge):
            return await self.merge(merge)
        case .deliver(let deliver):
            return await self.deliver(deliver)
        case .emulate(let emulate):
            return await EmulateCommand.execute(emulate)
        case .auditVerify(let file, let manifest):
            return auditVerify(file, manifest: manifest)
        case .schema:
            Console.out(ManifestSchema.json.compactText + "\n")
            return .ok
        case .completions(let shell):
            Console.out(Completions.script(shell) ?? "")
            return .ok
        }
    }

    static func validate(_ arguments: ValidateArguments) -> ExitCode {
        var failed = false
        var problems: [JSONValue] = []
        for path in arguments.manifests {
            do {
                let manifest = try ManifestLoader.load(path: path, use: arguments.noEnvironment ? .check : .reveal)
                keptUntilExit.append(manifest)
                if arguments.json {
                    problems += manifest.warnings.map { Self.problem($0.line, file: path, severity: "warning") }
                    continue
                }
                // Warnings are not problems: the manifest is valid and the exit code stays 0.
                for warning in manifest.warnings { Console.err(TerminalText.escapedLines(warning.description) + "\n") }
                let count = manifest.requests.count, warned = manifest.warnings.count
                let warnings = warned == 0 ? "" : ", \(warned) warning\(warned == 1 ? "" : "s")"
                // A data-driven request is one per row: say the rows, which is what a run sends.
                let dataRows = manifest.requests.compactMap { $0.each?.rows }.reduce(0, +)
                var rows = manifest.requests.contains { $0.each != nil } ? ", \(dataRows) data row\(dataRows == 1 ? "" : "s")" : ""
                if let calls = CallEstimate(manifest: manifest) { rows += "; \(calls.text)" }
                let placeholders = manifest.placeholders.isEmpty ? "" : "; unset, taken as placeholders: \(manifest.placeholders.joined(separator: ", "))"
                Console.out("\(TerminalText.escaped(path)): ok (\(count) request\(count == 1 ? "" : "s")\(rows)\(warnings))\(placeholders)\n")
            } catch {
                failed = true
                if arguments.json {
                    problems += error.diagnostics.map { diagnostic in
                        // Where, how bad, what: the message names no value.
                        .object([JSONMember("file", .string(diagnostic.file)), JSONMember("line", diagnostic.mark.map { .number(String($0.line)) } ?? .null),
                                 JSONMember("column", diagnostic.mark.map { .number(String($0.column)) } ?? .null),
                                 JSONMember("severity", .string("error")), JSONMember("message", .string(diagnostic.message))])
                    }
                    continue
                }
                Console.err(TerminalText.escapedLines(error.description) + "\n")
                let count = error.diagnostics.count
                Console.err("\(TerminalText.escaped(path)): \(count) problem\(count == 1 ? "" : "s")\n")
            }
        }
        if arguments.json {
            Console.out(JSONValue.object([JSONMember("valid", .bool(!failed)), JSONMember("problems", .array(problems))]).compactText + "\n")
        }
        return failed ? .usage : .ok
    }

    /// A warning for CI annotations.
    private static func problem(_ line: String, file: String, severity: String) -> JSONValue {
        .object([JSONMember("file", .string(file)), JSONMember("severity", .string(severity)), JSONMember("message", .string(line))])
    }

    static func plan(_ arguments: PlanArguments) -> ExitCode {
        do {
            let manifest = try ManifestLoader.load(path: arguments.manifest, use: arguments.noEnvironment ? .check : .reveal)
            keptUntilExit.append(manifest)
            // Deciding a night that is only shown refuses nothing (beginning: false).
            let plan = Plan(manifest: manifest, night: try? Night.decide(arguments.night, beginning: false))
            Console.out(arguments.json ? plan.json : plan.text)
            return .ok
        } catch {
            Console.err(TerminalText.escapedLines(error.description) + "\n")
            return .usage
        }
    }

    /// The manifest of a command that sends nothing (merge, deliver): the values only sending
    /// uses may be absent; its problems, for the caller to print, with the exit code they have.
    private static func loadSendingNothing(_ path: String) -> Result<Manifest, ManifestProblem> {
        do {
            return .success(try ManifestLoader.load(path: path, use: .merge))
        } catch {
            return .failure(ManifestProblem(code: error.exitCode, text: TerminalText.escapedLines(error.description) + "\n"))
        }
    }

    /// A manifest that cannot be used: its exit code, and its problems as they are printed.
    struct ManifestProblem: Error {
        let code: ExitCode
        let text: String

        func print() { Console.err(text) }
    }

    /// A library error, as the commands that send nothing print it.
    private static func printError(_ error: RunError) {
        switch error {
        case .manifest(let diagnostic): Console.err(TerminalText.escapedLines(diagnostic.description) + "\n")
        default: Console.err("showbatch: error: \(TerminalText.escaped(error.description))\n")
        }
    }

    /// `showbatch deliver`: see `DeliverCommand`.
    static func deliver(_ arguments: DeliverArguments) async -> ExitCode {
        await DeliverCommand(arguments).execute()
    }

    /// `showbatch audit verify FILE`: 0 when the chain holds, 1 where it breaks, 3 unreadable.
    static func auditVerify(_ file: String, manifest path: String?) -> ExitCode {
        var key: SecretBytes?
        var manifest: Manifest?
        if let path {
            switch loadSendingNothing(path) {
            case .success(let loaded): manifest = loaded
            case .failure(let failure):
                failure.print()
                return failure.code
            }
            key = manifest?.auditKey
        }
        guard let data = FileManager.default.contents(atPath: file) else {
            Console.err("showbatch: error: cannot read the audit trail \(TerminalText.escaped(file))\n")
            return .runtime
        }
        switch AuditTrail.verify(Array(data), key: key) {
        case .success(let lines):
            // With the manifest, the trail must also reach where its ledgers recorded it.
            if let manifest, let problem = AuditTrail.anchorProblem(of: file, bytes: Array(data), manifest: manifest) {
                Console.err("\(TerminalText.escaped(file)): error: \(TerminalText.escaped(problem))\n")
                return .rowsFailed
            }
            Console.out("\(TerminalText.escaped(file)): \(lines) entr\(lines == 1 ? "y" : "ies"); the chain holds\(key == nil ? "" : " under audit.key")\(manifest == nil ? "" : ", and reaches where the ledgers recorded it")\n")
            return .ok
        case .failure(let broken):
            Console.err("\(TerminalText.escaped(file)):\(broken.line): error: the chain breaks: \(broken.reason)\n")
            return .rowsFailed
        }
    }

    /// `showbatch merge`: see `MergeCommand`. Its work blocks (files, gpg, the push), so it runs
    /// on a thread of its own, not on one of the cooperative pool.
    static func merge(_ arguments: MergeArguments) async -> ExitCode {
        await Blocking.run("showbatch-merge") { MergeCommand(arguments).execute() }
    }

    /// The manifest of a command that sends nothing, for `MergeCommand`.
    static func manifestSendingNothing(_ path: String) -> Result<Manifest, ManifestProblem> { loadSendingNothing(path) }

    /// A library error, for `MergeCommand`.
    static func print(_ error: RunError) { printError(error) }
}
