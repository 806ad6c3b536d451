import Foundation
import ShowbatchBasics
import ShowbatchYAML

/// Turns a YAML node tree into a `Manifest`, recording a diagnostic for each problem.
struct ManifestDecoder {
    let source: SourceFile
    let directory: String
    let environment: [String: String]
    /// What the manifest is loaded for: a merge sends nothing, so it needs no secret.
    let use: ManifestUse
    /// Checks recipients' key files (GnuPG, in the engine).
    let checkRecipients: RecipientCheck
    /// Tries a signing key (GnuPG, in the engine), when the manifest is loaded to be validated.
    var checkSigning: SigningCheck?
    /// Set while decoding what only sending needs (auth, tls): in a merge an unset variable
    /// there leaves the value out instead of failing.
    var optionalEnvironment = false
    /// The variables `validate --no-env` took as placeholders.
    var placeholders: Set<String> = []
    /// Problems found, rendered only at the end: most manifests have none, and rendering needs
    /// the spans of every secret, which a valid manifest never has to find.
    var problems: [(mark: Mark, message: String)] = []
    /// What is valid but likely not meant (a manifest with only warnings loads).
    var warnings: [(mark: Mark, message: String)] = []
    /// Requests already decoded while parsing, one per item of `list`.
    var predecoded: (list: Node, requests: [RequestSpec], items: Int, problems: [(mark: Mark, message: String)])?
    /// The hash of the manifest's bytes, when it was computed ahead.
    var contentHash: UInt64?
    /// The values `${NAME}` references put into headers and payloads, the state key, and every
    /// `${file:PATH}`'s content.
    var environmentSecrets: Set<String> = []
    /// Why a `${file:PATH}` could not be read, by PATH.
    var fileProblems: [String: String] = [:]
    /// Names of the requests decoded so far, with their lines.
    var requestNames: [String: Int] = [:]
    /// Recipient lists checked already (by their paths), with what was found: outputs repeated
    /// through an alias are checked once.
    var checkedRecipients: [String: [RecipientProblem]] = [:]
    /// Compiled transforms by pattern and template: the same label set is often repeated per request.
    var transforms: [String: RegexTransform] = [:]
    /// Payload content decoded already, for aliases that repeat it.
    var sharedPayloads: [SharedPayload: (value: PayloadValue, columns: [String])] = [:]
    /// Label sets decoded already, by their children, for aliases that repeat them.
    var sharedLabels: [Int: [LabelBinding]] = [:]
    /// The label set decoded last, and where its text is when another written the same way may
    /// share it (`labels`).
    var lastLabels: (range: Range<Int>?, labels: [LabelBinding]) = (nil, [])

    static let topKeys = ManifestReference.keys(under: "")
    static let requestKeys = ManifestReference.keys(under: "requests")

    init(source: SourceFile, directory: String, environment: [String: String], use: ManifestUse = .reveal,
         checkRecipients: @escaping RecipientCheck) {
        self.checkRecipients = checkRecipients
        self.source = source
        self.directory = directory
        self.use = use
        // Each `${file:PATH}` the text names is read once, and then resolved as a variable is;
        // its content is a secret wherever it is used.
        var environment = environment
        for path in ManifestDecoder.fileReferences(in: source.bytes) where environment[fileReference + path] == nil {
            switch SecretFile.read(path, directory: directory) {
            case .success(let value):
                environment[fileReference + path] = value
                environmentSecrets.insert(value)
            case .failure(let problem):
                fileProblems[path] = problem.message
            }
        }
        self.environment = environment
    }

    /// The paths of the `${file:PATH}` references in a manifest's text (a `$${` literal too,
    /// which costs only a read).
    static func fileReferences(in bytes: [UInt8]) -> [String] {
        let marker = Array("${\(fileReference)".utf8)
        var paths: [String] = []
        var index = 0
        while index + marker.count <= bytes.count {
            guard bytes[index] == marker[0], Array(bytes[index..<(index + marker.count)]) == marker else {
                index += 1
                continue
            }
            let start = index + marker.count
            guard let close = bytes[start...].firstIndex(of: UInt8(ascii: "}")) else { break }
            var path = String(decoding: bytes[start..<close], as: UTF8.self)
            if let fallback = path.range(of: ":-") { path = String(path[..<fallback.lowerBound]) }
            if !path.isEmpty && !paths.contains(path) { paths.append(path) }
            index = close
        }
        return paths
    }

