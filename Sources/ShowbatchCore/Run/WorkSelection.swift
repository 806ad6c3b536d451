import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// Which work items a process takes, one rule for the feed, the row count, the journal's check
/// and merge: those of its shard (work item `ordinal` belongs to shard `ordinal % N`), and at most
/// `limit` of them (`--limit`), in order.
struct WorkSelection: Sendable, Equatable {
    let shard: Shard?
    let limit: Int?

    init(shard: Shard?, limit: Int? = nil) {
        self.shard = shard
        self.limit = limit
    }

    /// The shard, of `count`, that work item `ordinal` belongs to.
    static func shard(of ordinal: Int, among count: Int) -> Int { ordinal % count }

    /// Whether work item `ordinal` is this process's shard's (the limit aside).
    func takes(_ ordinal: Int) -> Bool { shard?.takes(ordinal) ?? true }

    /// Whether `met` of the shard's items taken so far leave room for another.
    func hasRoom(after met: Int) -> Bool { limit.map { met < $0 } ?? true }

    /// How many of the work items numbered `0..<items` it takes.
    func count(of items: Int) -> Int {
        var taken = items
        if let shard {
            taken = items / shard.count + (shard.index < items % shard.count ? 1 : 0)
        }
        return limit.map { min($0, taken) } ?? taken
    }
}
