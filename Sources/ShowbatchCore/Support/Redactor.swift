import Synchronization

/// Every secret a run knows, and the one place its runtime messages are cleared of them: the
/// resolved header values (`${ENV}` values in them included), the OAuth client secret, and each
/// access token as it is fetched or read. A token endpoint that echoes the client secret in its
/// error, or a server that echoes a header, cannot put it on stderr, in a log or in a report:
/// events, stop reasons and errors leave the runner through `redact`.
final class Redactor: Sendable {
    /// What a secret is replaced by.
    static let mask = "<redacted>"
    /// Texts shorter than this (in UTF-8 bytes) are never taken for secrets, in messages of a
    /// run or of a manifest: a word as short is far more often a name, and hiding it would
    /// scramble every message that holds it.
    static let shortest = 6

    private let secrets = Mutex<[String]>([])

    /// The secrets of `manifest`.
    init(manifest: Manifest) {
        var found: [String] = []
        for header in manifest.headers + manifest.requests.flatMap(\.headers) {
            for case .literal(let text) in header.value.parts {
                found.append(text)
                // "Bearer TOKEN": the token alone is a secret too.
                found += text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            }
        }
        if case .clientCredentials(let credentials)? = manifest.auth?.source { found.append(credentials.clientSecret) }
        secrets.withLock { $0 = Redactor.kept(found) }
    }

    /// Adds a secret learnt while the run goes (an access token).
    func add(_ secret: String) {
        secrets.withLock { $0 = Redactor.kept($0 + [secret]) }
    }

    /// `text` with every secret replaced by `<redacted>`.
    func redact(_ text: String) -> String {
        let known = secrets.withLock { $0 }
        var out = text
        for secret in known where out.contains(secret) {
            out = out.replacingOccurrences(of: secret, with: Redactor.mask)
        }
        return out
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
        case .started, .progress: return event
        }
    }

    /// An error with its words cleared (a manifest's diagnostics are cleared where they are made).
    func redact(_ error: RunError) -> RunError {
        switch error {
        case .usage(let text): return .usage(redact(text))
        case .runtime(let text): return .runtime(redact(text))
        case .sideFile(let text): return .sideFile(redact(text))
        case .manifest: return error
        }
    }

    /// Long enough and distinct, longest first (a secret inside another is replaced after it).
    private static func kept(_ texts: [String]) -> [String] {
        Array(Set(texts.filter { $0.count >= shortest })).sorted { $0.count > $1.count || ($0.count == $1.count && $0 < $1) }
    }
}
