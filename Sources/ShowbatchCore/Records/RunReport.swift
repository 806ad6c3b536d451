import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// What a run did, for the machines that watch it: the `--report` JSON document and the
/// `--metrics` Prometheus text file. Never holds a revealed, header or payload value.
package struct RunReport: Sendable {
    /// The run's id (as in its JSON log lines).
    package var runID: String
    /// The manifest's path.
    package var manifest: String
    /// The job its metrics are grouped by (`Manifest.job`): one name however the path is typed.
    package var job: String
    /// `I/N` when sharded.
    package var shard: String?
    /// When the run started and ended.
    package var started: Date
    /// When the run ended.
    package var ended: Date
    /// The process's exit code.
    package var exitCode: ExitCode
    /// The summary, when the run got as far as sending.
    package var summary: RunSummary?
    /// The error that ended the run before or instead of a summary (exit 2 or 3).
    package var error: String?

    /// A report of a run.
    package init(runID: String, manifest: String, shard: String?, started: Date, ended: Date, exitCode: ExitCode,
                summary: RunSummary?, error: String?, job: String? = nil) {
        self.runID = runID
        self.manifest = manifest
        self.job = job ?? (manifest as NSString).lastPathComponent
        self.shard = shard
        self.started = started
        self.ended = ended
        self.exitCode = exitCode
        self.summary = summary
        self.error = error
    }

    /// ok, rows_failed, stopped, interrupted, undelivered, delivery_refused, invalid or error: the
    /// exit code in a word.
    package var outcome: String {
        switch exitCode {
        case .ok: return "ok"
        case .rowsFailed: return "rows_failed"
        case .usage: return "invalid"
        case .runtime: return "error"
        case .stopped: return "stopped"
        case .interrupted: return "interrupted"
        case .undelivered: return "undelivered"
        case .deliveryRefused: return "delivery_refused"
        }
    }

    /// The report as one JSON document (`--report`).
    package var json: String {
        let summary = summary ?? RunSummary()
        func number(_ value: Int) -> JSONValue { .number(String(value)) }
        var members: [JSONMember] = [
            JSONMember("run_id", .string(runID)),
            JSONMember("manifest", .string(manifest)),
            JSONMember("shard", shard.map(JSONValue.string) ?? .null),
            JSONMember("started", .string(Timestamp.rfc3339(started))),
            JSONMember("ended", .string(Timestamp.rfc3339(ended))),
            JSONMember("exit_code", number(Int(exitCode.rawValue))),
            JSONMember("outcome", .string(outcome)),
            JSONMember("rows", number(summary.rows)),
            JSONMember("ok", number(summary.ok)),
            JSONMember("partial", number(summary.partial)),
            JSONMember("failed", number(summary.failed)),
            JSONMember("retries", number(summary.retries)),
            JSONMember("replayed", number(summary.replayed)),
            JSONMember("skipped", number(summary.skipped)),
            JSONMember("unfinished", number(summary.unfinished)),
            JSONMember("resent_after_401", number(summary.resentAfter401)),
            JSONMember("resent_after_429", number(summary.resentAfter429)),
            JSONMember("answered_429", number(summary.answered429)),
            JSONMember("vault_api_calls", summary.calls.map(number) ?? .null),
            JSONMember("paced_at", summary.pace.map(JSONValue.string) ?? .null),
            JSONMember("token_renewals", number(summary.tokenRenewals)),
            JSONMember("max_failed", summary.allowance.map { .string($0.text) } ?? .null),
            JSONMember("elapsed_s", .number(String(format: "%.3f", summary.elapsed.seconds))),
            JSONMember("requests_per_s", .number(String(format: "%.1f", summary.rate))),
        ]
        members += RunReport.tallyMembers(summary.tally)
        members += [
            JSONMember("stopped", summary.stopReason.map(JSONValue.string) ?? .null),
            JSONMember("error", error.map(JSONValue.string) ?? .null),
            JSONMember("outputs", .array(summary.outputs.map(JSONValue.string))),
            RunReport.rejectsMember(summary),
            RunReport.deliveriesMember(summary.deliveries),
        ]
        return JSONValue.object(members).compactText + "\n"
    }

    /// `errors_by_code`, `rows_by_http_status` and `rows_without_answer`, for the report and the
    /// summary log line.
    package static func tallyMembers(_ tally: RowTally) -> [JSONMember] {
        [
            JSONMember("errors_by_code", .object(tally.byErrorCode.sorted { $0.key.rawValue < $1.key.rawValue }.map {
                JSONMember(String($0.key.rawValue), .number(String($0.value)))
            })),
            JSONMember("rows_by_http_status", .object(tally.byHTTPStatus.sorted { $0.key < $1.key }.map {
                JSONMember(String($0.key), .number(String($0.value)))
            })),
            JSONMember("rows_without_answer", .number(String(tally.withoutAnswer))),
            JSONMember("first_error_messages", .object(tally.firstMessage.sorted { $0.key.rawValue < $1.key.rawValue }.map {
                JSONMember(String($0.key.rawValue), .string($0.value))
            })),
        ]
    }

    /// Each rejects file and the rows it holds, for the report and the summary log line.
    package static func rejectsMember(_ summary: RunSummary) -> JSONMember {
        JSONMember("rejects", .array(summary.rejects.map {
            .object([JSONMember("path", .string($0.path)), JSONMember("rows", .number(String($0.rows)))])
        }))
    }

    /// Each delivery: the output, where it went, its size and how it ended (`delivered`,
    /// `already`, `found`, `failed` or `refused` with the reason).
    package static func deliveriesMember(_ deliveries: [DeliveryOutcome]) -> JSONMember {
        JSONMember("deliveries", .array(deliveries.map { outcome in
            var members = [JSONMember("path", .string(outcome.path)), JSONMember("to", .string(outcome.destination)),
                           JSONMember("size", .number(String(outcome.size)))]
            switch outcome.result {
            case .delivered: members.append(JSONMember("result", .string("delivered")))
            case .found: members.append(JSONMember("result", .string("found")))
            case .markedDelivered: members.append(JSONMember("result", .string("marked_delivered")))
            case .already(let when):
                members += [JSONMember("result", .string("already")), JSONMember("delivered_at", .string(when))]
            case .failed(let why):
                members += [JSONMember("result", .string("failed")), JSONMember("error", .string(why))]
            case .refused(let why):
                members += [JSONMember("result", .string("refused")), JSONMember("error", .string(why))]
            }
            return .object(members)
        }))
    }

    /// The metrics in the Prometheus text format, for node_exporter's textfile collector
    /// (`--metrics`). `previous` is the file this replaces: its last success time is kept when
    /// this run did not succeed.
    /// For a push (`forPush`), the series carry no job or shard label: the group's key gives them.
    package func prometheus(previous: String?, forPush: Bool = false) -> String {
        let summary = summary ?? RunSummary()
        var labels: [String] = []
        if !forPush {
            labels.append("showbatch_job=\"\(Self.escapeLabel(job))\"")
            if let shard { labels.append("shard=\"\(Self.escapeLabel(shard))\"") }
        }
        var text = ""
        func metric(_ name: String, _ help: String, _ samples: [(extra: String, value: String)]) {
            text += "# HELP \(name) \(help)\n# TYPE \(name) gauge\n"
            for sample in samples {
                text += "\(name){\((labels + (sample.extra.isEmpty ? [] : [sample.extra])).joined(separator: ","))} \(sample.value)\n"
            }
        }
        metric("showbatch_rows", "Rows the last run wrote (from the journal included), by status.", [
            ("status=\"ok\"", String(summary.ok)), ("status=\"partial\"", String(summary.partial)), ("status=\"failed\"", String(summary.failed)),
        ])
        metric("showbatch_rows_replayed", "Rows the last run took from a journal instead of sending them.", [("", String(summary.replayed))])
        metric("showbatch_row_errors", "Rows of the last run's outputs that hold each error code (after --resume, the earlier run's rows too).",
               summary.tally.byErrorCode.sorted { $0.key.rawValue < $1.key.rawValue }.map {
                   ("code=\"\($0.key.rawValue)\",kind=\"\($0.key.kind)\"", String($0.value))
               })
        metric("showbatch_rows_by_http_status", "Rows of the last run's outputs, by the HTTP status of their last attempt (after --resume, the earlier run's rows too).",
               summary.tally.byHTTPStatus.sorted { $0.key < $1.key }.map { ("status=\"\($0.key)\"", String($0.value)) })
        metric("showbatch_rows_without_answer", "Rows of the last run's outputs whose last attempt got no HTTP answer (after --resume, the earlier run's rows too).", [("", String(summary.tally.withoutAnswer))])
        metric("showbatch_retries", "Attempts beyond the first in the last run.", [("", String(summary.retries))])
        metric("showbatch_rows_unfinished", "Work items whose request was under way when the last run stopped or was interrupted (not written; --resume sends them).",
               [("", String(summary.unfinished))])
        metric("showbatch_requests_resent_after_401", "Requests the last run sent again because an answer refused their token.",
               [("", String(summary.resentAfter401))])
        metric("showbatch_requests_resent_after_429", "Requests the last run sent again because the endpoint answered 429 (rate limited).",
               [("", String(summary.resentAfter429))])
        metric("showbatch_token_renewals", "Access tokens the last run fetched again.", [("", String(summary.tokenRenewals))])
        metric("showbatch_answers_429", "Answers 429 (rate limited) the last run got, to requests or Vault API calls.", [("", String(summary.answered429))])
        if let calls = summary.calls {
            metric("showbatch_vault_api_calls", "Vault API calls the last run sent (each revealing the aliases of several rows).", [("", String(calls))])
        }
        if let rate = summary.pacePerSecond {
            metric("showbatch_rate_limit_per_second", "The rate the last run kept to (rate_limit, --rate, or VGS's documented limit), per second.",
                   [("", String(format: "%.3f", rate))])
        }
        metric("showbatch_run_duration_seconds", "Wall time of the last run.", [("", String(format: "%.3f", summary.elapsed.seconds))])
        if !summary.keyExpiries.isEmpty {
            metric("showbatch_key_expiry_timestamp_seconds", "When each recipient key the outputs are encrypted to expires (Unix time); keys that never expire are not listed.",
                   summary.keyExpiries.sorted { $0.key < $1.key }.map { ("fingerprint=\"\($0.key)\"", String($0.value)) })
        }
        metric("showbatch_run_exit_code", "Exit code of the last run (0 ok, 1 rows failed, 2 invalid, 3 error, 4 stopped, 5 undelivered, 6 delivery refused, 130 interrupted).",
               [("", String(exitCode.rawValue))])
        metric("showbatch_max_failed_rows", "Rows not ok the night may have and still be whole (max_failed, of its rows): 0 means one row not ok keeps the night from the processor.",
               [("", String(summary.allowance?.rows(of: summary.nightRows ?? summary.rows) ?? 0))])
        metric("showbatch_last_run_timestamp_seconds", "When the last run ended (Unix time).", [("", Self.seconds(ended))])
        let lastSuccess = exitCode == .ok ? Self.seconds(ended) : previous.flatMap(Self.lastSuccess)
        if let lastSuccess {
            metric("showbatch_last_success_timestamp_seconds", "When a run last ended with exit 0 (every row ok, or within max_failed) (Unix time).", [("", lastSuccess)])
        }
        return text
    }

    private static func seconds(_ date: Date) -> String { String(format: "%.3f", date.timeIntervalSince1970) }

    private static func lastSuccess(in text: String) -> String? {
        for line in text.split(separator: "\n") where line.hasPrefix("showbatch_last_success_timestamp_seconds{") {
            if let value = line.split(separator: " ").last, Double(value) != nil { return String(value) }
        }
        return nil
    }

    private static func escapeLabel(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }
}

