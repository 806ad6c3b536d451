import ShowbatchBasics
import ShowbatchManifest

/// A problem of the outputs: how they are named and planned (the planner's refusals before
/// anything is sent), and writing, sealing and encrypting their files. Put in words here only.
enum OutputError: RunProblem, Equatable {
    /// A path is two of the run's files: two outputs, or an output and a rejects file.
    case pathTwice(path: String)
    /// `--output` names a folder or a special name (`ending`: what it ends in), not a file.
    case outputNotAFile(path: String, ending: String)
    /// `--output` has an extension that says no format, and no `--format` was given.
    case formatUnknown(path: String)
    /// An encrypted output is given an `--output` not named as an OpenPGP message (or `-`).
    case encryptedNotNamedMessage(toStandardOutput: Bool)
    /// `--output` would write the rows of a request whose own output is encrypted in the clear
    /// (`request` counts from 1; `path` `-` is standard output).
    case requestRowsInClear(request: Int, path: String)
    /// `--output` would write the rows of a request encrypted otherwise than the manifest's output.
    case requestEncryptedOtherwise(request: Int, path: String)
    /// `--output` is named as an OpenPGP message, but the output is not encrypted.
    case plainNamedMessage(path: String)
    /// Requests write one file in two formats.
    case twoFormats(path: String, first: OutputFormat, second: OutputFormat)
    /// Requests write one file with different output settings.
    case differentSettings(path: String)
    /// `--output` is in the folder whose binary label files the manifest's output writes.
    case sharesLabelFolder(output: String, manifestOutput: String)
    /// The header of a CSV data file cannot be read (`reason`: the reader's words).
    case dataHeaderUnreadable(name: String, reason: String)
    /// An output is an input (`input`: which one), and writing it would replace it.
    case outputIsInput(path: String, input: String)
    /// One of an output's files (`file`) is already another file of the run's (`owner`).
    case fileTaken(output: String, file: String, owner: String)
    /// An output is a folder.
    case outputIsDirectory(path: String)
    /// An output is a symbolic link (`link`), or a device, pipe or socket.
    case outputNotRegular(path: String, link: Bool)
    /// A side file of an output is an input by a hard link.
    case sideFileIsInput(path: String, input: String)
    /// A binary label's files would be written beside standard output, which has no folder.
    case labelFilesToStandardOutput(label: String)
    /// `--retry-failed` of an output encrypted without a state key: its rows were not kept.
    case retryWithoutStateKey(path: String)
    /// `--retry-failed` of an output that was never written.
    case retryNeverWritten(path: String)
    /// `--resume` or `--retry-failed` of an output to standard output.
    case standardOutputNotResumable(flag: JournalError.Flag)
    /// Sealing an output's rows failed (`reason`: the sealer's words); its journal is kept.
    case sealingFailed(reason: String, journal: String)
    /// An output's file lost bytes to an earlier failed write; its journal is kept.
    case notWrittenWhole(file: String, journal: String)
    /// Writing to standard output failed; the rows after it were not written.
    case standardOutputUnwritable(errno: Int32)
    /// Encrypting a file (an output, or one with a `role` such as a label file) failed
    /// (`reason`: GnuPG's or the sealed file's words); `kept`, the sealed file `--resume` finishes.
    case encryptionFailed(role: FileError.Role?, file: String, reason: String, kept: String?)
    /// The run was interrupted while encrypting an output; `kept`, the sealed file `--resume` finishes.
    case encryptionInterrupted(path: String, kept: String)

    /// What a failed write leaves for `--resume`, said after the failure.
    static func journalKept(_ journal: String) -> String {
        "the journal \(journal) is kept, so the run can go on with --resume once that is fixed"
    }

