import Foundation
import ShowbatchBasics
import ShowbatchManifest
#if canImport(Glibc)
import Glibc
#endif

/// The outputs of a merge, each with the files of its shards, as the runner plans them.
struct MergePlan {
    /// One unsharded output and the files of its shards.
    struct Output {
        /// Its place among the run's outputs (what `byRequest` holds).
        let index: Int
        /// The output as an unsharded run plans it.
        let target: OutputTarget
        /// The file of each shard, by shard index.
        let shards: [String]
        /// Each shard's plan of this output (its path, layout and rejects as its run has them).
        var shardTargets: [OutputTarget]
        /// The only shard is the output itself.
        let unchanged: Bool
        /// The data key each shard's files are sealed under (an encrypted output), from its identity.
        var keys: [DataKey?]
        /// Each shard's rows by status, from its identity (nil from an older showbatch's).
        var counts: [RowCounts?] = []

        /// The output's rows by status over its shards; nil when a shard's identity does not say.
        var nightCounts: RowCounts? {
            guard counts.count == shards.count else { return nil }
            var total = RowCounts()
            for case let shard? in counts { total.add(shard) }
            return counts.contains { $0 == nil } ? nil : total
        }
    }

    /// The night's rows by status, over every output and shard: what `max_failed` is applied
    /// to; nil when a shard's identity does not say (an older showbatch wrote it).
    var nightCounts: RowCounts? {
        var total = RowCounts()
        for output in outputs {
            guard output.counts.count == output.shards.count else { return nil }
            for counts in output.counts {
                guard let counts else { return nil }
                total.add(counts)
            }
        }
        return total
    }

    let manifest: Manifest
    /// N.
    let shards: Int
    /// In the order an unsharded run lists them.
    private(set) var outputs: [Output]
    /// The output of each request.
    let byRequest: [Int]
    /// The files a run of the manifest reads.
    let inputs: [RunInput]
    /// The unsharded plan, which says what a shard's journal and identity must be.
    let planner: OutputPlanner

    /// Plans the outputs as `run` does, unsharded and for each shard, for `night`.
    init(manifest: Manifest, options: MergeOptions, night: Night) throws(RunError) {
        guard options.shards >= 1 else { throw RunError.usage(MergeError.shardsBelowOne) }
        if options.output == "-" {
            throw RunError.usage(MergeError.standardOutputGiven)
        }
        // The shards' files and the merged one are named for one night.
        let nights = try NightBook(manifest: manifest, night: night, rebuild: options.rebuildLedger)
        // The shards took the night's number as they began: a merge for a night no shard ran
        // (a merge pod's "today" after midnight) is refused, never numbered anew.
        for template in nights.templates where options.output == nil && nights.record(of: template) == nil {
            throw RunError.usage(MergeError.nightNotBegun(date: nights.date, template: template, state: NightLedger.statePath(of: template)))
        }
        func planned(_ shard: Shard?) throws(RunError) -> OutputPlanner {
            try OutputPlanner(manifest: manifest, output: options.output, format: options.format, shard: shard, nights: nights)
        }
        let whole = try planned(nil)
        var files = Array(repeating: [String](), count: whole.targets.count)
        var shardTargets = Array(repeating: [OutputTarget](), count: whole.targets.count)
        for index in 0..<options.shards {
            let part = try planned(Shard(index: index, count: options.shards))
            guard part.targets.count == whole.targets.count, part.byRequest == whole.byRequest else {
                throw RunError.usage(MergeError.shardOutputsShared(shard: index, count: options.shards))
            }
            for (target, file) in part.targets.enumerated() {
                files[target].append(file.path)
                shardTargets[target].append(file)
            }
        }
        self.manifest = manifest
        planner = whole
        inputs = whole.inputs
        shards = options.shards
        byRequest = whole.byRequest
        outputs = whole.targets.enumerated().map { index, target in
            Output(index: index, target: target, shards: files[index], shardTargets: shardTargets[index],
                   unchanged: files[index].count == 1 && PrivateFile.canonical(files[index][0]) == PrivateFile.canonical(target.path),
                   keys: Array(repeating: nil, count: files[index].count))
        }
    }

