import ShowbatchBasics
import ShowbatchManifest

/// What stops a merge: options it cannot follow, an output it cannot write, a shard file that is
/// missing, unfinished, changed or of another run, rows that are not this manifest's. Its words
/// are made here only; a sentence about a shard file starts with the `Shard` it is about:
/// `cannot merge out/r.csv: its shard 1/3, out/r.shard-1-of-3.csv, is missing (…)`.
enum MergeError: RunProblem {
    /// One shard's file of an output, which a sentence about it starts with.
    struct Shard: Sendable {
        /// The output being merged.
        var output: String
        /// The shard's index, counting from 0.
        var index: Int
        /// How many shards the night was run in.
        var count: Int
        /// The shard's file of the output (or of its rejects file).
        var file: String

        /// `cannot merge OUTPUT: its shard I/N, FILE,`
        var opening: String { "cannot merge \(output): its shard \(index)/\(count), \(file)," }

        func redacted(_ redact: (String) -> String) -> Shard {
            Shard(output: redact(output), index: index, count: count, file: redact(file))
        }
    }

    /// What a shard's file is instead of a regular file.
    enum Found: Sendable {
        /// A directory.
        case directory
        /// A symbolic link (never read through).
        case symbolicLink
        /// A device, pipe or socket.
        case special
    }

    /// What a shard's run left to say what it wrote, with its path.
    enum Record: Sendable {
        /// Its identity, at this path.
        case identity(String)
        /// Its journal, at this path.
        case journal(String)

        func redacted(_ redact: (String) -> String) -> Record {
            switch self {
            case .identity(let path): return .identity(redact(path))
            case .journal(let path): return .journal(redact(path))
            }
        }
    }

    /// How a shard's file shows it is not finished.
    enum Unfinished: Sendable {
        /// Its `.partial` is there: its run is going, or was interrupted.
        case partialThere
        /// A `--retry-failed` run of it left its `.journal.next`.
        case retryCutShort
        /// Its rejects file (this path) is missing.
        case rejectsMissing(String)
        /// Its rejects file is refused (a link, another owner's…), as `refusal` says.
        case rejectsRefused(String, refusal: String)
        /// Its rejects file's `.partial` is there.
        case rejectsPartial(String)
        /// Its journal (this path) has no end.
        case journalUnended(String)

        func redacted(_ redact: (String) -> String) -> Unfinished {
            switch self {
            case .partialThere, .retryCutShort: return self
            case .rejectsMissing(let path): return .rejectsMissing(redact(path))
            case .rejectsRefused(let path, let refusal): return .rejectsRefused(redact(path), refusal: redact(refusal))
            case .rejectsPartial(let path): return .rejectsPartial(redact(path))
            case .journalUnended(let path): return .journalUnended(redact(path))
            }
        }
    }

    /// Why a shard's file cannot be checked against what its run recorded.
    enum Unchecked: Sendable {
        /// Its identity cannot be read or is not whole (the reason names it).
        case identityUnreadable(reason: String)
        /// Its journal is refused (a link, another owner's…), as `refusal` says.
        case journalRefused(refusal: String)
        /// Its journal (this path) cannot be read, for the system's or the reader's reason if known.
        case journalUnreadable(String, reason: String?)
        /// Its journal cannot be read, or has no end.
        case journalUnreadableOrUnended(String)
        /// Its journal is damaged, edited or of another version.
        case journalUntrusted(String, reason: String)
        /// Reading its journal failed otherwise (the error's words).
        case journalFailed(reason: String)

        func redacted(_ redact: (String) -> String) -> Unchecked {
            switch self {
            case .identityUnreadable(let reason): return .identityUnreadable(reason: redact(reason))
            case .journalRefused(let refusal): return .journalRefused(refusal: redact(refusal))
            case .journalUnreadable(let path, let reason): return .journalUnreadable(redact(path), reason: reason.map(redact))
            case .journalUnreadableOrUnended(let path): return .journalUnreadableOrUnended(redact(path))
            case .journalUntrusted(let path, let reason): return .journalUntrusted(redact(path), reason: redact(reason))
            case .journalFailed(let reason): return .journalFailed(reason: redact(reason))
            }
        }
    }

    /// Why a sealed shard's file cannot be read.
    enum Unreadable: Sendable {
        /// Its identity (this path) holds no data key.
        case noDataKey(identity: String)
        /// Its data key does not open under the state key (the crypto layer's words).
        case keyRefused(reason: String)
        /// Opening it failed (the reader's words: not sealed, another key's, cut short…).
        case openingFailed(reason: String)

