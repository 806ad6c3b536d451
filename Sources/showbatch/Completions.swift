import ShowbatchBasics

/// One command's flags as the shells and the man page see them, from the flag tables.
struct FlagSummary {
    let long: String
    let short: String?
    /// The value's placeholder, when the flag takes one.
    let value: String?
    let help: String

    init<Arguments>(_ flag: Flag<Arguments>) {
        long = flag.name
        short = flag.shortName
        switch flag.action {
        case .value(let placeholder, _): value = placeholder
        case .toggle, .toggleOrValue: value = nil
        }
        help = flag.help
    }
}

extension Command {
    /// The command's flags, from its table.
    var flags: [FlagSummary] {
        switch self {
        case .run: return ArgumentParser.runFlags.map(FlagSummary.init)
        case .validate: return ArgumentParser.validateFlags.map(FlagSummary.init)
        case .plan: return ArgumentParser.planFlags.map(FlagSummary.init)
        case .merge: return ArgumentParser.mergeFlags.map(FlagSummary.init)
        case .deliver: return ArgumentParser.deliverFlags.map(FlagSummary.init)
        case .emulate: return ArgumentParser.emulateFlags.map(FlagSummary.init)
        case .audit, .help, .completions, .schema: return []
        }
    }

    /// What the command does, in a few words (the overview's line, after its usage).
    var summary: String {
        if self == .help { return "show the overview, the version, or a command's help" }
        let line = overviewLine
        guard let range = line.range(of: "  ", options: .backwards) else { return line }
        return line[range.upperBound...].trimmingCharacters(in: .whitespaces)
    }
}

/// `showbatch completions bash|zsh|fish`: completion scripts from the flag tables.
enum Completions {
    static let shells = ["bash", "zsh", "fish"]

    static func script(_ shell: String) -> String? {
        switch shell {
        case "bash": return bash
        case "zsh": return zsh
        case "fish": return fish
        default: return nil
        }
    }

    private static var commands: [Command] { Command.allCases }

    static var bash: String {
        var text = """
        # bash completion for showbatch: source it, or put it in /etc/bash_completion.d/showbatch
        _showbatch() {
            local cur prev words
            cur="${COMP_WORDS[COMP_CWORD]}"
            prev="${COMP_WORDS[COMP_CWORD-1]}"
            if [ "$COMP_CWORD" -eq 1 ]; then
                COMPREPLY=($(compgen -W "\(commands.map(\.rawValue).joined(separator: " ")) --help --version" -- "$cur"))
                return
            fi
            local opts="" values=""
            case "${COMP_WORDS[1]}" in

        """
        for command in commands where !command.flags.isEmpty {
            let names = command.flags.flatMap { [$0.long] + ($0.short.map { [$0] } ?? []) } + ["--help"]
            let takes = command.flags.filter { $0.value != nil }.flatMap { [$0.long] + ($0.short.map { [$0] } ?? []) }
            text += "        \(command.rawValue)) opts=\"\(names.joined(separator: " "))\"; values=\" \(takes.joined(separator: " ")) \" ;;\n"
        }
        text += """
                audit) COMPREPLY=($(compgen -W "verify" -- "$cur")); [ "$COMP_CWORD" -eq 2 ] && return ;;
                completions) COMPREPLY=($(compgen -W "\(shells.joined(separator: " "))" -- "$cur")); return ;;
                help) COMPREPLY=($(compgen -W "\(commands.map(\.rawValue).joined(separator: " "))" -- "$cur")); return ;;
            esac
            if [[ "$values" == *" $prev "* ]]; then
                COMPREPLY=($(compgen -f -- "$cur"))
            elif [[ "$cur" == -* ]]; then
                COMPREPLY=($(compgen -W "$opts" -- "$cur"))
            else
                COMPREPLY=($(compgen -f -- "$cur"))
            fi
        }
        complete -o filenames -F _showbatch showbatch

        """
        return text
    }

    /// Text for a zsh `_arguments` description: no brackets, colons or quotes.
    private static func zshText(_ text: String) -> String {
        text.replacingOccurrences(of: "[", with: "(").replacingOccurrences(of: "]", with: ")")
            .replacingOccurrences(of: ":", with: " ").replacingOccurrences(of: "'", with: "").replacingOccurrences(of: "\\", with: "")
    }

