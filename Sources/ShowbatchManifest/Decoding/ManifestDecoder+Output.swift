import Foundation
import ShowbatchBasics
import ShowbatchYAML

// The output section: its keys in the order they are read, and its mappings (CSV dialect,
// columns, encryption, delivery); its own keys' checks are in ManifestDecoder+OutputParts.
extension ManifestDecoder {
    static let outputKeys = ManifestReference.keys(under: "output")
    static let csvKeys = ManifestReference.keys(under: "output.csv")
    static let encryptKeys = ManifestReference.keys(under: "output.encrypt")
    static let deliverKeys = ManifestReference.keys(under: "output.deliver")
    static let signKeys = ManifestReference.keys(under: "output.encrypt.sign")

    /// An `output` mapping, read key by key into the spec; nil when its path is missing or refused.
    mutating func output(_ node: Node, _ context: @autoclosure () -> String) -> OutputSpec? {
        guard let map = fields(node, context(), known: Self.outputKeys), let (path, pathNode) = outputPath(map, of: node, context()) else { return nil }
        var spec = OutputSpec(path: resolve(path))
        // In this order: a signing key is tried only while no problem is found, and problems at
        // one place are told in the order they are found.
        outputFormat(map, into: &spec, path: path, at: pathNode, context())
        rowLayout(map, into: &spec, context())
        outputRejects(map, into: &spec, path: path, context())
        compression(map, into: &spec, context())
        rejectPartial(map, into: &spec, context())
        if let encryptNode = map["encrypt"] {
            spec.encrypt = encrypt(encryptNode, context())
        }
        outputNight(map, into: &spec, path: path, at: pathNode, context())
        checkOpenPGPNames(map, spec, path: path, at: pathNode, context())
        return spec
    }

    /// `output.csv` and `output.columns`: how each row is written.
    private mutating func rowLayout(_ map: KnownKeys, into spec: inout OutputSpec, _ context: @autoclosure () -> String) {
        if let csvNode = map["csv"], let csv = fields(csvNode, "\(context()).csv", known: Self.csvKeys) {
            spec.csv = dialect(csv, "\(context()).csv")
        }
        if let columnsNode = map["columns"] {
            spec.columns = columns(columnsNode, "\(context()).columns")
            spec.columnMarks = columnsNode.sequence.map { $0.map(\.mark) } ?? []
            spec.columnsKeyMark = map.pairs.first { $0.key.text == "columns" }?.key.mark
        }
    }

    /// What ties the output to its night: rejects numbered as its nights are, its envelope, and its delivery.
    private mutating func outputNight(_ map: KnownKeys, into spec: inout OutputSpec, path: String, at pathNode: Node, _ context: @autoclosure () -> String) {
        if let rejectsNode = map["rejects"], let rejects = spec.rejects, NightName.numbers(rejects) && !NightName.names(path) {
            problem(rejectsNode.mark, "\(context()).rejects holds ${run.seq}, the number of the output's nights, but \(context()).path names no night; put ${run.date} or ${run.seq} in the path too")
        }
        envelope(map, into: &spec, context(), path: path)
        if let deliverNode = map["deliver"] {
            spec.deliver = deliver(deliverNode, context())
            if spec.deliver != nil && !NightName.names(path) {
                problem(pathNode.mark, "\(context()).path must name the night (${run.date} or ${run.seq}) when \(context()).deliver is set: a processor takes each night's file under its own name, and the night's record beside it is what delivers it once")
            }
        }
    }

