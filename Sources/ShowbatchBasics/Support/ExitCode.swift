/// How a showbatch command ends: the exit codes the README lists (0 ok, 1 rows failed, 2 usage or
/// manifest, 3 runtime, 4 stopped, 130 interrupted). Every error type carries its own.
package enum ExitCode: Int32, Sendable, CaseIterable {
    /// Every row ok (or a command that is not a run succeeded).
    case ok = 0
    /// Some rows partial or failed, or `--fail-fast` stopped the run; outputs were written.
    case rowsFailed = 1
    /// A usage error or an invalid manifest: nothing was sent.
    case usage = 2
    /// A runtime failure: an output cannot be written, the strict hostname check failed.
    case runtime = 3
    /// Stopped early by the circuit breaker: the failure is not the rows' (credentials refused, a
    /// certificate not trusted, an endpoint down past `circuit.max_pause`, `circuit.failed_rows`
    /// failed rows in a row). Outputs left `.partial`, journals kept for `--resume`.
    case stopped = 4
    /// The rows were written, but a delivery (`output.deliver`) failed: the output is kept, and
    /// the next run (or `showbatch deliver`) delivers it without revealing anything again.
    case undelivered = 5
    /// The rows were written, and their delivery was refused for a reason only a person fixes (a
    /// host key refused, a login refused, no permission or no space on the server, another file
    /// under the name, a hand-over whose outcome cannot be known): trying again changes nothing.
    case deliveryRefused = 6
    /// Interrupted by SIGINT or SIGTERM: outputs left `.partial`, journals kept.
    case interrupted = 130
}

extension RunError {
    /// The exit code a run ending with this error has.
    package var exitCode: ExitCode {
        switch self {
        case .usage, .manifest, .sideFile: return .usage
        case .runtime: return .runtime
        }
    }
}

