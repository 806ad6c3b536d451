import Foundation
import ShowbatchBasics
import ShowbatchYAML

// Run settings and the retry and emulator sections.
extension ManifestDecoder {
    /// A job's name (`name`, `metrics.job`): printable, one line, at most 128 characters.
    private mutating func jobName(_ node: Node, _ what: String) -> String? {
        guard let value = text(node, what) else { return nil }
        guard !value.isEmpty, value.count <= 128, !value.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) else {
            problem(node.mark, "\(what) must be a name of 1 to 128 characters on one line")
            return nil
        }
        return value
    }

    /// How the run goes: concurrency, rate limit, timeout and transport.
    mutating func settings(_ top: KnownKeys, into manifest: inout Manifest) {
        if let node = top["concurrency"], let value = integer(node, "concurrency", 1...1024) {
            manifest.concurrency = value
        }
        if let node = top["rate_limit"] {
            if node.scalar == nil {
                problem(node.mark, "rate_limit must be N/s or N/m, such as 50/s; found \(node.typeName)")
            } else if let text = scalarText(node, "rate_limit") {
                if let rate = Units.rate(text) {
                    manifest.rateLimit = rate
                } else {
                    problem(node.mark, "rate_limit must be N/s or N/m, such as 50/s; found \"\(text)\"")
                }
            }
        }
        if let node = top["timeout"], let value = duration(node, "timeout") { manifest.timeout = value }
        if let node = top["connections"], let value = integer(node, "connections", 1...1024) {
            manifest.connections = value
        }
        optionalEnvironment = use == .merge || use == .check
        if let node = top["tls"] { manifest.tls = tls(node) }
        if let node = top["auth"] {
            if node.value(forKey: "username") != nil || node.value(forKey: "password") != nil {
                manifest.basicAuth = basicAuth(node, vaultAPI: manifest.vaultAPI)
            } else {
                manifest.auth = auth(node, vaultAPI: manifest.vaultAPI)
            }
        }
        optionalEnvironment = false
        if let node = top["circuit"] { manifest.circuit = circuit(node) }
        if let node = top["hostname_fallback"], let value = bool(node, "hostname_fallback") { manifest.hostnameFallback = value }
        if let node = top["resume_max_age"], let value = duration(node, "resume_max_age") { manifest.resumeMaxAge = value }
        if let node = top["name"], let value = jobName(node, "name") { manifest.name = value }
        if let node = top["audit"], let map = fields(node, "audit", known: ManifestReference.keys(under: "audit")) {
            if let pathNode = map["path"], let path = text(pathNode, "audit.path"), !path.isEmpty {
                manifest.auditPath = resolve(path)
            } else {
                problem(node.mark, "audit needs path: the file its entries are appended to")
            }
            if let keyNode = map["key"], let key = text(keyNode, "audit.key") {
                environmentSecrets.insert(key)
                if key.utf8.count < 16 {
                    problem(keyNode.mark, "audit.key must be at least 16 characters (32 random bytes in base64: openssl rand -base64 32); it keys the trail's chain")
                } else {
                    manifest.auditKey = SecretBytes(copying: Array(key.utf8))
                }
            }
        }
        if let node = top["metrics"], let map = fields(node, "metrics", known: ManifestReference.keys(under: "metrics")),
           let jobNode = map["job"], let value = jobName(jobNode, "metrics.job") {
            manifest.metricsJob = value
        }
        if let node = top["max_failed"] {
            if let text = node.scalar.flatMap({ _ in scalarText(node, "max_failed") }) {
                if let allowance = FailureAllowance.parse(text) {
                    manifest.maxFailed = allowance
                } else {
                    problem(node.mark, "max_failed must be a number of rows (25) or a percentage of the run's rows (0.1%); found \"\(text)\"")
                }
            } else if node.scalar == nil {
                problem(node.mark, "max_failed must be a number of rows (25) or a percentage of the run's rows (0.1%); found \(node.typeName)")
            }
        }
        if let node = top["transport"], let value = text(node, "transport") {
            if let kind = TransportKind(rawValue: value.lowercased()) {
                manifest.transport = kind
            } else {
                problem(node.mark, value.lowercased() == "urlsession"
                        ? "transport \"\(value)\" is no longer available; curl is the only transport (remove the key, or write curl)"
                        : "transport \"\(value)\" is not valid; expected curl, the only transport")
            }
        }
    }

    static let tlsKeys = ManifestReference.keys(under: "tls")
    static let circuitKeys = ManifestReference.keys(under: "circuit")
    static let authKeys = ManifestReference.keys(under: "auth")

    mutating func circuit(_ node: Node) -> CircuitPolicy {
        var policy = CircuitPolicy()
        guard let map = fields(node, "circuit", known: Self.circuitKeys) else { return policy }
        // At most 60: the rows of a streak wait in the dispatch window (64 rows at least) until it ends.
        if let node = map["failed_rows"], let value = integer(node, "circuit.failed_rows", 0...60) { policy.failedRows = value }
        if let node = map["outage_after"], let value = integer(node, "circuit.outage_after", 0...100) { policy.outageAfter = value }
        if let node = map["max_pause"], let value = duration(node, "circuit.max_pause") { policy.maxPause = value }
        return policy
    }

    /// The `auth` section: client credentials or a token file, not both.
    mutating func auth(_ node: Node, vaultAPI: VaultAPISpec? = nil) -> AuthSpec? {
        guard let map = fields(node, "auth", known: Self.authKeys) else { return nil }
        if vaultAPI?.version == 1 {
            problem(node.mark, "vault_api version 1 takes HTTP Basic: auth needs username and password (the vault's access credentials)")
            return nil
        }
        var header = "Authorization"
        if let node = map["header"], let value = text(node, "auth.header") {
            if isToken(value) { header = value } else { problem(node.mark, "auth.header is not a valid header name; expected letters, digits and !#$%&'*+-.^_`|~") }
        }
        switch (map["token_url"], map["token_file"]) {
        case (nil, nil) where vaultAPI?.version == 2 && map["client_id"] != nil:
            // VGS's own token endpoint.
            return clientCredentials(map, node, url: VaultAPISpec.tokenURL, header: header)
        case (nil, nil):
            problem(node.mark, "auth needs token_url (with client_id and client_secret) or token_file")
            return nil
        case (.some, .some):
            problem(node.mark, "auth takes token_url or token_file, not both")
            return nil
        case (nil, let fileNode?):
            guard let path = text(fileNode, "auth.token_file") else { return nil }
            for key in ["client_id", "client_secret", "scope", "audience", "client_auth"] where map[key] != nil {
                problem(map[key]!.mark, "auth.\(key) goes with token_url, not token_file")
            }
            var spec = AuthSpec(source: .tokenFile(resolve(path)))
            spec.header = header
            return spec
        case (let urlNode?, nil):
            guard let url = text(urlNode, "auth.token_url") else { return nil }
            let lower = url.lowercased()
            let loopback = ["http://127.0.0.1", "http://localhost", "http://[::1]"].contains { lower.hasPrefix($0 + ":") || lower.hasPrefix($0 + "/") || lower == $0 }
            if !lower.hasPrefix("https://") && !loopback {
                problem(urlNode.mark, "auth.token_url must be an https URL (http only on 127.0.0.1 or localhost); the client secret goes to it")
            }
            return clientCredentials(map, node, url: url, header: header)
        }
    }

    /// Client credentials for the token endpoint at `url`.
    private mutating func clientCredentials(_ map: KnownKeys, _ node: Node, url: String, header: String) -> AuthSpec? {
        guard let id = requiredAuthText(map, node, "client_id", "it goes with token_url"),
              let secret = requiredAuthText(map, node, "client_secret", "it goes with token_url") else { return nil }
        var credentials = AuthSpec.ClientCredentials(tokenURL: url, clientID: id, clientSecret: secret)
        if let node = map["scope"] { credentials.scope = text(node, "auth.scope") }
        if let node = map["audience"] { credentials.audience = text(node, "auth.audience") }
        if let node = map["client_auth"], let value = text(node, "auth.client_auth") {
            switch value {
            case "basic": credentials.inBody = false
            case "body": credentials.inBody = true
            default: problem(node.mark, "auth.client_auth \"\(value)\" is not valid; expected basic or body")
            }
        }
        var spec = AuthSpec(source: .clientCredentials(credentials))
        spec.header = header
        return spec
    }

    /// The text of `auth.KEY`; nil, with the problem said at `auth` and `why` it is needed, when
    /// it is missing.
    private mutating func requiredAuthText(_ map: KnownKeys, _ node: Node, _ key: String, _ why: String) -> String? {
        guard let value = map[key] else {
            problem(node.mark, "missing required key \"\(key)\" in auth (\(why))")
            return nil
        }
        return text(value, "auth.\(key)")
    }

    /// `auth: {username, password}`: HTTP Basic, the Vault API v1's.
    mutating func basicAuth(_ node: Node, vaultAPI: VaultAPISpec?) -> BasicCredentials? {
        guard let map = fields(node, "auth", known: Self.authKeys) else { return nil }
        guard vaultAPI?.version == 1 else {
            problem(node.mark, "auth.username and auth.password are HTTP Basic, for vault_api version 1 only; a bearer token comes from token_url or token_file")
            return nil
        }
        for key in ["token_url", "token_file", "client_id", "client_secret", "scope", "audience", "client_auth", "header"] where map[key] != nil {
            problem(map[key]!.mark, "auth.\(key) does not go with username and password")
        }
        guard let username = requiredAuthText(map, node, "username", "username and password go together"),
              let password = requiredAuthText(map, node, "password", "username and password go together") else { return nil }
        if username.contains(":") { problem(map["username"]!.mark, "auth.username cannot hold a colon (HTTP Basic ends the username at it)") }
        return BasicCredentials(username: username, password: password)
    }

    /// The `tls` section: files to trust and to present, each checked to be readable.
    mutating func tls(_ node: Node) -> TLSSettings {
        var settings = TLSSettings()
        guard let map = fields(node, "tls", known: Self.tlsKeys) else { return settings }
        func file(_ key: String, folder: Bool = false) -> String? {
            guard let node = map[key], let path = text(node, "tls.\(key)") else { return nil }
            let resolved = resolve(path)
            // A merge sends nothing: the files may be mounted only where the shards run.
            if use == .merge || use == .check { return resolved }
            if let reason = FileDescriptor.unreadable(resolved, folder: folder) {
                problem(node.mark, "tls.\(key) \"\(path)\" cannot be read: \(reason)")
                return nil
            }
            return resolved
        }
        settings.caFile = file("ca_file")
        settings.caPath = file("ca_path", folder: true)
        settings.clientCertificate = file("client_cert")
        settings.clientKey = file("client_key")
        if (map["client_cert"] == nil) != (map["client_key"] == nil) {
            problem(node.mark, "tls.client_cert and tls.client_key go together; give both or neither")
        }
        return settings
    }

    mutating func retry(_ node: Node) -> RetryPolicy {
        var policy = RetryPolicy()
        guard let map = fields(node, "retry", known: Self.retryKeys) else { return policy }
        if let node = map["attempts"], let value = integer(node, "retry.attempts", 1...100) { policy.attempts = value }
        if let node = map["backoff"], let value = duration(node, "retry.backoff") { policy.backoff.base = value }
        if let node = map["max_backoff"], let value = duration(node, "retry.max_backoff") { policy.backoff.cap = value }
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

    static let emulatorKeys = ManifestReference.keys(under: "emulator")
    static let outageKeys = ManifestReference.keys(under: "emulator.outage")
    static let emulatorAuthKeys = ManifestReference.keys(under: "emulator.auth")
    // Computed once: a manifest can hold tens of thousands of labels.
    static let retryKeys = ManifestReference.keys(under: "retry")
    static let eachKeys = ManifestReference.keys(under: "requests[].each")
    static let labelKeys = ManifestReference.keys(under: "requests[].labels.<name>")
    static let transformKeys = ManifestReference.keys(under: "requests[].labels.<name>.transform")
    static let maskKeys = ManifestReference.keys(under: "requests[].labels.<name>.mask")
    static let expectKeys = ManifestReference.keys(under: "requests[].labels.<name>.expect")

    /// A YAML value as JSON (strings kept as written: `${body.…}` is the emulator's to fill in).
    private func jsonValue(_ node: Node) -> JSONValue {
        if let pairs = node.mapping { return .object(pairs.map { JSONMember($0.key.text, jsonValue($0.value)) }) }
        if let items = node.sequence { return .array(items.map(jsonValue)) }
        switch node.scalar?.value {
        case .bool(let flag)?: return .bool(flag)
        case .int?, .bigInt?, .float?: return .number(node.text)
        case .string(let text)?: return .string(text)
        default: return .null
        }
    }

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
            } else if case .string = aliases.scalar?.value, let path = scalarText(aliases, "emulator.aliases") {
                let resolved = resolve(path)
                if use != .merge && use != .check, let reason = FileDescriptor.unreadable(resolved) {
                    // Not named: the path sits where aliases and their values go, which are never shown.
                    problem(aliases.mark, "emulator.aliases file cannot be read: \(reason)")
                }
                spec.aliases = .file(resolved)
            } else {
                problem(aliases.mark, "emulator.aliases must be a mapping of alias to value or a file path; found \(aliases.typeName)")
            }
        }
        if let response = map["response"] {
            if response.mapping == nil {
                problem(response.mark, "emulator.response must be a mapping: the JSON object the emulator answers, such as {data: {card: \"${body.card}\"}}")
            } else {
                spec.response = jsonValue(response)
            }
        }
        if let latency = map["latency"] {
            if let text = scalarText(latency, "emulator.latency"), let (base, jitter) = Units.latency(text) {
                spec.faults.latency = base
                spec.faults.jitter = jitter
            } else {
                problem(latency.mark, "emulator.latency must be a duration with optional jitter, such as 50ms or 50ms±10ms, each at most 24h")
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
            if let text = scalarText(value, "emulator.throttle"), let rate = Units.rate(text) {
                spec.faults.throttle = rate
            } else {
                problem(value.mark, "emulator.throttle must be N/s or N/m, such as 100/s")
            }
        }
        if let value = map["seed"], let seed = integer(value, "emulator.seed", 0...Int.max) {
            spec.faults.seed = UInt64(seed)
        }
        if let node = map["outage"], let outage = fields(node, "emulator.outage", known: Self.outageKeys) {
            if let after = outage["after"], let count = integer(after, "emulator.outage.after", 0...Int.max) { spec.faults.outageAfter = count }
            if let length = outage["for"], let value = duration(length, "emulator.outage.for") { spec.faults.outageFor = value }
        }
        if let node = map["auth"], let auth = fields(node, "emulator.auth", known: Self.emulatorAuthKeys) {
            var settings = EmulatorAuth()
            if let value = auth["client_id"] { settings.clientID = text(value, "emulator.auth.client_id") }
            if let value = auth["client_secret"] { settings.clientSecret = text(value, "emulator.auth.client_secret") }
            if let value = auth["token_uses"] { settings.tokenUses = integer(value, "emulator.auth.token_uses", 1...Int.max) }
            if let value = auth["expires_in"] { settings.expiresIn = integer(value, "emulator.auth.expires_in", 1...Int.max) }
            spec.auth = settings
        }
        return spec
    }
}