    /// The keys each encrypted output's shards must have been sealed for: the merge's own
    /// recipients (their fingerprints, by output index).
    mutating func expectRecipients(_ fingerprints: [Int: [String]]) {
        for index in outputs.indices {
            guard let keys = fingerprints[outputs[index].index] else { continue }
            for shard in outputs[index].shardTargets.indices { outputs[index].shardTargets[shard].recipients = keys }
        }
    }

    // MARK: Checks before anything is written

    /// Refuses outputs that cannot be written (a link, a folder, an input, a shard file) and shard
    /// files that are missing, unfinished or whose journal says they are of another run.
    mutating func check() throws(RunError) {
        var inputs = self.inputs
        for output in outputs where !output.unchanged {
            for (index, file) in output.shards.enumerated() {
                inputs.append(RunInput(what: "the file of shard \(index)/\(shards) of \(output.target.path)", path: file))
                if let rejects = output.shardTargets[index].rejects {
                    inputs.append(RunInput(what: "the rejects file of shard \(index)/\(shards) of \(output.target.path)", path: rejects.path))
                }
            }
        }
        let identities = inputs.compactMap { input in PrivateFile.identity(input.path).map { (input.what, $0) } }
        let canonical = Dictionary(inputs.map { (PrivateFile.canonical($0.path), $0.what) }, uniquingKeysWith: { first, _ in first })
        for output in outputs where !output.unchanged {
          for path in output.target.paths {
            for file in [path, SideFile.partial.of(path)] {
                if let input = canonical[PrivateFile.canonical(file)] {
                    throw RunError.usage(MergeError.outputWouldWriteInput(output: path, file: file, input: input))
                }
            }
            switch PrivateFile.inspect(path) {
            case .none: break
            case .directory: throw RunError.runtime(MergeError.outputIsDirectory(output: path))
            case .link, .other: throw RunError.usage(MergeError.outputRefused(output: path, refusal: PrivateFile.refusal(path)!))
            case .regular(let device, let inode, _):
                if let input = identities.first(where: { $0.1.device == device && $0.1.inode == inode }) {
                    throw RunError.usage(MergeError.outputIsInput(output: path, input: input.0))
                }
            }
            if let refusal = PrivateFile.refusal(SideFile.partial.of(path)) { throw RunError.runtime(MergeError.outputRefused(output: path, refusal: refusal)) }
          }
        }
        var dataHash: String?
        for position in outputs.indices {
            let output = outputs[position]
            if output.target.encrypt != nil && output.target.encrypt?.stateKey == nil {
                throw RunError.usage(MergeError.stateKeyMissing(output: output.target.path))
            }
            outputs[position].counts = []
            for (index, file) in output.shards.enumerated() {
                let (key, counts) = try checkShard(file, index: index, of: output, dataHash: &dataHash)
                outputs[position].keys[index] = key
                outputs[position].counts.append(counts)
            }
        }
    }

    /// Shard `index`'s file `file` of `output`, which every message about it starts with.
    func shard(_ output: Output, _ file: String, _ index: Int) -> MergeError.Shard {
        MergeError.Shard(output: output.target.path, index: index, count: shards, file: file)
    }

    /// Checks one shard file; the data key it is sealed under (an encrypted output), and its rows
    /// by status.
    private func checkShard(_ file: String, index: Int, of output: Output, dataHash: inout String?) throws(RunError) -> (DataKey?, RowCounts?) {
        let shard = shard(output, file, index)
        // An interrupted first run leaves only the `.partial`: that is a shard not finished yet.
        if PrivateFile.inspect(SideFile.partial.of(file)) != .none {
            throw RunError.usage(MergeError.shardUnfinished(shard, .partialThere))
        }
        switch PrivateFile.inspect(file) {
        case .none: throw RunError.usage(MergeError.shardMissing(shard))
        case .regular: break
        case .directory: throw RunError.usage(MergeError.shardNotRegular(shard, .directory))
        case .link: throw RunError.usage(MergeError.shardNotRegular(shard, .symbolicLink))
        case .other: throw RunError.usage(MergeError.shardNotRegular(shard, .special))
        }
        // A finished shard says what it is beside it; a file without that is not a finished
        // shard of this version's (or was copied there alone).
        if dataHash == nil { dataHash = String(try manifest.dataHash(), radix: 16) }
        let (key, counts) = try checkIdentity(beside: file, index: index, of: output, dataHash: dataHash!)
        if PrivateFile.inspect(SideFile.journalNext.of(file)) != .none {
            throw RunError.usage(MergeError.shardUnfinished(shard, .retryCutShort))
        }
        try checkJournal(of: file, index: index, of: output, dataHash: dataHash!, key: key)
        return (key, counts)
    }

