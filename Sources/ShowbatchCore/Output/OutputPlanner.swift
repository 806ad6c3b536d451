import Foundation
import ShowbatchBasics
import ShowbatchYAML
import ShowbatchManifest

/// What a manifest writes, planned once for a run, a merge and the writer of binary labels:
/// which file each request writes to (`--output`, else the request's output, else the
/// manifest's), each file's layout and rejects file, the data-row text the feed makes for them,
/// the files the run reads, and so which paths nothing of the run may overwrite. A pure value:
/// it sends nothing and opens nothing for writing.
struct OutputPlanner {
    let manifest: Manifest
    /// The outputs, in the order requests first name them.
    var targets: [OutputTarget]
    /// The output of each request.
    let byRequest: [Int]
    /// What the feed makes from each request's data rows: its output's template columns, then its
    /// rejects' data-row columns.
    let extras: [[[ColumnPart]]]
    /// The files the run reads: the manifest, data files, the emulator's alias file, the token
    /// file and the TLS files.
    let inputs: [RunInput]

    /// Plans the outputs of `manifest` as a run with these flags writes them. A canary (`limit`
    /// without `output`) writes every file of an output in a `canary` folder beside it.
    /// `nights` fills in `${run.date}` and `${run.seq}`; without it they stay as written.
    init(manifest: Manifest, output: String?, format: OutputFormat?, shard: Shard?, limit: Int? = nil, nights: NightBook? = nil) throws(RunError) {
        self.manifest = manifest
        var inputs = [RunInput(what: "the manifest", path: manifest.file)]
        for request in manifest.requests {
            if let each = request.each { inputs.append(RunInput(what: "the data file \(each.name)", path: each.path)) }
        }
        if case .file(let path)? = manifest.emulator?.aliases { inputs.append(RunInput(what: "the emulator's alias file", path: path)) }
        if case .tokenFile(let path)? = manifest.auth?.source { inputs.append(RunInput(what: "the token file", path: path)) }
        let tls = [("the CA file", manifest.tls.caFile), ("the client certificate", manifest.tls.clientCertificate),
                   ("the client key", manifest.tls.clientKey)]
        for case (let what, let path?) in tls { inputs.append(RunInput(what: what, path: path)) }
        self.inputs = inputs
        (targets, byRequest, extras) = try OutputPlanner.plan(manifest, output: output, format: format, shard: shard,
                                                              canary: limit != nil && output == nil, nights: nights)
    }

    /// The folder a canary run (`--limit` without `--output`) writes an output's files in: `canary`
    /// beside the output (`out/cards.csv` becomes `out/canary/cards.csv`), so that its journal,
    /// rejects and label files land there too and no file of the night is replaced or picked up.
    static func canaryPath(_ path: String) -> String {
        guard path != "-" else { return path }
        let folder = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        return (folder.isEmpty ? "" : folder + "/") + "canary/" + name
    }

    /// The rejects file of `--output PATH`: beside PATH, named from it, with the extensions of
    /// the manifest's rejects file (`--output out/test.csv` with `rejects: out/rejects.jsonl`
    /// writes `out/test.rejects.jsonl`), never the manifest's own.
    static func rejectsBeside(_ output: String, rejects: String) -> String {
        let folder = (output as NSString).deletingLastPathComponent
        let (stem, _) = splitExtensions((output as NSString).lastPathComponent)
        let (_, extensions) = splitExtensions((rejects as NSString).lastPathComponent)
        return (folder.isEmpty ? "" : folder + "/") + stem + ".rejects" + extensions
    }

    /// A file name and the output extensions it ends with (`cards.csv.gz.pgp`: `cards`, `.csv.gz.pgp`).
    private static func splitExtensions(_ name: String) -> (stem: String, extensions: String) {
        let known: Set = ["csv", "json", "jsonl", "ndjson", "gz", "pgp", "gpg", "asc"]
        var stem = Substring(name)
        while let dot = stem.lastIndex(of: "."), dot != stem.startIndex, known.contains(stem[stem.index(after: dot)...].lowercased()) {
            stem = stem[..<dot]
        }
        return (String(stem), String(name.dropFirst(stem.count)))
    }

