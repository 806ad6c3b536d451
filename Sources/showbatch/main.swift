import Foundation
import ShowbatchCore

// Before any thread exists: no core dump holds a revealed value, no debug log a plaintext row.
ProcessGuard.keepMemoryPrivate()

// Writes to a closed pipe, or past a file-size limit, must fail as errors that say so, not kill
// the process.
signal(SIGPIPE, SIG_IGN)
signal(SIGXFSZ, SIG_IGN)
Signals.install()
let code = await CLI.main(Array(CommandLine.arguments.dropFirst()))
// What is queued for standard error gets a few seconds to be read; a reader that has stalled
// does not keep the process from ending.
StandardError.shared.finish(timeout: .seconds(5))
exit(code.rawValue)