    var description: String {
        switch self {
        case .pathTwice(let path):
            return "\(path) is both an output and a rejects file, or the rejects file of two outputs; give each its own"
        case .outputNotAFile(let path, let ending):
            return "--output needs the path of a file, not ending in \(ending); got \"\(TerminalText.escaped(path))\""
        case .formatUnknown(let path):
            return "cannot tell the format of --output \(path) from its extension; add --format csv, json or jsonl"
        case .encryptedNotNamedMessage(let toStandardOutput):
            return "the output is encrypted (output.encrypt): give --output a file ending in .pgp, .gpg or .asc"
                + (toStandardOutput ? "; standard output is never written encrypted" : "")
        case .requestRowsInClear(let request, let path):
            return "request \(request) has an encrypted output (output.encrypt), and --output would write its rows to \(path == "-" ? "standard output" : path) in the clear; encrypt the manifest's output, or run without --output"
        case .requestEncryptedOtherwise(let request, let path):
            return "request \(request) has an output encrypted otherwise than the manifest's (other recipients, armor or state key), and --output would write its rows to \(path) as the manifest's is; run without --output"
        case .plainNamedMessage(let path):
            return "--output \(path) ends in .pgp, .gpg or .asc but the output is not encrypted; add output.encrypt to the manifest, or name the file for what it holds"
        case .twoFormats(let path, let first, let second):
            return "\(path) is written as both \(first.rawValue) and \(second.rawValue); give one format"
        case .differentSettings(let path):
            return "\(path) is the output of requests with different output settings; give them one output section"
        case .sharesLabelFolder(let output, let manifestOutput):
            return "--output \(output) is in the folder of the manifest's output \(manifestOutput), whose binary labels' files (file:) it would replace; give --output a path in another folder"
        case .dataHeaderUnreadable(let name, let reason):
            return "cannot read the header of \(name): \(reason)"
        case .outputIsInput(let path, let input):
            return "the output \(path) is \(input); writing it would replace the input: choose another output path"
        case .fileTaken(let output, let file, let owner):
            return "the output \(output) would write \(file), which is \(owner); choose another output path"
        case .outputIsDirectory(let path):
            return "the output \(path) is a directory; give the path of a file"
        case .outputNotRegular(let path, let link):
            return "the output \(path) is \(link ? "a symbolic link" : "not a regular file (a device, pipe or socket)"); showbatch writes outputs only as regular files of its own. To write to standard output, use --output -"
        case .sideFileIsInput(let path, let input):
            return "\(path) is \(input) (a hard link to it); remove \(path) and run again"
        case .labelFilesToStandardOutput(let label):
            return "label \"\(label)\" is written to files (file:), which need an output file's folder; standard output (--output -) has none: give an output path"
        case .retryWithoutStateKey(let path):
            return "--retry-failed cannot rewrite \(path): it is encrypted to its recipients, and without output.encrypt.state_key its sealed rows could not be kept to rewrite it from; run without --retry-failed to write it again"
        case .retryNeverWritten(let path):
            return "\(path) was never written, so it has no failed rows to send again; run without --retry-failed"
        case .standardOutputNotResumable(let flag):
            return "\(flag.rawValue) needs file outputs; standard output is not resumable"
        case .sealingFailed(let reason, let journal):
            return "\(reason); " + OutputError.journalKept(journal)
        case .notWrittenWhole(let file, let journal):
            return "\(file) was not written whole; the journal \(journal) is kept, so the run can go on with --resume"
        case .standardOutputUnwritable(let errno):
            return "cannot write to standard output: \(describeErrno(errno)); the rows after it were not written"
        case .encryptionFailed(let role, let file, let reason, let kept):
            return "cannot encrypt \(role.map { $0.rawValue + " " } ?? "")\(file): \(reason)"
                + (kept.map { "; \($0) is kept, and --resume finishes it" } ?? "")
        case .encryptionInterrupted(let path, let kept):
            return "interrupted while encrypting \(path): \(kept) is kept, and --resume finishes it"
        }
    }

    func redacted(_ redact: (String) -> String) -> OutputError {
        switch self {
        case .pathTwice(let path): return .pathTwice(path: redact(path))
        case .outputNotAFile(let path, let ending): return .outputNotAFile(path: redact(path), ending: redact(ending))
        case .formatUnknown(let path): return .formatUnknown(path: redact(path))
        case .encryptedNotNamedMessage: return self
        case .requestRowsInClear(let request, let path): return .requestRowsInClear(request: request, path: redact(path))
        case .requestEncryptedOtherwise(let request, let path): return .requestEncryptedOtherwise(request: request, path: redact(path))
        case .plainNamedMessage(let path): return .plainNamedMessage(path: redact(path))
        case .twoFormats(let path, let first, let second): return .twoFormats(path: redact(path), first: first, second: second)
        case .differentSettings(let path): return .differentSettings(path: redact(path))
        case .sharesLabelFolder(let output, let manifestOutput):
            return .sharesLabelFolder(output: redact(output), manifestOutput: redact(manifestOutput))
        case .dataHeaderUnreadable(let name, let reason): return .dataHeaderUnreadable(name: redact(name), reason: redact(reason))
        case .outputIsInput(let path, let input): return .outputIsInput(path: redact(path), input: redact(input))
        case .fileTaken(let output, let file, let owner): return .fileTaken(output: redact(output), file: redact(file), owner: redact(owner))
        case .outputIsDirectory(let path): return .outputIsDirectory(path: redact(path))
        case .outputNotRegular(let path, let link): return .outputNotRegular(path: redact(path), link: link)
        case .sideFileIsInput(let path, let input): return .sideFileIsInput(path: redact(path), input: redact(input))
        case .labelFilesToStandardOutput(let label): return .labelFilesToStandardOutput(label: redact(label))
        case .retryWithoutStateKey(let path): return .retryWithoutStateKey(path: redact(path))
        case .retryNeverWritten(let path): return .retryNeverWritten(path: redact(path))
        case .standardOutputNotResumable: return self
        case .sealingFailed(let reason, let journal): return .sealingFailed(reason: redact(reason), journal: redact(journal))
        case .notWrittenWhole(let file, let journal): return .notWrittenWhole(file: redact(file), journal: redact(journal))
        case .standardOutputUnwritable: return self
        case .encryptionFailed(let role, let file, let reason, let kept):
            return .encryptionFailed(role: role, file: redact(file), reason: redact(reason), kept: kept.map(redact))
        case .encryptionInterrupted(let path, let kept): return .encryptionInterrupted(path: redact(path), kept: redact(kept))
        }
    }
}