    /// What a journal (and a shard's identity) of `target` is valid for: the rows it holds, in
    /// order, in its format and columns, of this manifest and data, for this shard.
    /// A canary run (`--limit`) writes fewer rows: its journal is not the full run's.
    func journalIdentity(of target: OutputTarget, dataHash: UInt64, shard: Shard?, limit: Int? = nil) -> Journal.Identity {
        let rejects = target.rejects.map { ["rejects:" + $0.path, "partial:\(target.rejectPartial)"] + $0.layout.signature } ?? []
        return Journal.Identity(manifest: String(manifest.rowIdentity, radix: 16), data: String(dataHash, radix: 16),
                                shard: shard.map { "\($0.index)/\($0.count)" } ?? "", output: target.path,
                                format: target.layout.format.rawValue,
                                columns: target.layout.signature + rejects + (limit.map { ["limit:\($0)"] } ?? [])
                                    + (target.encrypt != nil ? ["encrypted"] : [])
                                    + (target.recipients.map { ["recipients:" + $0.joined(separator: ",")] } ?? []))
    }

    /// Whether any output is standard output.
    var writesStandardOutput: Bool { targets.contains { $0.isStandardOutput } }

    /// The files the run writes, for its summary and report: each output, its rejects file, and
    /// where its binary labels' files go (the output's folder and the label's `file`, as
    /// `out/pdf/${row.id}.pdf`).
    var writtenFiles: [String] {
        targets.indices.flatMap { index -> [String] in
            let target = targets[index]
            var files = target.paths
            guard !target.isStandardOutput else { return files }
            let folder = (target.path as NSString).deletingLastPathComponent
            for (request, owner) in zip(manifest.requests, byRequest) where owner == index {
                for case let file? in request.labels.map(\.file) {
                    let pattern = (folder.isEmpty ? "" : folder + "/") + file.template.pattern
                    if !files.contains(pattern) { files.append(pattern) }
                }
            }
            return files
        }
    }

    /// The writer of binary labels' files, when a request has one; `others` are further files of
    /// the run it must not replace (`--metrics`, `--report`).
    /// An encrypted target's label files are made into OpenPGP messages by its encryptor.
    func labelFileWriter(others: [String] = [], encryptors: [Int: OpenPGPEncryptor] = [:]) -> LabelFileWriter? {
        guard manifest.requests.contains(where: { $0.labels.contains { $0.file != nil } }) else { return nil }
        return LabelFileWriter(inputs: inputs, outputs: targets.map(\.path), others: targets.compactMap { $0.rejects?.path } + others,
                               encryptors: targets.indices.map { encryptors[$0] })
    }

    private static func plan(_ manifest: Manifest, output: String?, format explicitFormat: OutputFormat?, shard: Shard?,
                             canary: Bool, nights: NightBook?) throws(RunError) -> (targets: [OutputTarget], byRequest: [Int], extras: [[[ColumnPart]]]) {
        let naming = PathNaming(shard: shard, canary: canary, nights: nights)
        var (targets, specs, byRequest) = if let output {
            try overrideTarget(manifest, path: output, format: explicitFormat, naming: naming)
        } else {
            try manifestTargets(manifest, format: explicitFormat, naming: naming)
        }
        let extrasByTarget = try layOut(&targets, specs: specs, byRequest: byRequest, manifest: manifest, naming: naming)
        let all = targets.flatMap(\.paths)
        for (position, path) in all.enumerated() where all[..<position].contains(where: { $0 == path || PrivateFile.canonical($0) == PrivateFile.canonical(path) }) {
            throw RunError.usage(OutputError.pathTwice(path: path))
        }
        let extras = manifest.requests.indices.map { extrasByTarget[byRequest[$0]] }
        return (targets, byRequest, extras)
    }

