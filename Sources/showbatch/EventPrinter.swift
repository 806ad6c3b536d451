import Foundation
import ShowbatchCore
import Synchronization

/// Prints run events on stderr as text or JSON lines, with a live progress line on a terminal.
final class EventPrinter: Sendable {
    let format: LogFormat
    let progress: Bool
    let quiet: Bool
    private let progressShown = Mutex(false)

    init(format: LogFormat, progress: Bool, quiet: Bool) {
        self.format = format
        self.progress = progress
        self.quiet = quiet
    }

    func handle(_ event: RunEvent) {
        switch event {
        case .warning(let message):
            if quiet { return }
            endProgress()
            if format == .json {
                line([JSONMember("event", .string("warning")), JSONMember("message", .string(message))])
            } else {
                Console.err("showbatch: warning: \(TerminalText.escaped(message))\n")
            }
        case .attempt(let record):
            endProgress()
            let duration = Units.text(record.duration)
            if format == .json {
                line([JSONMember("event", .string("attempt")), JSONMember("request", .string(record.request)),
                      JSONMember("method", .string(record.method)), JSONMember("url", .string(record.url)),
                      JSONMember("attempt", .number(String(record.attempt))),
                      JSONMember("status", record.status.map { .number(String($0)) } ?? .null),
                      JSONMember("failure", record.failure.map(JSONValue.string) ?? .null),
                      JSONMember("duration_ms", .number(String(Int(record.duration.seconds * 1000))))])
            } else {
                let outcome = record.status.map(String.init) ?? (record.failure ?? "-")
                let line = "\(record.method) \(record.url) \(outcome) \(duration) \(record.request) (attempt \(record.attempt))"
                Console.err(TerminalText.escaped(line) + "\n")
            }
        case .progress(let value):
            guard progress else { return }
            var text = "\r\u{1B}[2K"
            let rate = value.elapsed.seconds > 0 ? Double(value.done) / value.elapsed.seconds : 0
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
            progressShown.withLock { $0 = true }
            Console.err(text)
        }
    }

    func endProgress() {
        let shown = progressShown.withLock { shown in
            defer { shown = false }
            return shown
        }
        if shown { Console.err("\r\u{1B}[2K") }
    }

    func error(_ message: String) {
        if format == .json {
            line([JSONMember("event", .string("error")), JSONMember("message", .string(message))])
        } else {
            Console.err("showbatch: error: \(TerminalText.escaped(message))\n")
        }
    }

    func summary(_ summary: RunSummary) {
        if quiet { return }
        if format == .json {
            line([JSONMember("event", .string("summary")), JSONMember("rows", .number(String(summary.rows))),
                  JSONMember("ok", .number(String(summary.ok))), JSONMember("partial", .number(String(summary.partial))),
                  JSONMember("failed", .number(String(summary.failed))), JSONMember("retries", .number(String(summary.retries))),
                  JSONMember("replayed", .number(String(summary.replayed))), JSONMember("skipped", .number(String(summary.skipped))),
                  JSONMember("elapsed_s", .number(String(format: "%.3f", summary.elapsed.seconds))),
                  JSONMember("requests_per_s", .number(String(format: "%.1f", summary.rate))),
                  JSONMember("interrupted", .bool(summary.interrupted)),
                  JSONMember("stopped", summary.stopReason.map(JSONValue.string) ?? .null),
                  JSONMember("outputs", .array(summary.outputs.map(JSONValue.string)))])
            return
        }
        var text = "showbatch: \(summary.rows) rows: \(summary.ok) ok, \(summary.partial) partial, \(summary.failed) failed; "
        text += "\(summary.retries) retries; \(Units.text(summary.elapsed)), \(String(format: "%.1f", summary.rate)) requests/s"
        if summary.replayed > 0 { text += "; \(summary.replayed) from the journal" }
        if summary.skipped > 0 { text += "; \(summary.skipped) not sent (--fail-fast)" }
        if let reason = summary.stopReason {
            text += "; stopped: \(reason); \(summary.outputs.isEmpty ? "nothing was written" : "outputs left as .partial, rerun with --resume once that is fixed")"
        } else if summary.interrupted && summary.outputs.isEmpty {
            text += "; interrupted before any output was opened"
        } else if summary.interrupted {
            text += "; interrupted: outputs left as .partial, rerun with --resume"
        } else {
            text += "; wrote \(summary.outputs.map { $0 == "-" ? "standard output" : $0 }.joined(separator: ", "))"
        }
        Console.err(TerminalText.escaped(text) + "\n")
    }

    private func line(_ members: [JSONMember]) {
        Console.err(JSONValue.object(members).compactText + "\n")
    }
}
