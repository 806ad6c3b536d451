import ShowbatchBasics
import ShowbatchManifest

/// What `plan` prints: the base URL and each request, with header values redacted. Sends nothing.
package struct Plan: Sendable {
    /// One planned request.
    package struct Entry: Sendable {
        /// The expanded name.
        package var name: String
        /// The method.
        package var method: String
        /// The URL (empty when it could not be built).
        package var url: String
        /// Header names (values are never shown).
        package var headerNames: [String]
        /// Each header as sent: its value, or `<secret>` for a credential or a value from the
        /// environment (which the run takes for a secret).
        package var headers: [(name: String, value: String)] = []
        /// Why the work item cannot be sent, if it cannot.
        package var problem: String?
    }

    /// A data-driven request's summary.
    package struct DataSummary: Sendable {
        /// The request's position in the manifest (1-based).
        package var request: Int
        /// The data file as the manifest names it.
        package var file: String
        /// Rows in the file.
        package var rows: Int
    }

    /// How many rows of a data file are listed before the count.
    package static let rowsShown = 3

    /// The base URL requests go to.
    package var baseURL: String
    /// A note about the custom hostname, when there is one.
    package var hostnameNote: String?
    /// Listed requests (the first rows of data-driven ones).
    package var entries: [Entry] = []
    /// Data files and their row counts.
    package var data: [DataSummary] = []
    /// Output files.
    package var outputs: [String] = []
    /// Each output's columns and rejects file, as a run lays them out.
    package var layouts: [(path: String, columns: [String], rejects: String?)] = []
    /// Each encrypted output's recipients' fingerprints (`?` for a key that cannot be read) and
    /// signing key's; each delivered output's target and known hosts file.
    package var encryption: [(output: String, recipients: [String], signing: String?)] = []
    package var deliveries: [(output: String, target: String, knownHosts: String)] = []
    /// Each night-named output's night: its file tonight and what its ledger says of it.
    package var nights: [(output: String, file: String, seq: Int, state: String)] = []
    /// The night shown.
    package var night: NightDate?
    /// The Vault API's calls, when the manifest reveals through it.
    package var calls: CallEstimate?
    /// The rate a run keeps to, and where it comes from, when it keeps to one.
    package var pace: String?

    /// Builds the plan of `manifest` without any network call; `night`: the night whose file
    /// names, numbers and ledger records are shown.
    package init(manifest: Manifest, night: Night? = nil) {
        if let hostname = manifest.hostname {
            baseURL = "https://\(hostname)"
            if manifest.hostnameIsChecked {
                hostnameNote = "hostname \(hostname) is checked at run time; if it is not activated, requests go to \(manifest.vaultURL)"
            } else if manifest.hostnameCheck {
                hostnameNote = "hostname \(hostname) is used as given (its CNAME activation is checked only on port 443)"
            } else {
                hostnameNote = "hostname \(hostname) is used as given (hostname_check: false)"
            }
        } else {
            baseURL = manifest.vaultURL
        }
        var shown: [Int: Int] = [:]
        var counts: [Int: Int] = [:]
        let preparer = RequestPreparer(manifest: manifest, baseURL: baseURL)
        for item in WorkItemSequence(manifest: manifest) {
            let spec = manifest.requests[item.requestIndex]
            if spec.each != nil {
                counts[item.requestIndex, default: 0] += 1
                guard shown[item.requestIndex, default: 0] < Plan.rowsShown else { continue }
                shown[item.requestIndex, default: 0] += 1
            }
            switch preparer.prepare(item) {
            case .success(let request):
                // A Vault API row shows the aliases its call asks for.
                let url = request.aliases.map { request.url + manifest.vaultAPI!.query($0) } ?? request.url
                var entry = Entry(name: request.name, method: request.method.rawValue, url: url,
                                  headerNames: request.headers.map(\.name), problem: nil)
                entry.headers = request.headers.map { ($0.name, $0.value) }
                entries.append(entry)
            case .failure(let failure):
                entries.append(Entry(name: failure.name, method: spec.method.rawValue, url: "", headerNames: [],
                                     problem: failure.error.text))
            }
        }
        calls = CallEstimate(manifest: manifest)
        let settings = RunSettings(manifest: manifest, options: RunOptions())
        let documented = manifest.rateLimit == nil
        pace = settings.rate.map { "\(Units.rateText($0)) (\(settings.rateSource ?? "rate_limit")\(documented ? "; not under --emulate or --base-url" : ""))" }
        for (index, spec) in manifest.requests.enumerated() {
            if let each = spec.each { data.append(DataSummary(request: index + 1, file: each.name, rows: counts[index] ?? 0)) }
            if let output = spec.output?.path ?? manifest.output?.path, !outputs.contains(output) { outputs.append(output) }
        }
        // What `run --verbose` hides, `plan` hides too: a variable a header uses may be in a
        // path's query or be the hostname.
        let redactor = Redactor(manifest: manifest)
        baseURL = redactor.redact(baseURL)
        hostnameNote = hostnameNote.map(redactor.redact)
        if let planner = try? OutputPlanner(manifest: manifest, output: nil, format: nil, shard: nil) {
            layouts = planner.targets.map { ($0.path, $0.layout.names, $0.rejects?.path) }
        }
        for spec in ([manifest.output] + manifest.requests.map(\.output)).compactMap({ $0 }) {
            if let encrypt = spec.encrypt, !encryption.contains(where: { $0.output == spec.path }) {
                let found = OpenPGPEncryptor.fingerprints(of: encrypt.recipients, signing: encrypt.sign)
                encryption.append((spec.path, found.recipients.map { $0 ?? "?" }, found.signing ?? encrypt.sign.map { _ in "?" }))
            }
            if let deliver = spec.deliver, !deliveries.contains(where: { $0.output == spec.path }) {
                let target = deliver.destination
                deliveries.append((spec.path, redactor.redact("sftp://\(deliver.user)@\(target.hostForURL):\(target.port)\(target.folder)"), deliver.knownHosts))
            }
        }
        if let night, let book = try? NightBook(manifest: manifest, night: night), !book.isEmpty {
            self.night = night.date
            for template in book.templates {
                nights.append((template, book.expand(template, template: template), book.number(of: template),
                               Plan.state(of: book.record(of: template))))
            }
        }
        for index in entries.indices {
            entries[index].headers = entries[index].headers.map { header in
                (header.name, Redactor.carriesCredential(header.name) || redactor.redact(header.value) != header.value ? "<secret>" : header.value)
            }
            entries[index].url = redactor.redact(entries[index].url)
            entries[index].name = redactor.redact(entries[index].name)
            entries[index].problem = entries[index].problem.map(redactor.redact)
        }
    }

    /// What a night's ledger says of it, in words.
    private static func state(of record: NightRecord?) -> String {
        guard let record else { return "a new night: it takes this number when its run begins, unless another night begins first" }
        if let delivery = record.delivery { return "delivered\(record.deliveredWhere) at \(delivery.at)" }
        if record.handing != nil { return "being put in place on the server since \(record.deliveredAt), its answer not recorded" }
        guard record.isFinished else { return "begun, not finished" }
        let rows = record.rows.map { " (\($0.data) rows, \($0.notOk) not ok)" } ?? ""
        return "finished at \(record.finished)\(rows)\(record.complete ? "" : ", not whole: not delivered")"
    }

    /// The plan as text: `base_url: URL`, then `METHOD URL name` per request.
    package var text: String {
        var lines = ["base_url: \(baseURL)"]
        for entry in entries {
            if let problem = entry.problem {
                lines.append("\(entry.method) - \(entry.name)  [not sent: \(problem)]")
            } else {
                lines.append("\(entry.method) \(entry.url) \(entry.name)")
            }
        }
        for summary in data where summary.rows > Plan.rowsShown {
            lines.append("... request \(summary.request): \(summary.rows) rows from \(summary.file) (first \(Plan.rowsShown) shown)")
        }
        if let hostnameNote { lines.append("note: \(hostnameNote)") }
        if let calls { lines.append("vault_api: \(calls.text)") }
        if let pace { lines.append("pace: \(pace)") }
        if let headers = entries.first(where: { $0.problem == nil })?.headers, !headers.isEmpty {
            lines.append("headers: " + headers.map { "\($0.name): \($0.value)" }.joined(separator: ", "))
        }
        for summary in data { lines.append("data: \(summary.file): \(summary.rows) row\(summary.rows == 1 ? "" : "s") (request \(summary.request))") }
        for output in outputs {
            guard let layout = layouts.first(where: { $0.path == output || PrivateFile.canonical($0.path) == PrivateFile.canonical(output) }) else {
                lines.append("output: \(output)")
                continue
            }
            lines.append("output: \(output) (columns: \(layout.columns.joined(separator: ", "))\(layout.rejects.map { "; rejects: \($0)" } ?? ""))")
        }
        for entry in encryption {
            lines.append("encrypt: \(entry.output) to \(entry.recipients.joined(separator: ", "))\(entry.signing.map { ", signed by \($0)" } ?? "")")
        }
        for entry in deliveries {
            lines.append("deliver: \(entry.output) to \(entry.target) (host key from \(entry.knownHosts))")
        }
        for night in nights {
            lines.append("night: \(self.night.map(\.description) ?? ""): \(night.file) (sequence \(night.seq)): \(night.state)")
        }
        // Names and URLs come from data rows: no line break or escape sequence in them reaches the terminal.
        return lines.map(TerminalText.escaped).joined(separator: "\n") + "\n"
    }

    /// The plan as one JSON object.
    package var json: String {
        var members: [JSONMember] = [JSONMember("base_url", .string(baseURL))]
        if let hostnameNote { members.append(JSONMember("note", .string(hostnameNote))) }
        members.append(JSONMember("requests", .array(entries.map { entry in
            var fields = [JSONMember("name", .string(entry.name)), JSONMember("method", .string(entry.method)),
                          JSONMember("url", entry.problem == nil ? .string(entry.url) : .null),
                          JSONMember("headers", .object(entry.headers.map { JSONMember($0.name, .string($0.value)) }))]
            if let problem = entry.problem { fields.append(JSONMember("error", .string(problem))) }
            return .object(fields)
        })))
        if let pace { members.append(JSONMember("pace", .string(pace))) }
        if let calls {
            members.append(JSONMember("vault_api", .object([
                JSONMember("rows", .number(String(calls.rows))), JSONMember("aliases", .number(String(calls.aliases))),
                JSONMember("calls", .number(String(calls.calls))), JSONMember("aliases_per_call", .number(String(calls.perCall))),
            ])))
        }
        members.append(JSONMember("data", .array(data.map {
            .object([JSONMember("request", .number(String($0.request))), JSONMember("file", .string($0.file)),
                     JSONMember("rows", .number(String($0.rows)))])
        })))
        members.append(JSONMember("outputs", .array(outputs.map { .string($0) })))
        members.append(JSONMember("encryption", .array(encryption.map { entry in
            .object([JSONMember("output", .string(entry.output)), JSONMember("recipients", .array(entry.recipients.map { .string($0) })),
                     JSONMember("signing", entry.signing.map { .string($0) } ?? .null)])
        })))
        members.append(JSONMember("deliveries", .array(deliveries.map { entry in
            .object([JSONMember("output", .string(entry.output)), JSONMember("target", .string(entry.target)),
                     JSONMember("known_hosts", .string(entry.knownHosts))])
        })))
        members.append(JSONMember("nights", .array(nights.map { night in
            .object([JSONMember("output", .string(night.output)), JSONMember("date", .string(self.night?.description ?? "")),
                     JSONMember("file", .string(night.file)), JSONMember("seq", .number(String(night.seq))),
                     JSONMember("state", .string(night.state))])
        })))
        members.append(JSONMember("layouts", .array(layouts.map { layout in
            .object([JSONMember("path", .string(layout.path)), JSONMember("columns", .array(layout.columns.map { .string($0) })),
                     JSONMember("rejects", layout.rejects.map { .string($0) } ?? .null)])
        })))
        return JSONValue.object(members).compactText + "\n"
    }
}
