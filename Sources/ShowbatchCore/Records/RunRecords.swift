import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// Where a run's records go once it ends (`--metrics`, `--report`, `--metrics-push`), and how
/// their failures weigh: each file is written on its own (a metrics file that cannot be written
/// does not cost the report), and one that cannot be written is exit 3 when the run itself went
/// well (0 or 1), its own code otherwise; a push that fails is a warning and changes no exit code,
/// since a Job would run a finished night again, revealing every row anew, for metrics that did
/// not arrive (which the alert on their age says).
package struct RunRecords: Sendable {
    package var metrics: String?
    package var report: String?
    package var push: String?

    package init(metrics: String?, report: String?, push: String?) {
        self.metrics = metrics
        self.report = report
        self.push = push
    }

    /// Whether there is anything to record.
    package var isEmpty: Bool { metrics == nil && report == nil && push == nil }

    /// Whether the `signals` the process has heard give up the push of a run that ended with
    /// `code`. An interrupted run owns the one signal that interrupted it, and still pushes (the
    /// alert should see the interruption); any other signal asks for the end at once, even one
    /// that came as the run was ending by itself, too late to cancel anything.
    package static func signalsGiveUpThePush(_ signals: Int, runEndedWith code: ExitCode) -> Bool {
        signals > (code == .interrupted ? 1 : 0)
    }

    /// What one record said: an error (a file) or a warning (the push), in words.
    package enum Problem: Equatable, Sendable {
        case error(String)
        case warning(String)
    }

    /// Writes `report`'s files (unless `files` is false: a refused path is the run's error) and
    /// pushes it; the command's exit code and what went wrong. `beforePush` is called with that
    /// code just before the push, which may then be given up (a signal).
    package func record(_ report: RunReport, files: Bool = true, beforePush: (ExitCode) -> Void = { _ in },
                        problem: (Problem) -> Void) -> ExitCode {
        var result = report.exitCode
        let wentWell = report.exitCode == .ok || report.exitCode == .rowsFailed
        for (path, write) in [(metrics, report.writeMetrics), (self.report, report.writeReport)] {
            guard files, let path else { continue }
            do throws(RunError) {
                try write(path)
            } catch {
                problem(.error(error.description))
                if wentWell { result = .runtime }
            }
        }
        if let push {
            beforePush(result)
            do throws(RunError) {
                try report.pushMetrics(to: push)
            } catch {
                problem(.warning(error.description + "; the run's exit code stands"))
            }
        }
        return result
    }
}
