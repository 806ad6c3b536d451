import Foundation
import ShowbatchBasics
import ShowbatchManifest
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A loopback HTTP/1.1 server standing in for a VGS reveal route in front of an echo upstream.
///
/// It binds 127.0.0.1 only. Each connection is served by its own thread with blocking I/O:
/// on loopback that is as fast as an event loop for the few hundred connections a run opens,
/// and injected latency can simply sleep.
package final class Emulator: Sendable {
    /// Counts of what the emulator answered.
    package struct Counts: Sendable, Equatable {
        /// Requests answered or dropped (hostname checks included).
        package var requests = 0
        /// Answers with an injected failure status.
        package var failed = 0
        /// Answers 429 from the throttle.
        package var throttled = 0
        /// Connections dropped without an answer.
        package var dropped = 0
        /// Answers whose body is not JSON.
        package var malformed = 0
    }

    private struct FaultState {
        var random: SeededGenerator
        var tokens: Double
        var refilled: ContinuousClock.Instant
        /// When the outage began, once it has.
        var outageStarted: ContinuousClock.Instant?
        /// When tokens began to be refused, and when the token endpoint became unavailable.
        var refusalStarted: ContinuousClock.Instant?
        var unavailableStarted: ContinuousClock.Instant?
        /// Token requests seen.
        var tokenRequests = 0
        /// The fixed window of `windowLimit`: when it began and the requests it let through.
        var windowStarted: ContinuousClock.Instant = .now
        var windowUsed = 0
    }

    /// The fixed-window limit's verdict on one request: let through or not, the requests left,
    /// and the time to the window's reset.
    private func windowAdmits() -> (allowed: Bool, remaining: Int, reset: Duration) {
        let faults = configuration.faults
        return state.withLock { state in
            let now = ContinuousClock.now
            if now - state.windowStarted >= faults.windowLength {
                // Windows are aligned to the first one, as a limiter counting per minute is.
                let elapsed = (now - state.windowStarted) / faults.windowLength
                state.windowStarted = state.windowStarted + faults.windowLength * Int(elapsed.rounded(.down))
                state.windowUsed = 0
            }
            let allowed = state.windowUsed < faults.windowLimit!
            if allowed { state.windowUsed += 1 }
            return (allowed, faults.windowLimit! - state.windowUsed, state.windowStarted + faults.windowLength - now)
        }
    }

    /// Tokens handed out, with the requests each is still good for (nil: any number).
    private let issued = Mutex<(next: Int, uses: [String: Int?])>((1, [:]))

    /// The configuration it serves.
    package let configuration: EmulatorConfiguration
    /// The port it listens on.
    package let port: Int
    private let listener: Int32
    private let state: Mutex<FaultState>
    // Atomics, not a lock: every connection thread counts every request.
    private let requestCount = Atomic<Int>(0)
    private let failedCount = Atomic<Int>(0)
    private let throttledCount = Atomic<Int>(0)
    private let droppedCount = Atomic<Int>(0)
    private let malformedCount = Atomic<Int>(0)
    /// Whether any fault needs the shared seeded generator (it is skipped otherwise).
    private let injectsFaults: Bool
    private let connections = Mutex<Set<Int32>>([])
    private let stopped = Atomic<Bool>(false)

    /// `http://127.0.0.1:PORT`.
    package var baseURL: String { "http://127.0.0.1:\(port)" }

    /// What has been answered so far.
    package var snapshot: Counts {
        Counts(requests: requestCount.load(ordering: .relaxed), failed: failedCount.load(ordering: .relaxed),
               throttled: throttledCount.load(ordering: .relaxed), dropped: droppedCount.load(ordering: .relaxed),
               malformed: malformedCount.load(ordering: .relaxed))
    }

    /// Binds and listens; call `start()` to accept connections.
    package init(configuration: EmulatorConfiguration) throws(EmulatorError) {
        self.configuration = configuration
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw EmulatorError(message: "cannot create a socket: \(String(cString: strerror(errno)))") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(configuration.port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 1024) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw EmulatorError(message: "cannot listen on 127.0.0.1:\(configuration.port): \(reason)")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = Int(UInt16(bigEndian: actual.sin_port))
        injectsFaults = configuration.faults.failRate > 0 || configuration.faults.dropRate > 0 || configuration.faults.malformedRate > 0
            || configuration.faults.throttle != nil || configuration.faults.jitter > .zero
        state = Mutex(FaultState(random: SeededGenerator(seed: configuration.faults.seed),
                                 tokens: Double(configuration.faults.throttle?.count ?? 0),
                                 refilled: .now))
    }

    /// Starts accepting connections on a background thread.
    package func start() {
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "showbatch-emulator-accept"
        thread.start()
    }

    /// Stops accepting and closes every open connection.
    package func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        connections.withLock { open in
            for fd in open { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    deinit { stop() }

    private func acceptLoop() {
        while !stopped.load(ordering: .acquiring) {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE {
                    if errno == EMFILE || errno == ENFILE { usleep(10_000) }
                    continue
                }
                return
            }
            var yes: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
            connections.withLock { _ = $0.insert(fd) }
            let thread = Thread { [self] in
                serve(fd)
                connections.withLock { _ = $0.remove(fd) }
                close(fd)
            }
            thread.stackSize = 512 * 1024
            thread.start()
        }
    }

    // MARK: One connection

    private func serve(_ fd: Int32) {
        var connection = HTTPConnection(fd: fd, maxHeaderBytes: configuration.maxHeaderBytes, maxBodyBytes: configuration.maxBodyBytes)
        // How many answers this connection gets before it is reset or closed, if it is.
        let (resetAt, closeAt) = connectionLimits()
        var answered = 0
        while !stopped.load(ordering: .relaxed) {
            let request: HTTPRequest
            switch connection.readRequest() {
            case .request(let value): request = value
            case .closed: return
            case .reject(let status, let reason):
                _ = connection.write(HTTPResponse.json(status: status, ["error": reason], close: true).bytes)
                return
            }
            guard let response = respond(to: request) else {
                // Dropped; in an outage that resets, with RST.
                if configuration.faults.outageResets && inOutage() { reset(fd) }
                return
            }
            guard connection.write(response.bytes) else { return }
            if response.close || !request.keepAlive { return }
            answered += 1
            if answered == resetAt {
                reset(fd)
                droppedCount.add(1, ordering: .relaxed)
                return
            }
            if answered == closeAt {
                droppedCount.add(1, ordering: .relaxed)
                return
            }
        }
    }

    /// Makes the close of `fd` send RST (SO_LINGER with a zero timeout); unread data is thrown away.
    private func reset(_ fd: Int32) {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
    }

    /// The answers after which a new connection is reset and closed (0: never), drawn from the
    /// shared seeded sequence.
    private func connectionLimits() -> (reset: Int, close: Int) {
        let faults = configuration.faults
        guard faults.resetAfter != nil || faults.closeAfter != nil else { return (0, 0) }
        return state.withLock { state in
            let reset = faults.resetAfter.map { 1 + Int(state.random.next() % UInt64(max(1, $0))) } ?? 0
            let close = faults.closeAfter.map { 1 + Int(state.random.next() % UInt64(max(1, $0))) } ?? 0
            return (reset, close)
        }
    }

    /// The answer to one request; nil drops the connection without one.
    func respond(to request: HTTPRequest) -> HTTPResponse? {
        requestCount.add(1, ordering: .relaxed)
        let close = !request.keepAlive
        if request.method == "GET", request.path.hasPrefix("/collect-configs/") {
            return hostnameCheck(request.path, close: close)
        }
        if let auth = configuration.auth {
            if request.method == "POST" && request.path == "/oauth/token" {
                if tokenEndpointUnavailable(auth) { return HTTPResponse.json(status: 503, ["error": "temporarily_unavailable"], close: close) }
                return issueToken(request, auth, close: close)
            }
            guard !refusingTokens(auth), acceptToken(request) else {
                var response = HTTPResponse.json(status: 401, ["error": "invalid_token"], close: close)
                response.extraHeaders.append(("WWW-Authenticate", "Bearer error=\"invalid_token\""))
                return response
            }
        }
        if Self.isVaultAPI(request), !acceptsBasic(request) {
            return HTTPResponse.json(status: 401, ["error": "unauthorized"], close: close)
        }
        if inOutage() {
            failedCount.add(1, ordering: .relaxed)
            // A server that is down behind its address: the connection is reset, no answer.
            if configuration.faults.outageResets { return nil }
            if configuration.faults.outageHangs {
                // No answer until the outage is over (or the emulator stops): then the connection closes.
                while inOutage() && !stopped.load(ordering: .relaxed) { usleep(20_000) }
                return nil
            }
            var response = HTTPResponse.json(status: 503, ["error": "outage"], close: close)
            if let seconds = configuration.faults.outageRetryAfter { response.extraHeaders.append(("Retry-After", String(seconds))) }
            return response
        }
        var limitHeaders: [(String, String)] = []
        if configuration.faults.windowLimit != nil {
            let (allowed, remaining, reset) = windowAdmits()
            let seconds = String(Int(reset.seconds.rounded(.up)))
            if Self.isVaultAPI(request) {
                // The Vault API says what is left, never when the window resets.
                limitHeaders = [("X-RateLimit-Remaining", String(remaining))]
            } else if configuration.faults.windowHeaders {
                limitHeaders = [("X-RateLimit-Remaining", String(remaining)), ("X-RateLimit-Reset", seconds)]
            }
            if !allowed {
                throttledCount.add(1, ordering: .relaxed)
                var response = HTTPResponse.json(status: 429, ["error": "rate limited"], close: close)
                if configuration.faults.windowRetryAfter { response.extraHeaders.append(("Retry-After", seconds)) }
                response.extraHeaders += limitHeaders
                return response
            }
        }
        let faults = nextFaults()
        if faults.delay > 0 { usleep(UInt32(min(faults.delay, 60) * 1_000_000)) }
        if faults.drop {
            droppedCount.add(1, ordering: .relaxed)
            return nil
        }
        if faults.throttled {
            throttledCount.add(1, ordering: .relaxed)
            var response = HTTPResponse.json(status: 429, ["error": "rate limited"], close: close)
            response.extraHeaders.append(("Retry-After", "1"))
            return response
        }
        if faults.fail || configuration.faults.failPaths.contains(request.path) {
            failedCount.add(1, ordering: .relaxed)
            return HTTPResponse.json(status: configuration.faults.failStatus, ["error": "injected failure"], close: close)
        }
        if Self.isVaultAPI(request) { return vaultAPIAnswer(request, close: close, limitHeaders: limitHeaders) }
        var body: JSONValue = .null
        if !request.body.isEmpty {
            guard let parsed = try? JSONParser.parse(request.body) else {
                return HTTPResponse.json(status: 400, ["error": "request body is not JSON"], close: close)
            }
            body = reveal(parsed)
        }
        if faults.malformed {
            malformedCount.add(1, ordering: .relaxed)
            return HTTPResponse(status: 200, contentType: "application/json", body: Array("{\"json\": {\"trunc".utf8), close: close)
        }
        let echo: JSONValue = configuration.response.map { Self.fill($0, body: body) } ?? .object([
            JSONMember("json", body),
            JSONMember("method", .string(request.method)),
            JSONMember("path", .string(request.path)),
            JSONMember("headers", .object(request.headers.map { JSONMember($0.name, .string($0.value)) })),
        ])
        var bytes: [UInt8] = []
        bytes.reserveCapacity(512)
        echo.write(to: &bytes)
        var response = HTTPResponse(status: 200, contentType: "application/json", body: bytes, close: close)
        response.extraHeaders += limitHeaders
        return response
    }

    /// Whether every token is refused now (the configured window of 401s).
    private func refusingTokens(_ auth: EmulatorAuth) -> Bool {
        guard let after = auth.refuseAfter, requestCount.load(ordering: .relaxed) > after else { return false }
        return state.withLock { state in
            let now = ContinuousClock.now
            if state.refusalStarted == nil { state.refusalStarted = now }
            return now - state.refusalStarted! < auth.refuseFor
        }
    }

    /// Whether the token endpoint answers 503 now (the configured window).
    private func tokenEndpointUnavailable(_ auth: EmulatorAuth) -> Bool {
        state.withLock { state in
            state.tokenRequests += 1
            guard let after = auth.unavailableAfter, state.tokenRequests > after else { return false }
            let now = ContinuousClock.now
            if state.unavailableStarted == nil { state.unavailableStarted = now }
            return now - state.unavailableStarted! < auth.unavailableFor
        }
    }

    /// Whether this request falls in the configured outage.
    private func inOutage() -> Bool {
        guard let after = configuration.faults.outageAfter, requestCount.load(ordering: .relaxed) > after else { return false }
        return state.withLock { state in
            let now = ContinuousClock.now
            if state.outageStarted == nil { state.outageStarted = now }
            return now - state.outageStarted! < configuration.faults.outageFor
        }
    }

    /// `POST /oauth/token`: a client-credentials grant (id and secret as HTTP Basic or in the form).
    private func issueToken(_ request: HTTPRequest, _ auth: EmulatorAuth, close: Bool) -> HTTPResponse {
        var form: [String: String] = [:]
        for pair in String(decoding: request.body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? "" }
            if parts.count == 2 { form[parts[0]] = parts[1] }
        }
        var id = form["client_id"], secret = form["client_secret"]
        if let basic = request.header("authorization"), basic.hasPrefix("Basic "),
           let decoded = Data(base64Encoded: String(basic.dropFirst(6))).map({ String(decoding: $0, as: UTF8.self) }),
           let colon = decoded.firstIndex(of: ":") {
            id = decoded[..<colon].removingPercentEncoding
            secret = decoded[decoded.index(after: colon)...].removingPercentEncoding
        }
        guard form["grant_type"] == "client_credentials" else {
            return HTTPResponse.json(status: 400, ["error": "unsupported_grant_type"], close: close)
        }
        if let expected = auth.clientID, id != expected || secret != auth.clientSecret {
            return HTTPResponse.json(status: 401, ["error": "invalid_client"], close: close)
        }
        let token = issued.withLock { issued -> String in
            let token = "emu-token-\(issued.next)"
            issued.next += 1
            issued.uses[token] = .some(auth.tokenUses)
            return token
        }
        var members = [JSONMember("access_token", .string(token)), JSONMember("token_type", .string("Bearer"))]
        if let expiresIn = auth.expiresIn { members.append(JSONMember("expires_in", .number(String(expiresIn)))) }
        var bytes: [UInt8] = []
        JSONValue.object(members).write(to: &bytes)
        return HTTPResponse(status: 200, contentType: "application/json", body: bytes, close: close)
    }

    /// Whether the request carries a token that is still good, using one of its requests.
    private func acceptToken(_ request: HTTPRequest) -> Bool {
        guard let header = request.header("authorization"), header.hasPrefix("Bearer ") else { return false }
        let token = String(header.dropFirst(7))
        return issued.withLock { issued in
            guard let uses = issued.uses[token] else { return false }
            guard let left = uses else { return true }
            guard left > 0 else { return false }
            issued.uses[token] = .some(left - 1)
            return true
        }
    }

    /// What happens to one request.
    struct FaultDecision: Equatable {
        var delay: Double
        var drop: Bool
        var fail: Bool
        var malformed: Bool
        var throttled: Bool
    }

    /// The faults of the next request. Four draws per request, always, so that each fault's
    /// sequence depends on the seed alone.
    func nextFaults() -> FaultDecision {
        let faults = configuration.faults
        guard injectsFaults else {
            return FaultDecision(delay: faults.latency.seconds, drop: false, fail: false, malformed: false, throttled: false)
        }
        return state.withLock { state in
            let drop = state.random.unit(), fail = state.random.unit(), malformed = state.random.unit(), jitter = state.random.unit()
            var limited = false
            if let throttle = faults.throttle {
                let now = ContinuousClock.now
                let elapsed = (now - state.refilled).seconds
                state.refilled = now
                let capacity = Double(throttle.count)
                state.tokens = min(capacity, state.tokens + elapsed * capacity / throttle.per.seconds)
                if state.tokens >= 1 { state.tokens -= 1 } else { limited = true }
            }
            return FaultDecision(delay: faults.latency.seconds + (jitter * 2 - 1) * faults.jitter.seconds,
                                 drop: drop < faults.dropRate, fail: fail < faults.failRate,
                                 malformed: malformed < faults.malformedRate, throttled: limited)
        }
    }

    /// `template` with each `${body.PATH}` filled in from `body`: a string that is only the
    /// reference takes the value as it is (any JSON; null when there is none), one inside a longer
    /// string its text.
    static func fill(_ template: JSONValue, body: JSONValue) -> JSONValue {
        switch template {
        case .object(let members): return .object(members.map { JSONMember($0.key, fill($0.value, body: body)) })
        case .array(let items): return .array(items.map { fill($0, body: body) })
        case .string(let text) where text.contains("${body."):
            let references = bodyReferences(in: text)
            if references.count == 1, references[0].range == text.startIndex..<text.endIndex {
                return value(at: references[0].path, in: body) ?? .null
            }
            var out = ""
            var last = text.startIndex
            for reference in references {
                out += text[last..<reference.range.lowerBound]
                switch value(at: reference.path, in: body) {
                case .string(let string)?: out += string
                case let other?: out += other.compactText
                case nil: break
                }
                last = reference.range.upperBound
            }
            return .string(out + text[last...])
        default: return template
        }
    }

    private static func bodyReferences(in text: String) -> [(range: Range<String.Index>, path: Substring)] {
        var found: [(Range<String.Index>, Substring)] = []
        var rest = text.startIndex
        while let start = text.range(of: "${body.", range: rest..<text.endIndex), let close = text[start.upperBound...].firstIndex(of: "}") {
            found.append((start.lowerBound..<text.index(after: close), text[start.upperBound..<close]))
            rest = text.index(after: close)
        }
        return found
    }

    /// The value at a dotted path (array indexes as numbers).
    private static func value(at path: Substring, in body: JSONValue) -> JSONValue? {
        var current: JSONValue? = body
        for key in path.split(separator: ".") {
            switch current {
            case .object?: current = current?[String(key)]
            case .array(let items)?: current = Int(key).flatMap { $0 >= 0 && $0 < items.count ? items[$0] : nil }
            default: return nil
            }
        }
        return current
    }

    /// Every string that is a known alias, at any depth, replaced by its value.
    func reveal(_ value: JSONValue) -> JSONValue {
        switch value {
        case .string(let text): return .string(configuration.aliases[text] ?? text)
        case .array(let items): return .array(items.map(reveal))
        case .object(let members): return .object(members.map { JSONMember($0.key, reveal($0.value)) })
        default: return value
        }
    }

    private func hostnameCheck(_ path: String, close: Bool) -> HTTPResponse {
        let file = path.dropFirst("/collect-configs/".count)
        if file.hasSuffix(".txt"), let separator = file.range(of: "__") {
            let host = String(file[..<separator.lowerBound])
            let vault = String(file[separator.upperBound...].dropLast(4))
            if let expected = configuration.cnames[host], expected == vault {
                return HTTPResponse(status: 200, contentType: "text/plain", body: Array("https://\(host)\n".utf8), close: close)
            }
        }
        return HTTPResponse(status: 403, contentType: "text/plain", body: Array("forbidden\n".utf8), close: close)
    }
}
