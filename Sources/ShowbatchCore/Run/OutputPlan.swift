import Foundation
import ShowbatchYAML

/// One output of a run: its path (shard applied), format and columns.
struct OutputTarget {
    var path: String
    var format: OutputFormat
    var labels: [String]
    var escapeFormulas: Bool
}

// Which file each request writes to: --output, else the request's output, else the manifest's.
extension Runner {
    /// Decides which file each request writes to and each file's columns.
    func planOutputs() throws(RunError) -> (targets: [OutputTarget], byRequest: [Int]) {
        let shard = options.shard
        func shardPath(_ path: String) -> String { path == "-" ? path : (shard?.path(path) ?? path) }
        var targets: [OutputTarget] = []
        var byRequest: [Int] = []
        if let path = options.output {
            let format: OutputFormat
            if let explicit = options.format {
                format = explicit
            } else if path == "-" {
                format = .csv
            } else if let implied = OutputFormat.fromExtension(path) {
                format = implied
            } else {
                throw RunError.usage("cannot tell the format of --output \(path) from its extension; add --format csv, json or jsonl")
            }
            targets.append(OutputTarget(path: shardPath(path), format: format, labels: [], escapeFormulas: manifest.output?.escapeFormulas ?? false))
            byRequest = Array(repeating: 0, count: manifest.requests.count)
        } else {
            for (index, request) in manifest.requests.enumerated() {
                guard let spec = request.output ?? manifest.output else {
                    throw manifestProblem(at: request.mark, "request \(index + 1) has no output: give --output PATH, or add output: to the manifest or the request")
                }
                let path = shardPath(spec.path)
                let format = options.format ?? spec.resolvedFormat
                // Two spellings of one file are one output.
                if let existing = targets.firstIndex(where: { $0.path == path || PrivateFile.canonical($0.path) == PrivateFile.canonical(path) }) {
                    if targets[existing].format != format {
                        throw RunError.usage("\(path) is written as both \(targets[existing].format.rawValue) and \(format.rawValue); give one format")
                    }
                    byRequest.append(existing)
                } else {
                    targets.append(OutputTarget(path: path, format: format, labels: [], escapeFormulas: spec.escapeFormulas))
                    byRequest.append(targets.count - 1)
                }
            }
        }
        for (index, request) in manifest.requests.enumerated() {
            for label in request.labels where !targets[byRequest[index]].labels.contains(label.name) {
                targets[byRequest[index]].labels.append(label.name)
            }
        }
        return (targets, byRequest)
    }

    /// A problem at `mark` in the manifest, quoting its line as `validate` does (secrets hidden).
    /// The run holds no source text, so the file is read again; if it no longer parses, the line
    /// is not quoted, since nothing would tell a secret from the rest.
    func manifestProblem(at mark: Mark, _ message: String) -> RunError {
        let bytes = FileManager.default.contents(atPath: manifest.file).map(Array.init) ?? []
        let source = SourceFile(name: manifest.file, bytes: bytes)
        guard let root = try? YAMLParser.parse(source) else {
            return .manifest(Diagnostic(source: SourceFile(name: manifest.file, bytes: []), mark: mark, message: message))
        }
        return .manifest(ManifestSecrets(root: root).diagnostics([(mark, message)], source: source)[0])
    }
}

// Outputs are checked before anything is sent: a run never writes through a link, over a device
// or a folder, or over its own inputs.
extension Runner {
    /// Refuses outputs that are links, devices or folders, outputs that are the manifest or a data
    /// file (by file identity, so another path to the same file is caught too), and a link or
    /// other non-regular file at an output's `.partial` or `.journal` path.
    func checkOutputPaths(_ targets: [OutputTarget]) throws(RunError) {
        var inputs: [(what: String, path: String)] = [("the manifest", manifest.file)]
        for request in manifest.requests {
            if let each = request.each { inputs.append(("the data file \(each.name)", each.path)) }
        }
        if case .file(let path)? = manifest.emulator?.aliases { inputs.append(("the emulator's alias file", path)) }
        let identities = inputs.compactMap { input in PrivateFile.identity(input.path).map { (input.what, $0) } }
        // Every file a run may write (the output, its `.partial`, `.journal` and `.journal.next`)
        // belongs to one output and is no input, whatever the spelling.
        var owners: [String: String] = [:]
        for input in inputs { owners[PrivateFile.canonical(input.path)] = input.what }
        for target in targets where target.path != "-" {
            for file in [target.path, target.path + ".partial", target.path + ".journal", target.path + ".journal.next"] {
                let key = PrivateFile.canonical(file)
                if let owner = owners[key], file != target.path || !inputs.contains(where: { $0.what == owner }) {
                    throw RunError.usage("the output \(target.path) would write \(file), which is \(owner); choose another output path")
                }
                owners[key] = "a file of the output \(target.path)"
            }
        }
        for target in targets where target.path != "-" {
            switch PrivateFile.inspect(target.path) {
            case .none: break
            case .directory:
                throw RunError.runtime("the output \(target.path) is a directory; give the path of a file")
            case .link, .other:
                throw RunError.usage("the output \(target.path) is \(PrivateFile.inspect(target.path) == .link ? "a symbolic link" : "not a regular file (a device, pipe or socket)"); showbatch writes outputs only as regular files of its own. To write to standard output, use --output -")
            case .regular(let device, let inode, _):
                if let input = identities.first(where: { $0.1.device == device && $0.1.inode == inode }) {
                    throw RunError.usage("the output \(target.path) is \(input.0); writing it would replace the input: choose another output path")
                }
            }
            for path in [target.path + ".partial", target.path + ".journal", target.path + ".journal.next"] {
                if let refusal = PrivateFile.refusal(path) { throw RunError.runtime(refusal + ": remove it and run again") }
                // A journal is written in place: a hard link to an input would be written through.
                if let found = PrivateFile.identity(path), let input = identities.first(where: { $0.1.device == found.device && $0.1.inode == found.inode }) {
                    throw RunError.usage("\(path) is \(input.0) (a hard link to it); remove \(path) and run again")
                }
            }
        }
    }
}
