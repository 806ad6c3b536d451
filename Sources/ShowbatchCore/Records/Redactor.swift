import ShowbatchBasics
import Synchronization
import ShowbatchManifest

/// The last net for a run's secrets: the one place its runtime messages are cleared of them.
/// Messages are made without secret values in the first place (a URL is shown without its
/// headers, an error names a status or a cause); this catches what another party echoes back (a
/// token endpoint quoting the client secret, a server or curl quoting a header value or a host).
///
/// What is a secret: the value of every `${NAME}` a header or a payload uses, every value of a
/// header whose name says it carries a credential (`Authorization`, `Cookie`, `X-Api-Key`…), the
/// payloads' own texts, the OAuth client secret, the state key, and each access token as it is
/// fetched or read. Nothing else: a header value the user wrote out in a header such as
/// `X-Forwarded-For: 127.0.0.1` or `X-Team: payments` is no secret and does not scramble the URLs
/// and names that hold the same text. A name (a label, a header, a column, a request, an output
/// path) is never hidden, even when a value is written the same way.
///
/// Each secret is found as written, percent-encoded or form-encoded (a value in a URL), and
/// only when it has `shortest` characters or more: shorter ones would hide common words and
/// digits all over a log (`exp`, `1`), and no credential is that short.
final class Redactor: Sendable {
    /// What a secret is replaced by.
    static let mask = "<redacted>"
    /// Texts shorter than this (in UTF-8 bytes) are never taken for secrets.
    static let shortest = SecretIndex.shortest

    private struct State {
        var texts: Set<String>
        var index: SecretIndex
    }

    private let state: Mutex<State>
    /// What is never hidden (exactly these texts are names, not secrets).
    private let names: Set<String>

    /// The secrets of `manifest`.
    init(manifest: Manifest) {
        names = Redactor.names(of: manifest)
        let texts = Redactor.secrets(of: manifest).subtracting(names)
        state = Mutex(State(texts: texts, index: SecretIndex(Redactor.forms(of: texts))))
    }

    /// Adds a secret learnt while the run goes (an access token).
    func add(_ secret: String) {
        guard secret.utf8.count >= Redactor.shortest, !names.contains(secret) else { return }
        state.withLock { state in
            guard state.texts.insert(secret).inserted else { return }
            state.index = SecretIndex(Redactor.forms(of: state.texts))
        }
    }

    /// `text` with every secret replaced by `<redacted>`, as written or percent-encoded.
    func redact(_ text: String) -> String {
        let index = state.withLock { $0.index }
        guard !index.isEmpty, text.utf8.count >= Redactor.shortest else { return text }
        var bytes = Array(text.utf8)
        var changed = false
        // Found in the text with each %XX decoded (a text without one is itself), the whole
        // encoded run of a secret replaced: `k3y%20SECRET%20val` as one.
        var decoded: [UInt8] = []
        var starts: [Int] = []
        var at = 0
        decoded.reserveCapacity(bytes.count)
        starts.reserveCapacity(bytes.count + 1)
        while at < bytes.count {
            starts.append(at)
            if bytes[at] == UInt8(ascii: "%"), at + 2 < bytes.count, let high = Redactor.hex(bytes[at + 1]), let low = Redactor.hex(bytes[at + 2]) {
                decoded.append(high << 4 | low)
                at += 3
            } else {
                decoded.append(bytes[at])
                at += 1
            }
        }
        starts.append(bytes.count)
        for range in index.occurrences(in: decoded, minimum: Redactor.shortest).reversed() {
            bytes.replaceSubrange(starts[range.lowerBound]..<starts[range.upperBound], with: Redactor.mask.utf8)
            changed = true
        }
        return changed ? String(decoding: bytes, as: UTF8.self) : text
    }

    /// An event with its words cleared.
    func redact(_ event: RunEvent) -> RunEvent {
        switch event {
        case .note(let text): return .note(redact(text))
        case .warning(let text): return .warning(redact(text))
        case .attempt(var record):
            record.url = redact(record.url)
            record.request = redact(record.request)
            record.failure = record.failure.map(redact)
            return .attempt(record)
        case .started(var start):
            // A custom hostname may come from a variable a header uses too.
            start.baseURL = redact(start.baseURL)
            return .started(start)
        case .progress: return event
        }
    }

