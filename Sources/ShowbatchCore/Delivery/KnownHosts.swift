import Foundation

/// A known_hosts file read as OpenSSH reads it, to decide whether the processor's server is the
/// one it claims to be: `@revoked` refuses a key, `@cert-authority` lines are not host keys,
/// host names hashed (`|1|salt|hash`, with or without a port) or written as patterns with `*`,
/// `?` and `!`, `[host]:port` for a port other than 22. libssh2's own reading knows none of the
/// markers and only some of the rest, so showbatch decides itself and tells libcurl.
struct KnownHosts: Equatable {
    /// One line with a key.
    struct Entry: Equatable {
        enum Marker: Equatable { case revoked, certAuthority }
        var marker: Marker?
        /// The host names field as written: comma-separated patterns, or one hashed name.
        var hosts: String
        var keyType: String
        /// The key as the wire sends it (the base64 field decoded).
        var key: [UInt8]
        /// 1-based.
        var line: Int
    }

    /// What the file says of a server's key.
    enum Verdict: Equatable {
        /// A line for the host holds this key.
        case known(line: Int)
        /// A `@revoked` line for the host holds this key: never accepted.
        case revoked(line: Int)
        /// Lines for the host hold other keys of this type: the key changed (or the server is another).
        case changed(lines: [Int])
        /// No line for the host holds a key of this type.
        case unknown
    }

    private(set) var entries: [Entry] = []
    /// Lines that are neither blank, a comment nor a key line OpenSSH reads.
    private(set) var unreadable: [Int] = []

    init(text: String) {
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            var fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            var marker: Entry.Marker?
            if let first = fields.first, first.hasPrefix("@") {
                switch first {
                case "@revoked": marker = .revoked
                case "@cert-authority": marker = .certAuthority
                default:
                    unreadable.append(index + 1)
                    continue
                }
                fields.removeFirst()
            }
            guard fields.count >= 3, let key = Data(base64Encoded: fields[2]), !key.isEmpty else {
                unreadable.append(index + 1)
                continue
            }
            entries.append(Entry(marker: marker, hosts: fields[0], keyType: fields[1], key: Array(key), line: index + 1))
        }
    }

    /// The name a server is looked up by: `host` on port 22, `[host]:port` on another.
    static func lookupName(host: String, port: Int) -> String {
        port == 22 ? host.lowercased() : "[\(host.lowercased())]:\(port)"
    }

    /// Whether an entry's host field names `name` (see `lookupName`).
    static func names(_ hosts: String, _ name: String) -> Bool {
        if hosts.hasPrefix("|1|") {
            let parts = hosts.split(separator: "|", omittingEmptySubsequences: false)
            guard parts.count == 4, let salt = Data(base64Encoded: String(parts[2])), let hash = Data(base64Encoded: String(parts[3])) else {
                return false
            }
            return hmacSHA1(key: Array(salt), Array(name.utf8)) == Array(hash)
        }
        // A negated pattern that matches wins over any other; else one plain pattern must match.
        var positive = false
        for pattern in hosts.lowercased().split(separator: ",") {
            if pattern.hasPrefix("!") {
                if wildcard(pattern.dropFirst(), matches: Substring(name)) { return false }
            } else if wildcard(pattern, matches: Substring(name)) {
                positive = true
            }
        }
        return positive
    }

    /// `*` (any run of characters) and `?` (one) matched against the whole of `text`.
    static func wildcard(_ pattern: Substring, matches text: Substring) -> Bool {
        let pattern = Array(pattern.utf8), text = Array(text.utf8)
        var (p, t) = (0, 0)
        var star: (p: Int, t: Int)?
        while t < text.count {
            if p < pattern.count && (pattern[p] == UInt8(ascii: "?") || pattern[p] == text[t]) {
                p += 1
                t += 1
            } else if p < pattern.count && pattern[p] == UInt8(ascii: "*") {
                star = (p, t)
                p += 1
            } else if let last = star {
                p = last.p + 1
                t = last.t + 1
                star = (last.p, last.t + 1)
            } else {
                return false
            }
        }
        while p < pattern.count && pattern[p] == UInt8(ascii: "*") { p += 1 }
        return p == pattern.count
    }

    /// The type a wire-format key names (its first string: `ssh-ed25519`, `ssh-rsa`, …).
    static func keyType(of key: [UInt8]) -> String? {
        guard key.count >= 4 else { return nil }
        let length = Int(key[0]) << 24 | Int(key[1]) << 16 | Int(key[2]) << 8 | Int(key[3])
        guard length > 0, length <= key.count - 4 else { return nil }
        return String(decoding: key[4..<(4 + length)], as: UTF8.self)
    }

    /// What the file says of `key`, offered by `host` on `port`.
    func check(host: String, port: Int, key: [UInt8]) -> Verdict {
        let name = Self.lookupName(host: host, port: port)
        let type = Self.keyType(of: key)
        var others: [Int] = []
        var known: Int?
        for entry in entries where entry.marker != .certAuthority && Self.names(entry.hosts, name) {
            if entry.key == key {
                if entry.marker == .revoked { return .revoked(line: entry.line) }
                known = known ?? entry.line
            } else if entry.marker == nil && (entry.keyType == type || Self.keyType(of: entry.key) == type) {
                others.append(entry.line)
            }
        }
        if let known { return .known(line: known) }
        return others.isEmpty ? .unknown : .changed(lines: others)
    }

    /// The host's keys that are not revoked, as plain lines libssh2 reads (`host` on port 22,
    /// `[host]:port` on another): what tells it which key type to ask the server for.
    func plainLines(host: String, port: Int) -> String {
        let name = Self.lookupName(host: host, port: port)
        let revoked = entries.filter { $0.marker == .revoked && Self.names($0.hosts, name) }.map(\.key)
        let written = port == 22 ? host : "[\(host)]:\(port)"
        return entries.filter { $0.marker == nil && Self.names($0.hosts, name) && !revoked.contains($0.key) }
            .map { "\(written) \($0.keyType) \(Data($0.key).base64EncodedString())\n" }
            .joined()
    }
}
