import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Where a run's bearer token comes from (the manifest's `auth` section).
public struct AuthSpec: Sendable, Equatable {
    /// The source of the token.
    public enum Source: Sendable, Equatable {
        /// OAuth 2.0 client credentials (RFC 6749 section 4.4).
        case clientCredentials(ClientCredentials)
        /// A file holding the token, re-read when it changes (a sidecar, a projected token).
        case tokenFile(String)
    }

    /// What a client-credentials grant needs.
    public struct ClientCredentials: Sendable, Equatable {
        /// The token endpoint.
        public var tokenURL: String
        /// The client's id.
        public var clientID: String
        /// The client's secret: never printed.
        public var clientSecret: String
        /// The `scope` asked for, if any.
        public var scope: String?
        /// The `audience` asked for, if any.
        public var audience: String?
        /// Send the client's id and secret as HTTP Basic (the default, which every server must
        /// support) or in the form body.
        public var inBody = false

        /// Credentials for `tokenURL`.
        public init(tokenURL: String, clientID: String, clientSecret: String) {
            self.tokenURL = tokenURL
            self.clientID = clientID
            self.clientSecret = clientSecret
        }
    }

    /// The header the token goes in, as `Bearer <token>`.
    public var header = "Authorization"
    /// Where tokens come from.
    public var source: Source

    /// A spec with its token from `source`.
    public init(source: Source) {
        self.source = source
    }
}

/// A token and the generation it belongs to (each renewal is a new generation).
struct Token: Sendable, Equatable {
    let value: String
    let generation: Int
}

/// The bearer token of a run: fetched before the first request, renewed before it runs out and
/// once when an answer says 401. Tokens are secrets: they are never printed or journaled, and an
/// error names only statuses and the OAuth error code.
///
/// Renewal is done once for everyone: requests that got a 401 with the same token all wait for
/// one new token.
final class Credentials: Sendable {
    private struct State {
        var token: Token?
        /// When the token should be renewed (before it expires); nil: when it is refused.
        var renewAt: ContinuousClock.Instant?
        /// A fetch under way, with those waiting for it.
        var fetching = false
        /// Why the last fetch failed; the run stops on it.
        var failure: RunStop?
        var waiters: [UnsafeContinuation<Result<Token, RunStop>, Never>] = []
        /// The token file as last read: to notice that it changed.
        var fileStamp: FileStamp?
        var lastFileCheck: Int64 = 0
        var generation = 0
        /// The newest generation an answer other than 401 came back with.
        var worked = 0
    }

    private struct FileStamp: Equatable {
        let inode: UInt64
        let size: Int
        let modified: Int
    }

    let spec: AuthSpec
    private let transport: any Transport
    private let timeout: Duration
    private let events: @Sendable (RunEvent) -> Void
    private let state = Mutex(State())

    init(spec: AuthSpec, transport: any Transport, timeout: Duration, events: @escaping @Sendable (RunEvent) -> Void) {
        self.spec = spec
        self.transport = transport
        self.timeout = timeout
        self.events = events
    }

    /// Notes that an answer other than 401 came back with `token`: its generation works.
    func accepted(_ token: Token) {
        state.withLock { $0.worked = max($0.worked, token.generation) }
    }

    /// True when no answer but 401 ever came back with `token` or a newer one: a renewed token
    /// that was refused without ever working means the credentials are refused, not expired.
    func neverWorked(_ token: Token) -> Bool {
        state.withLock { token.generation > $0.worked }
    }

    /// The token to send now.
    func current() async -> Result<Token, RunStop> {
        let now = ContinuousClock.now
        let ready = state.withLock { state -> Token? in
            guard let token = state.token else { return nil }
            if let renewAt = state.renewAt, now >= renewAt { return nil }
            return token
        }
        if let ready {
            if case .tokenFile = spec.source { return refreshFileIfChanged() ?? .success(ready) }
            return .success(ready)
        }
        return await fetch(replacing: nil)
    }

