import ShowbatchBasics
import ShowbatchManifest

/// What a run does with what an earlier run of the same outputs left: decided once, from the
/// flags, and named the same in the journal, the logs and the outputs' handling.
package enum RunMode: String, Sendable {
    /// Start over: `.partial` files and journals are replaced.
    case fresh
    /// `--resume`: go on from each output's last checkpoint.
    case resume
    /// `--retry-failed`: rewrite each output with its failed rows sent again.
    case retryFailed = "retry_failed"
}

extension RunOptions {
    /// The mode the flags ask for.
    package var mode: RunMode { retryFailed ? .retryFailed : resume ? .resume : .fresh }
}
