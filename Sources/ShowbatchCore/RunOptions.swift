/// Which part of the work a process takes: work items whose ordinal mod `count` is `index`.
public struct Shard: Sendable, Equatable {
    /// This shard, 0-based.
    public let index: Int
    /// The number of shards.
    public let count: Int

    /// Creates a shard.
    public init(index: Int, count: Int) {
        self.index = index
        self.count = count
    }

    /// Parses `I/N` or `auto/N` (`JOB_COMPLETION_INDEX` of a Kubernetes Indexed Job); the
    /// error message names what was expected.
    public static func parse(_ text: String, environment: [String: String]) -> Result<Shard, ShardParseError> {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let count = Int(parts[1]), count >= 1 else {
            return .failure(ShardParseError(message: "--shard must be I/N or auto/N with N ≥ 1, such as 0/4; got \"\(text)\""))
        }
        let index: Int
        if parts[0] == "auto" {
            guard let raw = environment["JOB_COMPLETION_INDEX"] else {
                return .failure(ShardParseError(message: "--shard auto/\(count) needs JOB_COMPLETION_INDEX, which is not set (it is set in Kubernetes Indexed Jobs)"))
            }
            guard let value = Int(raw) else {
                return .failure(ShardParseError(message: "JOB_COMPLETION_INDEX must be an integer for --shard auto/\(count); got \"\(raw)\""))
            }
            index = value
        } else {
            guard let value = Int(parts[0]) else {
                return .failure(ShardParseError(message: "--shard must be I/N or auto/N with N ≥ 1, such as 0/4; got \"\(text)\""))
            }
            index = value
        }
        guard (0..<count).contains(index) else {
            return .failure(ShardParseError(message: "shard index \(index) is out of range for \(count) shards; expected 0 to \(count - 1)"))
        }
        return .success(Shard(index: index, count: count))
    }

    /// Whether this shard takes the work item with `ordinal`.
    public func takes(_ ordinal: Int) -> Bool { ordinal % count == index }

    /// The output path for this shard: `{shard}` replaced, else `-shard-I` before the extension.
    public func path(_ path: String) -> String {
        if path.contains("{shard}") { return path.replacingOccurrences(of: "{shard}", with: String(index)) }
        guard count > 1 else { return path }
        let slash = path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex
        let name = path[slash...]
        if let dot = name.lastIndex(of: "."), dot != name.startIndex {
            return String(path[..<dot]) + "-shard-\(index)" + String(path[dot...])
        }
        return path + "-shard-\(index)"
    }
}

/// A `--shard` value that is not valid.
public struct ShardParseError: Error, Sendable {
    /// What was expected.
    public let message: String
}

/// How progress is shown on stderr.
public enum ProgressMode: String, Sendable, CaseIterable {
    case auto, always, never
}

/// The HTTP clients showbatch can send with.
public enum TransportKind: String, Sendable, CaseIterable {
    /// libcurl's multi interface on one event-loop thread (the default: measured faster).
    case curl
    /// FoundationNetworking's URLSession.
    case urlsession
}

/// How log lines are written on stderr.
public enum LogFormat: String, Sendable, CaseIterable {
    case text, json
}

/// Options of one run; flags beat manifest values.
public struct RunOptions: Sendable, Equatable {
    /// `--output PATH` (relative to the current folder), or `-` for standard output.
    public var output: String?
    /// `--format`.
    public var format: OutputFormat?
    /// `--concurrency`.
    public var concurrency: Int?
    /// `--rate`.
    public var rate: Rate?
    /// `--timeout`.
    public var timeout: Duration?
    /// `--fail-fast`: stop at the first failed row.
    public var failFast = false
    /// `--resume`: skip journaled rows.
    public var resume = false
    /// `--shard`.
    public var shard: Shard?
    /// `--strict-hostname`: a failed hostname check is exit 3.
    public var strictHostname = false
    /// `--progress`.
    public var progress: ProgressMode = .auto
    /// `--log-format`.
    public var logFormat: LogFormat = .text
    /// `--quiet`: no summary, only errors.
    public var quiet = false
    /// `--verbose`: a line per attempt (method, URL, status, duration).
    public var verbose = false
    /// `--transport`: which HTTP client sends the requests.
    public var transport: TransportKind?
    /// Send every request here instead (the emulator of `--emulate`).
    public var baseURLOverride: String?

    /// Default options.
    public init() {}
}
