import Foundation
import ShowbatchBasics
import ShowbatchManifest
import ShowbatchCore

// Before any thread exists: no core dump holds a revealed value, no debug log a plaintext row.
ProcessGuard.keepMemoryPrivate()

// Writes to a closed pipe, or past a file-size limit, must fail as errors that say so, not kill
// the process.
signal(SIGPIPE, SIG_IGN)
signal(SIGXFSZ, SIG_IGN)
Signals.install()
var code = await CLI.main(Array(CommandLine.arguments.dropFirst()))
// Output that did not reach its reader whole is no answer (a truncated plan, a validate list cut
// short): never 0 or 1.
if let failure = Console.outputFailure, code == .ok || code == .rowsFailed {
    StandardError.shared.write("showbatch: error: cannot write to standard output (\(failure)); what it shows is not whole\n")
    code = .runtime
}
// What is queued for standard error gets a few seconds to be read (a reader that has stalled
// does not keep the process from ending); a signal ending the process already has the exit.
Signals.exitProcess(code)
