import Foundation
import ShowbatchBasics
import ShowbatchYAML
import ShowbatchManifest

/// The files showbatch keeps beside an output while it is written: one place for their names.
enum SideFile: String, CaseIterable {
    /// The output as it is being written, renamed into place at the end.
    case partial = ".partial"
    /// The checkpoint journal.
    case journal = ".journal"
    /// A `--retry-failed` run's journal, written whole before the output is renamed.
    case journalNext = ".journal.next"
    /// A finished shard's identity, which `merge` checks (`ShardIdentity`).
    case identity = ".identity"
    /// An encrypted output's OpenPGP message as it is being made from the sealed `.partial`,
    /// renamed into place when whole.
    case encrypting = ".encrypting"
    /// An encrypted output's rows, still sealed under its data key, kept beside the OpenPGP
    /// message while its journal holds failed rows: what `--retry-failed` rewrites it from
    /// (showbatch cannot read the message back). Removed once no failed row is left.
    case sealedRows = ".sealed"
    /// An output with a header or trailer as it is being made from its `.partial` (the lines
    /// around the rows), renamed into place when whole.
    case enveloping = ".enveloping"
    /// A plain output's rows without its header and trailer, kept beside it while its journal
    /// holds failed rows: what `--retry-failed` rewrites it from and `--resume` checks.
    case keptRows = ".rows"
    /// The record of the finished output's delivery (`output.deliver`): when, where, which bytes.
    case delivered = ".delivered"

    /// This side file of `output`.
    func of(_ output: String) -> String { output + rawValue }

    /// The output and every side file of it.
    static func all(of output: String) -> [String] { [output] + allCases.map { $0.of(output) } }
}

extension PrivateFile {
    /// Refuses, before a run or merge opens anything, another user's file among `paths` and the
    /// side files of each, and a folder they are in whose files another user can replace. (What
    /// is opened is checked in full as it is opened: one link, written by no one else.)
    static func requireTrusted(sideFilesOf paths: [String]) throws(RunError) {
        var folders: Set<String> = []
        for path in paths where path != "-" {
            let slash = path.lastIndex(of: "/")
            let folder = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
            if folders.insert(folder).inserted { try requireTrustedFolder(folder, for: path) }
            for file in SideFile.all(of: path) { try requireTrusted(file, replacing: true) }
        }
    }
}

/// One output of a run: its path (shard applied) and layout, and where its rejected rows go.
struct OutputTarget {
    var path: String
    var layout: OutputLayout
    /// The file failed rows go to instead (`output.rejects`, shard applied) and its layout.
    var rejects: (path: String, layout: OutputLayout)?
    /// Partial rows go to `rejects` too.
    var rejectPartial = false
    /// The output is encrypted (`output.encrypt`): sealed while written, then an OpenPGP message
    /// (a shard's file stays sealed, for `merge`).
    var encrypt: EncryptSpec?
    /// A shard of an encrypted output: its files stay sealed (`.sealed`), for `merge` to read.
    var sealedShard = false
    /// The fingerprints of the keys an encrypted output is for, once its encryptor has loaded
    /// them: part of its journal's and its shards' identity, so that a merge encrypts a night
    /// only to the keys its shards were sealed for.
    var recipients: [String]?
    /// The night its name holds (`${run.date}`, `${run.seq}`), when it names one.
    var night: NightTarget?
    /// Where the finished file goes once it is in place (`output.deliver`).
    var deliver: DeliverSpec?
    /// Why the run leaves it as it is: its night was finished, and the file is as it was then.
    var finishedNight: String?
    /// When its night was delivered, as its sequence state says: nothing is delivered again.
    var deliveredAt: String?
    /// The columns its header or trailer sums: a row whose cell there is not a number fails.
    var summed: [SummedColumn] = []
    /// Its header and trailer, written when the file is put in place (never into a shard's
    /// file, which merge reads as rows, nor to standard output).
    var envelope: FileEnvelope?

    /// The target's files: the output, then its rejects file.
    var paths: [String] { [path] + (rejects.map { [$0.path] } ?? []) }

    /// Whether rows go to standard output.
    var isStandardOutput: Bool { path == "-" }

    /// An encrypted output that becomes an OpenPGP message, which showbatch cannot read back:
    /// while rows failed, its sealed rows are kept beside it (`.sealed`) for `--retry-failed`.
    var publishesMessage: Bool { encrypt != nil && !sealedShard }

    /// The finished file is not its rows byte for byte (an OpenPGP message, or a file with a
    /// header or trailer): while rows failed, they are kept beside it for `--retry-failed`.
    var keepsRowsAside: Bool { publishesMessage || envelope != nil }

    /// Where the rows of the finished file `path` (the output or its rejects file) are read back
    /// from: the file itself, the sealed rows kept beside an OpenPGP message, or the rows kept
    /// beside an output with a header or trailer.
    func readableRows(of path: String) -> String {
        if publishesMessage { return SideFile.sealedRows.of(path) }
        return envelope != nil && path == self.path ? SideFile.keptRows.of(path) : path
    }

    /// The files its rows are kept in beside the finished files (`keepsRowsAside`).
    var rowsAside: [String] { keepsRowsAside ? paths.map(readableRows).filter { !paths.contains($0) } : [] }
}

/// The night an output's name holds: which output names it (its template), the date and number.
struct NightTarget: Equatable {
    /// `output.path` as the manifest gives it.
    let template: String
    let date: NightDate
    let seq: Int
    /// The run writes the night itself (not a shard, a canary or `--output`): once the file is
    /// in place the night is recorded in the output's sequence state.
    let records: Bool
    /// A shard writes it: a night delivered, or merged and as it was, sends nothing again.
    var shard = false
}

/// A file a run reads, and what it is in words ("the data file d.csv").
struct RunInput {
    let what: String
    let path: String
}
