import Foundation
import ShowbatchBasics
import ShowbatchYAML

/// Output file formats.
package enum OutputFormat: String, Sendable, CaseIterable {
    case csv, json, jsonl

    /// The format an output path's extension implies, if any (`.pgp`, `.gpg`, `.asc`, then
    /// `.gz`, are looked through: `rows.jsonl.gz.pgp` is gzip-compressed JSON Lines).
    package static func fromExtension(_ path: String) -> OutputFormat? {
        var path = withoutOpenPGPExtension(path)
        if isGzipPath(path) { path = String(path.dropLast(3)) }
        switch (path as NSString).pathExtension.lowercased() {
        case "csv": return .csv
        case "json": return .json
        case "jsonl", "ndjson": return .jsonl
        default: return nil
        }
    }

    /// The path ends in `.gz` (before an OpenPGP extension, if it has one).
    package static func isGzipPath(_ path: String) -> Bool { withoutOpenPGPExtension(path).lowercased().hasSuffix(".gz") }

    /// Extensions of an OpenPGP message: what an encrypted output's path ends in.
    package static let openPGPExtensions = [".pgp", ".gpg", ".asc"]

    /// The path ends in `.pgp`, `.gpg` or `.asc` (after a name).
    package static func isOpenPGPPath(_ path: String) -> Bool {
        path.utf8.count > 4 && endsLikeOpenPGP(path)
    }

    /// The text ends in `.pgp`, `.gpg` or `.asc`.
    package static func endsLikeOpenPGP(_ text: String) -> Bool {
        let lower = text.lowercased()
        return openPGPExtensions.contains { lower.hasSuffix($0) }
    }

    /// `path` without its OpenPGP extension.
    package static func withoutOpenPGPExtension(_ path: String) -> String {
        isOpenPGPPath(path) ? String(path.dropLast(4)) : path
    }
}

extension OutputSpec {
    /// What is wrong with how `path` ends for the name of a file showbatch writes, in words
    /// ("/", "a dot", "a space"…), or nil: a name that ends in a space or a line break looks like
    /// another (`cards.csv.pgp ` is not a message), and one ending in `/` or `.` names a folder.
    package static func endProblem(_ path: String) -> String? {
        guard let last = path.unicodeScalars.last else { return "nothing" }
        if last == "/" { return "/" }
        if last == "." { return "a dot" }
        if CharacterSet.newlines.contains(last) { return "a line break" }
        if CharacterSet.whitespaces.contains(last) || CharacterSet.controlCharacters.contains(last) { return "a space or a control character" }
        return nil
    }
}

/// `output.encrypt`: the output is written for its recipients only, as one OpenPGP message, and
/// sealed on disk while the run lasts.
package struct EncryptSpec: Sendable, Equatable, CustomStringConvertible {
    /// The recipients' public key files; any one of them decrypts.
    package var recipients: [RecipientFile]
    /// Wraps the data key in the journal, so an interrupted run can be resumed and shards merged.
    package var stateKey: StateKey?
    /// ASCII-armored output instead of binary OpenPGP.
    package var armor = false
    /// A recipient key expiring within this many days is a warning on every run (0: never).
    package var warnExpiryDays = 30
    /// Our key, which signs each message as it is encrypted (`encrypt.sign`).
    package var sign: SignSpec?
    /// Where `encrypt` is in the manifest, for errors found later.
    package var mark: Mark
    /// Where each recipient is, for a key the run finds it cannot encrypt to.
    package var recipientMarks: [Mark] = []
    /// Which output section it is in (`output`, `request "a" output`), for messages.
    package var context = "output"

    /// A recipient's problem, as `validate` and a run say it.
    package static func recipientProblem(_ problem: RecipientProblem, context: String) -> String {
        "\(context).encrypt.recipients[\(problem.index)]: \(problem.message)"
    }

    package init(recipients: [RecipientFile], stateKey: StateKey? = nil, armor: Bool = false, mark: Mark) {
        self.recipients = recipients
        self.stateKey = stateKey
        self.armor = armor
        self.mark = mark
    }

    /// Equal when they encrypt to the same keys the same way (a state key compared in constant time).
    package static func == (lhs: EncryptSpec, rhs: EncryptSpec) -> Bool {
        let keys: Bool
        switch (lhs.stateKey, rhs.stateKey) {
        case (nil, nil): keys = true
        case (let left?, let right?): keys = left.secret.matches(right.secret)
        default: keys = false
        }
        return lhs.recipients == rhs.recipients && lhs.armor == rhs.armor && keys && lhs.sign == rhs.sign
    }

    /// Never the state key.
    package var description: String {
        "EncryptSpec(recipients: \(recipients.map(\.name)), stateKey: \(stateKey == nil ? "none" : "hidden"), armor: \(armor))"
    }
}

