import ShowbatchBasics
import ShowbatchManifest

/// One unit of work: a static request, or one row of a data-driven request.
package struct WorkItem: Sendable {
    /// Position among all work items of the manifest (0-based), the order rows are written in.
    package let ordinal: Int
    /// Index into `Manifest.requests`.
    package let requestIndex: Int
    /// The data row, or why it could not be read.
    package let row: Result<DataRow, DataRowFailure>?
}

/// Streams the work items of a manifest in order: memory does not grow with the data files.
package struct WorkItemSequence: Sequence, IteratorProtocol {
    private let manifest: Manifest
    private var requestIndex = 0
    private var ordinal = 0
    private var reader: DataRowReader?
    private var readerFailed = false
    /// Per data-driven request (by index), the rows read from its file, once it was read to its end.
    package private(set) var rowsRead: [Int: Int] = [:]
    /// True once every work item has been given.
    package private(set) var finished = false

    /// Iterates over `manifest`'s work items.
    package init(manifest: Manifest) { self.manifest = manifest }

    /// The next work item, or nil after the last.
    package mutating func next() -> WorkItem? {
        while requestIndex < manifest.requests.count {
            let spec = manifest.requests[requestIndex]
            guard let each = spec.each else {
                defer { requestIndex += 1; ordinal += 1 }
                return WorkItem(ordinal: ordinal, requestIndex: requestIndex, row: nil)
            }
            if reader == nil && !readerFailed {
                do {
                    reader = try DataRowReader(kind: each.kind, path: each.path, name: each.name)
                } catch {
                    // The file vanished or broke after validation: one failed row says so.
                    readerFailed = true
                    rowsRead[requestIndex] = 0
                    defer { ordinal += 1 }
                    return WorkItem(ordinal: ordinal, requestIndex: requestIndex,
                                    row: .failure(DataRowFailure(index: 0, line: nil, message: "\(error)")))
                }
            }
            if let row = reader?.next() {
                defer { ordinal += 1 }
                return WorkItem(ordinal: ordinal, requestIndex: requestIndex, row: row)
            }
            if let reader { rowsRead[requestIndex] = reader.rowsRead }
            reader?.close()
            reader = nil
            readerFailed = false
            requestIndex += 1
        }
        finished = true
        return nil
    }
}