    /// A token other than `token`, which an answer refused (401): renewed once, by whoever asks
    /// first; the others get the same new token.
    func renew(after token: Token) async -> Result<Token, RunStop> {
        await fetch(replacing: token)
    }

    /// Fetches a new token unless one newer than `replacing` exists or a fetch is under way.
    private func fetch(replacing old: Token?) async -> Result<Token, RunStop> {
        enum Step { case have(Token), wait, fetch }
        let step = state.withLock { state -> Step in
            if let token = state.token, token != old, state.renewAt.map({ ContinuousClock.now < $0 }) ?? true {
                return .have(token)
            }
            if state.fetching { return .wait }
            state.fetching = true
            return .fetch
        }
        switch step {
        case .have(let token): return .success(token)
        case .wait:
            return await withUnsafeContinuation { continuation in
                let ready = state.withLock { state -> Result<Token, RunStop>? in
                    if !state.fetching {
                        if let failure = state.failure { return .failure(failure) }
                        if let token = state.token { return .success(token) }
                    }
                    state.waiters.append(continuation)
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        case .fetch:
            let result: Result<(String, Duration?), RunStop>
            switch spec.source {
            case .clientCredentials(let credentials): result = await requestToken(credentials)
            case .tokenFile(let path): result = readTokenFile(path, previous: old)
            }
            let (outcome, waiters) = state.withLock { state -> (Result<Token, RunStop>, [UnsafeContinuation<Result<Token, RunStop>, Never>]) in
                state.fetching = false
                defer { state.waiters = [] }
                switch result {
                case .success(let (value, lifetime)):
                    state.generation += 1
                    let token = Token(value: value, generation: state.generation)
                    state.token = token
                    // Renewed a little before it runs out: a tenth of its life, at most a minute.
                    state.renewAt = lifetime.map { .now + $0 - min(.seconds(60), $0 / 10) }
                    state.failure = nil
                    return (.success(token), state.waiters)
                case .failure(let stop):
                    state.failure = stop
                    return (.failure(stop), state.waiters)
                }
            }
            waiters.forEach { $0.resume(returning: outcome) }
            if case .success(let token) = outcome, token.generation > 1 {
                events(.note("the access token was renewed (\(token.generation - 1) renewal\(token.generation == 2 ? "" : "s") so far)"))
            }
            return outcome
        }
    }

    /// A client-credentials grant: up to three tries on network failures, none when the server
    /// refuses (a wrong secret does not get better).
    private func requestToken(_ credentials: AuthSpec.ClientCredentials) async -> Result<(String, Duration?), RunStop> {
        var form = [("grant_type", "client_credentials")]
        if let scope = credentials.scope { form.append(("scope", scope)) }
        if let audience = credentials.audience { form.append(("audience", audience)) }
        var headers = [("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/json")]
        if credentials.inBody {
            form += [("client_id", credentials.clientID), ("client_secret", credentials.clientSecret)]
        } else {
            // RFC 6749 2.3.1: the id and secret are form-encoded before they are joined.
            let pair = Credentials.formEncode(credentials.clientID) + ":" + Credentials.formEncode(credentials.clientSecret)
            headers.append(("Authorization", "Basic " + Data(pair.utf8).base64EncodedString()))
        }
        let body = form.map { Credentials.formEncode($0.0) + "=" + Credentials.formEncode($0.1) }.joined(separator: "&")
        let request = PreparedRequest(name: "token", method: .post, url: credentials.tokenURL, headers: headers, body: Array(body.utf8))
        var lastProblem = ""
        for attempt in 1...3 {
            switch await transport.send(request, timeout: timeout) {
            case .response(let status, _, let body) where (200..<300).contains(status):
                guard let json = try? JSONParser.parse(body), case .string(let token)? = json["access_token"], !token.isEmpty else {
                    return .failure(RunStop("the token endpoint answered HTTP \(status) without an access_token"))
                }
                if HeaderField.problem(in: token) != nil {
                    return .failure(RunStop("the token endpoint's access_token cannot be sent in a header (it holds a control character)"))
                }
                var lifetime: Duration?
                if case .number(let text)? = json["expires_in"], let seconds = Double(text), seconds > 0 {
                    lifetime = Units.seconds(min(seconds, 86_400 * 365))
                }
                return .success((token, lifetime))
            case .response(let status, _, let body):
                var code = ""
                if let json = try? JSONParser.parse(body), case .string(let error)? = json["error"],
                   error.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }), error.count <= 64 {
                    code = " (\(error))"
                }
                if status >= 500 && attempt < 3 {
                    lastProblem = "HTTP \(status)\(code)"
                    try? await Task.sleep(for: .milliseconds(200 << attempt))
                    continue
                }
                return .failure(RunStop("the token endpoint refused the client credentials: HTTP \(status)\(code)"))
            case .failure(.cancelled):
                return .failure(RunStop("interrupted while fetching an access token"))
            case .failure(let failure):
                lastProblem = Runner.describe(failure)
                if attempt < 3 { try? await Task.sleep(for: .milliseconds(200 << attempt)) }
            }
        }
        return .failure(RunStop("the token endpoint could not be reached: \(lastProblem)"))
    }

