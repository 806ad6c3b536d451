import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// `--metrics-push URL`: the `--metrics` text, pushed to a Prometheus Pushgateway when the run ends,
/// where a batch job's metrics go when no node_exporter reads a file for it.
///
/// The group is the job's (`job` from `metrics.job`, `name` or the manifest's file name, never the
/// path as typed), with `shard` for a shard, so a run by hand refreshes the scheduled run's
/// series and the shards of one Indexed Job do not replace each other's; merge pushes the job's
/// own group, as an unsharded run does. No `instance` label: the Pushgateway keeps every group
/// it was given.
package enum MetricsPush {
    /// How long one request may take (how many are made is `RetryPolicy.push`'s).
    static let timeout: Duration = .seconds(3)

    /// Why `url` cannot be used as a Pushgateway's address, or nil. A URL that may hold a secret
    /// (user info, a query) is refused without being quoted; of any other, only its address is
    /// quoted (`address(of:)`).
    package static func problem(with url: String) -> String? {
        let example = "such as http://pushgateway:9091"
        if url.contains("@") {
            return "--metrics-push must not hold a user or password (what is in a URL ends up in logs and process lists): give the Pushgateway's address only, \(example)"
        }
        if url.contains("?") || url.contains("#") {
            return "--metrics-push must not have a query or fragment: give the Pushgateway's address only, \(example)"
        }
        let shown = "\"\(TerminalText.escaped(address(of: url)))\""
        if url.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value >= 0x7F }) {
            return "--metrics-push must be a URL without spaces or control characters, \(example); got \(shown)"
        }
        let lower = url.lowercased()
        guard let scheme = ["http://", "https://"].first(where: { lower.hasPrefix($0) }) else {
            return "--metrics-push must be an http:// or https:// URL, \(example); got \(shown)"
        }
        let authority = url.dropFirst(scheme.count).prefix { $0 != "/" }
        var host = authority
        if let colon = authority.lastIndex(of: ":"), !authority.hasSuffix("]") {
            let port = authority[authority.index(after: colon)...]
            guard !port.isEmpty, port.count <= 5, port.allSatisfy(\.isASCII), let number = Int(port), (1...65535).contains(number) else {
                return "--metrics-push has an invalid port, \(example); got \(shown)"
            }
            host = authority[..<colon]
        }
        if host.isEmpty { return "--metrics-push needs a host, \(example); got \(shown)" }
        return nil
    }

    /// The address of the run's group: `URL/metrics/job/J`, and `/shard/S` for a shard.
    package static func groupURL(base: String, job: String, shard: String?) -> String {
        trimmed(base) + "/metrics/" + segment("job", job) + (shard.map { "/" + segment("shard", $0) } ?? "")
    }

    /// `name/value`, or the Pushgateway's `name@base64/VALUE` (URL-safe alphabet, unpadded; `=`
    /// for an empty value) when the value is not plain: `/`, other reserved or non-ASCII
    /// characters, or dots only (which a URL path would take for `.` and `..`).
    package static func segment(_ name: String, _ value: String) -> String {
        let plain = !value.isEmpty && value.utf8.contains { $0 != UInt8(ascii: ".") } && value.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                return true
            default:
                return byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
            }
        }
        if plain { return "\(name)/\(value)" }
        if value.isEmpty { return "\(name)@base64/=" }
        let encoded = Data(value.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        return "\(name)@base64/\(encoded)"
    }

    /// What of `url` a message may quote: its scheme and host (and port), never the path, which a
    /// Pushgateway behind a proxy may take a token in (`https://gw/push/TOKEN`).
    package static func address(of url: String) -> String {
        guard let scheme = url.range(of: "://") else { return String(url.prefix { $0 != "/" }) }
        return String(url[..<scheme.upperBound]) + url[scheme.upperBound...].prefix { $0 != "/" }
    }

    static func trimmed(_ base: String) -> String {
        var text = Substring(base)
        while text.hasSuffix("/") { text = text.dropLast() }
        return String(text)
    }

    /// The last success time the Pushgateway holds for the group, from its API's JSON (`GET
    /// /api/v1/metrics`), as the `--metrics` file keeps it from the file it replaces.
    package static func lastSuccess(inAPIAnswer body: [UInt8], job: String, shard: String?) -> String? {
        guard let answer = try? JSONParser.parse(body), case .array(let groups)? = answer["data"] else { return nil }
        for group in groups {
            guard case .object(let labels)? = group["labels"] else { continue }
            func label(_ name: String) -> String {
                if case .string(let value)? = labels.first(where: { $0.key == name })?.value { return value }
                return ""
            }
            guard label("job") == job, label("shard") == (shard ?? "") else { continue }
            guard case .array(let samples)? = group["showbatch_last_success_timestamp_seconds"]?["metrics"],
                  case .string(let text)? = samples.first?["value"], let seconds = Double(text), seconds.isFinite else { return nil }
            return String(format: "%.3f", seconds)
        }
        return nil
    }
}

extension RunReport {
    /// Pushes the metrics (`--metrics-push`) to the Pushgateway at `url`, replacing the run's group
    /// (HTTP PUT). A run that did not succeed keeps the group's last success time, read from the
    /// Pushgateway first. Each request has a few seconds and the push is tried up to three times;
    /// the error names the cause, never a value (nothing secret is sent: the metrics hold none).
    package func pushMetrics(to url: String) throws(RunError) {
        // It waits on the network and sleeps between tries: never on a thread of the pool.
        Blocking.assertMayBlock()
        let groupURL = MetricsPush.groupURL(base: url, job: job, shard: shard)
        var previous: String?
        if exitCode != .ok {
            if case .success(let answer) = PushClient.send(method: "GET", url: MetricsPush.trimmed(url) + "/api/v1/metrics", body: nil, timeout: MetricsPush.timeout),
               (200..<300).contains(answer.status),
               let seconds = MetricsPush.lastSuccess(inAPIAnswer: answer.body, job: job, shard: shard) {
                previous = "showbatch_last_success_timestamp_seconds{} \(seconds)\n"
            }
        }
        let body = Array(prometheus(previous: previous, forPush: true).utf8)
        var reason = ""
        let policy = RetryPolicy.push
        tries: for attempt in 1...policy.attempts {
            switch PushClient.send(method: "PUT", url: groupURL, body: body, timeout: MetricsPush.timeout) {
            case .success(let answer) where (200..<300).contains(answer.status):
                return
            case .success(let answer):
                reason = "the Pushgateway answered HTTP \(answer.status)"
                // A 4xx (a body it refuses, a path it does not know) will not change.
                if !policy.retries(status: answer.status) { break tries }
            case .failure(let failure):
                reason = failure.words
            }
            if attempt < policy.attempts { Thread.sleep(forTimeInterval: policy.backoff.longest(after: attempt).seconds) }
        }
        throw RunError.runtime(RecordsError.pushFailed(address: MetricsPush.address(of: url), reason: reason))
    }
}
