import Foundation
import ShowbatchYAML

// Run settings and the retry, output and emulator sections.
extension ManifestDecoder {
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
        if let node = top["transport"], let value = text(node, "transport") {
            if let kind = TransportKind(rawValue: value.lowercased()) {
                manifest.transport = kind
            } else {
                problem(node.mark, "transport \"\(value)\" is not valid; expected curl or urlsession")
            }
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
            } else if case .string = aliases.scalar?.value, let path = scalarText(aliases, "emulator.aliases") {
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
        return spec
    }
}
