import Foundation
import ShowbatchBasics
import ShowbatchYAML

// The output mapping's own keys, each a decision of `output`: path, format, rejects, compression,
// partial rows, and the names an encrypted output and its rejects take.
extension ManifestDecoder {
    /// `output.path`: required, a night's name, and a file's; nil when refused.
    mutating func outputPath(_ map: KnownKeys, of node: Node, _ context: @autoclosure () -> String) -> (path: String, node: Node)? {
        guard let pathNode = map["path"] else {
            problem(node.mark, "missing required key \"path\" in \(context())")
            return nil
        }
        guard let path = nightText(pathNode, "\(context()).path"), !path.isEmpty else { return nil }
        if path != "-", let end = OutputSpec.endProblem(path) {
            problem(pathNode.mark, "\(context()).path must name a file, not end in \(end)")
            return nil
        }
        return (path, pathNode)
    }

    /// `output.format`, or else the path's extension, which must then tell it.
    mutating func outputFormat(_ map: KnownKeys, into spec: inout OutputSpec, path: String, at pathNode: Node, _ context: @autoclosure () -> String) {
        if let formatNode = map["format"], let format = text(formatNode, "\(context()).format") {
            if let value = OutputFormat(rawValue: format.lowercased()) {
                spec.format = value
            } else {
                problem(formatNode.mark, "\(context()).format \"\(format)\" is not valid; expected csv, json or jsonl")
            }
        } else if OutputFormat.fromExtension(path) == nil {
            problem(pathNode.mark, "cannot tell the format of \"\(path)\" from its extension; add format: csv, json or jsonl")
        }
    }

    /// `output.rejects`: a file other than the output, of a format its extension or `format` tells.
    mutating func outputRejects(_ map: KnownKeys, into spec: inout OutputSpec, path: String, _ context: @autoclosure () -> String) {
        if let rejectsNode = map["rejects"], let rejects = nightText(rejectsNode, "\(context()).rejects") {
            if rejects.isEmpty {
                problem(rejectsNode.mark, "\(context()).rejects must name a file")
            } else if OutputFormat.fromExtension(rejects) == nil && spec.format == nil {
                problem(rejectsNode.mark, "cannot tell the format of \"\(rejects)\" from its extension; use .csv, .json or .jsonl")
            } else if rejects == path {
                problem(rejectsNode.mark, "\(context()).rejects must be another file than \(context()).path")
            } else {
                spec.rejects = resolve(rejects)
            }
        }
    }

    /// `output.compress`: gzip or none.
    mutating func compression(_ map: KnownKeys, into spec: inout OutputSpec, _ context: @autoclosure () -> String) {
        if let compressNode = map["compress"], let text = text(compressNode, "\(context()).compress") {
            switch text.lowercased() {
            case "gzip": spec.compress = true
            case "none": spec.compress = false
            default: problem(compressNode.mark, "\(context()).compress must be gzip or none; found \"\(text)\"")
            }
        }
    }

    /// `output.reject_partial`: whether a partial row goes to the rejects file.
    mutating func rejectPartial(_ map: KnownKeys, into spec: inout OutputSpec, _ context: @autoclosure () -> String) {
        if let partialNode = map["reject_partial"], let value = bool(partialNode, "\(context()).reject_partial") {
            if spec.rejects == nil && map["rejects"] == nil {
                problem(partialNode.mark, "\(context()).reject_partial needs \(context()).rejects")
            }
            spec.rejectPartial = value
        } else {
            // A partial row lacks a label the processor's file needs: with a rejects file it goes
            // there, like a failed row, unless the manifest says reject_partial: false.
            spec.rejectPartial = spec.rejects != nil
        }
    }

    /// The output's and its rejects file's names say OpenPGP (armored: `.asc`) when it is encrypted, and only then.
    mutating func checkOpenPGPNames(_ map: KnownKeys, _ spec: OutputSpec, path: String, at pathNode: Node, _ context: @autoclosure () -> String) {
        // A file named like an OpenPGP message holds one, and an encrypted output is named so:
        // neither a plaintext `cards.csv.pgp` nor an encrypted `cards.csv` is ever written.
        let encrypted = map["encrypt"] != nil
        if OutputFormat.isOpenPGPPath(path) != encrypted {
            problem(pathNode.mark, encrypted
                    ? "\(context()).path must end in .pgp, .gpg or .asc: the output is encrypted (\(context()).encrypt)"
                    : "\(context()).path ends in .\((path as NSString).pathExtension) but the output is not encrypted; add \(context()).encrypt with the recipients, or name the file for what it holds")
        }
        // `.asc` is what the armored form is called, `.pgp` and `.gpg` the binary one: a processor
        // that goes by the name reads the file as what it is.
        if let encrypt = spec.encrypt, OutputFormat.isOpenPGPPath(path), path.hasSuffix(".asc") != encrypt.armor {
            problem(pathNode.mark, encrypt.armor
                    ? "\(context()).path ends in .\((path as NSString).pathExtension) but \(context()).encrypt.armor is true: an armored message is named .asc"
                    : "\(context()).path ends in .asc, the name of an armored message, but \(context()).encrypt.armor is not true; set armor: true, or name the file .pgp")
        }
        if let rejectsNode = map["rejects"], let rejects = spec.rejects, OutputFormat.isOpenPGPPath(rejects) != encrypted {
            problem(rejectsNode.mark, encrypted
                    ? "\(context()).rejects must end in .pgp, .gpg or .asc: rejected rows are encrypted with the output"
                    : "\(context()).rejects ends in .\((rejects as NSString).pathExtension) but the output is not encrypted")
        }
    }
}