    /// How a run names its files: the night filled in, a shard's and a canary's beside the manifest's.
    private struct PathNaming {
        let shard: Shard?
        let canary: Bool
        let nights: NightBook?

        /// The night of the output named by `template`, when its name holds one.
        func night(of template: String) -> NightTarget? {
            guard let nights, NightName.names(template) else { return nil }
            return NightTarget(template: template, date: nights.date, seq: nights.number(of: template),
                               records: shard == nil && !nights.night.testRun, shard: shard != nil && !nights.night.testRun)
        }

        /// The file this run writes for `path` (`-` stays standard output), numbered as the
        /// output named by `template`.
        /// A shard of an output with a header or trailer (`enveloped`) is never the output
        /// itself, even the one shard of one: merge writes the night's lines around its rows.
        func path(_ path: String, encrypted: Bool = false, enveloped: Bool = false, template: String? = nil) -> String {
            guard path != "-" else { return path }
            let path = nights.map { $0.expand(path, template: template ?? path) } ?? path
            guard let shard else { return canary ? canaryPath(path) : path }
            // A shard of an encrypted output is sealed, not an OpenPGP message: named so.
            let sharded = encrypted ? shard.path(OutputFormat.withoutOpenPGPExtension(path)) + ".sealed" : shard.path(path, evenOne: enveloped)
            return canary ? canaryPath(sharded) : sharded
        }
    }

    /// `--output PATH`: one target for every request, the manifest's output settings but its path.
    private static func overrideTarget(_ manifest: Manifest, path: String, format explicitFormat: OutputFormat?,
                                       naming: PathNaming) throws(RunError) -> ([OutputTarget], [OutputSpec], [Int]) {
        if path != "-", let problem = OutputSpec.endProblem(path) {
            throw RunError.usage(OutputError.outputNotAFile(path: path, ending: problem))
        }
        let format: OutputFormat
        if let explicitFormat {
            format = explicitFormat
        } else if path == "-" {
            format = .csv
        } else if let implied = OutputFormat.fromExtension(path) {
            format = implied
        } else {
            throw RunError.usage(OutputError.formatUnknown(path: path))
        }
        var spec = manifest.output ?? OutputSpec(path: path)
        spec.path = path
        // Every file of the output goes with it: the rejects file too, never the manifest's.
        spec.rejects = spec.rejects.map { rejectsBeside(path, rejects: $0) }
        try refuseSharedLabelFolder(manifest, output: path, shard: naming.shard)
        if spec.encrypt != nil && (path == "-" || !OutputFormat.isOpenPGPPath(path)) {
            throw RunError.usage(OutputError.encryptedNotNamedMessage(toStandardOutput: path == "-"))
        }
        // --output puts every request's rows in one file: rows that a request's own output
        // encrypts must not land in it in the clear, nor encrypted to other recipients.
        if let index = manifest.requests.firstIndex(where: { $0.output?.encrypt != nil && $0.output?.encrypt != spec.encrypt }) {
            throw RunError.usage(spec.encrypt == nil
                ? OutputError.requestRowsInClear(request: index + 1, path: path)
                : OutputError.requestEncryptedOtherwise(request: index + 1, path: path))
        }
        if spec.encrypt == nil {
            // A plain file is not named a message.
            if path != "-" && OutputFormat.isOpenPGPPath(path) {
                throw RunError.usage(OutputError.plainNamedMessage(path: path))
            }
        }
        let template = manifest.output?.path
        let target = OutputTarget(path: naming.path(path, encrypted: spec.encrypt != nil, enveloped: spec.enveloped, template: template), layout: .standard(format: format, labels: [], csv: spec.csv))
        return ([target], [spec], Array(repeating: 0, count: manifest.requests.count))
    }

