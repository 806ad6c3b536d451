import Foundation
import Testing
import TestSupport
@testable import ShowbatchCore

/// `samples/monitoring`: its rules pass Prometheus's own checks and unit tests (`promtool`, which
/// `make test` installs with Debian's prometheus), and the rules and the dashboard use only metrics
/// showbatch writes.
@Suite struct MonitoringSampleTests {
    private static let folder = repository + "/samples/monitoring"
    private static let promtool = "/usr/bin/promtool"

    /// Runs promtool in the sample folder; its exit status and what it printed.
    private func promtool(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        try requireTool(Self.promtool, package: "prometheus")
        process.executableURL = URL(fileURLWithPath: Self.promtool)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: Self.folder)
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }

    @Test func theRulesPassPromtoolsChecksAndTests() throws {
        let check = try promtool(["check", "rules", "showbatch-rules.yml"])
        #expect(check.status == 0, "\(check.output)")
        #expect(check.output.contains("SUCCESS: 11 rules found"))
        let test = try promtool(["test", "rules", "showbatch-rules.test.yml"])
        #expect(test.status == 0, "\(test.output)")
    }

    /// The metric names in a text: every `showbatch_…` word.
    private func metricNames(_ text: String) -> Set<String> {
        let pattern = try! NSRegularExpression(pattern: "showbatch_[a-z0-9_]+")
        return Set(pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { String(text[Range($0.range, in: text)!]) })
    }

    @Test func theRulesAndTheDashboardUseOnlyShowbatchsMetrics() throws {
        var summary = RunSummary()
        summary.keyExpiries = ["AAAA": 1]
        let report = RunReport(runID: "r", manifest: "m.yaml", shard: nil, started: Date(), ended: Date(), exitCode: .ok, summary: summary, error: nil)
        let written = Set(report.prometheus(previous: nil).split(separator: "\n").filter { $0.hasPrefix("# TYPE ") }.map { String($0.split(separator: " ")[2]) })
        let rules = try String(contentsOfFile: Self.folder + "/showbatch-rules.yml", encoding: .utf8)
        let dashboard = try String(contentsOfFile: Self.folder + "/showbatch-dashboard.json", encoding: .utf8)
        #expect(metricNames(rules).subtracting(written).isEmpty, "\(metricNames(rules).subtracting(written))")
        #expect(metricNames(dashboard).subtracting(written).subtracting(["showbatch-nights", "showbatch_nights"]).isEmpty, "\(metricNames(dashboard).subtracting(written))")
        let parsed = try JSONSerialization.jsonObject(with: Data(dashboard.utf8)) as? [String: Any]
        #expect((parsed?["panels"] as? [Any])?.count == 7)
        // The README lists every metric the rules can see.
        let readme = try String(contentsOfFile: Self.folder + "/README.md", encoding: .utf8)
        #expect(written.subtracting(metricNames(readme)).isEmpty, "\(written.subtracting(metricNames(readme)))")
    }
}
