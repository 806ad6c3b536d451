import ShowbatchBasics
import ShowbatchManifest
import ShowbatchCore

/// The commands of showbatch, named once: the parser takes a command by this list, the dispatch
/// switches over it (exhaustively), and the help is made from it.
enum Command: String, CaseIterable {
    case run, validate, plan, merge, deliver, emulate, audit, completions, schema, help

    /// The command's line in the overview.
    var overviewLine: String {
        switch self {
        case .run: return "showbatch run MANIFEST [options]       send the manifest's requests, write one row per request"
        case .validate: return "showbatch validate MANIFEST...         check manifests, send nothing"
        case .plan: return "showbatch plan MANIFEST [options]      print base_url and each request, send nothing"
        case .merge: return "showbatch merge MANIFEST --shards N    write the unsharded outputs from the files of N shards"
        case .deliver: return "showbatch deliver MANIFEST [--date D]   upload a finished night's files (output.deliver), send nothing"
        case .emulate: return "showbatch emulate [options]            serve a local reveal-proxy emulator on 127.0.0.1"
        case .audit: return "showbatch audit verify FILE [--manifest M]   check an audit trail's chain (and where its ledgers recorded it)"
        case .completions: return "showbatch completions bash|zsh|fish   print a shell completion script"
        case .schema: return "showbatch schema                      print the manifest's JSON Schema, for an editor"
        case .help: return "showbatch --help | --version | help COMMAND"
        }
    }

    /// The command's help: usage, what it does, and its options from its flag table.
    var help: String {
        switch self {
        case .run:
            return Help.page("showbatch run MANIFEST [options]", """
            Sends every request of MANIFEST concurrently and writes one row per request, in manifest order.
            """, ArgumentParser.runFlags)
        case .validate:
            return Help.page("showbatch validate MANIFEST...", """
            Checks each manifest and prints every problem found as file:line:col. Sends nothing.
            Exit 0 when all are valid, 2 otherwise.
            """, ArgumentParser.validateFlags)
        case .plan:
            return Help.page("showbatch plan MANIFEST [options]", """
            Prints base_url and one METHOD URL name line per request (data-driven requests: the first
            rows and a count), every header sent (a credential or a value from the environment as
            <secret>), each data file's rows, and each output with its columns and rejects file.
            Sends nothing.
            """, ArgumentParser.planFlags)
        case .merge:
            return Help.page("showbatch merge MANIFEST --shards N [options]", """
            Writes the outputs an unsharded run of MANIFEST writes, byte for byte, from the files its N
            shards (run with --shard I/N or auto/N) wrote. Sends nothing; reads the manifest's data files.
            Refuses, writing nothing (exit 2), when a shard file is missing, not finished (a .partial beside
            it) or not of this manifest (its rows are not the manifest's work items for that shard); exit 3
            when an output cannot be written. An existing output is replaced, as a run replaces it.
            """, ArgumentParser.mergeFlags)
        case .deliver:
            return Help.page("showbatch deliver MANIFEST [options]", """
            Delivers the files the night of --date (default: today in TZ) wrote for each output with
            output.deliver, as a run does when it ends: once (a delivered file is not sent again).
            Reveals nothing. Exit 0 when every file is delivered, 5 when a delivery failed (a retry
            may fix it), 6 when it was refused for what only a person fixes (the server's words say
            what), 2 when the night was never finished, 3 when its file is not the one the night wrote.
            """, ArgumentParser.deliverFlags)
        case .emulate:
            return Help.page("showbatch emulate [options]", """
            Serves a loopback stand-in for the VGS reveal proxy in front of an echo upstream, on
            127.0.0.1 only, until SIGINT or SIGTERM.
            """, ArgumentParser.emulateFlags)
        case .audit:
            return Help.page("showbatch audit verify FILE [--manifest MANIFEST]", """
            Checks the chain of the audit trail FILE (audit.path, --audit): each line's prev is the
            SHA-256 of the line before it (with audit.key, its HMAC under the key), none on the first.
            With --manifest, the manifest's audit.key checks a keyed chain, and the trail must reach
            where the ledgers of its outputs recorded it after their last entry (lines cut from its
            end show). Exit 0 when it holds, 1 where it breaks (an edited, removed or inserted line,
            a cut end), 3 when FILE cannot be read.
            """, [Flag<[String]>]())
        case .completions:
            return Help.page("showbatch completions bash|zsh|fish", """
            Prints a completion script for the shell, made from the commands' flag tables:
              bash: source <(showbatch completions bash)   (or save it in /etc/bash_completion.d/showbatch)
              zsh:  showbatch completions zsh > "${fpath[1]}/_showbatch"
              fish: showbatch completions fish > ~/.config/fish/completions/showbatch.fish
            """, [Flag<[String]>]())
        case .schema:
            return Help.page("showbatch schema", """
            Prints a JSON Schema (draft 2020-12) of the manifest, made from the same declarations as the
            manifest reference (docs/manifest.md): save it and point the YAML language server at it with a first line
            `# yaml-language-server: $schema=./showbatch.schema.json` in the manifest.
            """, [Flag<[String]>]())
        case .help:
            return "usage: showbatch help COMMAND\n\nShows the help of a command (\(Command.allCases.map(\.rawValue).joined(separator: ", "))).\n"
        }
    }
}

/// Help texts for `--help` and `help COMMAND`.
enum Help {
    /// The option lines of a command, from its flag table.
    static func options<Arguments>(_ flags: [Flag<Arguments>]) -> String {
        flags.map(\.helpLine).joined(separator: "\n")
    }

    /// A command's help page: usage, description, and its options when it has any.
    static func page<Arguments>(_ usage: String, _ description: String, _ flags: [Flag<Arguments>]) -> String {
        var text = "usage: \(usage)\n\n\(description)\n"
        if !flags.isEmpty { text += "\noptions:\n\(options(flags))\n" }
        return text + "\n"
    }

    static func text(_ topic: String?) -> String {
        topic.flatMap(Command.init(rawValue:))?.help ?? overview
    }

    static let overview = """
    showbatch \(showbatchVersion): reveal VGS aliases in bulk through the reveal proxy.

    usage:
    \(Command.allCases.map { "  " + $0.overviewLine }.joined(separator: "\n"))

    Exit codes: 0 all rows ok, 1 some rows partial or failed, 2 usage or invalid manifest,
    3 runtime failure, 4 stopped by the circuit breaker (resume once fixed), 5 rows written but a
    delivery failed (the next run or showbatch deliver delivers it), 130 interrupted.

    """
}
