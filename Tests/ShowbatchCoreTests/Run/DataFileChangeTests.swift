import Foundation
import Synchronization
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// Changes the data file (once) as the first request is sent: the feed has then read at most
/// its queue ahead (about 1,300 rows), far less than the rows the file keeps.
private final class ChangingTransport: Transport, Sendable {
    let inner: any Transport
    let change: @Sendable () -> Void
    private let done = Atomic<Bool>(false)

    init(inner: any Transport, change: @escaping @Sendable () -> Void) {
        self.inner = inner
        self.change = change
    }

    func send(_ request: PreparedRequest, timeout: Duration) async -> TransportResult {
        if !done.exchange(true, ordering: .relaxed) { change() }
        return await inner.send(request, timeout: timeout)
    }
}

/// A data file cut or rewritten while the run reads it: the run's rows are not that file's, and
/// `max_failed` cannot hide it.
@Suite(.serialized) struct DataFileChangeTests {
    enum Change: String, CaseIterable { case cut, replaced }

    @Test(arguments: Change.allCases)
    func aDataFileChangedDuringTheRunIsDetectedAtItsEnd(_ change: Change) async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let rows = (0..<30_000).map { "\($0),tok_\($0)\n" }
        let manifest = try fixture.manifest("""
        vault: tnt1
        concurrency: 8
        max_failed: 100%
        output: {path: "r-${run.date}.csv"}
        requests: [{name: "r${index}", each: {csv: d.csv}, path: "/p/${row.alias}"}]
        """, files: ["d.csv": "id,alias\n" + rows.joined()])
        #expect(manifest.requests[0].each?.rows == 30_000)
        let path = fixture.dir.path + "/d.csv"
        let kept = "id,alias\n" + rows.prefix(10_570).joined()
        var night = RunOptions()
        night.night = .day(NightDate(parsing: "2026-12-01")!)
        let (emulator, options) = try fixture.emulator(for: manifest, options: night)
        defer { emulator.stop() }
        let transport = ChangingTransport(inner: CurlTransport(maxConnections: 8)) {
            switch change {
            case .cut:
                // Cut in place, as a writer truncating the file does: the open file shrinks.
                let handle = FileHandle(forWritingAtPath: path)!
                try! handle.truncate(atOffset: UInt64(kept.utf8.count))
                try! handle.close()
            case .replaced:
                // Another file renamed over it, with as many rows: the open file is read to its end.
                try! Data(("id,alias\n" + rows.joined()).utf8).write(to: URL(fileURLWithPath: path + ".new"))
                rename(path + ".new", path)
            }
        }
        let log = fixture.log
        let notRecorded = "warning: the night of 2026-12-01 in \(fixture.dir.path)/r-20261201.csv is not recorded as finished, and not delivered: a data file changed while it was written"
        let summary = try await Runner(manifest: manifest, options: options, transport: transport, environment: [:]) { log.record($0) }.run()
        switch change {
        case .cut:
            #expect(summary.rows == 10_570 && summary.ok == 10_570 && summary.unfinished == 19_430)
            #expect(log.all.filter { $0.hasPrefix("warning: ") } == ["warning: d.csv changed during the run: it had 30000 rows when the manifest was read and 10570 could be read; the 19430 rows not read are counted as unfinished", notRecorded])
        case .replaced:
            #expect(summary.rows == 30_000 && summary.ok == 30_000 && summary.unfinished == 0)
            #expect(log.all.filter { $0.hasPrefix("warning: ") } == ["warning: d.csv changed during the run: it had 30000 rows when the manifest was read, and as many were read, but it is not the same file version: the rows may come from two versions of it", notRecorded])
        }
        #expect(!summary.withinAllowance)
        #expect(summary.exitCode == .rowsFailed)
        // Its rows may be two versions' of the file: the night is not recorded as finished, so
        // nothing delivers it, and the next run writes it again.
        #expect(summary.nights.map(\.state) == [.dataChanged])
        let ledger = try #require(fixture.read(".r-{date}.csv.sequence"))
        #expect(ledger.contains("\"seq\":1,") && ledger.contains("\"finished\":\"\""))
    }

    /// A data file left alone: nothing is said, nothing is unfinished.
    @Test func anUnchangedDataFileEndsTheRunWhole() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        output: {path: r.csv}
        requests: [{name: "r${index}", each: {csv: d.csv}, path: "/p/${row.alias}"}]
        """, files: ["d.csv": "id,alias\n" + (0..<50).map { "\($0),tok_\($0)\n" }.joined()])
        let summary = try await fixture.run(manifest)
        #expect(summary.rows == 50 && summary.ok == 50 && summary.unfinished == 0 && summary.dataChanged.isEmpty)
        #expect(!fixture.log.all.contains { $0.hasPrefix("warning: ") })
        #expect(summary.exitCode == .ok)
    }
}
