import Foundation
import ShowbatchYAML

/// Sends a manifest's requests and writes one row per work item, in order.
public struct Runner: Sendable {
    let manifest: Manifest
    let options: RunOptions
    let transport: any Transport
    let events: @Sendable (RunEvent) -> Void
    let environment: [String: String]

    /// A runner for `manifest`; a URLSession transport is made when none is given.
    public init(manifest: Manifest, options: RunOptions, transport: (any Transport)? = nil,
                environment: [String: String] = ProcessInfo.processInfo.environment,
                events: @escaping @Sendable (RunEvent) -> Void = { _ in }) {
        self.manifest = manifest
        self.options = options
        let connections = options.concurrency ?? manifest.concurrency
        switch options.transport ?? manifest.transport {
        case _ where transport != nil: self.transport = transport!
        case .curl: self.transport = CurlTransport(maxConnections: connections)
        case .urlsession: self.transport = URLSessionTransport(maxConnections: connections)
        }
        self.environment = environment
        self.events = events
    }

    struct OutputTarget {
        var path: String
        var format: OutputFormat
        var labels: [String]
        var escapeFormulas: Bool
    }

    /// Decides which file each request writes to and each file's columns.
    func planOutputs() throws(RunError) -> (targets: [OutputTarget], byRequest: [Int]) {
        let shard = options.shard
        func shardPath(_ path: String) -> String { path == "-" ? path : (shard?.path(path) ?? path) }
        var targets: [OutputTarget] = []
        var byRequest: [Int] = []
        if let path = options.output {
            let format: OutputFormat
            if let explicit = options.format {
                format = explicit
            } else if path == "-" {
                format = .csv
            } else if let implied = OutputFormat.fromExtension(path) {
                format = implied
            } else {
                throw RunError.usage("cannot tell the format of --output \(path) from its extension; add --format csv, json or jsonl")
            }
            targets.append(OutputTarget(path: shardPath(path), format: format, labels: [], escapeFormulas: manifest.output?.escapeFormulas ?? false))
            byRequest = Array(repeating: 0, count: manifest.requests.count)
        } else {
            for (index, request) in manifest.requests.enumerated() {
                guard let spec = request.output ?? manifest.output else {
                    throw manifestProblem(at: request.mark, "request \(index + 1) has no output: give --output PATH, or add output: to the manifest or the request")
                }
                let path = shardPath(spec.path)
                let format = options.format ?? spec.resolvedFormat
                if let existing = targets.firstIndex(where: { $0.path == path }) {
                    if targets[existing].format != format {
                        throw RunError.usage("\(path) is written as both \(targets[existing].format.rawValue) and \(format.rawValue); give one format")
                    }
                    byRequest.append(existing)
                } else {
                    targets.append(OutputTarget(path: path, format: format, labels: [], escapeFormulas: spec.escapeFormulas))
                    byRequest.append(targets.count - 1)
                }
            }
        }
        for (index, request) in manifest.requests.enumerated() {
            for label in request.labels where !targets[byRequest[index]].labels.contains(label.name) {
                targets[byRequest[index]].labels.append(label.name)
            }
        }
        return (targets, byRequest)
    }

    /// A problem at `mark` in the manifest, quoting its line as `validate` does (secrets hidden).
    /// The run holds no source text, so the file is read again; if it no longer parses, the line
    /// is not quoted, since nothing would tell a secret from the rest.
    func manifestProblem(at mark: Mark, _ message: String) -> RunError {
        let bytes = FileManager.default.contents(atPath: manifest.file).map(Array.init) ?? []
        let source = SourceFile(name: manifest.file, bytes: bytes)
        guard let root = try? YAMLParser.parse(source) else {
            return .manifest(Diagnostic(source: SourceFile(name: manifest.file, bytes: []), mark: mark, message: message))
        }
        let spans = ManifestDecoder.sensitiveSpans(root)
        return .manifest(Diagnostic(source: source, mark: mark, message: message, redacting: spans[mark.line] ?? []))
    }

    /// The base URL: the override, the satellite, an activated custom hostname, or the vault URL.
    func resolveBaseURL() async throws(RunError) -> String {
        if let override = options.baseURLOverride { return override }
        guard let hostname = manifest.hostname, manifest.satellitePort == nil else { return manifest.vaultURL }
        guard manifest.hostnameCheck else { return "https://\(hostname)" }
        let checkURL = Endpoint.hostnameCheckURL(checkBase: environment["SHOWBATCH_HOSTNAME_CHECK_URL"], host: hostname, vault: manifest.vault)
        let request = PreparedRequest(name: "hostname-check", method: .get, url: checkURL, headers: [], body: nil)
        let result = await transport.send(request, timeout: min(options.timeout ?? manifest.timeout, .seconds(30)))
        let reason: String
        switch result {
        case .response(let status, _, let body) where (200..<300).contains(status):
            if String(decoding: body, as: UTF8.self).contains(hostname) { return "https://\(hostname)" }
            reason = "the answer does not name it"
        case .response(let status, _, _):
            reason = "the check answered HTTP \(status)"
        case .failure(let failure):
            reason = "the check failed (\(Runner.describe(failure)))"
        }
        let message = "hostname \(hostname) is not activated for vault \(manifest.vault) (\(reason))"
        if options.strictHostname { throw RunError.runtime(message + "; --strict-hostname stops here") }
        events(.warning(message + "; using \(manifest.vaultURL)"))
        return manifest.vaultURL
    }

