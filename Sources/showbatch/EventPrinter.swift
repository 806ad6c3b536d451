import Foundation
import ShowbatchBasics
import ShowbatchManifest
import ShowbatchCore
import ShowbatchYAML
import Synchronization

/// Prints run events on stderr as text or JSON lines, with a live progress line on a terminal.
///
/// Every JSON line starts with `ts` (RFC 3339, UTC), `level`, `event` and `run_id`, so that a log
/// pipeline can sort, filter and join lines without knowing each event.
final class EventPrinter: Sendable {
    let format: LogFormat
    let progress: Bool
    let quiet: Bool
    let verbose: Bool
    let runID: String
    /// How often a progress event is written in JSON mode.
    let progressEvery: Duration
    /// The length of the progress line on screen, nil when none is shown.
    private let progressShown = Mutex<Int?>(nil)
    /// How the progress line is drawn.
    let terminal: ProgressLine
    private let lastProgressLine = Mutex<ContinuousClock.Instant?>(nil)

    init(format: LogFormat, progress: Bool, quiet: Bool, verbose: Bool = false, runID: String = "",
         progressEvery: Duration = .seconds(10), terminal: ProgressLine? = nil) {
        self.terminal = terminal ?? (progress ? .forStandardError() : ProgressLine(width: 80, erases: true))
        self.format = format
        self.progress = progress
        self.quiet = quiet
        self.verbose = verbose
        self.runID = runID
        self.progressEvery = progressEvery
    }

