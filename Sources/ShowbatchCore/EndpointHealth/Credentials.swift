import Foundation
import ShowbatchBasics
import Synchronization
import ShowbatchManifest

/// A token and the generation it belongs to (each renewal is a new generation).
struct Token: Sendable, Equatable {
    let value: String
    let generation: Int
}

/// What a caller of `CredentialState` does next.
enum CredentialStep: Equatable {
    /// Send with this token.
    case ready(Token)
    /// Fetch a token, then report it with `fetched`: nobody else is fetching.
    case fetch
    /// Another caller is fetching: park with `park` until it reports.
    case wait
    /// Fetching failed for good: the run stops.
    case failed(RunStop)
}

/// The decisions about a run's bearer token, as a plain value (`Credentials` runs it under a
/// lock): when the token is good, when it must be fetched, that one fetch serves everyone who
/// asked while it was under way, and which generations have worked.
struct CredentialState<Waiter>: ~Copyable {
    typealias Step = CredentialStep

    private(set) var token: Token?
    /// When the token should be renewed (before it expires, in milliseconds); nil: when refused.
    private var renewAt: Int64?
    /// When it runs out: until then, callers go on with it while its renewal is under way.
    private var expiresAt: Int64?
    private(set) var fetching = false
    private var waiters: [Waiter] = []
    private(set) var generation = 0
    /// The newest generation an answer other than 401 came back with.
    private(set) var worked = 0
    private var failure: RunStop?
    private(set) var cancelled = false

    /// Callers waiting for the fetch under way.
    var waitingCount: Int { waiters.count }

    /// The token to send now: while it is renewed ahead of its end, the others go on with it.
    mutating func current(now: Int64) -> Step {
        if let failure { return .failed(failure) }
        if let token, renewAt.map({ now < $0 }) ?? true { return .ready(token) }
        if fetching, let token, let expiresAt, now < expiresAt { return .ready(token) }
        return fetchOrWait()
    }

    /// A token newer than `old`, which an answer refused (401): renewed once, by whoever asks
    /// first; the others get the same new token.
    mutating func renew(after old: Token, now: Int64) -> Step {
        if let failure { return .failed(failure) }
        if let token, token.generation > old.generation, renewAt.map({ now < $0 }) ?? true { return .ready(token) }
        return fetchOrWait()
    }

    private mutating func fetchOrWait() -> Step {
        if fetching { return .wait }
        fetching = true
        return .fetch
    }

    /// Parks `waiter` until the fetch under way reports; nil when parked, else what it would
    /// have been told (the fetch ended, or the run is cancelled, meanwhile).
    mutating func park(_ waiter: Waiter) -> Result<Token, RunStop>? {
        if cancelled { return .failure(RunStop.interruptedFetchingToken) }
        guard fetching else {
            if let failure { return .failure(failure) }
            if let token { return .success(token) }
            return .failure(RunStop("no access token"))
        }
        waiters.append(waiter)
        return nil
    }

    /// The fetch ended: a new token (valid for `lifetime` milliseconds, when the server said),
    /// or the failure that stops the run. Every waiter is resumed with the outcome.
    mutating func fetched(_ result: Result<(value: String, lifetime: Int64?), RunStop>, now: Int64)
        -> (outcome: Result<Token, RunStop>, resume: [Waiter]) {
        fetching = false
        let outcome: Result<Token, RunStop>
        switch result {
        case .success(let fetched):
            generation += 1
            let new = Token(value: fetched.value, generation: generation)
            token = new
            // Renewed a little before it runs out: a tenth of its life, at most a minute.
            renewAt = fetched.lifetime.map { now + $0 - min(60_000, $0 / 10) }
            expiresAt = fetched.lifetime.map { now + $0 }
            failure = nil
            outcome = .success(new)
        case .failure(let stop):
            failure = stop
            outcome = .failure(stop)
        }
        defer { waiters = [] }
        return (outcome, waiters)
    }

    /// The token file changed on disk: its token replaces the one in use.
    mutating func replaced(by value: String) -> Token {
        if let token, token.value == value { return token }
        generation += 1
        let new = Token(value: value, generation: generation)
        token = new
        renewAt = nil
        expiresAt = nil
        return new
    }

    /// An answer other than 401 came back with `token`: its generation works.
    mutating func accepted(_ token: Token) {
        worked = max(worked, token.generation)
    }

    /// True when no answer but 401 ever came back with `token` or a newer one: a renewed token
    /// that was refused without ever working means the credentials are refused, not expired.
    func neverWorked(_ token: Token) -> Bool { token.generation > worked }

    /// The run is cancelled: every waiter goes on (and sees it).
    mutating func cancel() -> [Waiter] {
        cancelled = true
        defer { waiters = [] }
        return waiters
    }
}

