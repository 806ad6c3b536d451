import Foundation
import Synchronization
import Testing
@testable import ShowbatchCore
import ShowbatchEmulator

@Suite struct JournalLockTests {
    @Test func aSecondRunOnTheSameOutputIsRefused() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("vault: tnt1\noutput: {path: r.csv}\nrequests: [{name: a, path: /p}]\n")
        // An overlapping run holds the journal.
        let holder = try Journal(output: fixture.dir.path + "/r.csv",
                                 identity: Journal.Identity(manifest: "x", data: "x", shard: "", output: "x", format: "csv", columns: []),
                                 mode: .fresh)
        do {
            _ = try await fixture.run(manifest)
            Issue.record("expected a refusal")
        } catch let error as RunError {
            #expect(error.description == "another showbatch run is writing \(fixture.dir.path)/r.csv (its journal \(fixture.dir.path)/r.csv.journal is locked)")
        }
        holder.close()
        #expect(try await fixture.run(manifest).ok == 1)
    }

    @Test func aJournalTornInsideItsIdentityLineStartsOver() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("vault: tnt1\noutput: {path: r.csv}\nrequests: [{name: a, path: /p}]\n")
        _ = fixture.dir.file("r.csv.journal", "{\"showbatch_jour")
        var options = RunOptions()
        options.resume = true
        #expect(try await fixture.run(manifest, options: options).ok == 1)
        #expect(fixture.read("r.csv") == "request,status,http_status,attempts,error\na,ok,200,1,\n")
    }
}
