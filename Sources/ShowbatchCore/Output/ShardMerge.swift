// Over 400 lines on purpose: a merge's checks and its writing share one plan of the outputs and
// their shard files; split, each half would have to rebuild it.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What `showbatch merge` is asked to do: put the outputs of a manifest run in `shards` shards
/// back together.
package struct MergeOptions: Sendable, Equatable {
    /// How many shards the manifest was run in (`--shards N`, the N of `--shard I/N`).
    package var shards: Int
    /// `--output PATH`, when the shards were run with it.
    package var output: String?
    /// `--format`, when the shards were run with it.
    package var format: OutputFormat?

    /// Options for a manifest run in `shards` shards.
    package init(shards: Int, output: String? = nil, format: OutputFormat? = nil) {
        self.shards = shards
        self.output = output
        self.format = format
    }
}

/// One unsharded output of a merge.
package struct MergedOutput: Sendable, Equatable {
    /// The file, as an unsharded run names it.
    package var path: String
    /// Rows in it.
    package var rows: Int
    /// True when its only shard is the file itself (one shard and no `{shard}` in the path): it
    /// was checked and left as it is.
    package var unchanged: Bool
}

/// What a merge did.
package struct MergeSummary: Sendable, Equatable {
    /// The outputs written (or found whole), in the order an unsharded run lists them.
    package var outputs: [MergedOutput] = []
    /// The merge was interrupted: nothing was written.
    package var interrupted = false
}