    /// The manifest's outputs: each request's own or the manifest's, two spellings of one file one output.
    private static func manifestTargets(_ manifest: Manifest, format explicitFormat: OutputFormat?,
                                        naming: PathNaming) throws(RunError) -> ([OutputTarget], [OutputSpec], [Int]) {
        var targets: [OutputTarget] = []
        var specs: [OutputSpec] = []
        var byRequest: [Int] = []
        for (index, request) in manifest.requests.enumerated() {
            guard let spec = request.output ?? manifest.output else {
                throw RunError.manifest(manifest.diagnostic(at: request.mark, "request \(index + 1) has no output: give --output PATH, or add output: to the manifest or the request"))
            }
            let path = naming.path(spec.path, encrypted: spec.encrypt != nil, enveloped: spec.enveloped, template: spec.path)
            let format = explicitFormat ?? spec.resolvedFormat
            // Two spellings of one file are one output.
            if let existing = targets.firstIndex(where: { $0.path == path || PrivateFile.canonical($0.path) == PrivateFile.canonical(path) }) {
                if targets[existing].layout.format != format {
                    throw RunError.usage(OutputError.twoFormats(path: path, first: targets[existing].layout.format, second: format))
                }
                // The same file under another spelling: only what it writes must agree.
                var mine = spec, theirs = specs[existing]
                mine.path = ""
                theirs.path = ""
                mine.rejects = mine.rejects.map(PrivateFile.canonical)
                theirs.rejects = theirs.rejects.map(PrivateFile.canonical)
                if mine != theirs {
                    throw RunError.usage(OutputError.differentSettings(path: path))
                }
                byRequest.append(existing)
            } else {
                specs.append(spec)
                var target = OutputTarget(path: path, layout: .standard(format: format, labels: [], csv: spec.csv))
                target.night = naming.night(of: spec.path)
                target.deliver = spec.deliver
                targets.append(target)
                byRequest.append(targets.count - 1)
            }
        }
        return (targets, specs, byRequest)
    }

    /// Each target's layout, gzip, encryption and rejects file; returns each target's extras:
    /// its template columns, then its rejects' data-row columns.
    private static func layOut(_ targets: inout [OutputTarget], specs: [OutputSpec], byRequest: [Int], manifest: Manifest,
                               naming: PathNaming) throws(RunError) -> [[[ColumnPart]]] {
        let shard = naming.shard
        var labels = Array(repeating: [String](), count: targets.count)
        for (index, request) in manifest.requests.enumerated() {
            for label in request.labels where !labels[byRequest[index]].contains(label.name) {
                labels[byRequest[index]].append(label.name)
            }
        }
        var extrasByTarget = Array(repeating: [[ColumnPart]](), count: targets.count)
        for index in targets.indices {
            let spec = specs[index]
            let format = targets[index].layout.format
            if let columns = spec.columns {
                var sources: [OutputLayout.Source] = []
                for column in columns {
                    switch column {
                    case .fixed(let fixed, _): sources.append(.fixed(fixed))
                    case .label(let label, _): sources.append(.label(label))
                    case .template(let parts, _):
                        sources.append(.extra(extrasByTarget[index].count))
                        extrasByTarget[index].append(parts)
                    }
                }
                targets[index].layout = OutputLayout(format: format, sources: sources, names: columns.map(\.name), csv: spec.csv, custom: true)
            } else {
                targets[index].layout = .standard(format: format, labels: labels[index], csv: spec.csv)
            }
            // The path as written says gzip (a shard's `.sealed` name would hide it).
            targets[index].layout.gzip = !targets[index].isStandardOutput && (spec.compress ?? OutputFormat.isGzipPath(spec.path))
            targets[index].encrypt = spec.encrypt
            targets[index].sealedShard = spec.encrypt != nil && shard != nil
            try envelope(&targets[index], spec: spec, manifest: manifest, naming: naming)
            guard let rejects = spec.rejects, !targets[index].isStandardOutput else { continue }
            let rejectsPath = naming.path(rejects, encrypted: spec.encrypt != nil, enveloped: spec.enveloped,
                                         template: targets[index].night?.template ?? spec.path)
            var rowColumns: [String] = []
            // A set beside the list: a data file may have 100,000 columns, and a list search each
            // made setup quadratic (minutes before anything was opened).
            var seen: Set<String> = []
            for (request, target) in zip(manifest.requests, byRequest) where target == index {
                for column in try dataColumns(of: request) where seen.insert(column).inserted { rowColumns.append(column) }
            }
            let first = extrasByTarget[index].count
            extrasByTarget[index] += rowColumns.map { [.row($0)] }
            // A data column named like a fixed column keeps both apart.
            let names = ResultColumn.names + rowColumns.map { ResultColumn(rawValue: $0) == nil ? $0 : "row.\($0)" }
            let sources = ResultColumn.allCases.map(OutputLayout.Source.fixed) + rowColumns.indices.map { .extra(first + $0) }
            let rejectsFormat = OutputFormat.fromExtension(rejects) ?? format
            var rejectsLayout = OutputLayout(format: rejectsFormat, sources: sources, names: names, csv: spec.csv, custom: true)
            rejectsLayout.gzip = spec.compress ?? OutputFormat.isGzipPath(rejects)
            targets[index].rejects = (rejectsPath, rejectsLayout)
            targets[index].rejectPartial = spec.rejectPartial
        }
        return extrasByTarget
    }