    static var zsh: String {
        var text = """
        #compdef showbatch
        # zsh completion for showbatch: put it on $fpath as _showbatch
        _showbatch() {
          local -a commands
          commands=(

        """
        for command in commands { text += "    '\(command.rawValue):\(zshText(command.summary))'\n" }
        text += """
          )
          if (( CURRENT == 2 )); then
            _describe 'command' commands
            return
          fi
          case $words[2] in

        """
        for command in commands where !command.flags.isEmpty {
            text += "    \(command.rawValue))\n      _arguments \\\n"
            for flag in command.flags {
                let value = flag.value.map { ":\(zshText($0)):_files" } ?? ""
                let spec = "[\(zshText(flag.help))]\(value)"
                if let short = flag.short {
                    text += "        '(\(short) \(flag.long))'{\(short),\(flag.long)}'\(spec)' \\\n"
                } else {
                    text += "        '\(flag.long)\(spec)' \\\n"
                }
            }
            text += "        '*:file:_files' ;;\n"
        }
        text += """
            completions) _values 'shell' \(shells.joined(separator: " ")) ;;
            *) _files ;;
          esac
        }
        _showbatch "$@"

        """
        return text
    }

    /// Text for a fish description, in single quotes.
    private static func fishText(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'")
    }

    static var fish: String {
        var lines = ["# fish completion for showbatch: put it in ~/.config/fish/completions/showbatch.fish",
                     "complete -c showbatch -f"]
        for command in commands {
            lines.append("complete -c showbatch -n '__fish_use_subcommand' -a \(command.rawValue) -d '\(fishText(command.summary))'")
        }
        for command in commands {
            for flag in command.flags {
                var line = "complete -c showbatch -n '__fish_seen_subcommand_from \(command.rawValue)' -l \(flag.long.dropFirst(2))"
                if let short = flag.short { line += " -s \(short.dropFirst())" }
                if flag.value != nil { line += " -r -F" }
                lines.append(line + " -d '\(fishText(flag.help))'")
            }
        }
        lines.append("complete -c showbatch -n '__fish_seen_subcommand_from completions' -a '\(shells.joined(separator: " "))'")
        return lines.joined(separator: "\n") + "\n"
    }
}

/// The man page, `showbatch.1`, from the same tables as the help and the completions.
enum ManPage {
    /// Text as troff shows it: backslashes and hyphens escaped, no line taken for a request.
    private static func roff(_ text: String) -> String {
        var out = text.replacingOccurrences(of: "\\", with: "\\e").replacingOccurrences(of: "-", with: "\\-")
        if out.hasPrefix(".") || out.hasPrefix("'") { out = "\\&" + out }
        return out
    }

    static var page: String {
        var lines = [".TH SHOWBATCH 1 \"\" \"showbatch \(showbatchVersion)\" \"User Commands\"",
                     ".SH NAME", "showbatch \\- reveal VGS aliases in bulk through the reveal proxy",
                     ".SH SYNOPSIS", ".B showbatch", ".I COMMAND", "[options]",
                     ".SH DESCRIPTION",
                     roff("showbatch sends the requests a YAML manifest declares, concurrently, through the VGS reveal proxy, and writes one row per request to CSV, JSON or JSON Lines, optionally encrypted, signed and delivered by SFTP."),
                     ".SH COMMANDS"]
        for command in Command.allCases {
            let line = command.overviewLine
            let usage = line.range(of: "  ", options: .backwards).map { String(line[..<$0.lowerBound]) } ?? line
            lines += [".TP", ".B \(roff(usage.trimmingCharacters(in: .whitespaces)))", roff(command.summary)]
        }
        lines.append(".SH OPTIONS")
        for command in Command.allCases where !command.flags.isEmpty {
            lines.append(".SS \(command.rawValue)")
            for flag in command.flags {
                let names = (flag.short.map { "\\fB\(roff($0))\\fR, " } ?? "") + "\\fB\(roff(flag.long))\\fR"
                lines += [".TP", names + (flag.value.map { " \\fI\(roff($0))\\fR" } ?? ""), roff(flag.help)]
            }
        }
        lines += [".SH EXIT STATUS",
                  roff("0 every row ok (or within max_failed); 1 rows partial or failed beyond max_failed; 2 usage error or invalid manifest; 3 runtime failure; 4 stopped by the circuit breaker; 5 rows written but a delivery failed; 130 interrupted."),
                  ".SH SEE ALSO", "The README of the project, and \\fBshowbatch help COMMAND\\fR."]
        return lines.joined(separator: "\n") + "\n"
    }
}