/// `showbatch merge`: writes the unsharded outputs of a manifest from the files of its N shards,
/// what one unsharded run writes: byte for byte, or for a `.gz` output the same bytes once
/// decompressed (a run ends a gzip member at each checkpoint, which comes with time too).
///
/// The manifest's work items are enumerated in order, as a run does (data files are read); each
/// item's row is the next row of shard (ordinal mod N)'s file for the item's output. Every shard
/// file is checked before anything is written: it must be there, finished (no `.partial` beside
/// it; a journal beside it only as a finished run with failed rows leaves it, matching the file),
/// and hold exactly the rows of this manifest's work items for that shard, each naming the request
/// it should. Outputs are written as a run writes them: to `<path>.partial` (0600, never through a
/// link), synced, and renamed into place only once every output is complete, replacing what was
/// there. A refusal or an interrupt leaves no file behind; a rename that fails part way leaves
/// the outputs renamed before it in place (each whole) and removes the rest.
package enum ShardMerge {
    /// Merges the shard outputs of `manifest`. `isCancelled` is asked now and then; when it says
    /// true, the merge stops and writes nothing.
    package static func merge(manifest: Manifest, options: MergeOptions,
                             isCancelled: @escaping @Sendable () -> Bool = { false }) throws(RunError) -> MergeSummary {
        var plan = try MergePlan(manifest: manifest, options: options)
        // Nothing another user could have planted is merged or written into.
        for output in plan.outputs {
            try PrivateFile.requireTrusted(sideFilesOf: output.target.paths + output.shardTargets.flatMap(\.paths))
        }
        try plan.check()
        // An encrypted output's merged file is sealed under a key of the merge's own (in memory
        // only) while it is written, then made into an OpenPGP message.
        var encryptors: [Int: OpenPGPEncryptor] = [:]
        for output in plan.outputs {
            guard let spec = output.target.encrypt else { continue }
            do {
                encryptors[output.index] = try OpenPGPEncryptor(recipients: spec.recipients, armor: spec.armor)
            } catch {
                // A recipient's key is the manifest's to fix (2); GnuPG that cannot run, the machine's (3).
                let message = "cannot merge \(output.target.path): \(error.message)"
                throw error.isThisMachine ? RunError.runtime(message) : RunError.usage(message)
            }
        }
        let mergeKey = DataKey.random()
        var lock: [Int32] = []
        defer { lock.forEach { close($0) } }
        for output in plan.outputs where !output.unchanged {
            if let fd = try lockJournal(of: output.target.path) { lock.append(fd) }
        }
        // An output and its rejects file are merged together: a file of each shard for each.
        try raiseOpenFileLimit(plan.shards * (plan.outputs.contains { $0.target.rejects != nil } ? 2 : 1) + 16)
        var summary = MergeSummary()
        var partials: [(fd: Int32, path: String)] = []
        func discard() {
            for partial in partials where partial.fd >= 0 { close(partial.fd) }
            for partial in partials { unlink(partial.path) }
            partials.removeAll()
        }
        do throws(RunError) {
            for output in plan.outputs {
                // An output and, with rejects, its rejects file: written together.
                var fds: [Int32] = []
                for path in output.target.paths {
                    guard !output.unchanged else {
                        fds.append(-1)
                        continue
                    }
                    let partial = SideFile.partial.of(path)
                    fds.append(try PrivateFile.create(partial, for: path))
                    partials.append((fds.last!, partial))
                }
                let encryptor = encryptors[output.index]
                guard let rows = try plan.merge(output, into: fds[0], rejectsInto: fds.count > 1 ? fds[1] : -1,
                                                sealedUnder: encryptor == nil ? nil : mergeKey, isCancelled: isCancelled) else {
                    discard()
                    return MergeSummary(outputs: [], interrupted: true)
                }
                for (fd, path) in zip(fds, output.target.paths) where fd >= 0 {
                    guard fdatasync(fd) == 0 else {
                        throw RunError.runtime("cannot write \(SideFile.partial.of(path)): \(describeErrno(errno))")
                    }
                    if let encryptor {
                        do throws(RunError) {
                            try OpenPGPPublisher.makeMessage(sealed: fd, partial: SideFile.partial.of(path), key: mergeKey, for: path,
                                                             encryptor: encryptor, isCancelled: isCancelled)
                        } catch {
                            if isCancelled() {
                                discard()
                                return MergeSummary(outputs: [], interrupted: true)
                            }
                            throw error
                        }
                        partials.append((-1, SideFile.encrypting.of(path)))
                    }
                    close(fd)
                    if let at = partials.firstIndex(where: { $0.fd == fd }) { partials[at].fd = -1 }
                }
                summary.outputs.append(MergedOutput(path: output.target.path, rows: rows, unchanged: output.unchanged))
            }
        } catch {
            discard()
            throw error
        }
        // Every output is complete: only now does any of them replace a file.
        let written = plan.outputs.filter { !$0.unchanged }.flatMap { output in output.target.paths.map { ($0, output.target.encrypt != nil) } }
        for (index, (path, encrypted)) in written.enumerated() {
            let partial = SideFile.partial.of(path)
            // An encrypted output's message is in place of its sealed file.
            let finished = encrypted ? SideFile.encrypting.of(path) : partial
            guard rename(finished, path) == 0 else {
                let reason = describeErrno(errno)
                for (later, _) in written[index...] {
                    unlink(SideFile.partial.of(later))
                    unlink(SideFile.encrypting.of(later))
                }
                throw RunError.runtime("cannot rename \(finished) to \(path): \(reason)")
            }
            if encrypted { unlink(partial) }
            // A journal of an earlier unsharded run describes the file this one replaced.
            for stale in [SideFile.journal.of(path), SideFile.journalNext.of(path)] {
                if case .regular = PrivateFile.inspect(stale) { unlink(stale) }
            }
        }
        return summary
    }

    /// Locks the journal an earlier unsharded run left beside `output`, if there is one, so that
    /// a run writing that output now is not raced (and one starting is kept off until the merge
    /// ends); a journal another run holds is refused.
    private static func lockJournal(of output: String) throws(RunError) -> Int32? {
        let path = SideFile.journal.of(output)
        guard PrivateFile.inspect(path) != .none else { return nil }
        guard let fd = try PrivateFile.openExisting(path, for: output) else { return nil }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw RunError.runtime("cannot merge \(output): another showbatch run is writing it (its journal \(path) is locked)")
        }
        return fd
    }

    /// A merge keeps one file of each shard open at a time.
    private static func raiseOpenFileLimit(_ needed: Int) throws(RunError) {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < rlim_t(needed) else { return }
        if limit.rlim_max >= rlim_t(needed) {
            limit.rlim_cur = rlim_t(needed)
            if setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 { return }
        }
        throw RunError.runtime("merging needs \(needed) open files (a file of each shard, and of its rejects file), and this process may open \(limit.rlim_cur); raise the limit (ulimit -n)")
    }
}

