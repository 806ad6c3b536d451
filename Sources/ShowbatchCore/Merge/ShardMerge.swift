import Foundation
import ShowbatchBasics
import ShowbatchManifest
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
    /// `--date`: the night the shards were run for (`${run.date}`, `${run.seq}`); nil: today in
    /// `TZ`, read once when the merge begins.
    package var night: NightChoice?
    /// `--keep-shards`: the shards' files stay once merged (and delivered).
    package var keepShards = false
    /// `--rebuild-ledger`: the night's ledgers are rebuilt from the records beside them first.
    package var rebuildLedger = false
    /// `--max-failed`, as the shards were run with it; else the manifest's `max_failed`.
    package var maxFailed: FailureAllowance?
    /// `--audit PATH`, else the manifest's `audit.path`; and the merge's id in it.
    package var audit: String?
    package var runID = ""

    /// Options for a manifest run in `shards` shards.
    package init(shards: Int, output: String? = nil, format: OutputFormat? = nil, night: NightChoice? = nil, keepShards: Bool = false,
                 maxFailed: FailureAllowance? = nil) {
        self.shards = shards
        self.output = output
        self.format = format
        self.night = night
        self.keepShards = keepShards
        self.maxFailed = maxFailed
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
    /// How each merged file's delivery ended (`output.deliver`); a signal that cut one short
    /// (`cutShort`) makes the merge interrupted too (130), its files written and recorded.
    package var deliveries: [DeliveryOutcome] = []
    /// The night's rows (every output's), and how many are not ok; nil when a shard's identity
    /// does not say.
    package var rows: Int?
    package var notOk = 0
    /// The night's allowance of rows not ok (`max_failed`).
    package var allowance: FailureAllowance?
    /// The night's rows are all ok, or within `max_failed`: it is delivered, and exit 0.
    package var complete = true
    /// The night's rows by status.
    package var ok = 0
    package var partial = 0
    package var failed = 0
    /// The night the merge was of, decided once as it began: what its hints, report and metrics name.
    package var night: NightDate?
    /// The merged files whose rows did not add up to the night's data rows: never recorded
    /// finished, never delivered.
    package var notAddingUp: [String] = []

    /// What a run's summary would say of the night, for the merge's `--report` and metrics.
    package func runSummary(elapsed: Duration) -> RunSummary {
        var summary = RunSummary()
        summary.rows = rows ?? 0
        (summary.ok, summary.partial, summary.failed) = (ok, partial, failed)
        summary.outputs = outputs.map(\.path)
        summary.deliveries = deliveries
        summary.allowance = allowance
        summary.interrupted = interrupted || deliveries.cutShort
        summary.night = night
        summary.elapsed = elapsed
        summary.nights = notAddingUp.map { path in
            NightOutcome(path: path, date: night ?? NightDate(year: 1970, month: 1, day: 1)!, seq: 0, rows: rows ?? 0, notOk: notOk,
                         failed: failed, retryable: false, state: .doesNotAddUp(counted: 0))
        }
        return summary
    }
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
    package static func merge(manifest: Manifest, options: MergeOptions, clock: NightClock = .system, note: (String) -> Void = { _ in },
                             isCancelled: @escaping @Sendable () -> Bool = { false }) throws(RunError) -> MergeSummary {
        // What a merge says (its errors, its notes, its audit entries) is cleared of the
        // manifest's secrets, as a run's is.
        let redactor = Redactor(manifest: manifest)
        do {
            return try mergeRedacted(manifest: manifest, options: options, clock: clock, redactor: redactor,
                                     note: { note(redactor.redact($0)) }, isCancelled: isCancelled)
        } catch {
            throw redactor.redact(error)
        }
    }

    private static func mergeRedacted(manifest: Manifest, options: MergeOptions, clock: NightClock, redactor: Redactor, note: (String) -> Void,
                                      isCancelled: @escaping @Sendable () -> Bool) throws(RunError) -> MergeSummary {
        // The night is decided once, as the merge begins: one that runs past midnight merges,
        // reports and hints the night it began with.
        let decided = try Night.decide(options.night, clock: clock, testRun: options.output != nil, beginning: false)
        guard let path = options.audit ?? manifest.auditPath else {
            return try mergeUnaudited(manifest: manifest, options: options, night: decided, note: note, isCancelled: isCancelled)
        }
        let trail = AuditTrail(path: path, runID: options.runID, manifest: manifest)
        let night = JSONMember("night", .string(decided.date.description))
        do {
            try trail.append("merge_started", outcome: "started", extra: [JSONMember("shards", .number(String(options.shards))), night],
                             isCancelled: isCancelled)
        } catch {
            // An interrupt ends the wait for another run's lock on the trail: nothing was merged.
            if isCancelled() { return MergeSummary(outputs: [], interrupted: true) }
            throw error
        }
        func entry(_ write: () throws(RunError) -> Void) {
            do { try write() } catch { note(error.description) }
        }
        do {
            let summary = try mergeUnaudited(manifest: manifest, options: options, night: decided, note: note, isCancelled: isCancelled)
            if summary.interrupted {
                entry { () throws(RunError) in try trail.append("stopped", outcome: "interrupted", extra: [night]) }
                return summary
            }
            let written = summary.outputs.filter { !$0.unchanged }
            if !written.isEmpty {
                entry { () throws(RunError) in
                    try trail.append("merged", outcome: summary.complete ? "ok" : "rows_failed",
                                     outputs: written.map { AuditTrail.Output(path: $0.path, rows: $0.rows) }, extra: [night])
                }
            }
            for delivery in summary.deliveries { entry { () throws(RunError) in try trail.append(delivery) } }
            return summary
        } catch {
            entry { () throws(RunError) in
                try trail.append("stopped", outcome: "error", extra: [night, JSONMember("error", .string(redactor.redact(error).description))])
            }
            throw error
        }
    }

    private static func mergeUnaudited(manifest: Manifest, options: MergeOptions, night: Night, note: (String) -> Void,
                                       isCancelled: @escaping @Sendable () -> Bool) throws(RunError) -> MergeSummary {
        var plan = try MergePlan(manifest: manifest, options: options, night: night)
        if var delivered = try deliveredAlready(plan) {
            if !options.keepShards { removeShards(plan) }
            delivered.night = night.date
            return delivered
        }
        // Nothing another user could have planted is merged or written into.
        for output in plan.outputs {
            try PrivateFile.requireTrusted(sideFilesOf: output.target.paths + output.shardTargets.flatMap(\.paths))
        }
        // The shards must have been sealed for the keys the merge encrypts to.
        let encryptors = try makeEncryptors(plan, note: note)
        plan.expectRecipients(encryptors.mapValues(\.fingerprints))
        try plan.check()
        let mergeKey = DataKey.random()
        // Held until the merge returns, delivery included: an unsharded run is kept off these outputs.
        var lock: [Int32] = []
        defer { lock.forEach { close($0) } }
        for output in plan.outputs where !output.unchanged {
            if let fd = try lockJournal(of: output.target.path) { lock.append(fd) }
        }
        // An output and its rejects file are merged together: a file of each shard for each.
        try raiseOpenFileLimit(plan.shards * (plan.outputs.contains { $0.target.rejects != nil } ? 2 : 1) + 16)
        guard let written = try writeOutputs(plan, encryptors: encryptors, mergeKey: mergeKey, isCancelled: isCancelled) else {
            return MergeSummary(outputs: [], interrupted: true)
        }
        var summary = MergeSummary()
        summary.night = night.date
        summary.outputs = written.outputs
        // Every output is complete: only now does any of them replace a file.
        try putInPlace(plan)
        let allowance = options.maxFailed ?? manifest.maxFailed
        judge(&summary, plan.nightCounts, allowance: allowance)
        try record(plan, counted: written.counted, allowance: allowance, summary: &summary, note: note)
        guard summary.complete else {
            // As a run's: the night waits for its failed rows, sent again shard by shard from
            // the shards' journals (kept), then merged again.
            for output in plan.outputs where output.target.deliver != nil && output.target.night?.records == true && summary.notAddingUp.isEmpty {
                note("\(output.target.path) is not delivered: the night's rows not ok (\(summary.notOk) of \(summary.rows ?? 0)) are beyond max_failed; send them again shard by shard (showbatch run \(manifest.file) --shard I/\(plan.shards) --retry-failed --date \(night.date)), then merge again")
            }
            return summary
        }
        summary.deliveries = deliver(plan, note: note, isCancelled: isCancelled)
        // A night not delivered yet is merged again from its shards by the next try.
        if !options.keepShards && !summary.deliveries.contains(where: \.result.isFailure) {
            removeShards(plan)
        }
        return summary
    }

    /// A merged file beside the one it replaces: its descriptor while open (-1 once closed), and its path.
    private typealias Partial = (fd: Int32, path: String)

    /// Writes every output's merged files beside it, replacing nothing; nil when interrupted, and none left behind then or on an error.
    private static func writeOutputs(_ plan: MergePlan, encryptors: [Int: OpenPGPEncryptor], mergeKey: DataKey,
                                     isCancelled: @escaping @Sendable () -> Bool) throws(RunError) -> (outputs: [MergedOutput], counted: [Int: NightFileRows])? {
        var outputs: [MergedOutput] = []
        // The rows of each merged file, read back from it before it is put in place, by output.
        var counted: [Int: NightFileRows] = [:]
        var partials: [Partial] = []
        func discard() {
            for partial in partials where partial.fd >= 0 { close(partial.fd) }
            for partial in partials { unlink(partial.path) }
            partials.removeAll()
        }
        do throws(RunError) {
            for output in plan.outputs {
                guard let merged = try writeOutput(output, of: plan, encryptor: encryptors[output.index], mergeKey: mergeKey,
                                                   partials: &partials, isCancelled: isCancelled) else {
                    discard()
                    return nil
                }
                if let rows = merged.counted { counted[output.index] = rows }
                outputs.append(MergedOutput(path: output.target.path, rows: merged.rows, unchanged: output.unchanged))
            }
        } catch {
            discard()
            throw error
        }
        return (outputs, counted)
    }

    /// Writes one output's merged files beside it, synced and closed, each in `partials` for the caller to discard; nil when interrupted.
    private static func writeOutput(_ output: MergePlan.Output, of plan: MergePlan, encryptor: OpenPGPEncryptor?, mergeKey: DataKey,
                                    partials: inout [Partial], isCancelled: @escaping @Sendable () -> Bool) throws(RunError) -> (rows: Int, counted: NightFileRows?)? {
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
        guard let rows = try plan.merge(output, into: fds[0], rejectsInto: fds.count > 1 ? fds[1] : -1,
                                        sealedUnder: encryptor == nil ? nil : mergeKey, isCancelled: isCancelled) else {
            return nil
        }
        var counted: NightFileRows?
        for (fd, path) in zip(fds, output.target.paths) where fd >= 0 {
            guard fdatasync(fd) == 0 else {
                throw RunError.runtime(FileError(.write, SideFile.partial.of(path), errno: errno))
            }
            // What the night's rows add up to is counted from the merged file itself.
            let isOutput = path == output.target.path
            let rowsHere = try NightCount.rows(of: SideFile.partial.of(path), layout: isOutput ? output.target.layout : output.target.rejects!.layout,
                                               key: encryptor == nil ? nil : mergeKey)
            var count = counted ?? NightFileRows(output: 0, rejects: nil, counts: output.nightCounts ?? RowCounts())
            if isOutput { count.output = rowsHere } else { count.rejects = rowsHere }
            counted = count
            guard try wrap(path, fd: fd, of: output, encryptor: encryptor, mergeKey: mergeKey, partials: &partials, isCancelled: isCancelled) else {
                return nil
            }
            close(fd)
            if let at = partials.firstIndex(where: { $0.fd == fd }) { partials[at].fd = -1 }
        }
        return (rows, counted)
    }

    /// Makes what replaces a merged file's rows (them in the night's envelope, or an OpenPGP message), in `partials`; false when interrupted.
    private static func wrap(_ path: String, fd: Int32, of output: MergePlan.Output, encryptor: OpenPGPEncryptor?, mergeKey: DataKey,
                             partials: inout [Partial], isCancelled: @escaping @Sendable () -> Bool) throws(RunError) -> Bool {
        // The night's header and trailer go around the merged rows, totalled from them.
        let envelope = path == output.target.path ? output.target.envelope : nil
        if let envelope, encryptor == nil {
            try envelope.write(SideFile.partial.of(path), to: SideFile.enveloping.of(path), for: path, layout: output.target.layout)
            partials.append((-1, SideFile.enveloping.of(path)))
        }
        if let encryptor {
            do throws(RunError) {
                let lines = try envelope.map { envelope throws(RunError) in
                    envelope.lines(try envelope.totals(of: SideFile.partial.of(path), layout: output.target.layout, key: mergeKey),
                                   layout: output.target.layout)
                }
                try OpenPGPPublisher.makeMessage(sealed: fd, partial: SideFile.partial.of(path), key: mergeKey, for: path,
                                                 encryptor: encryptor, isCancelled: isCancelled, around: lines)
            } catch {
                if isCancelled() { return false }
                throw error
            }
            partials.append((-1, SideFile.encrypting.of(path)))
        }
        return true
    }

    /// The night's rows not ok against its allowance, as a run's are: all ok, or within
    /// `max_failed` (a percentage is of the night's rows), is complete.
    private static func judge(_ summary: inout MergeSummary, _ counts: RowCounts?, allowance: FailureAllowance?) {
        summary.allowance = allowance
        guard let counts else { return }
        summary.rows = counts.rows
        (summary.ok, summary.partial, summary.failed) = (counts.ok, counts.partial, counts.failed)
        summary.notOk = counts.rows - counts.ok
        summary.complete = summary.notOk == 0 || allowance.map { summary.notOk <= $0.rows(of: counts.rows) } == true
    }

    /// Records each merged night in its output's ledger once its files' rows add up to the
    /// night's data rows: complete when the night's rows not ok are within `allowance`. A file
    /// that does not add up is never recorded finished: the merge exits 1 and says so.
    private static func record(_ plan: MergePlan, counted: [Int: NightFileRows], allowance: FailureAllowance?,
                               summary: inout MergeSummary, note: (String) -> Void) throws(RunError) {
        let manifest = plan.manifest
        let data = manifest.requests.contains { $0.each != nil } ? (try manifest.nightRowsHash() ?? "") : ""
        for output in plan.outputs where !output.unchanged {
            guard let night = output.target.night, night.records, let files = counted[output.index] else { continue }
            let expected = NightCount.expected(manifest, output: output.index, byRequest: plan.byRequest, selection: WorkSelection(shard: nil))
            let counts = output.nightCounts ?? RowCounts()
            let rows = NightRecord.NightRows(data: expected, output: files.output, rejects: files.rejects ?? 0,
                                             ok: counts.ok, partial: counts.partial, failed: counts.failed)
            let finish = NightDecision.finish(rows, allowed: allowance?.rows(of: expected) ?? 0)
            if case .doesNotAddUp(let count, _) = finish {
                summary.complete = false
                summary.notAddingUp.append(output.target.path)
                note("the night of \(night.date) does not add up in \(output.target.path): its files hold \(count) row\(count == 1 ? "" : "s") (the output's and its rejects file's), its data files \(expected); it is not recorded as finished, and not delivered")
                continue
            }
            let digest = try FileDigest.of(output.target.path)
            try NightLedger.finish(NightRecord(date: night.date, seq: night.seq, data: data, manifest: String(manifest.rowIdentity, radix: 16),
                                               file: (output.target.path as NSString).lastPathComponent, size: digest.size,
                                               sha256: digest.sha256, finished: Timestamp.rfc3339(), rows: rows,
                                               complete: summary.complete && finish == .whole, deliver: output.target.deliver != nil),
                                   template: night.template)
        }
    }

    /// Removes every file of the shards merged into a file of their own (their rows, sealed or
    /// plain, their rejects files, journals, identities and kept rows): the night is the merged
    /// file now, and card data is not left lying on the volume. Only regular files are removed.
    private static func removeShards(_ plan: MergePlan) {
        for output in plan.outputs where !output.unchanged {
            for target in output.shardTargets {
                for path in target.paths where path != output.target.path {
                    for file in SideFile.all(of: path) {
                        if case .regular = PrivateFile.inspect(file) { unlink(file) }
                    }
                }
            }
        }
    }

    /// The merge pod hands the night over: each merged file with `output.deliver` is delivered.
    private static func deliver(_ plan: MergePlan, note: (String) -> Void, isCancelled: @escaping () -> Bool) -> [DeliveryOutcome] {
        let redactor = Redactor(manifest: plan.manifest)
        return plan.outputs.flatMap { output -> [DeliveryOutcome] in
            guard let spec = output.target.deliver, let night = output.target.night, night.records else { return [] }
            return Deliverer.deliverInOrder(output.target.path, spec: spec, night: night, manifest: plan.manifest.file, retry: plan.manifest.retry,
                                            timeout: plan.manifest.timeout, note: note, isCancelled: isCancelled).map { redactor.redacted($0) }
        }
    }

    /// A night whose merged files were delivered is not merged again (an encrypted file would
    /// differ in every byte, and the processor has it): a summary saying so, when every output
    /// was; a refusal when some were.
    private static func deliveredAlready(_ plan: MergePlan) throws(RunError) -> MergeSummary? {
        var summary = MergeSummary()
        var delivered: [String] = []
        for output in plan.outputs {
            let path = output.target.path
            guard let spec = output.target.deliver else { continue }
            let name = (path as NSString).lastPathComponent
            // The night's ledger says it was delivered, whether or not its file is still here.
            if let night = output.target.night, let recorded = try NightLedger.read(template: night.template).night(on: night.date),
               let delivery = recorded.delivery {
                delivered.append(path)
                summary.outputs.append(MergedOutput(path: path, rows: 0, unchanged: true))
                summary.deliveries.append(DeliveryOutcome(path: path, destination: spec.destination.url(of: delivery.file.isEmpty ? name : delivery.file),
                                                          size: delivery.size, result: .already(delivery.at)))
            }
        }
        guard !delivered.isEmpty else { return nil }
        guard delivered.count == plan.outputs.count else {
            throw RunError.usage(MergeError.partlyDelivered(delivered))
        }
        return summary
    }

    /// The OpenPGP encryptor of each encrypted output: its merged file is sealed under a key of
    /// the merge's own (in memory only) while it is written, then made into a message.
    private static func makeEncryptors(_ plan: MergePlan, note: (String) -> Void) throws(RunError) -> [Int: OpenPGPEncryptor] {
        var encryptors: [Int: OpenPGPEncryptor] = [:]
        for output in plan.outputs {
            guard let spec = output.target.encrypt else { continue }
            do {
                let encryptor = try OpenPGPEncryptor(recipients: spec.recipients, armor: spec.armor, sign: spec.sign)
                encryptors[output.index] = encryptor
                for warning in encryptor.expiryWarnings(within: spec.warnExpiryDays, for: output.target.path) { note(warning) }
            } catch {
                // A recipient's key is the manifest's to fix (2); GnuPG that cannot run, the machine's (3).
                let problem = MergeError.encryptorUnavailable(output: output.target.path, reason: error.message)
                throw error.isThisMachine ? RunError.runtime(problem) : RunError.usage(problem)
            }
        }
        return encryptors
    }

    /// Renames every merged file into place, replacing what was there; a rename that fails
    /// leaves those before it in place and removes the rest.
    private static func putInPlace(_ plan: MergePlan) throws(RunError) {
        let written = plan.outputs.filter { !$0.unchanged }.flatMap { output in
            output.target.paths.map { ($0, output.target.encrypt != nil, $0 == output.target.path && output.target.envelope != nil) }
        }
        for (index, (path, encrypted, enveloped)) in written.enumerated() {
            let partial = SideFile.partial.of(path)
            // An encrypted output's message is in place of its sealed file, and so is a file
            // with a header or trailer in place of its rows.
            let finished = encrypted ? SideFile.encrypting.of(path) : enveloped ? SideFile.enveloping.of(path) : partial
            guard rename(finished, path) == 0 else {
                let code = errno
                for (later, _, _) in written[index...] {
                    unlink(SideFile.partial.of(later))
                    unlink(SideFile.encrypting.of(later))
                    unlink(SideFile.enveloping.of(later))
                }
                throw RunError.runtime(FileError(.rename(to: path), finished, errno: code))
            }
            if encrypted || enveloped { unlink(partial) }
            // A journal of an earlier unsharded run describes the file this one replaced.
            for stale in [SideFile.journal.of(path), SideFile.journalNext.of(path)] {
                if case .regular = PrivateFile.inspect(stale) { unlink(stale) }
            }
        }
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
            throw RunError.runtime(MergeError.outputBeingWritten(output: output, journal: path))
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
        throw RunError.runtime(MergeError.openFileLimit(needed: needed, allowed: UInt64(limit.rlim_cur)))
    }
}