/// Times in log lines and reports.
package enum Timestamp {
    /// `date` in RFC 3339, UTC, to the millisecond: `2026-12-01T07:55:01.123Z`.
    package static func rfc3339(_ date: Date = Date()) -> String {
        let interval = date.timeIntervalSince1970
        var seconds = time_t(interval.rounded(.down))
        let millis = min(999, Int(((interval - Double(seconds)) * 1000).rounded(.down)))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
                      Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), millis)
    }
}

extension RunReport {
    /// True when `a` and `b` name one file (by any spelling, or as hard links).
    /// What is wrong with the `--metrics` and `--report` paths (`sideFiles`, by flag) before the
    /// manifest is read: the shape of a path, one file named twice, the manifest itself (a
    /// manifest that cannot be read still gets its metrics, which must never replace it). The run
    /// checks them against its other inputs and its outputs (`OutputPlanner.check`).
    package static func sideFileProblem(_ sideFiles: [(flag: String, path: String)], manifest: String) -> String? {
        for (index, (flag, path)) in sideFiles.enumerated() {
            if path.isEmpty || path.hasSuffix("/") { return "\(flag) needs the path of a file; got \"\(path)\"" }
            if sameFile(path, manifest) { return "\(flag) \(path) is the manifest; give it a path of its own" }
            if let earlier = sideFiles[..<index].first(where: { sameFile($0.path, path) }) {
                return "\(earlier.flag) and \(flag) name one file, \(path); give each its own"
            }
        }
        return nil
    }