/// The outputs of a merge, each with the files of its shards, as the runner plans them.
private struct MergePlan {
    /// One unsharded output and the files of its shards.
    struct Output {
        /// Its place among the run's outputs (what `byRequest` holds).
        let index: Int
        /// The output as an unsharded run plans it.
        let target: OutputTarget
        /// The file of each shard, by shard index.
        let shards: [String]
        /// Each shard's plan of this output (its path, layout and rejects as its run has them).
        let shardTargets: [OutputTarget]
        /// The only shard is the output itself.
        let unchanged: Bool
        /// The data key each shard's files are sealed under (an encrypted output), from its identity.
        var keys: [DataKey?]
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

    /// Plans the outputs as `run` does, unsharded and for each shard.
    init(manifest: Manifest, options: MergeOptions) throws(RunError) {
        guard options.shards >= 1 else { throw RunError.usage("--shards must be at least 1") }
        if options.output == "-" {
            throw RunError.usage("merge writes files, not standard output: give --output the path the shards were run with")
        }
        func planned(_ shard: Shard?) throws(RunError) -> OutputPlanner {
            try OutputPlanner(manifest: manifest, output: options.output, format: options.format, shard: shard)
        }
        let whole = try planned(nil)
        var files = Array(repeating: [String](), count: whole.targets.count)
        var shardTargets = Array(repeating: [OutputTarget](), count: whole.targets.count)
        for index in 0..<options.shards {
            let part = try planned(Shard(index: index, count: options.shards))
            guard part.targets.count == whole.targets.count, part.byRequest == whole.byRequest else {
                throw RunError.usage("the outputs of shard \(index)/\(options.shards) are not those of the unsharded run (two outputs' shard files have one path); give each output a path of its own")
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
                    throw RunError.usage("cannot merge \(path): writing it would write \(file), which is \(input)")
                }
            }
            switch PrivateFile.inspect(path) {
            case .none: break
            case .directory: throw RunError.runtime("cannot merge \(path): it is a directory; give the path of a file")
            case .link, .other: throw RunError.usage("cannot merge \(path): \(PrivateFile.refusal(path)!)")
            case .regular(let device, let inode, _):
                if let input = identities.first(where: { $0.1.device == device && $0.1.inode == inode }) {
                    throw RunError.usage("cannot merge \(path): it is \(input.0); writing it would replace an input")
                }
            }
            if let refusal = PrivateFile.refusal(SideFile.partial.of(path)) { throw RunError.runtime("cannot merge \(path): \(refusal)") }
          }
        }
        var dataHash: String?
        for position in outputs.indices {
            let output = outputs[position]
            if output.target.encrypt != nil && output.target.encrypt?.stateKey == nil {
                throw RunError.usage("cannot merge \(output.target.path): its shards' files are sealed, and output.encrypt has no state_key to read them with (the one they were run with)")
            }
            for (index, file) in output.shards.enumerated() {
                outputs[position].keys[index] = try checkShard(file, index: index, of: output, dataHash: &dataHash)
            }
        }
    }

    /// The start of every message about one shard file.
    func cannot(_ output: Output, _ file: String, _ index: Int) -> String {
        "cannot merge \(output.target.path): its shard \(index)/\(shards), \(file),"
    }

    /// Checks one shard file; the data key it is sealed under, for an encrypted output.
    private func checkShard(_ file: String, index: Int, of output: Output, dataHash: inout String?) throws(RunError) -> DataKey? {
        let cannot = cannot(output, file, index)
        var key: DataKey?
        // An interrupted first run leaves only the `.partial`: that is a shard not finished yet.
        if PrivateFile.inspect(SideFile.partial.of(file)) != .none {
            throw RunError.usage("\(cannot) is not finished: \(file).partial is there (its run is still going, or was interrupted: finish it with --resume)")
        }
        switch PrivateFile.inspect(file) {
        case .none: throw RunError.usage("\(cannot) is missing (run the manifest with --shard \(index)/\(shards) first)")
        case .regular: break
        case .directory: throw RunError.usage("\(cannot) is a directory")
        case .link: throw RunError.usage("\(cannot) is a symbolic link; showbatch never reads a shard through one")
        case .other: throw RunError.usage("\(cannot) is not a regular file (a device, pipe or socket)")
        }
        // A finished shard says what it is beside it; a file without that is not a finished
        // shard of this version's (or was copied there alone).
        if dataHash == nil { dataHash = String(try manifest.dataHash(), radix: 16) }
        switch ShardIdentity.read(beside: file) {
        case nil:
            throw RunError.usage("\(cannot) is not known to be a finished shard: \(SideFile.identity.of(file)), which its run leaves when it finishes, is not beside it (run it with --shard \(index)/\(shards))")
        case .failure(let problem)?:
            throw RunError.usage("\(cannot) cannot be checked: \(problem.reason)")
        case .success(let identity)?:
            var expected = planner.journalIdentity(of: output.shardTargets[index], dataHash: 0, shard: Shard(index: index, count: shards))
            expected.data = dataHash!
            // The output's spelling depends on where the run was started.
            expected.output = identity.run.output
            if let difference = JournalCodec.difference(identity.run, from: expected) {
                throw RunError.usage("\(cannot) is not of this manifest: its identity \(SideFile.identity.of(file)) says \(difference)")
            }
            if let stateKey = output.target.encrypt?.stateKey {
                guard let wrapped = identity.wrappedKey else {
                    throw RunError.usage("\(cannot) cannot be read: its identity \(SideFile.identity.of(file)) holds no data key")
                }
                do {
                    key = try KeyWrap.unwrap(wrapped, under: stateKey, context: Array("showbatch output \(identity.run.output)".utf8))
                } catch {
                    throw RunError.usage("\(cannot) cannot be read: \(error.message)")
                }
            }
            guard Journal.outputMatches(file, size: identity.size, hash: identity.hash, key: key) else {
                throw RunError.usage("\(cannot) changed since its run wrote it (it does not match its identity \(SideFile.identity.of(file)))")
            }
            // Its rejects file, which its run finished with it.
            if let rejects = output.shardTargets[index].rejects {
                let side = rejects.path
                guard case .regular = PrivateFile.inspect(side), PrivateFile.inspect(SideFile.partial.of(side)) == .none else {
                    throw RunError.usage("\(cannot) is not finished: its rejects file \(side) is \(PrivateFile.inspect(side) == .none ? "missing" : PrivateFile.refusal(side) ?? "not finished (its .partial is there)")")
                }
                guard let mark = identity.rejects, Journal.outputMatches(side, size: mark.size, hash: mark.hash, key: key) else {
                    throw RunError.usage("\(cannot) is not whole: its rejects file \(side) does not match its identity \(SideFile.identity.of(file))")
                }
            }
        }
        if PrivateFile.inspect(SideFile.journalNext.of(file)) != .none {
            throw RunError.usage("\(cannot) is not finished: a --retry-failed run of it was cut short (\(file).journal.next is beside it); run it with --retry-failed again")
        }
        let journal = SideFile.journal.of(file)
        guard PrivateFile.inspect(journal) != .none else { return key }
        // A finished run keeps its journal when rows failed (for --retry-failed): the file is
        // finished when the journal ends and says what the file holds.
        guard let fd = try PrivateFile.openForReading(journal) else {
            throw RunError.usage("\(cannot) cannot be checked: \(PrivateFile.refusal(journal) ?? "its journal \(journal) cannot be read")")
        }
        defer { close(fd) }
        guard flock(fd, LOCK_SH | LOCK_NB) == 0 else {
            throw RunError.runtime("\(cannot) is being written by another showbatch run (its journal \(journal) is locked)")
        }
        let contents: JournalCodec.Contents
        do {
            let bytes = try FileDescriptor(borrowing: fd, path: journal).readAll(limit: Int.max)
            guard let read = try JournalCodec.read(bytes) else {
                throw JournalProblem(reason: "it has no identity (its run was cut short as it started)")
            }
            contents = read
        } catch let error as FileReadError {
            throw RunError.runtime("\(cannot) cannot be checked: its journal \(error.path) cannot be read: \(error.reason)")
        } catch let error as JournalProblem {
            throw RunError.usage("\(cannot) cannot be checked: its journal \(journal) cannot be trusted: \(error.reason)")
        } catch {
            throw RunError.runtime("\(cannot) cannot be checked: \(error)")
        }
        if dataHash == nil { dataHash = String(try manifest.dataHash(), radix: 16) }
        // The output's spelling depends on where the run was started, and its columns follow
        // from the manifest, whose identity is compared.
        let expected = Journal.Identity(manifest: String(manifest.rowIdentity, radix: 16), data: dataHash!,
                                        shard: "\(index)/\(shards)", output: contents.identity.output,
                                        format: output.target.layout.format.rawValue, columns: contents.identity.columns)
        if let difference = JournalCodec.difference(contents.identity, from: expected) {
            throw RunError.usage("\(cannot) is not of this manifest: its journal \(journal) says \(difference)")
        }
        guard let ended = contents.ended else {
            throw RunError.usage("\(cannot) is not finished: its journal \(journal) has no end (finish its run with --resume)")
        }
        guard Journal.outputMatches(file, size: ended.size, hash: ended.hash, key: key) else {
            throw RunError.usage("\(cannot) changed since its run wrote it (it does not match its journal \(journal))")
        }
        return key
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
            let shard = item.ordinal % shards
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
            throw RunError.usage("\(cannot(output, output.shards[index], index)) cannot be checked: its journal \(journal) cannot be read or is not finished")
        }
        return Set(contents.failedRows.map(\.ordinal)).union(contents.rejectedRows)
    }

    /// How many rows `shard`'s files of `output` should hold in all.
    func expectedRows(_ output: Output, shard: Int) -> Int {
        var count = 0
        for item in WorkItemSequence(manifest: manifest)
        where byRequest[item.requestIndex] == output.index && item.ordinal % shards == shard {
            count += 1
        }
        return count
    }
}

