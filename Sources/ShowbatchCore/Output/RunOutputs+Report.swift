import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// What the outputs of a run say of themselves for its summary: the rows a finished output
/// holds, when it was finished, and the rows of each rejects file.
extension RunOutputs {
    /// The rows of an output an earlier run finished (and of its rejects file) by error code and
    /// HTTP status, read back from them; an OpenPGP message whose sealed rows are not kept cannot
    /// be read, and counts nothing.
    static func finishedTally(_ target: OutputTarget, ended: (size: Int, hash: UInt64), checkpoint: Journal.Checkpoint, key: DataKey?,
                              journal: String) -> RowTally {
        var tally = RowTally()
        let own = target.readableRows(of: target.path)
        guard key == nil || target.sealedShard || PrivateFile.inspect(own) != .none else { return tally }
        if let rows = try? OutputCheck.tally(of: own, layout: target.layout, key: key, limit: ended.size, journal: journal) { tally.add(rows) }
        if let rejects = target.rejects, let mark = checkpoint.rejects, mark.offset > 0,
           let rows = try? OutputCheck.tally(of: target.readableRows(of: rejects.path), layout: rejects.layout, key: key, limit: mark.offset,
                                             journal: journal) {
            tally.add(rows)
        }
        return tally
    }

    /// When the file at `path` was last written (an output renamed into place: when it was finished).
    static func modified(_ path: String) -> Date {
        var info = stat()
        guard stat(path, &info) == 0 else { return Date() }
        return Date(timeIntervalSince1970: Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9)
    }

    /// The rows each target's rejects file holds, once the run is committed: by target, nil for
    /// one without a rejects file.
    func rejectsRows(_ targets: [OutputTarget]) -> [Int?] {
        targets.indices.map { index in
            guard targets[index].rejects != nil else { return nil }
            if let file = files[index] { return file.checkpoint.rejects?.rows ?? 0 }
            return journals[index]?.lastCheckpoint?.rejects?.rows ?? 0
        }
    }
}