        func redacted(_ redact: (String) -> String) -> Unreadable {
            switch self {
            case .noDataKey(let identity): return .noDataKey(identity: redact(identity))
            case .keyRefused(let reason): return .keyRefused(reason: redact(reason))
            case .openingFailed(let reason): return .openingFailed(reason: redact(reason))
            }
        }
    }

    /// How a shard's file is not of this manifest.
    enum Mismatch: Sendable {
        /// What its run recorded differs from this manifest's (`difference` says what).
        case recorded(Record, difference: String)
        /// Its CSV header is not the one this manifest writes.
        case header
        /// It ran out of rows: it holds `holds`; this manifest has `expected` (with a `split` output's rejects).
        case tooFewRows(holds: Int, expected: Int, split: Bool)
        /// It has rows left: it holds `holds` in all; this manifest has `expected` (with a `split` output's rejects).
        case tooManyRows(holds: Int, expected: Int, split: Bool)
        /// Its row `row` is not of request `request` (counting from 1), work item `item`.
        case otherRequest(row: Int, request: Int, item: Int)

        func redacted(_ redact: (String) -> String) -> Mismatch {
            switch self {
            case .recorded(let record, let difference): return .recorded(record.redacted(redact), difference: redact(difference))
            case .header, .tooFewRows, .tooManyRows, .otherRequest: return self
            }
        }
    }

    /// `--shards` is less than 1.
    case shardsBelowOne
    /// `--output -`: a merge writes files.
    case standardOutputGiven
    /// No shard's run began the night of `date` for `template` (its ledger `state` says).
    case nightNotBegun(date: NightDate, template: String, state: String)
    /// Shard `shard` of `count` plans other outputs than the unsharded run (two share a path).
    case shardOutputsShared(shard: Int, count: Int)
    /// Writing `output` would write `file`, which is an input (`input` says which).
    case outputWouldWriteInput(output: String, file: String, input: String)
    /// `output` is a directory.
    case outputIsDirectory(output: String)
    /// `output` or its `.partial` is refused (a link, a device…), as `refusal` says.
    case outputRefused(output: String, refusal: String)
    /// `output` is an input (the same file, `input` says which).
    case outputIsInput(output: String, input: String)
    /// `output`'s shards are sealed and `output.encrypt` has no `state_key` to read them.
    case stateKeyMissing(output: String)
    /// `output`'s encryptor cannot be made (a recipient's key, GnuPG: the crypto layer's words).
    case encryptorUnavailable(output: String, reason: String)
    /// Another run holds the journal an unsharded run left beside `output`.
    case outputBeingWritten(output: String, journal: String)
    /// Some outputs (these) were delivered already, and not all.
    case partlyDelivered([String])
    /// The process may open `allowed` files; merging needs `needed`.
    case openFileLimit(needed: Int, allowed: UInt64)
    /// A merged file cannot be sealed as it is written (the crypto layer's words, naming it).
    case sealingFailed(reason: String)
    /// A shard's file is not there.
    case shardMissing(Shard)
    /// A shard's file is not a regular file.
    case shardNotRegular(Shard, Found)
    /// A shard's file, or its rejects file, is not finished.
    case shardUnfinished(Shard, Unfinished)
    /// A shard's file has no identity beside it (at `identity`): not known to be finished.
    case shardIdentityMissing(Shard, identity: String)
    /// A shard's file cannot be checked against what its run recorded.
    case shardUncheckable(Shard, Unchecked)
    /// A sealed shard's file cannot be read.
    case shardUnreadable(Shard, Unreadable)
    /// A shard's file cannot be opened (`problem` says why, as the system or a refusal puts it).
    case shardUnopenable(Shard, problem: String)
    /// A shard's file is not of this manifest.
    case shardNotOfManifest(Shard, Mismatch)
    /// A shard's file changed since its run wrote it (it does not match the record).
    case shardChanged(Shard, Record)
    /// A shard's rejects file (`rejects`) does not match its identity (`identity`).
    case rejectsChanged(Shard, rejects: String, identity: String)
    /// Another run holds a shard's journal.
    case journalLocked(Shard, journal: String)
    /// A shard's file is not a showbatch output of `format` (`reason` says where).
    case shardMalformed(Shard, format: OutputFormat, reason: String)

