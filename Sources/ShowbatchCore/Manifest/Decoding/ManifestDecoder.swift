import Foundation
import ShowbatchYAML

/// Turns a YAML node tree into a `Manifest`, recording a diagnostic for each problem.
struct ManifestDecoder {
    let source: SourceFile
    let directory: String
    let environment: [String: String]
    /// Problems found, rendered only at the end: most manifests have none, and rendering needs
    /// the spans of every secret, which a valid manifest never has to find.
    var problems: [(mark: Mark, message: String)] = []
    /// Requests already decoded while parsing, one per item of `list`.
    var predecoded: (list: Node, requests: [RequestSpec], items: Int, problems: [(mark: Mark, message: String)])?
    /// The hash of the manifest's bytes, when it was computed ahead.
    var contentHash: UInt64?
    /// Names of the requests decoded so far, with their lines.
    var requestNames: [String: Int] = [:]
    /// Compiled transforms by pattern and template: the same label set is often repeated per request.
    var transforms: [String: RegexTransform] = [:]

    static let topKeys = ManifestReference.keys(under: "")
    static let requestKeys = ManifestReference.keys(under: "requests")
    static let resultColumns = ["request", "status", "http_status", "attempts", "error"]

    init(source: SourceFile, directory: String, environment: [String: String]) {
        self.source = source
        self.directory = directory
        self.environment = environment
    }

    mutating func problem(_ mark: Mark, _ message: String) {
        problems.append((mark, message))
    }

    /// The problems as diagnostics in file order (whatever order the checks ran in), with header,
    /// payload and alias values redacted from every quoted line.
    func diagnostics(_ root: Node) -> [Diagnostic] {
        let sensitive = Self.sensitiveSpans(root)
        return problems.enumerated().sorted { ($0.element.mark, $0.offset) < ($1.element.mark, $1.offset) }.map {
            Diagnostic(source: source, mark: $0.element.mark, message: $0.element.message, redacting: sensitive[$0.element.mark.line] ?? [])
        }
    }

    /// Source spans of header, payload and alias values by line: never quoted in errors.
    static func sensitiveSpans(_ root: Node) -> [Int: [SourceSpan]] {
        var sensitive: [Int: [SourceSpan]] = [:]
        func scalars(_ node: Node?) {
            guard let node else { return }
            switch node.content {
            case .scalar:
                for line in node.mark.line...max(node.mark.line, node.end.line) {
                    sensitive[line, default: []].append(node.span)
                }
            case .sequence(let items): items.forEach { scalars($0) }
            case .mapping(let pairs): pairs.forEach { scalars($0.value) }
            }
        }
        scalars(root.value(forKey: "headers"))
        scalars(root.value(forKey: "emulator")?.value(forKey: "aliases"))
        for request in root.value(forKey: "requests")?.sequence.map(Array.init) ?? [] {
            scalars(request.value(forKey: "headers"))
            scalars(request.value(forKey: "payload"))
        }
        return sensitive
    }

    // MARK: Typed readers

    /// The entries of a mapping by key, reporting unknown keys with the closest known one.
    mutating func fields(_ node: Node, _ context: @autoclosure () -> String, known: [String]) -> KnownKeys? {
        guard node.kind == .mapping else {
            problem(node.mark, "\(context()) must be a mapping; found \(node.typeName)")
            return nil
        }
        for keyNode in node.unknownKeys(known) {
            let key = keyNode.text
            let context = context()
            if let suggestion = closest(key, in: known) {
                problem(keyNode.mark, "unknown key \"\(key)\" in \(context); did you mean \"\(suggestion)\"?")
            } else {
                problem(keyNode.mark, "unknown key \"\(key)\" in \(context); expected \(choices(known))")
            }
        }
        return KnownKeys(node: node)
    }