    /// Checks the identity a finished shard file leaves beside it (and its rejects file); the
    /// data key it is sealed under, for an encrypted output.
    private func checkIdentity(beside file: String, index: Int, of output: Output, dataHash: String) throws(RunError) -> (DataKey?, RowCounts?) {
        let shard = shard(output, file, index)
        var key: DataKey?
        var counts: RowCounts?
        switch ShardIdentity.read(beside: file) {
        case nil:
            throw RunError.usage(MergeError.shardIdentityMissing(shard, identity: SideFile.identity.of(file)))
        case .failure(let problem)?:
            throw RunError.usage(MergeError.shardUncheckable(shard, .identityUnreadable(reason: problem.reason)))
        case .success(let identity)?:
            var expected = planner.journalIdentity(of: output.shardTargets[index], dataHash: 0, shard: Shard(index: index, count: shards))
            expected.data = dataHash
            // The output's spelling depends on where the run was started.
            expected.output = identity.run.output
            if let difference = JournalCodec.difference(identity.run, from: expected) {
                throw RunError.usage(MergeError.shardNotOfManifest(shard, .recorded(.identity(SideFile.identity.of(file)), difference: difference)))
            }
            counts = identity.counts
            if let stateKey = output.target.encrypt?.stateKey {
                guard let wrapped = identity.wrappedKey else {
                    throw RunError.usage(MergeError.shardUnreadable(shard, .noDataKey(identity: SideFile.identity.of(file))))
                }
                do {
                    key = try KeyWrap.unwrap(wrapped, under: stateKey, context: Array("showbatch output \(identity.run.output)".utf8))
                } catch {
                    throw RunError.usage(MergeError.shardUnreadable(shard, .keyRefused(reason: error.message)))
                }
            }
            guard Journal.outputMatches(file, size: identity.size, hash: identity.hash, key: key) else {
                throw RunError.usage(MergeError.shardChanged(shard, .identity(SideFile.identity.of(file))))
            }
            // Its rejects file, which its run finished with it.
            if let rejects = output.shardTargets[index].rejects {
                let side = rejects.path
                guard case .regular = PrivateFile.inspect(side), PrivateFile.inspect(SideFile.partial.of(side)) == .none else {
                    let state: MergeError.Unfinished
                    if PrivateFile.inspect(side) == .none {
                        state = .rejectsMissing(side)
                    } else if let refusal = PrivateFile.refusal(side) {
                        state = .rejectsRefused(side, refusal: refusal)
                    } else {
                        state = .rejectsPartial(side)
                    }
                    throw RunError.usage(MergeError.shardUnfinished(shard, state))
                }
                guard let mark = identity.rejects, Journal.outputMatches(side, size: mark.size, hash: mark.hash, key: key) else {
                    throw RunError.usage(MergeError.rejectsChanged(shard, rejects: side, identity: SideFile.identity.of(file)))
                }
            }
        }
        return (key, counts)
    }