    var description: String {
        switch self {
        case .shardsBelowOne:
            return "--shards must be at least 1"
        case .standardOutputGiven:
            return "merge writes files, not standard output: give --output the path the shards were run with"
        case .nightNotBegun(let date, let template, let state):
            return "no run of the night of \(date) began for \(template) (its sequence state \(state) has no such night): give merge the --date the shards were run with"
        case .shardOutputsShared(let shard, let count):
            return "the outputs of shard \(shard)/\(count) are not those of the unsharded run (two outputs' shard files have one path); give each output a path of its own"
        case .outputWouldWriteInput(let output, let file, let input):
            return "cannot merge \(output): writing it would write \(file), which is \(input)"
        case .outputIsDirectory(let output):
            return "cannot merge \(output): it is a directory; give the path of a file"
        case .outputRefused(let output, let refusal):
            return "cannot merge \(output): \(refusal)"
        case .outputIsInput(let output, let input):
            return "cannot merge \(output): it is \(input); writing it would replace an input"
        case .stateKeyMissing(let output):
            return "cannot merge \(output): its shards' files are sealed, and output.encrypt has no state_key to read them with (the one they were run with)"
        case .encryptorUnavailable(let output, let reason):
            return "cannot merge \(output): \(reason)"
        case .outputBeingWritten(let output, let journal):
            return "cannot merge \(output): another showbatch run is writing it (its journal \(journal) is locked)"
        case .partlyDelivered(let outputs):
            let one = outputs.count == 1
            return "\(outputs.joined(separator: ", ")) \(one ? "was" : "were") delivered already, and merging again would replace \(one ? "it" : "them"); merge the other outputs with --output, or move the delivered files aside"
        case .openFileLimit(let needed, let allowed):
            return "merging needs \(needed) open files (a file of each shard, and of its rejects file), and this process may open \(allowed); raise the limit (ulimit -n)"
        case .sealingFailed(let reason):
            return reason
        case .shardMissing(let shard):
            return "\(shard.opening) is missing (run the manifest with --shard \(shard.index)/\(shard.count) first)"
        case .shardNotRegular(let shard, let found):
            switch found {
            case .directory: return "\(shard.opening) is a directory"
            case .symbolicLink: return "\(shard.opening) is a symbolic link; showbatch never reads a shard through one"
            case .special: return "\(shard.opening) is not a regular file (a device, pipe or socket)"
            }
        case .shardUnfinished(let shard, let unfinished):
            let why: String
            switch unfinished {
            case .partialThere:
                why = "\(shard.file).partial is there (its run is still going, or was interrupted: finish it with --resume)"
            case .retryCutShort:
                why = "a --retry-failed run of it was cut short (\(shard.file).journal.next is beside it); run it with --retry-failed again"
            case .rejectsMissing(let rejects): why = "its rejects file \(rejects) is missing"
            case .rejectsRefused(let rejects, let refusal): why = "its rejects file \(rejects) is \(refusal)"
            case .rejectsPartial(let rejects): why = "its rejects file \(rejects) is not finished (its .partial is there)"
            case .journalUnended(let journal): why = "its journal \(journal) has no end (finish its run with --resume)"
            }
            return "\(shard.opening) is not finished: \(why)"
        case .shardIdentityMissing(let shard, let identity):
            return "\(shard.opening) is not known to be a finished shard: \(identity), which its run leaves when it finishes, is not beside it (run it with --shard \(shard.index)/\(shard.count))"
        case .shardUncheckable(let shard, let unchecked):
            let why: String
            switch unchecked {
            case .identityUnreadable(let reason), .journalFailed(let reason): why = reason
            case .journalRefused(let refusal): why = refusal
            case .journalUnreadable(let journal, let reason): why = "its journal \(journal) cannot be read" + (reason.map { ": " + $0 } ?? "")
            case .journalUnreadableOrUnended(let journal): why = "its journal \(journal) cannot be read or is not finished"
            case .journalUntrusted(let journal, let reason): why = "its journal \(journal) cannot be trusted: \(reason)"
            }
            return "\(shard.opening) cannot be checked: \(why)"
        case .shardUnreadable(let shard, let unreadable):
            let why: String
            switch unreadable {
            case .noDataKey(let identity): why = "its identity \(identity) holds no data key"
            case .keyRefused(let reason), .openingFailed(let reason): why = reason
            }
            return "\(shard.opening) cannot be read: \(why)"
        case .shardUnopenable(let shard, let problem):
            return "\(shard.opening) cannot be opened for reading: \(problem)"
        case .shardNotOfManifest(let shard, let mismatch):
            let why: String
            switch mismatch {
            case .recorded(let record, let difference):
                switch record {
                case .identity(let path): return "\(shard.opening) is not of this manifest: its identity \(path) says \(difference)"
                case .journal(let path): return "\(shard.opening) is not of this manifest: its journal \(path) says \(difference)"
                }
            case .header:
                why = "its header is not the one this manifest writes (other columns)"
            case .tooFewRows(let holds, let expected, let split):
                why = "it holds \(holds) row\(holds == 1 ? "" : "s"), and this manifest has \(split ? "more" : String(expected)) for it\(split ? " (\(expected) with its rejects file's)" : "")"
            case .tooManyRows(let holds, let expected, let split):
                why = "it holds \(holds) rows, and this manifest has \(split ? "fewer" : String(expected)) for it\(split ? " (\(expected) with its rejects file's)" : "")"
            case .otherRequest(let row, let request, let item):
                why = "its row \(row) is not of the request this manifest has at that place (request \(request), work item \(item) counting from 0)"
            }
            return "\(shard.opening) is not of this manifest: \(why); was it written by another manifest, or did a data file change since?"
        case .shardChanged(let shard, let record):
            switch record {
            case .identity(let path): return "\(shard.opening) changed since its run wrote it (it does not match its identity \(path))"
            case .journal(let path): return "\(shard.opening) changed since its run wrote it (it does not match its journal \(path))"
            }
        case .rejectsChanged(let shard, let rejects, let identity):
            return "\(shard.opening) is not whole: its rejects file \(rejects) does not match its identity \(identity)"
        case .journalLocked(let shard, let journal):
            return "\(shard.opening) is being written by another showbatch run (its journal \(journal) is locked)"
        case .shardMalformed(let shard, let format, let reason):
            return "\(shard.opening) is not a showbatch \(format.rawValue.uppercased()) output: \(reason)"
        }
    }

    func redacted(_ redact: (String) -> String) -> MergeError {
        switch self {
        case .shardsBelowOne, .standardOutputGiven, .shardOutputsShared, .openFileLimit: return self
        case .nightNotBegun(let date, let template, let state):
            return .nightNotBegun(date: date, template: redact(template), state: redact(state))
        case .outputWouldWriteInput(let output, let file, let input):
            return .outputWouldWriteInput(output: redact(output), file: redact(file), input: redact(input))
        case .outputIsDirectory(let output): return .outputIsDirectory(output: redact(output))
        case .outputRefused(let output, let refusal): return .outputRefused(output: redact(output), refusal: redact(refusal))
        case .outputIsInput(let output, let input): return .outputIsInput(output: redact(output), input: redact(input))
        case .stateKeyMissing(let output): return .stateKeyMissing(output: redact(output))
        case .encryptorUnavailable(let output, let reason): return .encryptorUnavailable(output: redact(output), reason: redact(reason))
        case .outputBeingWritten(let output, let journal): return .outputBeingWritten(output: redact(output), journal: redact(journal))
        case .partlyDelivered(let outputs): return .partlyDelivered(outputs.map(redact))
        case .sealingFailed(let reason): return .sealingFailed(reason: redact(reason))
        case .shardMissing(let shard): return .shardMissing(shard.redacted(redact))
        case .shardNotRegular(let shard, let found): return .shardNotRegular(shard.redacted(redact), found)
        case .shardUnfinished(let shard, let unfinished): return .shardUnfinished(shard.redacted(redact), unfinished.redacted(redact))
        case .shardIdentityMissing(let shard, let identity): return .shardIdentityMissing(shard.redacted(redact), identity: redact(identity))
        case .shardUncheckable(let shard, let unchecked): return .shardUncheckable(shard.redacted(redact), unchecked.redacted(redact))
        case .shardUnreadable(let shard, let unreadable): return .shardUnreadable(shard.redacted(redact), unreadable.redacted(redact))
        case .shardUnopenable(let shard, let problem): return .shardUnopenable(shard.redacted(redact), problem: redact(problem))
        case .shardNotOfManifest(let shard, let mismatch): return .shardNotOfManifest(shard.redacted(redact), mismatch.redacted(redact))
        case .shardChanged(let shard, let record): return .shardChanged(shard.redacted(redact), record.redacted(redact))
        case .rejectsChanged(let shard, let rejects, let identity):
            return .rejectsChanged(shard.redacted(redact), rejects: redact(rejects), identity: redact(identity))
        case .journalLocked(let shard, let journal): return .journalLocked(shard.redacted(redact), journal: redact(journal))
        case .shardMalformed(let shard, let format, let reason):
            return .shardMalformed(shard.redacted(redact), format: format, reason: redact(reason))
        }
    }
}
