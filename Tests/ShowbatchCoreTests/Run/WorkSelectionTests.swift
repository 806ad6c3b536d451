import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// The count a selection gives without reading the work items is the count of those it takes.
@Suite struct WorkSelectionTests {
    @Test(arguments: [nil, 1, 2, 3, 7] as [Int?])
    func theCountIsTheItemsItTakes(shards: Int?) {
        var random = SeededGenerator(seed: 41)
        for _ in 0..<200 {
            let items = Int(random.next() % 50)
            let shard = shards.map { Shard(index: Int(random.next() % UInt64($0)), count: $0) }
            let limit: Int? = random.next() % 3 == 0 ? Int(random.next() % 20) : nil
            let selection = WorkSelection(shard: shard, limit: limit)
            var taken = 0
            for ordinal in 0..<items where selection.takes(ordinal) && selection.hasRoom(after: taken) { taken += 1 }
            #expect(selection.count(of: items) == taken, "\(items) items, shard \(String(describing: shard)), limit \(String(describing: limit))")
        }
    }

    @Test func anItemBelongsToTheShardOfItsOrdinal() {
        #expect((0..<7).map { WorkSelection.shard(of: $0, among: 3) } == [0, 1, 2, 0, 1, 2, 0])
        #expect(WorkSelection(shard: Shard(index: 1, count: 3)).takes(4) && !WorkSelection(shard: Shard(index: 1, count: 3)).takes(5))
        #expect(WorkSelection(shard: nil).takes(5))
    }
}