/// One file a merge writes (an output, or its rejects file) from the files of the shards: their
/// heads checked and the head written, rows taken one at a time from the shard a work item belongs
/// to and checked to be of its request, written as a run writes them (JSON separators, gzip
/// members every 4,096 rows), and at the end every shard file checked to be used up.
private final class MergedFile {
    let path: String
    private let plan: MergePlan
    private let output: MergePlan.Output
    private let layout: OutputLayout
    private let shardPaths: [String]
    private let sources: [ShardRows]
    /// -1: the output is only checked (its one shard is the output itself).
    private let fd: Int32
    private var out: [UInt8] = []
    private let gzip: GzipMembers?
    private var compressed: [UInt8] = []
    /// An encrypted output's: its `.partial` is sealed.
    private let sealer: SealedWriter?
    private var rowsInMember = 0
    private(set) var rows = 0
    private var row: [UInt8] = []
    private var expected: [UInt8] = []
    /// Where the request's name is in a row, if the columns have it.
    private let requestColumn: Int?
    private let requestKey: String?
    /// The output's rows are split with a rejects file: a shard file holds some of its work items.
    private var split: Bool { output.target.rejects != nil }

    init(plan: MergePlan, output: MergePlan.Output, path: String, layout: OutputLayout, shardPaths: [String], fd: Int32,
         key: DataKey?) throws(RunError) {
        if let key, fd >= 0 {
            do {
                sealer = try SealedWriter.create(fd: fd, key: key, name: SideFile.partial.of(path))
            } catch {
                throw RunError.runtime(error.message)
            }
        } else {
            sealer = nil
        }
        self.plan = plan
        self.output = output
        self.path = path
        self.layout = layout
        self.shardPaths = shardPaths
        self.fd = fd
        gzip = layout.gzip ? GzipMembers() : nil
        requestColumn = layout.sources.firstIndex(of: .fixed(.request))
        requestKey = requestColumn.map { layout.custom ? layout.names[$0] : ResultColumn.request.rawValue }
        var sources: [ShardRows] = []
        for (index, file) in shardPaths.enumerated() {
            let opened: ShardRows?
            do {
                opened = try ShardRows(path: file, format: layout.format, gzip: layout.gzip, key: output.keys[index])
            } catch {
                throw RunError.usage("\(plan.cannot(output, file, index)) cannot be read: \(error.reason)")
            }
            guard let source = opened else {
                throw RunError.runtime("\(plan.cannot(output, file, index)) cannot be opened for reading: \(PrivateFile.readingProblem(file))")
            }
            sources.append(source)
        }
        self.sources = sources
        out.reserveCapacity(1 << 20)
        // The head: the header this manifest writes, which every CSV shard must start with.
        switch layout.format {
        case .csv:
            let header = RowEncoding.csvHeader(layout)
            for (index, source) in sources.enumerated() where layout.csv.header {
                let head: [UInt8]
                do { head = try source.head() } catch { throw malformed(index, error) }
                if head != header { throw notOfThisManifest(index, "its header is not the one this manifest writes (other columns)") }
            }
            out.append(contentsOf: header)
        case .json, .jsonl:
            for (index, source) in sources.enumerated() {
                do { _ = try source.head() } catch { throw malformed(index, error) }
            }
            if layout.format == .json { out.append(UInt8(ascii: "[")) }
        }
    }

