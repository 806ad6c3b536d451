import ShowbatchCore

/// Help texts for `--help` and `help COMMAND`.
enum Help {
    /// The option lines of a command, from its flag table.
    static func options<Arguments>(_ flags: [Flag<Arguments>]) -> String {
        flags.map(\.helpLine).joined(separator: "\n")
    }

    static func text(_ topic: String?) -> String {
        switch topic {
        case "run": return run
        case "validate": return validate
        case "plan": return plan
        case "merge": return merge
        case "emulate": return emulate
        case "help": return "usage: showbatch help COMMAND\n\nShows the help of a command (\(ArgumentParser.commands.joined(separator: ", "))).\n"
        default: return overview
        }
    }

    static let overview = """
    showbatch \(showbatchVersion): reveal VGS aliases in bulk through the reveal proxy.

    usage:
      showbatch run MANIFEST [options]       send the manifest's requests, write one row per request
      showbatch validate MANIFEST...         check manifests, send nothing
      showbatch plan MANIFEST [--format text|json]   print base_url and each request, send nothing
      showbatch merge MANIFEST --shards N    write the unsharded outputs from the files of N shards
      showbatch emulate [options]            serve a local reveal-proxy emulator on 127.0.0.1
      showbatch --help | --version | help COMMAND

    Exit codes: 0 all rows ok, 1 some rows partial or failed, 2 usage or invalid manifest,
    3 runtime failure, 4 stopped by the circuit breaker (resume once fixed), 130 interrupted.

    """

    static let run = """
    usage: showbatch run MANIFEST [options]

    Sends every request of MANIFEST concurrently and writes one row per request, in manifest order.

    options:
    \(options(ArgumentParser.runFlags))

    """

    static let validate = """
    usage: showbatch validate MANIFEST...

    Checks each manifest and prints every problem found as file:line:col. Sends nothing.
    Exit 0 when all are valid, 2 otherwise.

    """

    static let plan = """
    usage: showbatch plan MANIFEST [--format text|json]

    Prints base_url and one METHOD URL name line per request (data-driven requests: the first
    rows and a count). Header values print as <redacted>. Sends nothing.

    """

    static let merge = """
    usage: showbatch merge MANIFEST --shards N [options]

    Writes the outputs an unsharded run of MANIFEST writes, byte for byte, from the files its N
    shards (run with --shard I/N or auto/N) wrote. Sends nothing; reads the manifest's data files.
    Refuses, writing nothing (exit 2), when a shard file is missing, not finished (a .partial beside
    it) or not of this manifest (its rows are not the manifest's work items for that shard); exit 3
    when an output cannot be written. An existing output is replaced, as a run replaces it.

    options:
    \(options(ArgumentParser.mergeFlags))

    """

    static let emulate = """
    usage: showbatch emulate [options]

    Serves a loopback stand-in for the VGS reveal proxy in front of an echo upstream, on
    127.0.0.1 only, until SIGINT or SIGTERM.

    options:
    \(options(ArgumentParser.emulateFlags))

    """
}