    /// `output.deliver`: where the finished file is uploaded (SFTP), as whom, and the host's key.
    private mutating func deliver(_ node: Node, _ context: String) -> DeliverSpec? {
        guard let map = fields(node, "\(context).deliver", known: Self.deliverKeys) else { return nil }
        func required(_ key: String) -> Node? {
            if let value = map[key] { return value }
            problem(node.mark, "missing required key \"\(key)\" in \(context).deliver")
            return nil
        }
        guard let urlNode = required("sftp"), let user = required("user"), let key = required("key_file"),
              let hosts = required("known_hosts") else { return nil }
        guard let urlText = text(urlNode, "\(context).deliver.sftp") else { return nil }
        let destination: SFTPDestination
        switch SFTPDestination.parse(urlText) {
        case .success(let parsed): destination = parsed
        case .failure(let message):
            problem(urlNode.mark, "\(context).deliver.sftp \(message)")
            return nil
        }
        guard let userName = text(user, "\(context).deliver.user"), let keyFile = text(key, "\(context).deliver.key_file"),
              let knownHosts = text(hosts, "\(context).deliver.known_hosts") else { return nil }
        if userName.isEmpty || userName.contains(where: { $0 == "@" || $0 == ":" || $0 == "/" || $0.isWhitespace }) {
            problem(user.mark, "\(context).deliver.user must be a user name (no @, :, / or space)")
            return nil
        }
        var spec = DeliverSpec(destination: destination, user: userName, keyFile: resolve(keyFile), knownHosts: resolve(knownHosts), mark: node.mark)
        warnOfOpenPermissions(spec.keyFile, at: key.mark, "\(context).deliver.key_file", secret: true)
        warnOfOpenPermissions(spec.knownHosts, at: hosts.mark, "\(context).deliver.known_hosts", secret: false)
        if let phrase = map["passphrase"], let text = text(phrase, "\(context).deliver.passphrase") {
            environmentSecrets.insert(text)
            spec.passphrase = SecretBytes(copying: Array(text.utf8))
        }
        if let doneNode = map["done"], let done = nightText(doneNode, "\(context).deliver.done", keeping: "${file}") {
            // A trigger named as the file (or as its upload) would be written over it on the server.
            let sample = "cards.csv"
            let named = done.replacingOccurrences(of: "${file}", with: sample)
            if done.isEmpty || done.contains("/") || done == "." || done == ".." {
                problem(doneNode.mark, "\(context).deliver.done must be a file name in the delivery folder (no /)")
            } else if named == sample || (named.hasPrefix("." + sample + ".") && named.hasSuffix(".part")) {
                problem(doneNode.mark, "\(context).deliver.done names the delivered file itself\(named == sample ? "" : " (its upload's temporary name)"): the empty trigger file would replace it on the server; give it a name of its own, such as \"${file}.done\"")
            } else {
                spec.done = done
            }
        }
        return spec
    }

    /// `output.encrypt`: recipients checked now (a readable public key that can encrypt, each),
    /// the state key parsed (never shown).
    private mutating func encrypt(_ node: Node, _ context: String) -> EncryptSpec? {
        guard let map = fields(node, "\(context).encrypt", known: Self.encryptKeys) else { return nil }
        var recipients: [RecipientFile] = []
        var marks: [Mark] = []
        if let list = map["recipients"] {
            if let items = list.sequence {
                if items.isEmpty { problem(list.mark, "\(context).encrypt.recipients is empty; list the public key file of at least one recipient") }
                for (index, item) in items.enumerated() {
                    guard let path = text(item, "\(context).encrypt.recipients[\(index)]") else { continue }
                    recipients.append(RecipientFile(path: resolve(path), name: path))
                    marks.append(item.mark)
                }
            } else {
                problem(list.mark, "\(context).encrypt.recipients must be a list of public key files; found \(list.typeName)")
            }
        } else {
            problem(node.mark, "missing required key \"recipients\" in \(context).encrypt")
        }
        if let pinsNode = map["fingerprints"] {
            if let items = pinsNode.sequence, !items.isEmpty {
                var pins: [String] = []
                for (index, item) in items.enumerated() {
                    guard let text = text(item, "\(context).encrypt.fingerprints[\(index)]") else { continue }
                    if let pin = RecipientFile.normalizedFingerprint(text) {
                        pins.append(pin)
                    } else {
                        problem(item.mark, "\(context).encrypt.fingerprints[\(index)] must be a key's fingerprint: 40 hex digits (gpg --fingerprint), spaces allowed")
                    }
                }
                // A pin that is not a fingerprint is its own problem, not every recipient's.
                if pins.count == items.count { recipients = recipients.map { RecipientFile(path: $0.path, name: $0.name, pinned: pins) } }
            } else {
                problem(pinsNode.mark, "\(context).encrypt.fingerprints must be a list of the recipients' key fingerprints")
            }
        }
        let cacheKey = recipients.map { $0.path + "\u{1}" + ($0.pinned ?? []).joined(separator: ",") }.joined(separator: "\u{0}")
        let found: [RecipientProblem]
        if use == .run {
            found = []
        } else if let known = checkedRecipients[cacheKey] {
            found = known
        } else {
            found = recipients.isEmpty ? [] : checkRecipients(recipients)
            checkedRecipients[cacheKey] = found
        }
        // This machine failing to run GnuPG (none installed, no folder for its home) is not the
        // manifest's problem: said once, as a warning; a run stops on it with exit 3.
        if let machine = found.first(where: { $0.isThisMachine }) {
            warnings.append((node.mark, "the recipients' keys of \(context).encrypt cannot be checked on this machine: \(machine.message)"))
        } else {
            for problem in found { self.problem(marks[problem.index], EncryptSpec.recipientProblem(problem, context: context)) }
        }
        var spec = EncryptSpec(recipients: recipients, mark: node.mark)
        spec.recipientMarks = marks
        spec.context = context
        if let keyNode = map["state_key"], let text = text(keyNode, "\(context).encrypt.state_key") {
            environmentSecrets.insert(text)
            do {
                spec.stateKey = try StateKey(parsing: text)
            } catch {
                problem(keyNode.mark, "\(context).encrypt.state_key: \(error.message)")
            }
        }
        if let armorNode = map["armor"], let value = bool(armorNode, "\(context).encrypt.armor") { spec.armor = value }
        if let signNode = map["sign"] { spec.sign = sign(signNode, context) }
        if let warnNode = map["warn_expiry"], let text = scalarText(warnNode, "\(context).encrypt.warn_expiry") {
            if text.hasSuffix("d"), let days = Int(text.dropLast()), (0...3650).contains(days) {
                spec.warnExpiryDays = days
            } else {
                problem(warnNode.mark, "\(context).encrypt.warn_expiry must be a number of days from 0d to 3650d, such as 30d; found \"\(text)\"")
            }
        }
        return spec
    }

    /// `output.encrypt.sign`: the secret key file (read through links, as a Secret mount is) and
    /// its passphrase, a secret.
    private mutating func sign(_ node: Node, _ context: String) -> SignSpec? {
        guard let map = fields(node, "\(context).encrypt.sign", known: Self.signKeys) else { return nil }
        guard let keyNode = map["key_file"] else {
            problem(node.mark, "missing required key \"key_file\" in \(context).encrypt.sign")
            return nil
        }
        guard let keyFile = text(keyNode, "\(context).encrypt.sign.key_file") else { return nil }
        var spec = SignSpec(keyFile: resolve(keyFile), mark: node.mark)
        warnOfOpenPermissions(spec.keyFile, at: keyNode.mark, "\(context).encrypt.sign.key_file", secret: true)
        if let phrase = map["passphrase"], let text = text(phrase, "\(context).encrypt.sign.passphrase") {
            environmentSecrets.insert(text)
            // gpg-agent takes a passphrase up to its first line break: the rest would be ignored.
            if text.contains(where: { $0 == "\n" || $0 == "\r" || $0 == "\r\n" }) {
                problem(phrase.mark, "\(context).encrypt.sign.passphrase must be one line: gpg-agent reads a passphrase only up to its first line break")
            }
            spec.passphrase = SecretBytes(copying: Array(text.utf8))
        }
        // Validating with the environment: the key is tried as a run will, so a wrong passphrase
        // or an expired key is found before a night begins (a run tries it too, before its number).
        if use == .reveal, problems.isEmpty, let checkSigning, let refusal = checkSigning(spec) {
            problem(node.mark, "\(context).encrypt.sign: \(refusal)")
        }
        return spec
    }

    private mutating func dialect(_ csv: KnownKeys, _ context: String) -> CSVDialect {
        var dialect = CSVDialect()
        if let node = csv["delimiter"], let text = text(node, "\(context).delimiter") {
            let allowed: [String: UInt8] = [",": UInt8(ascii: ","), ";": UInt8(ascii: ";"), "\t": 0x09, "\\t": 0x09, "tab": 0x09, "|": UInt8(ascii: "|")]
            if let byte = allowed[text] {
                dialect.delimiter = byte
            } else {
                problem(node.mark, "\(context).delimiter must be \",\", \";\", \"|\" or tab; found \"\(text)\"")
            }
        }
        if let node = csv["line_ending"], let text = text(node, "\(context).line_ending") {
            switch text.lowercased() {
            case "lf": dialect.crlf = false
            case "crlf": dialect.crlf = true
            default: problem(node.mark, "\(context).line_ending must be lf or crlf; found \"\(text)\"")
            }
        }
        if let node = csv["header"], let value = bool(node, "\(context).header") { dialect.header = value }
        if let node = csv["quote"], let text = text(node, "\(context).quote") {
            switch text.lowercased() {
            case "minimal": dialect.quoteAll = false
            case "all": dialect.quoteAll = true
            default: problem(node.mark, "\(context).quote must be minimal or all; found \"\(text)\"")
            }
        }
        if let node = csv["escape_formulas"], let value = bool(node, "\(context).escape_formulas") { dialect.escapeFormulas = value }
        return dialect
    }

    /// The items of `output.columns`. A label that no request has is found once the requests are
    /// known (`checkColumns`), so here a bare name that is not a fixed column is taken as a label.
    private mutating func columns(_ node: Node, _ context: String) -> [OutputColumn]? {
        guard let items = node.sequence else {
            problem(node.mark, "\(context) must be a list of column names or {NAME: TEMPLATE} items; found \(node.typeName)")
            return nil
        }
        var columns: [OutputColumn] = []
        var seen: [String: Int] = [:]
        for (index, item) in items.enumerated() {
            let what = "\(context)[\(index)]"
            var column: OutputColumn?
            if let scalar = item.scalar, scalar.value != .null {
                let name = item.text
                if name.isEmpty {
                    problem(item.mark, "\(what) is empty; expected a label, a fixed column or {NAME: TEMPLATE}")
                } else if let fixed = ResultColumn(rawValue: name) {
                    column = .fixed(fixed, name: name)
                } else {
                    column = .label(name, name: name)
                }
            } else if let pairs = item.mapping, pairs.count == 1, let pair = pairs.first(where: { _ in true }), pair.key.kind == .scalar {
                let name = pair.key.text
                if name.isEmpty {
                    problem(pair.key.mark, "\(what) has an empty column name")
                } else if pair.value.kind == .mapping {
                    // `{NAME: {text: D}}`: a constant, said as one (a bare word names a label).
                    if let map = fields(pair.value, "\(what).\(name)", known: ["text"]) {
                        if let textNode = map["text"], let text = text(textNode, "\(what).\(name).text") {
                            column = .template([.literal(text)], name: name)
                        } else if map.pairs.isEmpty {
                            problem(pair.value.mark, "\(what).\(name) must be a label, a template such as \"${row.id}\" or {text: CONSTANT}")
                        }
                    }
                } else if pair.value.scalar == nil || pair.value.scalar?.value == .null {
                    problem(pair.value.mark, "\(what).\(name) must be a template string such as \"${row.id}\"; found \(pair.value.typeName)")
                } else if let raw = rawText(pair.value, "\(what).\(name)"), !raw.contains("${") {
                    // Text without a reference renames a fixed column or a label (checked once the
                    // labels are known): a constant is written {text: …}, so a misspelt label is
                    // an error, not the same word in every row.
                    let text = raw.replacingOccurrences(of: "$${", with: "${")
                    column = ResultColumn(rawValue: text).map { .fixed($0, name: name) } ?? .label(text, name: name)
                } else if let parts = columnTemplate(pair.value, "\(what).\(name)") {
                    column = .template(parts, name: name)
                }
            } else {
                problem(item.mark, "\(what) must be a column name or {NAME: TEMPLATE} with one key; found \(item.typeName)")
            }
            guard let column else { continue }
            if let earlier = seen[column.name] {
                problem(item.mark, "\(context) names the column \"\(column.name)\" twice (items \(earlier) and \(index))")
                continue
            }
            seen[column.name] = index
            columns.append(column)
        }
        if columns.isEmpty && !items.isEmpty { return nil }
        if items.isEmpty { problem(node.mark, "\(context) is empty; list at least one column") }
        return columns
    }

    /// A column template: `${row.COLUMN}`, `${index}`, `${request}` and `${ENV}` (resolved now).
    private mutating func columnTemplate(_ node: Node, _ what: String) -> [ColumnPart]? {
        guard let raw = rawText(node, what) else { return nil }
        guard let template = parseTemplate(raw, at: node, what) else { return nil }
        var parts: [ColumnPart] = []
        var missing: [String] = []
        for part in template.parts {
            switch part {
            case .literal(let text): parts.append(.literal(text))
            case .row(let column): parts.append(.row(column))
            case .index: parts.append(.index)
            case .environment("request"): parts.append(.request)
            case .environment(let name):
                if let value = environment[name], !value.isEmpty { parts.append(.literal(value)) } else { missing.append(name) }
            case .environmentOr(let name, let fallback):
                parts.append(.literal(environment[name].flatMap { $0.isEmpty ? nil : $0 } ?? fallback))
            }
        }
        for name in missing { unsetVariable(name, at: node.mark, what) }
        return missing.isEmpty ? parts : nil
    }

    /// Checks each output's columns against the labels of the requests that write to it: a bare
    /// name must be a label of one of them, and `{NAME: label}` renames that label.
    mutating func checkColumns(_ manifest: inout Manifest) {
        func labels(writingTo own: Bool, request index: Int?) -> [String] {
            var names: [String] = []
            for (position, request) in manifest.requests.enumerated() where own ? position == index : request.output == nil {
                for label in request.labels where !names.contains(label.name) { names.append(label.name) }
            }
            return names
        }
        func check(_ spec: inout OutputSpec, _ context: String, labels: [String]) {
            guard let columns = spec.columns else { return }
            spec.columns = columns.enumerated().map { index, column in
                let mark = index < spec.columnMarks.count ? spec.columnMarks[index] : Mark(line: 1, column: 1)
                guard case .label(let label, let name) = column, !labels.contains(label) else { return column }
                let known = labels.isEmpty ? "no request writing here has labels" : "its labels are \(labels.joined(separator: ", "))"
                let suggestion = closest(label, in: labels + ResultColumn.names).map { "did you mean \"\($0)\"? " } ?? ""
                if label == name {
                    problem(mark, "\(context)[\(index)] \"\(label)\" is neither a label nor a fixed column (request, status, http_status, attempts, error); \(suggestion)\(known)")
                } else {
                    problem(mark, "\(context)[\(index)].\(name) \"\(label)\" is neither a label nor a fixed column; \(suggestion)\(known) (a constant is written {\(name): {text: \(label)}})")
                }
                return column
            }
            warnOfUnwrittenLabels(spec, labels: labels)
        }
        func checkSums(_ spec: OutputSpec, labels: [String]) {
            let columns: [(name: String, fixed: ResultColumn?)] = spec.columns.map { columns in
                columns.map { column in
                    if case .fixed(let fixed, _) = column { return (column.name, fixed) }
                    return (column.name, nil)
                }
            } ?? ResultColumn.allCases.map { ($0.rawValue, $0) } + labels.map { ($0, nil) }
            for line in [spec.header, spec.trailer].compactMap({ $0 }) {
                for name in line.sums {
                    guard let column = columns.first(where: { $0.name == name }) else {
                        problem(line.mark, "${run.sum.\(name)} names no column of this output; its columns are \(columns.map(\.name).joined(separator: ", "))")
                        continue
                    }
                    if let fixed = column.fixed, fixed != .attempts && fixed != .httpStatus {
                        problem(line.mark, "${run.sum.\(name)} cannot sum the column \(name): it holds no number")
                    }
                }
            }
        }
        if var output = manifest.output {
            check(&output, "output.columns", labels: labels(writingTo: false, request: nil))
            checkSums(output, labels: labels(writingTo: false, request: nil))
            warnOfBlankFailedRows(output)
            manifest.output = output
        }
        for index in manifest.requests.indices {
            guard var output = manifest.requests[index].output else { continue }
            check(&output, "requests[\(index)].output.columns", labels: labels(writingTo: true, request: index))
            checkSums(output, labels: labels(writingTo: true, request: index))
            warnOfBlankFailedRows(output)
            manifest.requests[index].output = output
        }
    }

    /// Warns of a key or known_hosts file others can read or write.
    ///
    /// As ssh warns of them: a private key others can read or write (a key anyone on the machine
    /// can copy), or a known_hosts file others can write (a host key anyone can replace). The file
    /// a link leads to is what counts (a Secret's mount).
    private mutating func warnOfOpenPermissions(_ path: String, at mark: Mark, _ what: String, secret: Bool) {
        var info = stat()
        guard stat(path, &info) == 0 else { return }
        let mode = Int(info.st_mode) & 0o777
        let open = secret ? mode & 0o077 : mode & 0o022
        guard open != 0 else { return }
        let mode8 = String(mode, radix: 8)
        if secret {
            warnings.append((mark, "\(what) \(path) can be \(open & 0o022 != 0 ? "written" : "read") by others (mode 0\(mode8)): ssh refuses a private key so open; make it 0600 (a Kubernetes Secret: defaultMode 0400)"))
        } else {
            warnings.append((mark, "\(what) \(path) can be written by others (mode 0\(mode8)): anyone who can write it can make showbatch trust another server; make it 0644 or less"))
        }
    }

    /// Warns of a label that is revealed but in no column: the vault was asked for a value
    /// nobody gets (often a column that renames another label by mistake).
    private mutating func warnOfUnwrittenLabels(_ spec: OutputSpec, labels: [String]) {
        guard let columns = spec.columns, let mark = spec.columnsKeyMark else { return }
        let written = Set(columns.compactMap { column -> String? in
            if case .label(let label, _) = column { return label }
            return nil
        })
        for label in labels where !written.contains(label) {
            warnings.append((mark, "label \"\(label)\" is revealed but written to no column; add it to columns, or remove the label"))
        }
    }

    /// A binary label's files are encrypted when the output they are written beside is, and are
    /// then named like OpenPGP messages (and only then): the template's last text says so.
    mutating func checkLabelFiles(_ manifest: Manifest) {
        for request in manifest.requests {
            let encrypted = (request.output ?? manifest.output)?.encrypt != nil
            for label in request.labels {
                guard let file = label.file else { continue }
                var ending = ""
                if case .literal(let text)? = file.template.source.parts.last { ending = text }
                if OutputFormat.endsLikeOpenPGP(ending) != encrypted {
                    problem(file.mark, encrypted
                            ? "label \"\(label.name)\" file must end in .pgp, .gpg or .asc: its output is encrypted (output.encrypt), and so are its label files"
                            : "label \"\(label.name)\" file ends like an OpenPGP message, but its output is not encrypted; add output.encrypt, or name the files for what they hold")
                }
            }
        }
    }

    /// Columns without `status` or `error`, and no `rejects`: a failed row is written as a row
    /// whose values are empty, and whoever reads the file cannot tell it from a real one (27 of
    /// 200 rows of a processor's file had an empty card number). Once per `columns` key, however
    /// many requests share it through an alias.
    private mutating func warnOfBlankFailedRows(_ spec: OutputSpec) {
        guard let columns = spec.columns, spec.rejects == nil, let mark = spec.columnsKeyMark else { return }
        let tellsFailures = columns.contains { column in
            if case .fixed(let fixed, _) = column { return fixed == .status || fixed == .error }
            return false
        }
        guard !tellsFailures, !warnings.contains(where: { $0.mark == mark }) else { return }
        warnings.append((mark, "failed rows will be written as rows with empty values: add `status` or `error` to columns, or set `rejects`"))
    }
}
