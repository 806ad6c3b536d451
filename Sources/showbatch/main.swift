import Foundation

// Writes to a closed pipe must fail as errors, not kill the process.
signal(SIGPIPE, SIG_IGN)
exit(await CLI.main(Array(CommandLine.arguments.dropFirst())).rawValue)