    func handle(_ event: RunEvent) {
        switch event {
        case .started(let start):
            guard format == .json, !quiet else { return }
            lastProgressLine.withLock { $0 = .now }
            line("info", "run_started", [
                JSONMember("manifest", .string(start.manifest)),
                JSONMember("outputs", .array(start.outputs.map(JSONValue.string))),
                JSONMember("rows", start.rows.map { .number(String($0)) } ?? .null),
                JSONMember("shard", start.shard.map(JSONValue.string) ?? .null),
                JSONMember("mode", .string(start.mode)),
                JSONMember("base_url", .string(start.baseURL)),
                JSONMember("rate_limit", start.rateLimit.map { .string(Units.rateText($0)) } ?? .null),
                JSONMember("output_modes", .array(start.outputModes.map { mode in
                    .object([JSONMember("output", .string(mode.path)), JSONMember("mode", .string(mode.mode)),
                             JSONMember("reason", mode.reason.map(JSONValue.string) ?? .null)])
                })),
            ])
        case .note(let message):
            guard !quiet else { return }
            if format == .json {
                line("info", "note", [JSONMember("message", .string(message))])
            } else if verbose {
                endProgress()
                Console.err("showbatch: \(TerminalText.escaped(message))\n")
            }
        case .warning(let message):
            if !quiet { unquietWarning(message) }
        case .attempt(let record):
            endProgress()
            let duration = Units.text(record.duration)
            if format == .json {
                line("debug", "attempt", spare: true, [
                    JSONMember("request", .string(record.request)),
                    JSONMember("method", .string(record.method)), JSONMember("url", .string(record.url)),
                    JSONMember("attempt", .number(String(record.attempt))),
                    JSONMember("status", record.status.map { .number(String($0)) } ?? .null),
                    JSONMember("failure", record.failure.map(JSONValue.string) ?? .null),
                    JSONMember("duration_ms", .number(String(Int(record.duration.seconds * 1000)))),
                ])
            } else {
                let outcome = record.status.map(String.init) ?? (record.failure ?? "-")
                let line = "\(record.method) \(record.url) \(outcome) \(duration) \(record.request) (attempt \(record.attempt))"
                StandardError.shared.write(TerminalText.escaped(line) + "\n", spare: true)
            }
        case .progress(let value):
            if format == .json {
                progressLine(value)
                return
            }
            guard progress else { return }
            var text = ""
            let rate = value.rate
            if let total = value.total, total > 0 {
                let fraction = Double(value.done) / Double(total)
                let filled = Int(fraction * 24)
                text += "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: 24 - filled) + "] "
                text += "\(value.done)/\(total) \(Int(fraction * 100))%"
                if rate > 0, value.done < total { text += " ETA \(Units.text(Units.seconds(Double(total - value.done) / rate)))" }
            } else {
                text += "\(value.done) rows"
            }
            text += " \(Int(rate)) req/s"
            if value.failed > 0 { text += " \(value.failed) failed" }
            let bytes = progressShown.withLock { shown in
                let frame = terminal.frame(text, previous: shown ?? 0)
                shown = frame.shown
                return frame.bytes
            }
            StandardError.shared.write(bytes, spare: true)
        }
    }

    /// A JSON progress event, at most once every `progressEvery`.
    private func progressLine(_ value: RunProgress) {
        guard !quiet else { return }
        let now = ContinuousClock.now
        let due = lastProgressLine.withLock { last in
            if let previous = last, now - previous < progressEvery { return false }
            last = now
            return true
        }
        guard due else { return }
        let rate = value.rate
        line("info", "progress", spare: true, [
            JSONMember("done", .number(String(value.done))),
            JSONMember("total", value.total.map { .number(String($0)) } ?? .null),
            JSONMember("ok", .number(String(value.ok))),
            JSONMember("failed", .number(String(value.failed))),
            JSONMember("retries", .number(String(value.retries))),
            JSONMember("requests_per_s", .number(String(format: "%.1f", rate))),
            JSONMember("elapsed_s", .number(String(format: "%.3f", value.elapsed.seconds))),
        ])
    }

    func endProgress() {
        let shown = progressShown.withLock { shown in
            defer { shown = nil }
            return shown
        }
        if let shown { Console.err(terminal.clear(previous: shown)) }
    }

    /// A warning that `--quiet` does not hide: something the command could not do after the run
    /// (the metrics push) that leaves its exit code alone.
    func unquietWarning(_ message: String) {
        endProgress()
        if format == .json {
            line("warning", "warning", [JSONMember("message", .string(message))])
        } else {
            Console.err("showbatch: warning: \(TerminalText.escaped(message))\n")
        }
    }

    /// An error that ends the run (exit 3), in the log's format.
    func error(_ message: String) {
        if format == .json {
            line("error", "error", [JSONMember("message", .string(message))])
        } else {
            Console.err("showbatch: error: \(TerminalText.escaped(message))\n")
        }
    }

    /// A usage error or an invalid manifest (exit 2): as text, the rendered lines as they are;
    /// as JSON, one line per problem with its place.
    func invalid(_ text: String, diagnostics: [Diagnostic] = []) {
        guard format == .json else {
            Console.err(TerminalText.escapedLines(text) + "\n")
            return
        }
        if diagnostics.isEmpty {
            line("error", "invalid", [JSONMember("message", .string(text))])
        }
        for diagnostic in diagnostics {
            line("error", "invalid", [
                JSONMember("file", .string(diagnostic.file)),
                JSONMember("line", diagnostic.mark.map { .number(String($0.line)) } ?? .null),
                JSONMember("column", diagnostic.mark.map { .number(String($0.column)) } ?? .null),
                JSONMember("message", .string(diagnostic.message)),
            ])
        }
    }

    /// The run's summary; `--quiet` prints it too when the run did not exit 0. `retry` is the
    /// command that sends the failed rows again, said when rows failed.
    /// Every failed row failed for its data row (it cannot be sent, or a summed cell is no
    /// number): `--retry-failed` would only fail them again.
    static func failedForTheData(_ summary: RunSummary) -> Bool {
        let data: Set<ErrorCode> = [.invalidRow, .notANumber]
        return !summary.tally.byErrorCode.isEmpty && summary.tally.byErrorCode.keys.allSatisfy(data.contains) && summary.partial == 0
    }

    func summary(_ summary: RunSummary, retry: String? = nil, deliver: String? = nil) {
        if quiet && summary.exitCode == .ok { return }
        let next = summary.failed > 0 && !summary.interrupted && summary.stopReason == nil && summary.outputs != ["-"] ? retry : nil
        if format == .json {
            let level = summary.exitCode == .ok ? "info" : summary.exitCode == .rowsFailed ? "warning" : "error"
            line(level, "summary", [
                JSONMember("rows", .number(String(summary.rows))),
                JSONMember("ok", .number(String(summary.ok))), JSONMember("partial", .number(String(summary.partial))),
                JSONMember("failed", .number(String(summary.failed))), JSONMember("retries", .number(String(summary.retries))),
                JSONMember("replayed", .number(String(summary.replayed))), JSONMember("skipped", .number(String(summary.skipped))),
                JSONMember("unfinished", .number(String(summary.unfinished))),
                JSONMember("resent_after_401", .number(String(summary.resentAfter401))),
                JSONMember("resent_after_429", .number(String(summary.resentAfter429))),
                JSONMember("token_renewals", .number(String(summary.tokenRenewals))),
                JSONMember("answered_429", .number(String(summary.answered429))),
                JSONMember("vault_api_calls", summary.calls.map { .number(String($0)) } ?? .null),
                JSONMember("paced_at", summary.pace.map(JSONValue.string) ?? .null),
                JSONMember("elapsed_s", .number(String(format: "%.3f", summary.elapsed.seconds))),
                JSONMember("requests_per_s", .number(String(format: "%.1f", summary.rate))),
                JSONMember("interrupted", .bool(summary.interrupted)),
                JSONMember("stopped", summary.stopReason.map(JSONValue.string) ?? .null),
                JSONMember("exit_code", .number(String(summary.exitCode.rawValue))),
                JSONMember("outputs", .array(summary.outputs.map(JSONValue.string))),
                RunReport.rejectsMember(summary),
                RunReport.deliveriesMember(summary.deliveries),
                JSONMember("next", next.map(JSONValue.string) ?? .null),
            ] + RunReport.tallyMembers(summary.tally))
            return
        }
        var text = "showbatch: \(summary.rows) rows: \(summary.ok) ok, \(summary.partial) partial, \(summary.failed) failed; "
        text += "\(summary.retries) retries; \(Units.text(summary.elapsed)), \(String(format: "%.1f", summary.rate)) requests/s"
        if let calls = summary.calls { text += "; \(calls) Vault API call\(calls == 1 ? "" : "s")" }
        if let pace = summary.pace { text += "; paced at \(pace)" }
        if summary.answered429 > 0 { text += "; \(summary.answered429) answered 429" }
        if summary.replayed > 0 { text += "; \(summary.replayed) from the journal" }
        if summary.skipped > 0 { text += "; \(summary.skipped) not sent\(summary.stopReason == nil ? " (--fail-fast)" : "")" }
        if !summary.dataChanged.isEmpty {
            text += "; a data file changed during the run\(summary.unfinished > 0 ? ", \(summary.unfinished) rows not read (unfinished)" : "")"
        }
        if summary.withinAllowance, let allowance = summary.allowance {
            text += "; \(summary.rows - summary.ok) not ok, within max_failed (\(allowance.text))"
        }
        if let reason = summary.stopReason {
            text += "; stopped: \(reason); \(summary.outputs.isEmpty ? "nothing was written" : "outputs left as .partial, rerun with --resume once that is fixed")"
        } else if summary.interrupted && summary.outputs.isEmpty {
            text += "; interrupted before any output was opened"
        } else if summary.interrupted && summary.outputs == ["-"] {
            text += "; interrupted: the rows written to standard output are whole, the rest were not sent or not written (standard output cannot be resumed)"
        } else if summary.interrupted && !summary.deliveries.isEmpty {
            text += "; interrupted while delivering: the night is written, and the next run delivers it"
        } else if summary.interrupted {
            text += "; interrupted: outputs left as .partial, rerun with --resume"
        } else {
            let rejects = Dictionary(summary.rejects.map { ($0.path, $0.rows) }, uniquingKeysWith: { first, _ in first })
            let written = summary.outputs.filter { !summary.leftAsTheyWere.contains($0) }
            if !written.isEmpty {
                text += "; wrote " + written.map { path in
                    if path == "-" { return "standard output" }
                    guard let rows = rejects[path] else { return path }
                    return "\(path) (rejects: \(rows) row\(rows == 1 ? "" : "s"))"
                }.joined(separator: ", ")
            }
            let left = summary.leftAsTheyWere
            if !left.isEmpty { text += "; left \(left.joined(separator: ", ")) as \(left.count == 1 ? "it was" : "they were")" }
        }
        var lines = [text]
        // What went wrong, by code, with the first row's message of each: named, never a value.
        for (code, count) in summary.tally.byErrorCode.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            let message = summary.tally.firstMessage[code].map { ", the first: \($0)" } ?? ""
            lines.append("showbatch: \(code.rawValue) \(code.kind): \(count) row\(count == 1 ? "" : "s")\(message)")
        }
        // A night judged on the whole of it, whatever this run sent.
        for night in summary.nights {
            switch night.state {
            case .whole, .deliveredOtherData: continue
            case .beyondMaxFailed(let allowed):
                lines.append("showbatch: the night of \(night.date) in \(night.path) (sequence \(night.seq)) has \(night.notOk) row\(night.notOk == 1 ? "" : "s") not ok of \(night.rows), beyond max_failed (\(allowed)): it is not finished for the processor")
            case .doesNotAddUp(let counted):
                lines.append("showbatch: error: the night of \(night.date) in \(night.path) does not add up: its files hold \(counted) row\(counted == 1 ? "" : "s"), its data files \(night.rows); it is not recorded as finished")
            case .dataChanged, .notFinished:
                continue
            }
        }
        lines += Self.nextLines(summary, next: next, retry: retry)
        lines += Self.deliveryLines(summary.deliveries, deliver: deliver)
        Console.err(lines.map(TerminalText.escaped).joined(separator: "\n") + "\n")
    }

    /// What to run next when rows failed or a night is not whole: the failed rows sent again,
    /// or, when a retry would get the same answer (the data's rows, partial rows, a night whose
    /// failed rows were not kept), the night run again once that is fixed.
    static func nextLines(_ summary: RunSummary, next: String?, retry: String?) -> [String] {
        let codes = summary.tally.byErrorCode.keys.map { String($0.rawValue) }.sorted().joined(separator: ", ")
        let notWhole = summary.nights.filter { !$0.isWhole && $0.state != .deliveredOtherData }
        if let next, failedForTheData(summary) {
            // Sending them again gets the same answer: the data file is what to fix.
            let rerun = next.replacingOccurrences(of: " --retry-failed", with: "")
            return ["showbatch: next: the failed rows are the data file's to fix (\(codes)): correct them, then run the night again (\(rerun))"]
        }
        if let next, notWhole.allSatisfy({ $0.retryable && $0.notOk == $0.failed }) {
            return ["showbatch: next: \(next) sends the \(summary.failed) failed row\(summary.failed == 1 ? "" : "s") again"]
        }
        guard let night = notWhole.first, let retry, !summary.interrupted, summary.stopReason == nil else { return [] }
        let rerun = retry.replacingOccurrences(of: " --retry-failed", with: "")
        switch night.state {
        case .doesNotAddUp, .dataChanged, .notFinished:
            return ["showbatch: next: run the night again (\(rerun)): its files are written anew under its number"]
        case .beyondMaxFailed where night.retryable && night.notOk == night.failed:
            return ["showbatch: next: \(retry) sends the \(night.failed) failed row\(night.failed == 1 ? "" : "s") again"]
        case .beyondMaxFailed where night.notOk > night.failed:
            let partial = night.notOk - night.failed
            return ["showbatch: next: \(partial) of the night's rows not ok \(partial == 1 ? "is" : "are") partial (\(codes.isEmpty ? "a label not found" : codes)), which a retry answers the same: fix the manifest's labels or the data, then run the night again (\(rerun))"]
        default:
            return ["showbatch: next: the night's failed rows were not kept to be sent again: run the night again (\(rerun))"]
        }
    }

    /// What each delivery did, a line each; a failed one says what delivers it later.
    static func deliveryLines(_ deliveries: [DeliveryOutcome], deliver: String?) -> [String] {
        deliveries.map { outcome in
            switch outcome.result {
            case .delivered: return "showbatch: delivered \(outcome.path) to \(outcome.destination) (\(outcome.size) bytes)"
            case .found: return "showbatch: \(outcome.path) was on the server already, whole (a run stopped after putting it there): recorded as delivered to \(outcome.destination)"
            case .markedDelivered: return "showbatch: \(outcome.path) is recorded as delivered to \(outcome.destination), as the processor has it (nothing was sent)"
            case .already(let when): return "showbatch: \(outcome.path) was delivered to \(outcome.destination) at \(when): nothing is delivered again"
            case .failed(let why):
                return "showbatch: error: cannot deliver \(outcome.path): \(why); the file is kept: once that is fixed, the next run\(deliver.map { " (or \($0))" } ?? "") delivers it without revealing anything again"
            case .refused(let why):
                return "showbatch: error: cannot deliver \(outcome.path): \(why); no retry fixes this, a person must (exit 6); the file is kept, and once that is done the next run\(deliver.map { " (or \($0))" } ?? "") delivers it without revealing anything again"
            }
        }
    }

    /// One JSON line; `spare`: it may be dropped when standard error is not read fast enough.
    private func line(_ level: String, _ event: String, spare: Bool = false, _ members: [JSONMember]) {
        let head = [
            JSONMember("ts", .string(Timestamp.rfc3339())), JSONMember("level", .string(level)),
            JSONMember("event", .string(event)), JSONMember("run_id", .string(runID)),
        ]
        StandardError.shared.write(JSONValue.object(head + members).compactText + "\n", spare: spare)
    }
}