    /// A target's header and trailer: the columns they sum found among its columns (a column
    /// that is not there, or is no number, is a positioned error), the night they write.
    private static func envelope(_ target: inout OutputTarget, spec: OutputSpec, manifest: Manifest, naming: PathNaming) throws(RunError) {
        let lines = [spec.header, spec.trailer].compactMap { $0 }
        guard !lines.isEmpty else { return }
        let layout = target.layout
        for line in lines {
            for name in line.sums where !target.summed.contains(where: { $0.name == name }) {
                guard let column = layout.names.firstIndex(of: name) else {
                    throw RunError.manifest(manifest.diagnostic(at: line.mark, "${run.sum.\(name)} names no column of this output; its columns are \(layout.names.joined(separator: ", "))"))
                }
                if case .fixed(let fixed) = layout.sources[column], fixed != .attempts && fixed != .httpStatus {
                    throw RunError.manifest(manifest.diagnostic(at: line.mark, "${run.sum.\(name)} cannot sum the column \(name): it holds no number"))
                }
                target.summed.append(SummedColumn(name: name, column: column, source: layout.sources[column]))
            }
        }
        // A shard's file is rows for merge, which writes the night's envelope; standard output is rows to look at.
        // Without a night (`plan`), nothing is written: the lines wait for one.
        guard naming.shard == nil, !target.isStandardOutput, let nights = naming.nights else { return }
        target.envelope = FileEnvelope(header: spec.header, trailer: spec.trailer, date: nights.date,
                                       seq: target.night?.seq ?? nights.number(of: manifest.output?.path ?? spec.path),
                                       summed: target.summed)
    }

    /// Binary labels' files are written in the folder of their output: `--output` in the folder
    /// of a manifest output whose requests write such files would replace the night's files.
    private static func refuseSharedLabelFolder(_ manifest: Manifest, output: String, shard: Shard?) throws(RunError) {
        guard output != "-" else { return }
        func folder(_ path: String) -> String { PrivateFile.canonical((path as NSString).deletingLastPathComponent.isEmpty ? "." : (path as NSString).deletingLastPathComponent) }
        let mine = folder(output)
        for request in manifest.requests where request.labels.contains(where: { $0.file != nil }) {
            guard let production = (request.output ?? manifest.output)?.path else { continue }
            let path = shard?.path(production) ?? production
            if folder(path) == mine {
                throw RunError.usage(OutputError.sharesLabelFolder(output: output, manifestOutput: path))
            }
        }
    }

    /// The data-row columns of a request, for its rejects: a CSV file's header, or the columns a
    /// JSON Lines request's templates use (its rows need not share keys).
    private static func dataColumns(of request: RequestSpec) throws(RunError) -> [String] {
        guard let each = request.each else { return [] }
        guard each.kind == .csv else { return request.rowColumns }
        do {
            return try DataRowReader(kind: .csv, path: each.path, name: each.name).columns
        } catch {
            throw RunError.runtime(OutputError.dataHeaderUnreadable(name: each.name, reason: "\(error)"))
        }
    }