    package static func sameFile(_ a: String, _ b: String) -> Bool {
        if PrivateFile.canonical(a) == PrivateFile.canonical(b) { return true }
        guard let one = PrivateFile.identity(a), let other = PrivateFile.identity(b) else { return false }
        return one.device == other.device && one.inode == other.inode
    }

    /// Writes the report (`--report`) at `path`, at once.
    package func writeReport(to path: String) throws(RunError) {
        try Self.refuseForeign(path, flag: "--report") { text in
            // One JSON object with a report's members: a JSON Lines export whose first column is
            // named run_id starts the same way.
            guard case .object(let members)? = try? JSONParser.parse(Array(text.utf8)) else { return false }
            let keys = Set(members.map(\.key))
            return ["run_id", "manifest", "started", "ended", "exit_code", "outcome"].allSatisfy(keys.contains)
        }
        try PrivateFile.replaceAtomically(path, with: Array(json.utf8), mode: 0o644)
    }

    /// Writes the metrics (`--metrics`) at `path`, at once, keeping the last success time of the
    /// file it replaces.
    package func writeMetrics(to path: String) throws(RunError) {
        try Self.refuseForeign(path, flag: "--metrics") { $0.hasPrefix("# HELP showbatch_") }
        try PrivateFile.replaceAtomically(path, with: Array(prometheus(previous: PrivateFile.readText(path)).utf8), mode: 0o644)
    }

    /// Refuses to replace a file that showbatch did not write there: a run whose manifest cannot
    /// be read (exit 2) or that is interrupted while reading it (130) writes its metrics and
    /// report without knowing its inputs and outputs, and `--metrics data/customers.csv` must not
    /// replace the data, the token file or last night's export then either. Nothing there, an
    /// empty file or one of showbatch's own (`isOwn` says so of its text) is replaced.
    private static func refuseForeign(_ path: String, flag: String, isOwn: (String) -> Bool) throws(RunError) {
        guard case .regular(_, _, let size) = PrivateFile.inspect(path), size > 0 else { return }
        let text = size <= 1 << 20 ? PrivateFile.readText(path, limit: 1 << 20) : nil
        guard !(text.map(isOwn) ?? false) else { return }
        throw RunError.runtime(RecordsError.foreignSideFile(flag: flag, path: path))
    }
}