    static func describe(_ failure: TransportFailure) -> String {
        switch failure {
        case .network(let detail): return detail
        case .timeout: return "timeout"
        case .bodyTooLarge(let limit): return "body over \(limit >> 20) MiB"
        case .cancelled: return "cancelled"
        }
    }

    /// Runs to the end (or to an interrupt), writing every output.
    public func run() async throws(RunError) -> RunSummary {
        let start = ContinuousClock.now
        let (targets, byRequest) = try planOutputs()
        let baseURL = try await resolveBaseURL()
        if options.resume && targets.contains(where: { $0.path == "-" }) {
            throw RunError.usage("--resume needs file outputs; standard output is not resumable")
        }
        var files: [OutputFile] = []
        var journals: [Journal?] = []
        let inputHash = targets.contains { $0.path != "-" } ? try manifest.inputHash() : 0
        do {
            // Journals first: taking a journal's lock is what keeps a second run off the output.
            for target in targets {
                if target.path == "-" {
                    journals.append(nil)
                } else {
                    let header = Journal.header(manifestHash: inputHash, shard: options.shard, output: target.path,
                                                format: target.format, labels: target.labels)
                    journals.append(try Journal(output: target.path, header: header, resume: options.resume))
                }
            }
            for target in targets {
                files.append(try OutputFile(path: target.path, format: target.format, labels: target.labels, escapeFormulas: target.escapeFormulas))
            }
        } catch {
            files.forEach { $0.abandon() }
            journals.forEach { $0?.close() }
            throw error
        }
        let total: Int? = options.progress == .never ? nil
            : WorkItemSequence(manifest: manifest).reduce(0) { count, item in count + (options.shard?.takes(item.ordinal) ?? true ? 1 : 0) }

        let concurrency = options.concurrency ?? manifest.concurrency
        let window = max(concurrency * 4, 64)
        let limiter = (options.rate ?? manifest.rateLimit).map { RateLimiter(rate: $0) }
        let context = AttemptContext(transport: transport, policy: manifest.retry, timeout: options.timeout ?? manifest.timeout,
                                     limiter: limiter, events: events, verbose: options.verbose)
        let feed = RequestFeed(manifest: manifest, baseURL: baseURL, shard: options.shard, byRequest: byRequest, journals: journals)
        let writer = RowWriter(files: files, journals: journals)
        let dispatch = RunDispatch(manifest: manifest, feed: feed, writer: writer, byRequest: byRequest,
                                   failFast: options.failFast, window: window, total: total, start: start, events: events)
        // Labels are extracted on the writer thread, except with --fail-fast, which must know at once.
        let revealLater = !options.failFast
        // With the curl transport, every worker runs on the transport's own thread.
        await withTaskExecutorPreference(transport.executor) {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<concurrency {
                    group.addTask { await dispatch.work(context, revealLater: revealLater) }
                }
            }
        }
        let outcome = dispatch.finish()
        var summary = outcome.summary
        var writeError = outcome.writeError
        if let error = writer.finish(), writeError == nil { writeError = error }
        let revealed = writer.revealedCounts
        summary.ok += revealed.ok
        summary.partial += revealed.partial
        summary.failed += revealed.failed
        // Rows after a gap (a cancelled request) stay unwritten: order is never broken.
        let remaining = feed.stop()
        if outcome.stopped && !outcome.exhausted && !Task.isCancelled && writeError == nil {
            summary.skipped = remaining
        }
        summary.elapsed = ContinuousClock.now - start
        summary.outputs = targets.map(\.path)
        events(.progress(RunProgress(done: summary.rows, total: total, failed: summary.failed, elapsed: summary.elapsed)))
        if let writeError {
            files.forEach { $0.abandon() }
            journals.forEach { $0?.close() }
            throw writeError
        }
        if Task.isCancelled || outcome.gap {
            summary.interrupted = true
            files.forEach { $0.abandon() }
            journals.forEach { $0?.close() }
            return summary
        }
        for (index, file) in files.enumerated() {
            do {
                try file.finish()
            } catch {
                files[index...].forEach { $0.abandon() }
                journals.forEach { $0?.close() }
                throw error
            }
        }
        journals.forEach { $0?.remove() }
        return summary
    }
}