    // MARK: Checks before anything is sent

    /// Refuses outputs that are links, devices or folders, outputs that are an input (by file
    /// identity, so another path to the same file is caught too), a link or other non-regular
    /// file at an output's side files, `--metrics`/`--report` (`sideFiles`, by flag) at an input
    /// or a file of an output, and binary labels written to standard output.
    func check(sideFiles: [String: String] = [:]) throws(RunError) {
        let identities = inputs.compactMap { input in PrivateFile.identity(input.path).map { (input.what, $0) } }
        // Every file a run may write (an output and its side files) belongs to one output and is
        // no input, whatever the spelling.
        var owners: [String: String] = [:]
        for input in inputs { owners[PrivateFile.canonical(input.path)] = input.what }
        for path in targets.flatMap(\.paths) where path != "-" {
            for file in SideFile.all(of: path) {
                let key = PrivateFile.canonical(file)
                if let owner = owners[key] {
                    // The output itself as an input: said here too, since a path through a folder
                    // that does not exist yet (`new/../d.csv`) cannot be compared by inode below.
                    if file == path && inputs.contains(where: { $0.what == owner }) {
                        throw RunError.usage(OutputError.outputIsInput(path: path, input: owner))
                    }
                    throw RunError.usage(OutputError.fileTaken(output: path, file: file, owner: owner))
                }
                owners[key] = "a file of the output \(path)"
            }
        }
        // --metrics and --report replace their file whole: never an input or an output's file.
        for (flag, side) in sideFiles.sorted(by: { $0.key < $1.key }) {
            if let owner = owners[PrivateFile.canonical(side)] {
                throw RunError.sideFile(SideFileTaken(flag: flag, path: side, taken: owner))
            }
            if let found = PrivateFile.identity(side), let input = identities.first(where: { $0.1.device == found.device && $0.1.inode == found.inode }) {
                throw RunError.sideFile(SideFileTaken(flag: flag, path: side, taken: input.0))
            }
        }
        for path in targets.flatMap(\.paths) where path != "-" {
            switch PrivateFile.inspect(path) {
            case .none: break
            case .directory:
                throw RunError.runtime(OutputError.outputIsDirectory(path: path))
            case .link, .other:
                throw RunError.usage(OutputError.outputNotRegular(path: path, link: PrivateFile.inspect(path) == .link))
            case .regular(let device, let inode, _):
                if let input = identities.first(where: { $0.1.device == device && $0.1.inode == inode }) {
                    throw RunError.usage(OutputError.outputIsInput(path: path, input: input.0))
                }
            }
            for side in SideFile.allCases.map({ $0.of(path) }) {
                if let found = PrivateFile.found(side) { throw RunError.runtime(PathRefusal(side, found, .removeAndRunAgain)) }
                // A journal is written in place: a hard link to an input would be written through.
                if let found = PrivateFile.identity(side), let input = identities.first(where: { $0.1.device == found.device && $0.1.inode == found.inode }) {
                    throw RunError.usage(OutputError.sideFileIsInput(path: side, input: input.0))
                }
            }
        }
        // A binary label's files need an output's folder; standard output has none.
        for (index, request) in manifest.requests.enumerated() where targets[byRequest[index]].isStandardOutput {
            if let label = request.labels.first(where: { $0.file != nil }) {
                throw RunError.usage(OutputError.labelFilesToStandardOutput(label: label.name))
            }
        }
    }
}

/// A `--metrics` or `--report` path that is already another file of the run's (an input, an
/// output's file).
struct SideFileTaken: RunProblem {
    let flag: String
    let path: String
    /// What the path is already, such as "a file of the output out/r.csv".
    let taken: String

    var description: String { "\(flag) \(path) is \(taken); give it a path of its own" }

    func redacted(_ redact: (String) -> String) -> SideFileTaken {
        SideFileTaken(flag: flag, path: redact(path), taken: redact(taken))
    }
}