/// `output.encrypt.sign`: the secret key that signs the messages, and its passphrase.
package struct SignSpec: Sendable, Equatable, CustomStringConvertible {
    /// The secret key file (armored or binary, as `gpg --export-secret-keys` writes it).
    package var keyFile: String
    /// Unlocks the key, when it has a passphrase.
    package var passphrase: SecretBytes?
    /// Where `sign` is in the manifest.
    package var mark: Mark

    package init(keyFile: String, passphrase: SecretBytes? = nil, mark: Mark) {
        self.keyFile = keyFile
        self.passphrase = passphrase
        self.mark = mark
    }

    /// The same key and passphrase (compared in constant time).
    package static func == (lhs: SignSpec, rhs: SignSpec) -> Bool {
        let phrases: Bool
        switch (lhs.passphrase, rhs.passphrase) {
        case (nil, nil): phrases = true
        case (let left?, let right?): phrases = left.matches(right)
        default: phrases = false
        }
        return lhs.keyFile == rhs.keyFile && phrases
    }

    /// Never the passphrase.
    package var description: String { "SignSpec(keyFile: \(keyFile), passphrase: \(passphrase == nil ? "none" : "hidden"))" }
}

/// Where and how rows are written.
package struct OutputSpec: Sendable, Equatable {
    /// Equal when they write the same bytes to the same place (where the columns were written aside).
    package static func == (lhs: OutputSpec, rhs: OutputSpec) -> Bool {
        lhs.path == rhs.path && lhs.format == rhs.format && lhs.csv == rhs.csv && lhs.columns == rhs.columns
            && lhs.rejects == rhs.rejects && lhs.rejectPartial == rhs.rejectPartial && lhs.compress == rhs.compress
            && lhs.encrypt == rhs.encrypt && lhs.deliver == rhs.deliver
            && lhs.header == rhs.header && lhs.trailer == rhs.trailer
    }

    /// The path, resolved against the manifest's folder; may hold `{shard}`, and `${run.date}`
    /// and `${run.seq}` in its file name (`NightName`).
    package var path: String
    /// The format, when given explicitly.
    package var format: OutputFormat?
    /// How CSV is written.
    package var csv = CSVDialect()
    /// The columns in order; nil for the default (the fixed columns, then every label).
    package var columns: [OutputColumn]?
    /// Where failed rows go instead of this file (resolved like `path`), if anywhere.
    package var rejects: String?
    /// Partial rows go to `rejects` too.
    package var rejectPartial = false
    /// Compress with gzip; nil: when the path ends in `.gz`.
    package var compress: Bool?
    /// Encrypt to OpenPGP recipients (`output.encrypt`).
    package var encrypt: EncryptSpec?
    /// Upload the finished file by SFTP (`output.deliver`).
    package var deliver: DeliverSpec?
    /// The line written before the first row (before a CSV header), when given.
    package var header: EnvelopeLine?
    /// The line written after the last row, when given.
    package var trailer: EnvelopeLine?
    /// Where each item of `columns` is in the manifest, for errors found once the labels are known.
    package var columnMarks: [Mark] = []
    /// Where the `columns` key is, for the warning about failed rows written blank.
    package var columnsKeyMark: Mark?

    /// Creates an output spec.
    package init(path: String, format: OutputFormat? = nil, escapeFormulas: Bool = false) {
        self.path = path
        self.format = format
        self.csv.escapeFormulas = escapeFormulas
    }

    /// Defuse formulas in CSV cells.
    package var escapeFormulas: Bool {
        get { csv.escapeFormulas }
        set { csv.escapeFormulas = newValue }
    }

    /// The format: explicit, else from the extension, else CSV.
    /// It has a header or a trailer.
    package var enveloped: Bool { header != nil || trailer != nil }

    package var resolvedFormat: OutputFormat { format ?? OutputFormat.fromExtension(path) ?? .csv }
}

/// How CSV is written (`output.csv`).
package struct CSVDialect: Sendable, Equatable {
    /// The byte between cells: `,` `;` tab or `|`.
    package var delimiter = UInt8(ascii: ",")
    /// End lines with CR LF instead of LF.
    package var crlf = false
    /// Write the header line.
    package var header = true
    /// Quote every cell, not only those that need it.
    package var quoteAll = false
    /// Defuse cells a spreadsheet would run as a formula (plain numbers are left alone).
    package var escapeFormulas = false

    /// The default dialect: comma, LF, header, minimal quoting, no formula escaping.
    package init() {}
}

/// One column of `output.columns`.
package enum OutputColumn: Sendable, Equatable {
    /// A fixed column (`request`, `status`, …), under `name`.
    case fixed(ResultColumn, name: String)
    /// A label's value, under `name`.
    case label(String, name: String)
    /// Text made from the data row (`${row.COLUMN}`, `${index}`, `${request}`), never sent.
    case template([ColumnPart], name: String)

    /// The column's name in the header (CSV) or as the key (JSON).
    package var name: String {
        switch self {
        case .fixed(_, let name), .label(_, let name), .template(_, let name): return name
        }
    }
}

/// A piece of a column template.
package enum ColumnPart: Sendable, Equatable {
    /// Text as written (environment references already resolved).
    case literal(String)
    /// A data-row column's value (empty when the row lacks it).
    case row(String)
    /// The data row's 0-based index.
    case index
    /// The expanded request name.
    case request
}