    /// A scalar's text for identifier-like values: strings, and numbers as written.
    mutating func text(_ node: Node, _ what: @autoclosure () -> String) -> String? {
        if node.kind == .scalar {
            switch node.value {
            case .string(let text): return text
            case .int, .float: return node.text
            default: break
            }
        }
        problem(node.mark, "\(what()) must be a string; found \(node.typeName)")
        return nil
    }

    mutating func integer(_ node: Node, _ what: String, _ range: ClosedRange<Int>) -> Int? {
        if case .int(let value)? = node.scalar?.value {
            if range.contains(value) { return value }
            problem(node.mark, "\(what) must be from \(range.lowerBound) to \(range.upperBound); found \(value)")
            return nil
        }
        problem(node.mark, "\(what) must be an integer from \(range.lowerBound) to \(range.upperBound); found \(node.typeName)")
        return nil
    }

    mutating func bool(_ node: Node, _ what: String) -> Bool? {
        if case .bool(let value)? = node.scalar?.value { return value }
        problem(node.mark, "\(what) must be true or false; found \(node.typeName)")
        return nil
    }

    mutating func duration(_ node: Node, _ what: String) -> Duration? {
        if let scalar = node.scalar {
            switch scalar.value {
            case .int, .float, .string:
                if let value = Units.duration(scalar.text) { return value }
                problem(node.mark, "\(what) must be a positive duration such as 500ms, 30s or 2m; found \"\(scalar.text)\"")
                return nil
            default: break
            }
        }
        problem(node.mark, "\(what) must be a duration such as 500ms, 30s or 2m; found \(node.typeName)")
        return nil
    }

    /// A template from a string value, with environment references resolved.
    /// `sensitive` values (headers, payload) are never quoted in messages.
    mutating func template(_ node: Node, _ what: @autoclosure () -> String, allowRow: Bool, sensitive: Bool = false) -> Template? {
        guard let raw = text(node, what()) else { return nil }
        var template: Template
        do {
            template = try Template(parsing: raw)
        } catch {
            problem(node.mark, "\(what()): \(sensitive ? "the value has a malformed ${…} reference" : error.message)")
            return nil
        }
        for name in template.resolveEnvironment(environment) {
            problem(node.mark, "environment variable \(name) is not set (used in \(what()))")
        }
        if !allowRow {
            for column in template.rowColumns {
                problem(node.mark, "${row.\(column)} in \(what()) needs a request with \"each\"")
            }
            if template.parts.contains(.index) {
                problem(node.mark, "${index} in \(what()) needs a request with \"each\"")
            }
        }
        return template
    }

    // MARK: The manifest

