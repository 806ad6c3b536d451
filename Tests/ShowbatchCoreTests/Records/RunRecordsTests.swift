import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// How a run's records weigh on its exit code: a file that cannot be written is exit 3 only for a
/// run that went well; a push that fails is a warning, whatever the run.
@Suite struct RunRecordsTests {
    private func report(_ code: ExitCode) -> RunReport {
        RunReport(runID: "r1", manifest: "m.yaml", shard: nil, started: Date(timeIntervalSince1970: 0),
                  ended: Date(timeIntervalSince1970: 1), exitCode: code, summary: nil, error: code == .ok ? nil : "it ended")
    }

    @Test(arguments: [(ExitCode.ok, ExitCode.runtime), (.rowsFailed, .runtime), (.stopped, .stopped), (.usage, .usage), (.interrupted, .interrupted)])
    func aFileThatCannotBeWrittenIsExit3OnlyForARunThatWentWell(code: ExitCode, expected: ExitCode) throws {
        let dir = TempDir()
        defer { dir.remove() }
        // A folder where the metrics file would be: it cannot be written; the report still is.
        mkdir(dir.path + "/m.prom", 0o700)
        var problems: [RunRecords.Problem] = []
        let records = RunRecords(metrics: dir.path + "/m.prom", report: dir.path + "/r.json", push: nil)
        let result = records.record(report(code)) { problems.append($0) }
        #expect(result == expected)
        #expect(problems == [.error("\(dir.path)/m.prom is a directory: cannot write it")])
        #expect(FileManager.default.fileExists(atPath: dir.path + "/r.json"))
    }

    @Test func aFailedPushIsAWarningAndTheCodeStands() async throws {
        let dir = TempDir()
        defer { dir.remove() }
        var problems: [RunRecords.Problem] = []
        var pushedWith: [ExitCode] = []
        // Port 9 on loopback: nothing listens (discard is never enabled here), so the push is refused.
        let records = RunRecords(metrics: dir.path + "/m.prom", report: nil, push: "http://127.0.0.1:9")
        // The push blocks: off the cooperative pool, as the commands make it.
        let result = await Blocking.run("test-records") {
            records.record(report(.rowsFailed), beforePush: { pushedWith.append($0) }) { problems.append($0) }
        }
        #expect(result == .rowsFailed && pushedWith == [.rowsFailed])
        #expect(problems.count == 1)
        if case .warning(let text)? = problems.first {
            #expect(text.hasSuffix("; the run's exit code stands"))
        } else {
            Issue.record("no warning: \(problems)")
        }
        #expect(FileManager.default.fileExists(atPath: dir.path + "/m.prom"))
    }

    /// A refused path is the run's own error: nothing is written, the push is still made.
    @Test func filesOffWritesNothing() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let records = RunRecords(metrics: dir.path + "/m.prom", report: dir.path + "/r.json", push: nil)
        let result = records.record(report(.usage), files: false) { _ in Issue.record("a problem") }
        #expect(result == .usage)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == [])
    }

    /// An interrupted run owns the signal that interrupted it; any other signal gives the push up,
    /// one that came as a run was ending by itself (too late to cancel it) among them.
    @Test(arguments: [(0, ExitCode.ok, false), (1, .ok, true), (1, .rowsFailed, true), (0, .interrupted, false),
                      (1, .interrupted, false), (2, .interrupted, true), (1, .usage, true), (1, .runtime, true)])
    func whichSignalsGiveUpThePush(signals: Int, code: ExitCode, givenUp: Bool) {
        #expect(RunRecords.signalsGiveUpThePush(signals, runEndedWith: code) == givenUp)
    }
}
