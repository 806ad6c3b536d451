import ShowbatchCore

/// Help texts for `--help` and `help COMMAND`.
enum Help {
    static func text(_ topic: String?) -> String {
        switch topic {
        case "run": return run
        case "validate": return validate
        case "plan": return plan
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
      showbatch emulate [options]            serve a local reveal-proxy emulator on 127.0.0.1
      showbatch --help | --version | help COMMAND

    Exit codes: 0 all rows ok, 1 some rows partial or failed, 2 usage or invalid manifest,
    3 runtime failure, 130 interrupted.

    """

    static let run = """
    usage: showbatch run MANIFEST [options]

    Sends every request of MANIFEST concurrently and writes one row per request, in manifest order.

    options:
      --output PATH              write rows here (- for standard output); beats the manifest
      --format csv|json|jsonl    output format (default: from the extension)
      --concurrency N            requests in flight, 1...1024 (default: manifest, else 8)
      --rate N/s|N/m             start at most N requests per second or minute
      --timeout D                per-attempt timeout: 500ms, 30s, 2m or seconds
      --fail-fast                stop at the first failed row
      --resume                   skip rows recorded in the journal of an interrupted run
      --shard I/N|auto/N         take work items whose ordinal mod N is I (auto: JOB_COMPLETION_INDEX)
      --emulate                  run against the built-in emulator on a free loopback port
      --strict-hostname          exit 3 when the custom hostname is not activated
      --progress auto|always|never   live progress on stderr (auto: when it is a terminal)
      --log-format text|json     how log lines and the summary are written
      --quiet                    print only errors
      --verbose                  print a line per attempt: method, URL, status, duration
      --transport curl|urlsession   HTTP client (default: manifest, else curl)

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

    static let emulate = """
    usage: showbatch emulate [options]

    Serves a loopback stand-in for the VGS reveal proxy in front of an echo upstream, on
    127.0.0.1 only, until SIGINT or SIGTERM.

    options:
      --port N                   port to listen on (default 8080; 0 picks a free one)
      --aliases FILE             aliases to reveal: CSV alias,value with a header, or a JSON object
      --cname HOST=VAULT         answer the custom hostname check for HOST (repeatable)
      --latency D[±J]            delay every answer by D, plus or minus up to J
      --fail-rate P              answer a fraction P of requests with --fail-status
      --fail-status S            status for --fail-rate (default 500)
      --throttle N/s             answer 429 with Retry-After past N requests per second
      --drop-rate P              close a fraction P of connections without an answer
      --malformed-rate P         answer a fraction P of requests with a body that is not JSON
      --seed N                   seed of the fault choices (default 1)

    """
}
