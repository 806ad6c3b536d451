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
/// only. The file is opened by path for each line (logrotate may have moved it), `O_APPEND`,
/// never through a link, created 0600, and locked while a line is added so that shards writing
/// one trail keep one chain.
package struct AuditTrail: Sendable {
    package let path: String
    /// What every line of this run holds: run id, who, where, the manifest.
    private let common: [JSONMember]

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
    package func append(_ event: String, outcome: String, outputs: [Output] = [], extra: [JSONMember] = []) throws(RunError) {
        try PrivateFile.makeParent(of: path, for: path)
        let fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw RunError.runtime("cannot write the audit trail \(path): \(describeErrno(errno))") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid(), info.st_mode & 0o077 == 0, info.st_nlink == 1 else {
            throw RunError.runtime("the audit trail \(path) is not a private file of this user's (mode 0600, one link): it is not written to")
        }
        guard flock(fd, LOCK_EX) == 0 else { throw RunError.runtime("cannot lock the audit trail \(path): \(describeErrno(errno))") }
        // Its size under the lock: another run may have added a line meanwhile.
        guard fstat(fd, &info) == 0 else { throw RunError.runtime("cannot read the audit trail \(path): \(describeErrno(errno))") }
        var members = [JSONMember("ts", .string(Timestamp.rfc3339())), JSONMember("event", .string(event)), JSONMember("outcome", .string(outcome))]
        members += common
        if !outputs.isEmpty { members.append(JSONMember("outputs", .array(outputs.map(\.json)))) }
        members += extra
        if let previous = Self.lastLine(of: FileDescriptor(borrowing: fd, path: path), size: Int(info.st_size)) {
            members.append(JSONMember("prev", .string(FileDigest.sha256(previous))))
        }
        var line = Array(JSONValue.object(members).compactText.utf8)
        line.append(0x0A)
        if let code = line.withUnsafeBytes({ PrivateFile.writeAll(fd, $0) }) {
            throw RunError.runtime("cannot write the audit trail \(path): \(describeErrno(code))")
        }
        guard fsync(fd) == 0 else { throw RunError.runtime("cannot write the audit trail \(path): \(describeErrno(errno))") }
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
    /// before it (none on the first). The lines, or the first line where it breaks and why.
    package static func verify(_ bytes: [UInt8]) -> Result<Int, Break> {
        var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
        if lines.last?.isEmpty == true { lines.removeLast() }
        var previous: ArraySlice<UInt8>?
        for (index, line) in lines.enumerated() {
            guard let value = try? JSONParser.parse(Array(line)), case .object = value else {
                return .failure(Break(line: index + 1, reason: "it is not a JSON object"))
            }
            let prev: String? = if case .string(let text)? = value["prev"] { text } else { nil }
            switch (previous, prev) {
            case (nil, nil): break
            case (nil, .some): return .failure(Break(line: index + 1, reason: "the first line has a prev: lines before it were removed"))
            case (.some, nil): return .failure(Break(line: index + 1, reason: "it has no prev: the chain was cut here"))
            case (.some(let before), .some(let hash)):
                if hash != FileDigest.sha256(Array(before)) {
                    return .failure(Break(line: index + 1, reason: "its prev is not the SHA-256 of line \(index): a line was edited or removed"))
                }
            }
            previous = line
        }
        return .success(lines.count)
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
