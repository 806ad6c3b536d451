import Foundation
import ShowbatchBasics
import ShowbatchManifest
#if canImport(Glibc)
import Glibc
#endif

/// The audit trail (`audit.path`, `--audit PATH`): one JSON line appended per event (run
/// started, output finished, delivered, merged, stopped) with what an assessor asks of an audit
/// entry (PCI DSS 10.2.2): when, what, the outcome, who (uid and name, the OAuth client), where
/// (host, pod), which run, what was touched (the manifest's SHA-256, vault, environment, route
/// paths, each output's path, rows, SHA-256 and recipients, a delivery's destination) and `prev`,
/// the SHA-256 of the line before it, so an edited or removed line shows.
///
/// Never a revealed value, an alias, a header value or a secret: names, paths, counts and hashes
/// only. The file is opened by path for each line, `O_APPEND`, never through a link, created 0600
/// in a folder no one else can write, and locked while a line is added so that shards writing one
/// trail keep one chain.
///
/// It proves itself: with `audit.key` each `prev` is an HMAC under the key, so the trail cannot be
/// rewritten and chained again without it; and where the trail stood after each of its lines
/// (size, last line's hash) is recorded in the ledgers of the manifest's night-named outputs, and
/// checked before the next line is added: a trail cut short, emptied, moved away or rewritten at
/// that point stops the run (exit 3). A last line torn by a full disk is cut back to the last
/// whole line, and an entry says so.
package struct AuditTrail: Sendable {
    package let path: String
    /// What every line of this run holds: run id, who, where, the manifest.
    private let common: [JSONMember]
    /// The chain's key (`audit.key`).
    private let key: SecretBytes?
    /// The ledgers (by output template) that anchor the trail.
    private let anchors: [String]
    /// How long another run's lock on the trail is waited for (another run appends in moments).
    var lockWait: Duration = .seconds(30)

    /// The trail at `path` for the run `runID` of `manifest`.
    package init(path: String, runID: String, manifest: Manifest, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.path = path
        var user = [JSONMember("uid", .number(String(getuid()))), JSONMember("name", Self.userName(getuid()).map { .string($0) } ?? .null)]
        if case .clientCredentials(let client)? = manifest.auth?.source { user.append(JSONMember("client_id", .string(client.clientID))) }
        var host = [JSONMember("name", .string(Self.hostName))]
        if let pod = environment["POD_NAME"] ?? (environment["KUBERNETES_SERVICE_HOST"] != nil ? environment["HOSTNAME"] : nil) {
            host.append(JSONMember("pod", .string(pod)))
        }
        let digest = (try? FileDigest.of(manifest.file))?.sha256 ?? ""
        var routes: [String] = []
        // As written: a row's value or an environment value is never in the trail.
        for route in manifest.requests.map(\.path.asWritten) where !routes.contains(route) { routes.append(route) }
        common = [JSONMember("user", .object(user)), JSONMember("host", .object(host)), JSONMember("run_id", .string(runID)),
                  JSONMember("manifest", .string(manifest.file)), JSONMember("manifest_sha256", .string(digest)),
                  JSONMember("vault", .string(manifest.vault)), JSONMember("environment", .string(manifest.environment)),
                  JSONMember("routes", .array(routes.map { .string($0) }))]
        key = manifest.auditKey
        anchors = manifest.nightNamedOutputs.map(\.path).reduce(into: []) { if !$0.contains($1) { $0.append($1) } }
    }

    /// The chain's link to `line`: its SHA-256, or with a key its HMAC-SHA256 under the key.
    static func link(to line: [UInt8], key: SecretBytes?) -> String {
        guard let key else { return FileDigest.sha256(line) }
        let mac = hmacSHA256(key: key, line)
        return mac.withBytes { bytes in bytes.map { String(format: "%02x", $0) }.joined() }
    }

    /// The user's login name, when the system knows it.
    private static func userName(_ uid: uid_t) -> String? {
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &found) == 0, found != nil, let name = entry.pw_name else { return nil }
        return String(validatingCString: name)
    }

    private static var hostName: String {
        var buffer = [UInt8](repeating: 0, count: 256)
        guard buffer.withUnsafeMutableBytes({ gethostname($0.baseAddress!.assumingMemoryBound(to: CChar.self), 255) }) == 0 else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }, as: UTF8.self)
    }

    /// One output a line names: its path, rows, SHA-256 and the keys it is encrypted to.
    package struct Output: Sendable {
        package var path: String
        package var rows: Int?
        package var recipients: [String]?

        package init(path: String, rows: Int? = nil, recipients: [String]? = nil) {
            self.path = path
            self.rows = rows
            self.recipients = recipients
        }

        var json: JSONValue {
            var members = [JSONMember("path", .string(path))]
            if let rows { members.append(JSONMember("rows", .number(String(rows)))) }
            if let digest = try? FileDigest.of(path) {
                members.append(JSONMember("size", .number(String(digest.size))))
                members.append(JSONMember("sha256", .string(digest.sha256)))
            }
            if let recipients { members.append(JSONMember("recipients", .array(recipients.map { .string($0) }))) }
            return .object(members)
        }
    }

    /// Appends the event `event` with `outcome` and what it touched; the failure in words.
    /// `isCancelled` ends the wait for another run's lock: only an entry written before the work
    /// begins gives it (an entry that records what was done waits out a signal).
    package func append(_ event: String, outcome: String, outputs: [Output] = [], extra: [JSONMember] = [],
                        isCancelled: () -> Bool = { false }) throws(RunError) {
        try PrivateFile.makeParent(of: path, for: path)
        // A folder others can write is one where the trail can be moved away and started anew.
        let slash = path.lastIndex(of: "/")
        try PrivateFile.requireTrustedFolder(slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? ".", for: path)
        let fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw RunError.runtime(FileError(.write, .auditTrail, path, errno: errno)) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid(), info.st_mode & 0o077 == 0, info.st_nlink == 1 else {
            throw RunError.runtime(RecordsError.auditTrailNotPrivate(path: path))
        }
        // The monotonic clock: a clock set back does not lengthen the wait.
        let deadline = ContinuousClock.now + lockWait
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else { throw RunError.runtime(FileError(.lock, .auditTrail, path, errno: errno)) }
            if isCancelled() {
                throw RunError.runtime(FileError(.lock, .auditTrail, path, cause: .reason("interrupted while another run held it")))
            }
            guard ContinuousClock.now < deadline else {
                throw RunError.runtime(FileError(.lock, .auditTrail, path, cause: .reason("another run has held it for over \(lockWait.components.seconds) s")))
            }
            usleep(20_000)
        }
        // Its size under the lock: another run may have added a line meanwhile.
        guard fstat(fd, &info) == 0 else { throw RunError.runtime(FileError(.read, .auditTrail, path, errno: errno)) }
        let file = FileDescriptor(borrowing: fd, path: path)
        var size = Int(info.st_size)
        try checkAnchors(file, size: size)
        var lines: [[JSONMember]] = []
        // A line a full disk tore is cut back to the last whole one, and the trail says so.
        if size > 0, let torn = Self.tornBytes(of: file, size: size) {
            guard ftruncate(fd, off_t(size - torn)) == 0 else { throw RunError.runtime(FileError(.repair, .auditTrail, path, errno: errno)) }
            size -= torn
            lines.append([JSONMember("ts", .string(Timestamp.rfc3339())), JSONMember("event", .string("repaired")),
                          JSONMember("outcome", .string("torn_line_removed")), JSONMember("removed_bytes", .number(String(torn)))] + common)
        }
        var members = [JSONMember("ts", .string(Timestamp.rfc3339())), JSONMember("event", .string(event)), JSONMember("outcome", .string(outcome))]
        members += common
        if !outputs.isEmpty { members.append(JSONMember("outputs", .array(outputs.map(\.json)))) }
        members += extra
        lines.append(members)
        var previous = Self.lastLine(of: file, size: size)
        var bytes: [UInt8] = []
        for var line in lines {
            if key != nil { line.append(JSONMember("chain", .string("hmac-sha256"))) }
            if let previous { line.append(JSONMember("prev", .string(Self.link(to: previous, key: key)))) }
            let text = Array(JSONValue.object(line).compactText.utf8)
            bytes += text + [0x0A]
            previous = text
        }
        if let code = bytes.withUnsafeBytes({ PrivateFile.writeAll(fd, $0) }) {
            throw RunError.runtime(FileError(.write, .auditTrail, path, errno: code))
        }
        guard fsync(fd) == 0 else { throw RunError.runtime(FileError(.write, .auditTrail, path, errno: errno)) }
        // Where it stands now, in each ledger, while the trail is still locked.
        let anchor = NightLedger.AuditAnchor(path: path, size: size + bytes.count, last: FileDigest.sha256(previous ?? []))
        for template in anchors { try NightLedger.anchorAudit(anchor, template: template) }
    }

    /// Refuses a trail that is not where a ledger recorded it: shorter than it was, or with
    /// another line where its last one was.
    private func checkAnchors(_ file: FileDescriptor, size: Int) throws(RunError) {
        for template in anchors {
            guard let anchor = try NightLedger.read(template: template).audit,
                  PrivateFile.canonical(anchor.path) == PrivateFile.canonical(path) else { continue }
            let ledger = NightLedger.statePath(of: template)
            guard size >= anchor.size else {
                throw RunError.runtime(RecordsError.auditTrailCut(path: path, size: size, ledger: ledger, recorded: anchor.size))
            }
            guard let last = Self.lastLine(of: file, size: anchor.size), FileDigest.sha256(last) == anchor.last else {
                throw RunError.runtime(RecordsError.auditTrailRewritten(path: path, ledger: ledger))
            }
        }
    }

    /// How many bytes at the end of the trail (`size` bytes) follow its last line break: a line
    /// a full disk or a kill tore; nil when it ends with one.
    static func tornBytes(of file: FileDescriptor, size: Int) -> Int? {
        var last = [UInt8](repeating: 0, count: 1)
        guard (try? file.read(into: &last, at: size - 1)) == 1, last[0] != 0x0A else { return nil }
        guard let whole = lastLine(of: file, size: size) else { return size }
        return whole.count
    }

    /// The last line of the trail open at `file` (`size` bytes, read under its lock), without its
    /// line break; nil when it has none. Read from the end: a trail of many nights is not read whole.
    static func lastLine(of file: FileDescriptor, size: Int) -> [UInt8]? {
        guard size > 0 else { return nil }
        var tail: [UInt8] = []
        var start = size
        while start > 0 {
            let step = min(start, 1 << 16)
            start -= step
            var chunk = [UInt8](repeating: 0, count: step)
            guard let read = try? file.read(into: &chunk, at: start), read == step else { return nil }
            tail = chunk + tail
            // The line break before the last line (the one the file ends with does not count).
            if tail.dropLast().contains(0x0A) { break }
        }
        var end = tail.endIndex
        if tail.last == 0x0A { end -= 1 }
        let lineStart = tail[..<end].lastIndex(of: 0x0A).map { $0 + 1 } ?? tail.startIndex
        return Array(tail[lineStart..<end])
    }

    /// Where a chain breaks: the line (from 1) and why.
    package struct Break: Error, Equatable {
        package let line: Int
        package let reason: String
    }

    /// Checks the chain of the trail's bytes: each line's `prev` is the SHA-256 of the line
    /// before it (none on the first); from the first line marked `chain: hmac-sha256`, the
    /// HMAC-SHA256 under `key`, which must then be given (and without which a keyed trail does not
    /// verify). With `key`, the trail's last line must be keyed. The lines, or the first line
    /// where it breaks and why.
    package static func verify(_ bytes: [UInt8], key: SecretBytes? = nil) -> Result<Int, Break> {
        var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
        if lines.last?.isEmpty == true { lines.removeLast() }
        var previous: ArraySlice<UInt8>?
        var keyed = false
        for (index, line) in lines.enumerated() {
            guard let value = try? JSONParser.parse(Array(line)), case .object = value else {
                return .failure(Break(line: index + 1, reason: "it is not a JSON object"))
            }
            if case .string("hmac-sha256")? = value["chain"] {
                guard key != nil else {
                    return .failure(Break(line: index + 1, reason: "it is chained under audit.key, which was not given (audit verify FILE --manifest M)"))
                }
                keyed = true
            } else if keyed {
                return .failure(Break(line: index + 1, reason: "it is not chained under the key, as the lines before it are: it was added without the key"))
            }
            let prev: String? = if case .string(let text)? = value["prev"] { text } else { nil }
            switch (previous, prev) {
            case (nil, nil): break
            case (nil, .some): return .failure(Break(line: index + 1, reason: "the first line has a prev: lines before it were removed"))
            case (.some, nil): return .failure(Break(line: index + 1, reason: "it has no prev: the chain was cut here"))
            case (.some(let before), .some(let hash)):
                if hash != link(to: Array(before), key: keyed ? key : nil) {
                    return .failure(Break(line: index + 1, reason: "its prev is not the \(keyed ? "HMAC" : "SHA-256") of line \(index): a line was edited or removed"))
                }
            }
            previous = line
        }
        if key != nil && !keyed && !lines.isEmpty {
            return .failure(Break(line: lines.count, reason: "no line is chained under audit.key: the trail is not the one its key keeps"))
        }
        return .success(lines.count)
    }

    /// Why the trail `bytes` (at `file`) is not where the ledgers of `manifest`'s outputs recorded
    /// it (shorter, or another line where its last one was); nil when it is, or none recorded it.
    package static func anchorProblem(of file: String, bytes: [UInt8], manifest: Manifest) -> String? {
        for template in manifest.nightNamedOutputs.map(\.path) {
            guard let anchor = try? NightLedger.read(template: template).audit,
                  PrivateFile.canonical(anchor.path) == PrivateFile.canonical(file) else { continue }
            let ledger = NightLedger.statePath(of: template)
            guard bytes.count >= anchor.size else {
                return "it has \(bytes.count) bytes, and \(ledger) recorded \(anchor.size) after its last entry: lines were cut from its end"
            }
            var end = anchor.size
            if end > 0 && bytes[end - 1] == 0x0A { end -= 1 }
            let start = bytes[..<end].lastIndex(of: 0x0A).map { $0 + 1 } ?? 0
            guard FileDigest.sha256(Array(bytes[start..<end])) == anchor.last else {
                return "it does not end, where \(ledger) recorded its last entry, with that entry: it was rewritten"
            }
        }
        return nil
    }

    /// A delivery's entry: the file, where it went (the folder's URL and name, no credential in
    /// it), and how it ended.
    package func append(_ delivery: DeliveryOutcome) throws(RunError) {
        var extra = [JSONMember("to", .string(delivery.destination))]
        let outcome: String
        switch delivery.result {
        case .delivered: outcome = "delivered"
        case .found: outcome = "found"
        case .markedDelivered: outcome = "marked_delivered"
        case .already(let when):
            outcome = "already"
            extra.append(JSONMember("delivered_at", .string(when)))
        case .failed(let why):
            outcome = "failed"
            extra.append(JSONMember("error", .string(why)))
        case .refused(let why):
            outcome = "refused"
            extra.append(JSONMember("error", .string(why)))
        }
        try append("delivered", outcome: outcome, outputs: [Output(path: delivery.path)], extra: extra)
    }
}