    mutating func problem(_ mark: Mark, _ message: String) {
        problems.append((mark, message))
    }

    // MARK: Typed readers

    /// The entries of a mapping by key, reporting unknown keys with the closest known one.
    mutating func fields(_ node: Node, _ context: @autoclosure () -> String, known: [String]) -> KnownKeys? {
        guard node.kind == .mapping else {
            problem(node.mark, "\(context()) must be a mapping; found \(node.typeName)")
            return nil
        }
        for keyNode in node.unknownKeys(known) {
            let key = keyNode.text
            let context = context()
            guard isPlainKeyName(key) else {
                // Not named: a value that lost its `: ` (or an alias) can sit where a key goes.
                problem(keyNode.mark, "unknown key in \(context) (not shown: it does not look like a key; is a \": \" missing?); expected \(choices(known))")
                continue
            }
            if let suggestion = closest(key, in: known) {
                problem(keyNode.mark, "unknown key \"\(key)\" in \(context); did you mean \"\(suggestion)\"?")
            } else {
                problem(keyNode.mark, "unknown key \"\(key)\" in \(context); expected \(choices(known))")
            }
        }
        return KnownKeys(node: node)
    }

    /// A scalar's text for identifier-like values: strings, and numbers as written, with
    /// `${NAME}` references resolved from the environment (any string value may hold them, so
    /// that one manifest serves several environments: `vault: ${VGS_VAULT_ID}`).
    mutating func text(_ node: Node, _ what: @autoclosure () -> String) -> String? {
        guard let raw = rawText(node, what()) else { return nil }
        return resolvingEnvironment(raw, at: node, what())
    }

    /// A scalar's text as written, for values that are templates themselves.
    mutating func rawText(_ node: Node, _ what: @autoclosure () -> String) -> String? {
        if node.kind == .scalar {
            switch node.value {
            case .string(let text): return text
            case .int, .bigInt, .float: return node.text
            default: break
            }
        }
        problem(node.mark, "\(what()) must be a string; found \(node.typeName)")
        return nil
    }

    /// `raw` parsed as a template; nil, with a problem at `node`, when a `${…}` is malformed.
    /// `sensitive` values (headers, payload) are not described.
    mutating func parseTemplate(_ raw: String, at node: Node, _ what: @autoclosure () -> String, sensitive: Bool = false) -> Template? {
        do {
            return try Template(parsing: raw)
        } catch {
            problem(node.mark, "\(what()): \(sensitive ? "the value has a malformed ${…} reference" : error.message)")
            return nil
        }
    }

    /// `raw` with its `${NAME}` references replaced from the environment (`$${` is a literal
    /// `${`); nil, with a problem, when a variable is unset or the text names a data row, which
    /// only request names, paths, headers and payloads may.
    mutating func resolvingEnvironment(_ raw: String, at node: Node, _ what: @autoclosure () -> String) -> String? {
        guard raw.utf8.contains(UInt8(ascii: "$")) else { return raw }
        guard var template = parseTemplate(raw, at: node, what()) else { return nil }
        let unset = template.resolveEnvironment(environment)
        if (optionalEnvironment || use == .check) && !unset.isEmpty {
            for name in unset where use == .check { unsetVariable(name, at: node.mark, what()) }
            return nil
        }
        for name in unset { unsetVariable(name, at: node.mark, what()) }
        if template.needsRow {
            problem(node.mark, "\(what()) cannot use ${row.…} or ${index}; only request names, paths, headers and payloads can")
            return nil
        }
        return unset.isEmpty ? template.expand(row: nil) : nil
    }

    /// The text of a scalar of any type, environment references resolved (for values parsed
    /// further: rates, durations, content paths).
    mutating func scalarText(_ node: Node, _ what: @autoclosure () -> String) -> String? {
        guard let scalar = node.scalar else { return nil }
        return resolvingEnvironment(scalar.text, at: node, what())
    }