/// The bearer token of a run: fetched before the first request, renewed before it runs out and
/// when an answer says 401. Tokens are secrets: they are never printed or journaled, and an
/// error names only statuses and the OAuth error code.
///
/// A token endpoint that is unavailable (5xx, 429, a timeout, no connection) is asked again with
/// backoff and jitter for up to `circuit.max_pause`; only an answer refusing the credentials
/// (400, 401, 403…) stops the run at once. Renewal is done once for everyone: requests that got
/// a 401 with the same token all wait for one new token.
final class Credentials: Sendable {
    private typealias State = CredentialState<UnsafeContinuation<Result<Token, RunStop>, Never>>

    /// What one try at getting a token came to.
    enum FetchResult: Equatable {
        case token(String, lifetime: Int64?)
        /// Refused for good: the run stops.
        case refused(String)
        /// Not now (the endpoint is down, busy, unreachable; the file is being replaced): try again.
        case unavailable(String, retryAfter: Duration?)
    }

    let spec: AuthSpec
    private let transport: any Transport
    private let timeout: Duration
    private let maxPause: Duration
    private let events: @Sendable (RunEvent) -> Void
    /// Learns each token, so that no message can hold one.
    private let redactor: Redactor?
    private let state = Mutex(State())
    private let random: Mutex<SeededGenerator>
    /// The token file as last read, and when it was last looked at (milliseconds).
    private let fileWatch = Mutex<(stamp: FileStamp?, checked: Int64)>((nil, 0))

    init(spec: AuthSpec, transport: any Transport, timeout: Duration, maxPause: Duration = .seconds(300), seed: UInt64 = 1,
         redactor: Redactor? = nil, events: @escaping @Sendable (RunEvent) -> Void) {
        self.spec = spec
        self.redactor = redactor
        self.transport = transport
        self.timeout = timeout
        self.maxPause = maxPause
        self.events = events
        random = Mutex(SeededGenerator(seed: seed))
    }

    /// Tokens fetched again after the first.
    var renewals: Int { state.withLock { max(0, $0.generation - 1) } }

    /// Notes that an answer other than 401 came back with `token`: its generation works.
    func accepted(_ token: Token) {
        state.withLock { $0.accepted(token) }
    }

    /// True when no answer but 401 ever came back with `token` or a newer one.
    func neverWorked(_ token: Token) -> Bool {
        state.withLock { $0.neverWorked(token) }
    }

    /// The token to send now.
    func current() async -> Result<Token, RunStop> {
        let step = state.withLock { $0.current(now: coarseMilliseconds()) }
        if case .ready(let token) = step, case .tokenFile = spec.source { return refreshFileIfChanged() ?? .success(token) }
        return await carryOut(step, replacing: nil)
    }

    /// A token other than `token`, which an answer refused (401).
    func renew(after token: Token) async -> Result<Token, RunStop> {
        await carryOut(state.withLock { $0.renew(after: token, now: coarseMilliseconds()) }, replacing: token)
    }

    private func carryOut(_ step: CredentialStep, replacing old: Token?) async -> Result<Token, RunStop> {
        switch step {
        case .ready(let token): return .success(token)
        case .failed(let stop): return .failure(stop)
        case .wait: return await waitForFetch()
        case .fetch:
            let result = await fetchPatiently(replacing: old)
            let (outcome, waiters) = state.withLock { $0.fetched(result, now: coarseMilliseconds()) }
            waiters.forEach { $0.resume(returning: outcome) }
            if case .success(let token) = outcome, token.generation > 1 {
                events(.note("the access token was renewed (\(token.generation - 1) renewal\(token.generation == 2 ? "" : "s") so far)"))
            }
            return outcome
        }
    }