    mutating func decode(_ root: Node) -> Manifest {
        var manifest = Manifest(file: source.name, directory: directory)
        manifest.contentHash = contentHash ?? fnv1a(source.bytes)
        guard let top = fields(root, "the manifest", known: Self.topKeys) else { return manifest }

        if let node = top["version"], let version = integer(node, "version", 1...Int.max) {
            if version > 1 {
                problem(node.mark, "version \(version) is newer than this showbatch understands; expected 1")
            }
            manifest.version = version
        }
        if let node = top["vault"] {
            if let vault = text(node, "vault") {
                if Endpoint.isValidVault(vault) {
                    manifest.vault = vault
                } else {
                    problem(node.mark, "vault \"\(vault)\" is not valid; expected letters and digits only, such as tntaq8uft80")
                }
            }
        } else {
            problem(root.mark, "missing required key \"vault\" in the manifest")
        }
        if let node = top["environment"], let environment = text(node, "environment") {
            if Endpoint.isValidEnvironment(environment) {
                manifest.environment = environment
            } else {
                problem(node.mark, "environment \"\(environment)\" is not valid; expected sandbox, live or live-<region>")
            }
        }
        if let node = top["data_region"], let region = text(node, "data_region") {
            if !Endpoint.isValidRegion(region) {
                problem(node.mark, "data_region \"\(region)\" is not valid; expected letters and digits in dash-separated parts, such as eu-1")
            } else if Endpoint.environmentHasRegion(manifest.environment) {
                problem(node.mark, "data_region is given but environment \"\(manifest.environment)\" already names a region; give one or the other")
            } else {
                manifest.dataRegion = region
            }
        }
        if let node = top["route_id"], let route = text(node, "route_id") {
            if Endpoint.isValidRegion(route) {
                manifest.routeID = route
            } else {
                problem(node.mark, "route_id \"\(route)\" is not valid; expected letters, digits and dashes")
            }
        }
        if let node = top["hostname"], let raw = text(node, "hostname") {
            do {
                manifest.hostname = try Endpoint.normalizeHostname(raw)
            } catch {
                switch error {
                case .httpScheme: problem(node.mark, "hostname \"\(raw)\" uses http; only https is supported")
                case .port: problem(node.mark, "hostname \"\(raw)\" has a port; only the default https port is supported")
                case .empty, .invalid: problem(node.mark, "hostname \"\(raw)\" is not a valid host name")
                }
            }
        }
        if let node = top["hostname_check"], let check = bool(node, "hostname_check") {
            manifest.hostnameCheck = check
        }
        if let node = top["satellite_port"], let port = integer(node, "satellite_port", 1...65535) {
            if manifest.environment != "sandbox" || manifest.dataRegion != nil || manifest.hostname != nil || manifest.routeID != nil {
                problem(node.mark, "satellite_port works only with environment: sandbox and no data_region, route_id or hostname")
            } else {
                manifest.satellitePort = port
            }
        }
        if let node = top["headers"] { manifest.headers = headers(node, "headers", allowRow: false) }
        if let node = top["concurrency"], let value = integer(node, "concurrency", 1...1024) {
            manifest.concurrency = value
        }
        if let node = top["rate_limit"] {
            if let scalar = node.scalar, let rate = Units.rate(scalar.text) {
                manifest.rateLimit = rate
            } else {
                problem(node.mark, "rate_limit must be N/s or N/m, such as 50/s; found \(node.scalar.map { "\"\($0.text)\"" } ?? node.typeName)")
            }
        }
        if let node = top["timeout"], let value = duration(node, "timeout") { manifest.timeout = value }
        if let node = top["transport"], let value = text(node, "transport") {
            if let kind = TransportKind(rawValue: value.lowercased()) {
                manifest.transport = kind
            } else {
                problem(node.mark, "transport \"\(value)\" is not valid; expected curl or urlsession")
            }
        }
        if let node = top["retry"] { manifest.retry = retry(node) }
        if let node = top["output"] { manifest.output = output(node, "output") }
        if let node = top["emulator"] { manifest.emulator = emulator(node) }
        if let node = top["requests"] {
            manifest.requests = requests(node)
        } else {
            problem(root.mark, "missing required key \"requests\" in the manifest")
        }
        return manifest
    }

    mutating func headers(_ node: Node, _ context: @autoclosure () -> String, allowRow: Bool) -> [HeaderField] {
        guard let pairs = node.mapping else {
            problem(node.mark, "\(context()) must be a mapping of header names to values; found \(node.typeName)")
            return []
        }
        var result: [HeaderField] = []
        var seen: [(name: String, line: Int)] = []
        for pair in pairs {
            guard pair.key.kind == .scalar else { continue }
            let name = pair.key.text
            if !isToken(name) {
                problem(pair.key.mark, "header name \"\(name)\" is not valid; expected letters, digits and !#$%&'*+-.^_`|~")
                continue
            }
            let lowercased = name.lowercased()
            if let line = seen.first(where: { $0.name == lowercased })?.line {
                problem(pair.key.mark, "header \"\(name)\" is given twice (header names ignore case); first at line \(line)")
                continue
            }
            seen.append((lowercased, pair.key.mark.line))
            func what() -> String { "\(context()).\(name)" }
            guard let scalar = pair.value.scalar, scalar.value != .null, !isBool(scalar.value) else {
                problem(pair.value.mark, "\(what()) must be a string; found \(pair.value.typeName)")
                continue
            }
            guard let value = template(pair.value, what(), allowRow: allowRow, sensitive: true) else { continue }
            if value.parts.contains(where: { if case .literal(let text) = $0 { return text.utf8.contains { $0 == 13 || $0 == 10 } } else { return false } }) {
                problem(pair.value.mark, "\(what()) contains a line break, which a header value cannot hold")
                continue
            }
            result.append(HeaderField(name: name, value: value))
        }
        return result
    }

    func isBool(_ value: ScalarValue) -> Bool {
        if case .bool = value { return true }
        return false
    }

    func isToken(_ name: String) -> Bool {
        !name.isEmpty && name.unicodeScalars.allSatisfy { scalar in
            Endpoint.isAlphanumericASCII(scalar) || "!#$%&'*+-.^_`|~".unicodeScalars.contains(scalar)
        }
    }

    mutating func retry(_ node: Node) -> RetryPolicy {
        var policy = RetryPolicy()
        guard let map = fields(node, "retry", known: Self.retryKeys) else { return policy }
        if let node = map["attempts"], let value = integer(node, "retry.attempts", 1...100) { policy.attempts = value }
        if let node = map["backoff"], let value = duration(node, "retry.backoff") { policy.backoff = value }
        if let node = map["max_backoff"], let value = duration(node, "retry.max_backoff") { policy.maxBackoff = value }
        if let node = map["on"] {
            if let items = node.sequence {
                policy.statuses = []
                policy.network = false
                policy.timeout = false
                for item in items {
                    switch item.scalar?.value {
                    case .int(let status)? where (100...599).contains(status): policy.statuses.insert(status)
                    case .string("network")?: policy.network = true
                    case .string("timeout")?: policy.timeout = true
                    default:
                        problem(item.mark, "retry.on holds HTTP statuses (100-599), network or timeout; found \(item.scalar.map { "\"\($0.text)\"" } ?? item.typeName)")
                    }
                }
            } else {
                problem(node.mark, "retry.on must be a list such as [429, 503, network, timeout]; found \(node.typeName)")
            }
        }
        return policy
    }

    mutating func output(_ node: Node, _ context: @autoclosure () -> String) -> OutputSpec? {
        guard let map = fields(node, context(), known: Self.outputKeys) else { return nil }
        guard let pathNode = map["path"] else {
            problem(node.mark, "missing required key \"path\" in \(context())")
            return nil
        }
        guard let path = text(pathNode, "\(context()).path"), !path.isEmpty else { return nil }
        var spec = OutputSpec(path: resolve(path))
        if let formatNode = map["format"], let format = text(formatNode, "\(context()).format") {
            if let value = OutputFormat(rawValue: format.lowercased()) {
                spec.format = value
            } else {
                problem(formatNode.mark, "\(context()).format \"\(format)\" is not valid; expected csv, json or jsonl")
            }
        } else if OutputFormat.fromExtension(path) == nil {
            problem(pathNode.mark, "cannot tell the format of \"\(path)\" from its extension; add format: csv, json or jsonl")
        }
        if let csvNode = map["csv"], let csv = fields(csvNode, "\(context()).csv", known: Self.csvKeys),
           let escape = csv["escape_formulas"], let value = bool(escape, "\(context()).csv.escape_formulas") {
            spec.escapeFormulas = value
        }
        return spec
    }

    func resolve(_ path: String) -> String {
        if path.hasPrefix("/") || directory == "." { return path }
        return (directory as NSString).appendingPathComponent(path)
    }

    static let emulatorKeys = ManifestReference.keys(under: "emulator")
    // Computed once: a manifest can hold tens of thousands of labels.
    static let retryKeys = ManifestReference.keys(under: "retry")
    static let outputKeys = ManifestReference.keys(under: "output")
    static let csvKeys = ManifestReference.keys(under: "output.csv")
    static let eachKeys = ManifestReference.keys(under: "requests[].each")
    static let labelKeys = ManifestReference.keys(under: "requests[].labels.<name>")
    static let transformKeys = ManifestReference.keys(under: "requests[].labels.<name>.transform")
    static let maskKeys = ManifestReference.keys(under: "requests[].labels.<name>.mask")

    mutating func emulator(_ node: Node) -> EmulatorSpec? {
        guard let map = fields(node, "emulator", known: Self.emulatorKeys) else { return nil }
        var spec = EmulatorSpec()
        if let aliases = map["aliases"] {
            if let pairs = aliases.mapping {
                var table: [String: String] = [:]
                for pair in pairs {
                    guard let alias = pair.key.scalar?.text, let value = pair.value.scalar, value.value != .null else {
                        problem(pair.value.mark, "emulator.aliases maps aliases to string values; found \(pair.value.typeName)")
                        continue
                    }
                    table[alias] = value.text
                }
                spec.aliases = .inline(table)
            } else if let path = aliases.scalar?.text, case .string = aliases.scalar?.value {
                let resolved = resolve(path)
                if !FileManager.default.isReadableFile(atPath: resolved) {
                    problem(aliases.mark, "emulator.aliases file \"\(path)\" does not exist or cannot be read")
                }
                spec.aliases = .file(resolved)
            } else {
                problem(aliases.mark, "emulator.aliases must be a mapping of alias to value or a file path; found \(aliases.typeName)")
            }
        }
        if let latency = map["latency"] {
            if let text = latency.scalar?.text, let (base, jitter) = Units.latency(text) {
                spec.faults.latency = base
                spec.faults.jitter = jitter
            } else {
                problem(latency.mark, "emulator.latency must be a duration with optional jitter, such as 50ms or 50ms±10ms")
            }
        }
        for (key, keyPath) in [("fail_rate", \EmulatorSpec.faults.failRate), ("drop_rate", \.faults.dropRate), ("malformed_rate", \.faults.malformedRate)] {
            guard let value = map[key] else { continue }
            switch value.scalar?.value {
            case .float(let rate)? where (0...1).contains(rate): spec[keyPath: keyPath] = rate
            case .int(let rate)? where (0...1).contains(rate): spec[keyPath: keyPath] = Double(rate)
            default: problem(value.mark, "emulator.\(key) must be a probability from 0 to 1, such as 0.05")
            }
        }
        if let value = map["fail_status"], let status = integer(value, "emulator.fail_status", 100...599) {
            spec.faults.failStatus = status
        }
        if let value = map["throttle"] {
            if let text = value.scalar?.text, let rate = Units.rate(text) {
                spec.faults.throttle = rate
            } else {
                problem(value.mark, "emulator.throttle must be N/s or N/m, such as 100/s")
            }
        }
        if let value = map["seed"], let seed = integer(value, "emulator.seed", 0...Int.max) {
            spec.faults.seed = UInt64(seed)
        }
        return spec
    }

    // MARK: Requests

    mutating func requests(_ node: Node) -> [RequestSpec] {
        guard let items = node.sequence else {
            problem(node.mark, "requests must be a list of requests; found \(node.typeName)")
            return []
        }
        if items.isEmpty { problem(node.mark, "requests is empty; list at least one request") }
        // Only the streamed list itself was decoded ahead (not, say, an alias of it).
        if let predecoded, predecoded.list == node, predecoded.items == items.count {
            self.predecoded = nil
            problems += predecoded.problems
            return predecoded.requests
        }
        var result: [RequestSpec] = []
        result.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            if let request = listedRequest(item, number: index + 1) { result.append(request) }
        }
        return result
    }

    /// Decodes item `number` of the requests list, checking its name against the earlier items'.
    mutating func listedRequest(_ item: Node, number: Int) -> RequestSpec? {
        guard let request = request(item, number: number) else { return nil }
        if request.each == nil, case .literal(let name)? = request.name.parts.first, request.name.parts.count == 1 {
            if let line = requestNames[name] {
                problem(item.value(forKey: "name")?.mark ?? item.mark, "request name \"\(name)\" is used twice; first at line \(line)")
            } else {
                requestNames[name] = item.mark.line
            }
        }
        return request
    }

    mutating func request(_ node: Node, number: Int) -> RequestSpec? {
        // Names for messages are made only when a message is: most requests have none.
        func context() -> String { "request \(number)" }
        guard let map = fields(node, context(), known: Self.requestKeys) else { return nil }
        var each: DataSource?
        if let eachNode = map["each"] { each = self.each(eachNode, context()) }
        let dataDriven = map["each"] != nil
        var spec = RequestSpec(name: Template(literal: ""), path: Template(literal: ""), mark: node.mark)
        spec.each = each
        var rowTemplates: [(Template, Mark)] = []
        if let nameNode = map["name"] {
            if let name = template(nameNode, "\(context()) name", allowRow: dataDriven) {
                if name.parts.isEmpty { problem(nameNode.mark, "\(context()) name is empty") }
                spec.name = name
                if dataDriven { rowTemplates.append((name, nameNode.mark)) }
            }
        } else {
            problem(node.mark, "missing required key \"name\" in \(context())")
        }
        let literalName = spec.name.parts.count == 1 && !spec.name.needsRow ? spec.name.expand(row: nil) : nil
        func label() -> String { literalName.map { "request \"\($0)\"" } ?? context() }
        if let pathNode = map["path"] {
            if let path = template(pathNode, "\(label()) path", allowRow: dataDriven) {
                spec.path = path
                if dataDriven { rowTemplates.append((path, pathNode.mark)) }
            }
        } else {
            problem(node.mark, "missing required key \"path\" in \(label())")
        }
        if let methodNode = map["method"], let method = text(methodNode, "\(label()) method") {
            if let value = HTTPMethod(rawValue: method.uppercased()) {
                spec.method = value
            } else {
                problem(methodNode.mark, "method \"\(method)\" is not valid; expected get, post, put, patch or delete")
            }
        }
        if let headersNode = map["headers"] {
            spec.headers = headers(headersNode, "\(label()) headers", allowRow: dataDriven)
            if dataDriven { for field in spec.headers { rowTemplates.append((field.value, headersNode.mark)) } }
        }
        if let payloadNode = map["payload"] {
            if payloadNode.mapping == nil {
                problem(payloadNode.mark, "\(label()) payload must be a mapping (sent as a JSON object); found \(payloadNode.typeName)")
            } else if spec.method == .get {
                problem(payloadNode.mark, "\(label()) uses method get, which cannot carry a payload; use post or remove the payload")
            } else {
                let payload = self.payload(payloadNode, "\(label()) payload", allowRow: dataDriven)
                spec.payload = payload
                if dataDriven { for template in payload.templates { rowTemplates.append((template, payloadNode.mark)) } }
            }
        }
        if let labelsNode = map["labels"] { spec.labels = labels(labelsNode, label()) }
        if let outputNode = map["output"] { spec.output = output(outputNode, "\(label()) output") }
        // Without "each" a row reference is already a problem, so there are no columns to read.
        if dataDriven { spec.rowColumns = spec.referencedColumns() }
        // Every referenced column must be in the CSV header before anything is sent.
        if let each, each.kind == .csv, let columns = csvHeader(each, map["each"]!) {
            var reported = Set<String>()
            for (template, mark) in rowTemplates {
                for column in template.rowColumns where !columns.contains(column) && !reported.contains(column) {
                    reported.insert(column)
                    var message = "column \"\(column)\" is not in the header of \(each.name)"
                    if let suggestion = closest(column, in: columns) { message += "; did you mean \"\(suggestion)\"?" }
                    else { message += "; it has \(choices(columns))" }
                    problem(mark, message)
                }
            }
        }
        return spec
    }

    mutating func each(_ node: Node, _ context: @autoclosure () -> String) -> DataSource? {
        guard let map = fields(node, "\(context()) each", known: Self.eachKeys) else { return nil }
        let chosen = map.pairs.filter { pair in Self.eachKeys.contains { pair.key.hasText($0) } }
        guard chosen.count == 1, let pair = chosen.first else {
            if chosen.isEmpty { problem(node.mark, "\(context()) each needs csv: FILE or jsonl: FILE") }
            else { problem(node.mark, "\(context()) each takes one of csv or jsonl, not both") }
            return nil
        }
        let key = pair.key.text
        guard let path = text(pair.value, "\(context()) each.\(key)") else { return nil }
        let resolved = resolve(path)
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: resolved, isDirectory: &isDirectory) || isDirectory.boolValue
            || !FileManager.default.isReadableFile(atPath: resolved) {
            problem(pair.value.mark, "data file \"\(path)\" does not exist or cannot be read")
            return nil
        }
        return DataSource(kind: key == "csv" ? .csv : .jsonl, path: resolved, name: path)
    }

    mutating func csvHeader(_ source: DataSource, _ node: Node) -> [String]? {
        do {
            let reader = try DataRowReader(kind: .csv, path: source.path, name: source.name)
            defer { reader.close() }
            return reader.columns
        } catch {
            problem(node.mark, "data file \(error)")
            return nil
        }
    }

    mutating func payload(_ node: Node, _ context: @autoclosure () -> String, allowRow: Bool) -> PayloadValue {
        switch node.content {
        case .mapping(let pairs):
            var members: [(key: String, value: PayloadValue)] = []
            for pair in pairs {
                guard let key = pair.key.scalar?.text else { continue }
                members.append((key, payload(pair.value, "\(context()).\(key)", allowRow: allowRow)))
            }
            return .object(members)
        case .sequence(let items):
            return .array(items.enumerated().map { payload($0.element, "\(context()).\($0.offset)", allowRow: allowRow) })
        case .scalar(let scalar):
            switch scalar.value {
            case .null: return .null
            case .bool(let value): return .bool(value)
            case .int(let value): return .number(String(value))
            case .float(let value):
                guard value.isFinite else {
                    problem(node.mark, "\(context()) is not a number JSON can hold")
                    return .null
                }
                if case .number(let text)? = try? JSONParser.parse(Array(scalar.text.utf8)) { return .number(text) }
                return .number("\(value)")
            case .string:
                return .string(template(node, context(), allowRow: allowRow, sensitive: true) ?? Template(literal: ""))
            }
        }
    }

    mutating func labels(_ node: Node, _ context: @autoclosure () -> String) -> [LabelBinding] {
        guard let pairs = node.mapping else {
            problem(node.mark, "\(context()) labels must be a mapping of label names to content paths; found \(node.typeName)")
            return []
        }
        var result: [LabelBinding] = []
        for pair in pairs {
            guard let name = pair.key.scalar?.text else { continue }
            if name.isEmpty {
                problem(pair.key.mark, "label names cannot be empty")
                continue
            }
            if Self.resultColumns.contains(name) {
                problem(pair.key.mark, "label \"\(name)\" has the name of a result column; rename it (result columns are \(choices(Self.resultColumns)))")
                continue
            }
            if let binding = label(name, pair.value) { result.append(binding) }
        }
        return result
    }

    mutating func contentPath(_ node: Node, _ what: @autoclosure () -> String) -> ContentPath? {
        guard let scalar = node.scalar, case .string(let text) = scalar.value else {
            problem(node.mark, "\(what()) must be a content path such as json.card_number; found \(node.typeName)")
            return nil
        }
        do {
            return try ContentPath(parsing: text)
        } catch {
            problem(node.mark, error.message)
            return nil
        }
    }

    mutating func label(_ name: String, _ node: Node) -> LabelBinding? {
        func what() -> String { "label \"\(name)\"" }
        if node.kind == .scalar {
            guard let path = contentPath(node, what()) else { return nil }
            return LabelBinding(name: name, path: path, transforms: [], mask: nil)
        }
        guard let map = fields(node, what(), known: Self.labelKeys) else { return nil }
        guard let pathNode = map["path"] else {
            problem(node.mark, "missing required key \"path\" in \(what())")
            return nil
        }
        guard let path = contentPath(pathNode, "\(what()) path") else { return nil }
        var binding = LabelBinding(name: name, path: path, transforms: [], mask: nil)
        if let transformNode = map["transform"] {
            if let items = transformNode.sequence {
                for item in items {
                    guard let step = fields(item, "\(what()) transform", known: Self.transformKeys) else { continue }
                    guard let regexNode = step["regex"], let templateNode = step["template"] else {
                        problem(item.mark, "each transform of \(what()) needs regex and template")
                        continue
                    }
                    guard let pattern = text(regexNode, "\(what()) transform regex"),
                          let template = text(templateNode, "\(what()) transform template") else { continue }
                    let key = pattern + "\u{0}" + template
                    if let compiled = transforms[key] {
                        binding.transforms.append(compiled)
                        continue
                    }
                    do {
                        let compiled = try RegexTransform(pattern: pattern, template: template)
                        transforms[key] = compiled
                        binding.transforms.append(compiled)
                    } catch {
                        problem(regexNode.mark, "\(what()): \(error.message)")
                    }
                }
            } else {
                problem(transformNode.mark, "\(what()) transform must be a list of {regex, template}; found \(transformNode.typeName)")
            }
        }
        if let maskNode = map["mask"] { binding.mask = mask(maskNode, what()) }
        return binding
    }

    mutating func mask(_ node: Node, _ what: @autoclosure () -> String) -> Mask? {
        if case .bool(let on)? = node.scalar?.value { return on ? Mask() : nil }
        guard let map = fields(node, "\(what()) mask", known: Self.maskKeys) else { return nil }
        var mask = Mask()
        if let symbolNode = map["symbol"], let symbol = text(symbolNode, "\(what()) mask symbol") {
            if symbol.isEmpty {
                mask.symbol = nil
            } else if symbol.count == 1 {
                mask.symbol = symbol.first
            } else {
                problem(symbolNode.mark, "\(what()) mask symbol must be one character or \"\"; found \"\(symbol)\"")
            }
        }
        if let rangesNode = map["ranges"] {
            guard let items = rangesNode.sequence else {
                problem(rangesNode.mark, "\(what()) mask ranges must be a list of [start, end] pairs; found \(rangesNode.typeName)")
                return mask
            }
            for item in items {
                guard let bounds = item.sequence, bounds.count == 2 else {
                    problem(item.mark, "\(what()) mask range must be [start, end] (integers or null); found \(item.typeName)")
                    continue
                }
                var values: [Int?] = []
                for bound in bounds {
                    switch bound.scalar?.value {
                    case .int(let value)?: values.append(value)
                    case .null?: values.append(nil)
                    default:
                        problem(bound.mark, "\(what()) mask range bounds must be integers or null; found \(bound.typeName)")
                    }
                }
                if values.count == 2 { mask.ranges.append(Mask.Range(start: values[0], end: values[1])) }
            }
        }
        return mask
    }
}

/// A mapping whose keys were checked against the known ones. Mappings are small, so a linear
/// byte comparison beats hashing or making a String per key.
struct KnownKeys {
    let node: Node

    subscript(key: String) -> Node? {
        node.value(forKey: key)
    }

    /// The entries of the mapping.
    var pairs: Node.Pairs { node.mapping! }
}