    /// The token in the file; when `previous` is given, one that differs from it.
    private func readTokenFile(_ path: String, previous: Token?) -> Result<(String, Duration?), RunStop> {
        guard let fd = PrivateFile.openForReading(path) else {
            return .failure(RunStop("the token file \(path) cannot be read"))
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 1 << 20 {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += chunk[0..<count]
        }
        var info = stat()
        if fstat(fd, &info) == 0 {
            let stamp = FileStamp(inode: UInt64(info.st_ino), size: Int(info.st_size), modified: Int(info.st_mtim.tv_sec) * 1_000_000_000 + Int(info.st_mtim.tv_nsec))
            state.withLock { $0.fileStamp = stamp }
        }
        let token = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty else { return .failure(RunStop("the token file \(path) is empty")) }
        guard HeaderField.problem(in: token) == nil else {
            return .failure(RunStop("the token in \(path) cannot be sent in a header (it holds a control character)"))
        }
        if let previous, previous.value == token {
            return .failure(RunStop("the token in \(path) was refused (HTTP 401) and the file has not changed since"))
        }
        return .success((token, nil))
    }

    /// Re-reads the token file when it changed (checked at most once a second); nil when it did not.
    private func refreshFileIfChanged() -> Result<Token, RunStop>? {
        guard case .tokenFile(let path) = spec.source else { return nil }
        let now = coarseMilliseconds()
        let due = state.withLock { state -> FileStamp?? in
            guard now - state.lastFileCheck >= 1000 else { return .none }
            state.lastFileCheck = now
            return .some(state.fileStamp)
        }
        guard case .some(let stamp) = due else { return nil }
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        let current = FileStamp(inode: UInt64(info.st_ino), size: Int(info.st_size), modified: Int(info.st_mtim.tv_sec) * 1_000_000_000 + Int(info.st_mtim.tv_nsec))
        guard current != stamp else { return nil }
        switch readTokenFile(path, previous: nil) {
        case .success(let (value, _)):
            return state.withLock { state in
                if state.token?.value == value, let token = state.token { return .success(token) }
                state.generation += 1
                let token = Token(value: value, generation: state.generation)
                state.token = token
                return .success(token)
            }
        case .failure(let stop): return .failure(stop)
        }
    }

    /// `application/x-www-form-urlencoded` text: unreserved characters as they are, space as `+`.
    static func formEncode(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: " "): out += "+"
            default: out += String(format: "%%%02X", byte)
            }
        }
        return out
    }
}

/// Why a run stops early: the failure is not the rows' (a refused token, a certificate that is not
/// trusted, an endpoint that stays down). A stopped run keeps its outputs `.partial` and its
/// journals for `--resume`, and exits 4.
public struct RunStop: Error, Sendable, Equatable, CustomStringConvertible {
    /// The reason, in one line.
    public let reason: String

    init(_ reason: String) {
        self.reason = reason
    }

    /// The reason.
    public var description: String { reason }
}