    /// An error with its words cleared (a manifest's diagnostics are cleared where they are made).
    func redact(_ error: RunError) -> RunError {
        switch error {
        case .usage(let problem): return .usage(problem.redacted(redact))
        case .runtime(let problem): return .runtime(problem.redacted(redact))
        case .sideFile(let problem): return .sideFile(problem.redacted(redact))
        case .manifest: return error
        }
    }

    /// A row's error, as written into its error cell.
    func redact(_ error: RowError) -> RowError {
        var error = error
        error.message = redact(error.message)
        return error
    }

    /// Whether a header named `name` carries a credential, whatever its value looks like.
    static func carriesCredential(_ name: String) -> Bool {
        let name = name.lowercased()
        return ["auth", "cookie", "key", "token", "secret", "pass", "session", "signature", "credential", "jwt", "csrf", "xsrf"]
            .contains { name.contains($0) }
    }

    /// The secrets of `manifest`, each long enough, as written.
    private static func secrets(of manifest: Manifest) -> Set<String> {
        var found: [String] = manifest.environmentSecrets
        for header in manifest.headers + manifest.requests.flatMap(\.headers) where carriesCredential(header.name) {
            for case .literal(let text) in header.value.parts {
                found.append(text)
                // "Bearer TOKEN": the token alone is a secret too.
                found += text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            }
        }
        // A variable's value in "Bearer ${TOKEN}" was found whole; so is each word of one.
        for value in manifest.environmentSecrets where value.contains(" ") {
            found += value.split(separator: " ").map(String.init)
        }
        for request in manifest.requests {
            if let payload = request.payload { payloadTexts(payload, into: &found) }
        }
        if case .clientCredentials(let credentials)? = manifest.auth?.source { found.append(credentials.clientSecret) }
        if let basic = manifest.basicAuth { found += [basic.password, basic.headerValue, String(basic.headerValue.dropFirst(6))] }
        if let secret = manifest.emulator?.auth?.clientSecret { found.append(secret) }
        return Set(found.filter { $0.utf8.count >= shortest && !authSchemes.contains($0.lowercased()) })
    }

    /// Words of a credential header that are not secret: `Bearer` in `Bearer TOKEN`.
    private static let authSchemes: Set<String> = ["bearer", "basic", "digest", "negotiate", "token"]

    private static func payloadTexts(_ value: PayloadValue, into found: inout [String]) {
        switch value {
        case .string(let template):
            for case .literal(let text) in template.parts { found.append(text) }
        case .array(let items):
            for item in items { payloadTexts(item, into: &found) }
        case .object(let members):
            for member in members { payloadTexts(member.value, into: &found) }
        case .null, .bool, .number: break
        }
    }

    /// The names a message may hold, which are never hidden.
    private static func names(of manifest: Manifest) -> Set<String> {
        var names: Set<String> = []
        for header in manifest.headers { names.insert(header.name) }
        for output in [manifest.output] + manifest.requests.map(\.output) {
            guard let output else { continue }
            // As resolved against the manifest's folder, and as a message may show it (from
            // any folder up).
            for path in [output.path] + (output.rejects.map { [$0] } ?? []) {
                names.insert(path)
                var rest = Substring(path)
                while let slash = rest.firstIndex(of: "/") {
                    rest = rest[rest.index(after: slash)...]
                    if !rest.isEmpty { names.insert(String(rest)) }
                }
            }
            for column in output.columns ?? [] { names.insert(column.name) }
        }
        for request in manifest.requests {
            for header in request.headers { names.insert(header.name) }
            for label in request.labels { names.insert(label.name) }
            if case .literal(let name)? = request.name.parts.first, request.name.parts.count == 1 { names.insert(name) }
            if let each = request.each { names.insert(each.name) }
        }
        return names
    }

    /// Each secret as written and, holding spaces, as a form encodes it (`+` for each space);
    /// percent-encoded forms are found by decoding the text (`redact`).
    private static func forms(of texts: Set<String>) -> [String] {
        var forms = Set(texts)
        for text in texts where text.contains(" ") { forms.insert(text.replacingOccurrences(of: " ", with: "+")) }
        return Array(forms)
    }

    private static func hex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