    private func malformed(_ index: Int, _ problem: ShardRows.Malformed) -> RunError {
        .usage("\(plan.cannot(output, shardPaths[index], index)) is not a showbatch \(layout.format.rawValue.uppercased()) output: \(problem.reason)")
    }

    private func notOfThisManifest(_ index: Int, _ reason: String) -> RunError {
        .usage("\(plan.cannot(output, shardPaths[index], index)) is not of this manifest: \(reason); was it written by another manifest, or did a data file change since?")
    }

    /// Takes the next row of `shard`'s file for `item`, whose request's name is `name`.
    func take(from shard: Int, item: WorkItem, name: String) throws(RunError) {
        let source = sources[shard]
        row.removeAll(keepingCapacity: true)
        let found: Bool
        do { found = try source.next(into: &row) } catch { throw malformed(shard, error) }
        guard found else {
            throw notOfThisManifest(shard, "it holds \(source.rows) row\(source.rows == 1 ? "" : "s"), and this manifest has \(split ? "more" : String(plan.expectedRows(output, shard: shard))) for it\(split ? " (\(plan.expectedRows(output, shard: shard)) with its rejects file's)" : "")")
        }
        // Which request a row is of, compared without printing either name.
        let matches: Bool
        if layout.format == .csv {
            expected.removeAll(keepingCapacity: true)
            RowEncoding.appendCSVCell(name, layout.csv, to: &expected)
            matches = requestColumn.map {
                ShardRows.csvCell(row[...], column: $0, delimiter: layout.csv.delimiter)?.elementsEqual(expected) == true
            } ?? true
        } else {
            guard let value = try? JSONParser.parse(row), case .object = value else {
                throw malformed(shard, ShardRows.Malformed(reason: "its row \(source.rows) is not a JSON object"))
            }
            if let requestKey {
                if case .string(let written)? = value[requestKey] { matches = written == name } else { matches = false }
            } else {
                matches = true
            }
        }
        guard matches else {
            throw notOfThisManifest(shard, "its row \(source.rows) is not of the request this manifest has at that place (request \(item.requestIndex + 1), work item \(item.ordinal) counting from 0)")
        }
        if layout.format == .json { out.append(contentsOf: (rows == 0 ? "\n" : ",\n").utf8) }
        out.append(contentsOf: row)
        rows += 1
        rowsInMember += 1
        if gzip != nil && rowsInMember == 4096 {
            try flush(endingMember: true)
            rowsInMember = 0
        } else if out.count >= 1 << 20 {
            try flush()
        }
    }

    /// Checks that every shard file is used up, and writes the end.
    func finish() throws(RunError) {
        for (index, source) in sources.enumerated() {
            row.removeAll(keepingCapacity: true)
            let more: Bool
            do { more = try source.next(into: &row) } catch { throw malformed(index, error) }
            if more {
                let total = source.rows + source.countRest()
                throw notOfThisManifest(index, "it holds \(total) rows, and this manifest has \(split ? "fewer" : String(plan.expectedRows(output, shard: index))) for it\(split ? " (\(plan.expectedRows(output, shard: index)) with its rejects file's)" : "")")
            }
            do { try source.finish() } catch { throw malformed(index, error) }
        }
        if layout.format == .json { out.append(contentsOf: (rows == 0 ? "]\n" : "\n]\n").utf8) }
        try flush(endingMember: true)
        do {
            try sealer?.finish()
        } catch {
            throw RunError.runtime(error.message)
        }
    }

    private func flush(endingMember: Bool = false) throws(RunError) {
        guard fd >= 0 else {
            out.removeAll(keepingCapacity: true)
            return
        }
        if let gzip {
            gzip.compress(out, endMember: endingMember, into: &compressed)
            out.removeAll(keepingCapacity: true)
            swap(&out, &compressed)
        }
        guard !out.isEmpty else { return }
        if let sealer {
            do {
                try sealer.append(out)
            } catch {
                throw RunError.runtime(error.message)
            }
            out.withUnsafeMutableBytes { wipe($0) }
        } else if let code = out.withUnsafeBytes({ PrivateFile.writeAll(fd, $0) }) {
            throw RunError.runtime("cannot write \(SideFile.partial.of(path)): \(describeErrno(code))")
        }
        out.removeAll(keepingCapacity: true)
    }
}