    mutating func integer(_ node: Node, _ what: String, _ range: ClosedRange<Int>) -> Int? {
        switch node.scalar?.value {
        case .int(let value)? where range.contains(value): return value
        case .int?, .bigInt?:
            // The text as written (a secret aliased here is an error of its own, and cleared).
            problem(node.mark, "\(what) must be from \(range.lowerBound) to \(range.upperBound); found \(node.text)")
            return nil
        default: break
        }
        problem(node.mark, "\(what) must be an integer from \(range.lowerBound) to \(range.upperBound); found \(node.typeName)")
        return nil
    }

    mutating func bool(_ node: Node, _ what: String) -> Bool? {
        if case .bool(let value)? = node.scalar?.value { return value }
        problem(node.mark, "\(what) must be true or false; found \(node.typeName)")
        return nil
    }

    mutating func duration(_ node: Node, _ what: String) -> Duration? {
        if let scalar = node.scalar {
            switch scalar.value {
            case .int, .bigInt, .float, .string:
                guard let text = resolvingEnvironment(scalar.text, at: node, what) else { return nil }
                switch Units.parseDuration(text) {
                case .success(let value): return value
                case .failure(.malformed):
                    problem(node.mark, "\(what) must be a positive duration such as 500ms, 30s or 2m; found \"\(text)\"")
                case .failure(.outOfRange):
                    problem(node.mark, "\(what) must be a duration \(Units.durationRangeText); found \"\(text)\"")
                }
                return nil
            default: break
            }
        }
        problem(node.mark, "\(what) must be a duration such as 500ms, 30s or 2m; found \(node.typeName)")
        return nil
    }

    // MARK: The manifest

    mutating func decode(_ root: Node) -> Manifest {
        var manifest = Manifest(file: source.name, directory: directory)
        manifest.contentHash = contentHash ?? fnv1a(source.bytes)
        guard let top = fields(root, "the manifest", known: Self.topKeys) else { return manifest }

        if let node = top["version"], let version = integer(node, "version", 1...Int.max) {
            if version > 1 {
                problem(node.mark, "version \(node.text) is newer than this showbatch understands; expected 1")
            }
            manifest.version = version
        }
        endpoint(top, root: root, into: &manifest)
        if let node = top["vault_api"] {
            manifest.vaultAPI = vaultAPI(node)
            checkVaultAPIEndpoint(top, manifest)
        }
        if let node = top["headers"] { manifest.headers = headers(node, "headers", allowRow: false) }
        settings(top, into: &manifest)
        if let node = top["retry"] { manifest.retry = retry(node) }
        if let node = top["output"] { manifest.output = output(node, "output") }
        if let node = top["emulator"] { manifest.emulator = emulator(node) }
        if let node = top["requests"] {
            manifest.requests = requests(node)
            checkVaultAPIRequests(manifest)
            checkColumns(&manifest)
            checkLabelFiles(manifest)
        } else {
            problem(root.mark, "missing required key \"requests\" in the manifest")
        }
        // Only through an alias can a value be in two places: then no secret may be repeated
        // where it would be printed (a request's name or path, a label, a setting).
        if root.document.hasAliases {
            let reused = ManifestSecrets(root: root).reusedSecrets
            // What else was wrong with such a value matters less than where it came from.
            problems.removeAll { reused.contains($0.mark) }
            for mark in reused {
                problem(mark, "this alias repeats a secret (a header, payload or emulator alias value) where values are printed; write the value out here")
            }
        }
        manifest.placeholders = placeholders.sorted()
        return manifest
    }

    /// A path written in the manifest, resolved against the manifest's folder.
    func resolve(_ path: String) -> String {
        if path.hasPrefix("/") || directory == "." { return path }
        return (directory as NSString).appendingPathComponent(path)
    }
}

/// Payload content an alias may repeat: its children, and whether it may use data rows.
struct SharedPayload: Hashable {
    let container: Int
    let allowRow: Bool
}

/// A mapping whose keys were checked against the known ones. Mappings are small, so a linear
/// byte comparison beats hashing or making a String per key.
struct KnownKeys {
    let node: Node

    subscript(key: String) -> Node? {
        node.value(forKey: key)
    }

    /// The entries of the mapping.
    var pairs: Node.Pairs { node.mapping! }
}