    /// Checks the journal a finished shard keeps when rows failed (for --retry-failed): the file
    /// is finished when the journal ends and says what the file holds.
    private func checkJournal(of file: String, index: Int, of output: Output, dataHash: String, key: DataKey?) throws(RunError) {
        let shard = shard(output, file, index)
        let journal = SideFile.journal.of(file)
        guard PrivateFile.inspect(journal) != .none else { return }
        guard let fd = try PrivateFile.openForReading(journal) else {
            let unchecked = PrivateFile.refusal(journal).map { MergeError.Unchecked.journalRefused(refusal: $0) } ?? .journalUnreadable(journal, reason: nil)
            throw RunError.usage(MergeError.shardUncheckable(shard, unchecked))
        }
        defer { close(fd) }
        guard flock(fd, LOCK_SH | LOCK_NB) == 0 else {
            throw RunError.runtime(MergeError.journalLocked(shard, journal: journal))
        }
        let contents: JournalCodec.Contents
        do {
            let bytes = try FileDescriptor(borrowing: fd, path: journal).readAll(limit: Int.max)
            guard let read = try JournalCodec.read(bytes) else {
                throw JournalProblem(reason: "it has no identity (its run was cut short as it started)")
            }
            contents = read
        } catch let error as FileReadError {
            throw RunError.runtime(MergeError.shardUncheckable(shard, .journalUnreadable(error.path, reason: error.reason)))
        } catch let error as JournalProblem {
            throw RunError.usage(MergeError.shardUncheckable(shard, .journalUntrusted(journal, reason: error.reason)))
        } catch {
            throw RunError.runtime(MergeError.shardUncheckable(shard, .journalFailed(reason: "\(error)")))
        }
        // The output's spelling depends on where the run was started, and its columns follow
        // from the manifest, whose identity is compared.
        let expected = Journal.Identity(manifest: String(manifest.rowIdentity, radix: 16), data: dataHash,
                                        shard: "\(index)/\(shards)", output: contents.identity.output,
                                        format: output.target.layout.format.rawValue, columns: contents.identity.columns)
        if let difference = JournalCodec.difference(contents.identity, from: expected) {
            throw RunError.usage(MergeError.shardNotOfManifest(shard, .recorded(.journal(journal), difference: difference)))
        }
        guard let ended = contents.ended else {
            throw RunError.usage(MergeError.shardUnfinished(shard, .journalUnended(journal)))
        }
        guard Journal.outputMatches(file, size: ended.size, hash: ended.hash, key: key) else {
            throw RunError.usage(MergeError.shardChanged(shard, .journal(journal)))
        }
    }

    // MARK: Merging

    /// Writes `output`'s rows to `fd` (or, for an unchanged output, only reads them) and returns
    /// how many there are; nil when cancelled.
    /// With `key`, the files written are sealed under it.
    func merge(_ output: Output, into fd: Int32, rejectsInto rejectsFD: Int32, sealedUnder key: DataKey?,
               isCancelled: () -> Bool) throws(RunError) -> Int? {
        let main = try MergedFile(plan: self, output: output, path: output.target.path, layout: output.target.layout,
                                  shardPaths: output.shards, fd: fd, key: key)
        var side: MergedFile?
        var rejected: [Set<Int>] = []
        if let rejects = output.target.rejects {
            side = try MergedFile(plan: self, output: output, path: rejects.path, layout: rejects.layout,
                                  shardPaths: output.shardTargets.map { $0.rejects?.path ?? "" }, fd: rejectsFD, key: key)
            // Which work items each shard sent to its rejects file only its run knew: its journal says.
            rejected = try output.shards.indices.map { index throws(RunError) in try rejectedRows(of: output, shard: index) }
        }
        let preparer = RequestPreparer(manifest: manifest, baseURL: "https://merge.invalid")
        for item in WorkItemSequence(manifest: manifest) {
            if item.ordinal & 1023 == 0 && isCancelled() { return nil }
            guard byRequest[item.requestIndex] == output.index else { continue }
            let shard = WorkSelection.shard(of: item.ordinal, among: shards)
            let name: String
            switch preparer.prepare(item) {
            case .success(let request): name = request.name
            case .failure(let failure): name = failure.name
            }
            let file = side != nil && rejected[shard].contains(item.ordinal) ? side! : main
            try file.take(from: shard, item: item, name: name)
        }
        try main.finish()
        try side?.finish()
        return main.rows
    }

    /// The work items shard `index` of `output` sent to its rejects file: its failed and rejected
    /// rows, as its journal (kept while its rejects file holds rows) records them.
    private func rejectedRows(of output: Output, shard index: Int) throws(RunError) -> Set<Int> {
        let journal = SideFile.journal.of(output.shards[index])
        guard PrivateFile.inspect(journal) != .none else { return [] }
        guard let file = try? FileDescriptor.openOwn(journal), let bytes = try? file.readAll(limit: Int.max),
              let contents = try? JournalCodec.read(bytes), contents.ended != nil else {
            throw RunError.usage(MergeError.shardUncheckable(shard(output, output.shards[index], index), .journalUnreadableOrUnended(journal)))
        }
        return Set(contents.failedRows.map(\.ordinal)).union(contents.rejectedRows)
    }

    /// How many rows `shard`'s files of `output` should hold in all.
    func expectedRows(_ output: Output, shard: Int) -> Int {
        var count = 0
        for item in WorkItemSequence(manifest: manifest)
        where byRequest[item.requestIndex] == output.index && WorkSelection.shard(of: item.ordinal, among: shards) == shard {
            count += 1
        }
        return count
    }
}