    private func waitForFetch() async -> Result<Token, RunStop> {
        await withTaskCancellationHandler {
            await withUnsafeContinuation { continuation in
                let cancelled = Task.isCancelled
                let ready = state.withLock { state -> Result<Token, RunStop>? in
                    cancelled ? .failure(RunStop.interruptedFetchingToken) : state.park(continuation)
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let waiters = state.withLock { $0.cancel() }
            waiters.forEach { $0.resume(returning: .failure(RunStop.interruptedFetchingToken)) }
        }
    }

    /// Gets a token, asking again with growing waits (half to all of 0.5 s, 1 s, 2 s… up to 30 s)
    /// while the source is unavailable, for up to `maxPause`.
    private func fetchPatiently(replacing old: Token?) async -> Result<(value: String, lifetime: Int64?), RunStop> {
        let started = ContinuousClock.now
        var tries = 0
        while true {
            tries += 1
            let result: FetchResult
            switch spec.source {
            case .clientCredentials(let credentials): result = await requestToken(credentials)
            // After one wait for the file to change, its token is tried again as it is: a window
            // of 401s (an authentication backend restarting) ends without the file changing, and
            // a token that is really refused then pauses sending (a probe each time) until
            // circuit.max_pause, as renewed client credentials do.
            case .tokenFile(let path): result = readTokenFile(path, previous: tries == 1 ? old : nil)
            }
            switch result {
            case .token(let value, let lifetime):
                redactor?.add(value)
                return .success((value, lifetime))
            case .refused(let reason): return .failure(RunStop(reason))
            case .unavailable(let problem, let retryAfter):
                if Task.isCancelled { return .failure(RunStop.interruptedFetchingToken) }
                let elapsed = ContinuousClock.now - started
                guard elapsed < maxPause else {
                    return .failure(RunStop("\(problem), for \(Units.text(maxPause)) (circuit.max_pause)"))
                }
                let drawn = random.withLock { RetryPolicy.service.backoff.delay(after: tries, random: &$0) }
                let delay = min(retryAfter ?? drawn, maxPause - elapsed)
                events(.note("\(problem); asking again in \(Units.text(delay))"))
                do { try await Task.sleep(for: delay) } catch {
                    return .failure(RunStop.interruptedFetchingToken)
                }
            }
        }
    }

    /// One client-credentials grant.
    private func requestToken(_ credentials: AuthSpec.ClientCredentials) async -> FetchResult {
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
        switch await transport.send(request, timeout: timeout) {
        case .response(let status, _, let body) where (200..<300).contains(status):
            guard let json = try? JSONParser.parse(body), case .string(let token)? = json["access_token"], !token.isEmpty else {
                return .refused("the token endpoint answered HTTP \(status) without an access_token")
            }
            if HeaderField.problem(in: token) != nil {
                return .refused("the token endpoint's access_token cannot be sent in a header (it holds a control character)")
            }
            var lifetime: Int64?
            if case .number(let text)? = json["expires_in"], let seconds = Double(text), seconds > 0 {
                lifetime = Int64(min(seconds, 86_400 * 365) * 1000)
            }
            return .token(token, lifetime: lifetime)
        case .response(let status, let headers, let body):
            let code = Credentials.oauthError(body).map { " (\($0))" } ?? ""
            if RetryPolicy.service.retries(status: status) {
                return .unavailable("the token endpoint answered HTTP \(status)\(code)",
                                    retryAfter: headers["retry-after"].flatMap(RetryAfter.parse))
            }
            return .refused("the token endpoint refused the client credentials: HTTP \(status)\(code)")
        case .failure(.cancelled):
            return .unavailable("interrupted while fetching an access token", retryAfter: nil)
        case .failure(let failure) where failure.stopsTheRun:
            return .refused("the token endpoint cannot be trusted: \(failure.words)")
        case .failure(let failure):
            return .unavailable("the token endpoint could not be reached: \(failure.words)", retryAfter: nil)
        }
    }

    /// The OAuth error code of an error answer (RFC 6749 5.2), when it is one: lower-case
    /// letters and underscores only, so that nothing else an endpoint echoes is ever printed.
    static func oauthError(_ body: [UInt8]) -> String? {
        guard let json = try? JSONParser.parse(body), case .string(let error)? = json["error"], (1...40).contains(error.utf8.count),
              error.utf8.allSatisfy({ ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z")) || $0 == UInt8(ascii: "_") }) else { return nil }
        return error
    }

    /// The token in the file (read through links: kubelet mounts Secrets as
    /// `token -> ..data/token`); when `previous` is given, one that differs from it.
    private func readTokenFile(_ path: String, previous: Token?) -> FetchResult {
        let bytes: [UInt8]
        do {
            let file = try FileDescriptor.openInput(path)
            bytes = try file.readAll(limit: 1 << 20)
            fileWatch.withLock { $0.stamp = file.stamp() }
        } catch {
            return .unavailable("the token file \(error)", retryAfter: nil)
        }
        let token = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty else { return .unavailable("the token file \(path) is empty", retryAfter: nil) }
        guard HeaderField.problem(in: token) == nil else {
            return .refused("the token in \(path) cannot be sent in a header (it holds a control character)")
        }
        if let previous, previous.value == token {
            // A sidecar or the kubelet replaces it soon: wait for that, within circuit.max_pause.
            return .unavailable("the token in \(path) was refused (HTTP 401) and the file has not changed since", retryAfter: nil)
        }
        return .token(token, lifetime: nil)
    }

    /// Re-reads the token file when it changed (looked at at most once a second); nil when it did not.
    private func refreshFileIfChanged() -> Result<Token, RunStop>? {
        guard case .tokenFile(let path) = spec.source else { return nil }
        let now = coarseMilliseconds()
        let due = fileWatch.withLock { watch -> FileStamp?? in
            guard now - watch.checked >= 1000 else { return .none }
            watch.checked = now
            return .some(watch.stamp)
        }
        guard case .some(let stamp) = due, let current = FileStamp.of(path), current != stamp else { return nil }
        guard case .token(let value, _) = readTokenFile(path, previous: nil) else { return nil }
        redactor?.add(value)
        return .success(state.withLock { $0.replaced(by: value) })
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
