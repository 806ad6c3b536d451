/// A problem of one area (outputs, nights, merging, delivery records…), with its fields, put
/// in words by its own type, in one place. Its words never hold a secret value; what may hold
/// one another party wrote (a path from a template, a server's words) goes through `redacted`.
package protocol RunProblem: Error, Sendable, CustomStringConvertible {
    /// The same problem with every text field a secret could hide in passed through `redact`.
    func redacted(_ redact: (String) -> String) -> Self
}

/// A problem a run cannot get past: bad options (exit 2) or a runtime failure (exit 3).
package enum RunError: Error, Sendable, CustomStringConvertible {
    /// The run cannot start as asked; nothing was sent.
    case usage(any RunProblem)
    /// The run cannot start because of a place in the manifest (rendered with file, line, column
    /// and caret); nothing was sent.
    case manifest(Diagnostic)
    /// Something failed at run time: an unwritable output, a strict hostname check.
    case runtime(any RunProblem)
    /// A `--metrics` or `--report` path that cannot be used (it is an input, an output's file, the
    /// other one's): nothing is written to it; nothing was sent.
    case sideFile(any RunProblem)

    /// The message a person reads (a manifest problem with its quoted line).
    package var description: String {
        switch self {
        case .usage(let problem), .runtime(let problem), .sideFile(let problem): return problem.description
        case .manifest(let diagnostic): return diagnostic.description
        }
    }
}
/// Why a run stops early: the failure is not the rows' (a refused token, a certificate that is not
/// trusted, an endpoint that stays down). A stopped run keeps its outputs `.partial` and its
/// journals for `--resume`, and exits 4.
package struct RunStop: Error, Sendable, Equatable, CustomStringConvertible {
    /// The reason, in one line.
    package let reason: String
    /// The run was interrupted (SIGINT, SIGTERM) while waiting for this: an interrupt, not a stop.
    package let byInterrupt: Bool

    package init(_ reason: String) {
        self.reason = reason
        byInterrupt = false
    }

    private init(interruptedWhile doing: String) {
        reason = "interrupted while \(doing)"
        byInterrupt = true
    }

    /// An interrupt that reached a wait: the run ends as interrupted (130), not stopped.
    package static func interrupted(while doing: String) -> RunStop { RunStop(interruptedWhile: doing) }

    /// The interrupt of a token fetch.
    package static let interruptedFetchingToken = RunStop.interrupted(while: "fetching an access token")

    /// The reason.
    package var description: String { reason }
}
