import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// Which part of the work a process takes: work items whose ordinal mod `count` is `index`.
package struct Shard: Sendable, Equatable {
    /// This shard, 0-based.
    package let index: Int
    /// The number of shards.
    package let count: Int

    /// Creates a shard.
    package init(index: Int, count: Int) {
        self.index = index
        self.count = count
    }

    /// Parses `I/N` or `auto/N` (`JOB_COMPLETION_INDEX` of a Kubernetes Indexed Job); the
    /// error message names what was expected.
    package static func parse(_ text: String, environment: [String: String]) -> Result<Shard, ShardParseError> {
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
    package func takes(_ ordinal: Int) -> Bool { WorkSelection.shard(of: ordinal, among: count) == index }

    /// The output path for this shard: `{shard}` replaced, else `-shard-I` before the extension
    /// (the one shard of one writes the output itself, unless `evenOne`).
    package func path(_ path: String, evenOne: Bool = false) -> String {
        if path.contains("{shard}") { return path.replacingOccurrences(of: "{shard}", with: String(index)) }
        guard count > 1 || evenOne else { return path }
        let slash = path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex
        let name = path[slash...]
        if let dot = name.lastIndex(of: "."), dot != name.startIndex {
            return String(path[..<dot]) + "-shard-\(index)" + String(path[dot...])
        }
        return path + "-shard-\(index)"
    }
}

/// A `--shard` value that is not valid.
package struct ShardParseError: Error, Sendable {
    /// What was expected.
    package let message: String
}
