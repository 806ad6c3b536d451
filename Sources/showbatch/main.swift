import Foundation

// Writes to a closed pipe, or past a file-size limit, must fail as errors that say so, not kill
// the process.
signal(SIGPIPE, SIG_IGN)
signal(SIGXFSZ, SIG_IGN)
Signals.install()
exit(await CLI.main(Array(CommandLine.arguments.dropFirst())).rawValue)
