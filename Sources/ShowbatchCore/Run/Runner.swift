import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// Sends a manifest's requests and writes one row per work item, in order.
package struct Runner: Sendable {
    let manifest: Manifest
    let options: RunOptions
    /// What the flags and the manifest decide together, resolved once.
    let settings: RunSettings
    /// The work items this process takes: its shard's, up to `--limit`.
    var selection: WorkSelection { WorkSelection(shard: options.shard, limit: options.limit) }
    let transport: any Transport
    let events: @Sendable (RunEvent) -> Void
    let environment: [String: String]
    /// Clears every runtime message of the run's secrets.
    let redactor: Redactor
    /// Where the night's date is read from, once (a test sets it).
    var clock = NightClock.system
    /// Called with the number of workers waiting for room in the window each time one parks
    /// (tests wait on it instead of sleeping).
    var onPark: (@Sendable (Int) -> Void)?

    /// A runner for `manifest`; the curl transport is made when none is given.
    package init(manifest: Manifest, options: RunOptions, transport: (any Transport)? = nil,
                environment: [String: String] = ProcessInfo.processInfo.environment,
                events: @escaping @Sendable (RunEvent) -> Void = { _ in }) {
        self.manifest = manifest
        self.options = options
        let settings = RunSettings(manifest: manifest, options: options)
        self.settings = settings
        self.transport = transport ?? CurlTransport(maxConnections: settings.connections, tls: manifest.tls.withEnvironment(environment))
        self.environment = environment
        let redactor = Redactor(manifest: manifest)
        self.redactor = redactor
        // Every event leaves the run through the redactor.
        self.events = { events(redactor.redact($0)) }
    }

    /// Runs to the end (or to an interrupt), writing every output. What it says (events, a stop
    /// reason, an error) holds none of the run's secrets.
    package func run() async throws(RunError) -> RunSummary {
        // The night is decided once, before anything: every later use of its date is this one.
        let night: Night
        do {
            night = try Night.decide(options.night, clock: clock, allowFuture: options.allowFuture,
                                     testRun: options.limit != nil || options.output != nil)
        } catch {
            throw redactor.redact(error)
        }
        let trail = (options.audit ?? manifest.auditPath).map { AuditTrail(path: $0, runID: options.runID ?? "", manifest: manifest) }
        // The trail's first entry is written before anything is sent: a run that cannot be
        // audited does not run.
        do {
            try trail?.append("run_started", outcome: "started", extra: [
                JSONMember("mode", .string(options.mode == .retryFailed ? "retry_failed" : options.mode == .resume ? "resume" : "fresh")),
                JSONMember("shard", options.shard.map { .string("\($0.index)/\($0.count)") } ?? .null),
                JSONMember("night", .string(night.date.description)),
            ], isCancelled: { Task.isCancelled })
        } catch {
            // An interrupt ends the wait for another run's lock on the trail: nothing was sent.
            if Task.isCancelled { return RunSummary(interruptedBeforeStart: ()) }
            throw redactor.redact(error)
        }
        do {
            var summary = try await runUnredacted(night: night)
            summary.stopReason = summary.stopReason.map(redactor.redact)
            summary.tally.firstMessage = summary.tally.firstMessage.mapValues(redactor.redact)
            summary.allowance = settings.failureAllowance
            summary.nightRows = nightRows
            if let trail { audit(summary, in: trail) }
            return summary
        } catch {
            let redacted = redactor.redact(error)
            if let trail { audit { () throws(RunError) in try trail.append("stopped", outcome: "error", extra: [JSONMember("error", .string(redacted.description))]) } }
            throw redacted
        }
    }

    /// The run's end in its audit trail: each file it put in place, each delivery, or why it stopped.
    private func audit(_ summary: RunSummary, in trail: AuditTrail) {
        if summary.interrupted || summary.stopReason != nil {
            audit { () throws(RunError) in
                try trail.append("stopped", outcome: summary.interrupted ? "interrupted" : "stopped",
                                 extra: summary.stopReason.map { [JSONMember("reason", .string($0))] } ?? [])
            }
            return
        }
        let written = summary.outputs.filter { summary.writtenRows[$0] != nil }
        if !written.isEmpty {
            let outcome = summary.exitCode == .rowsFailed ? "rows_failed" : "ok"
            let outputs = written.map { AuditTrail.Output(path: $0, rows: summary.writtenRows[$0], recipients: summary.recipients[$0]) }
            audit { () throws(RunError) in try trail.append("output_finished", outcome: outcome, outputs: outputs) }
        }
        for delivery in summary.deliveries { audit { () throws(RunError) in try trail.append(delivery) } }
    }

    /// An audit entry that could not be written, as a warning: the run has done its work.
    private func audit(_ write: () throws(RunError) -> Void) {
        do { try write() } catch { events(.warning(error.description)) }
    }

    private func runUnredacted(night: Night) async throws(RunError) -> RunSummary {
        let start = ContinuousClock.now
        guard var runNight = try RunNight.decide(manifest: manifest, night: night, options: options) else {
            return RunSummary(interruptedBeforeStart: ())
        }
        var plan = try planOutputs(runNight)
        // Every key is checked (a signing key signs a few bytes) before the night takes a number:
        // a key that cannot sign is the manifest's to fix, and leaves no night begun behind it.
        let encryptors = try makeEncryptors(plan.targets)
        var summary = RunSummary()
        let baseURL: String
        switch try await resolveBaseURL() {
        case .url(let url): baseURL = url
        case .stop(let reason):
            summary.stopReason = reason
            return summary
        }
        // An interrupt during the hostname check: nothing was opened, nothing is left behind.
        if Task.isCancelled { return RunSummary(interruptedBeforeStart: ()) }
        // The token is fetched before anything is opened or sent: refused credentials stop here.
        let credentials = makeCredentials()
        if let credentials, case .failure(let stop) = await credentials.current() {
            if Task.isCancelled || stop.byInterrupt { summary.interrupted = true } else { summary.stopReason = stop.reason }
            return summary
        }
        let dataHash = plan.targets.contains { $0.path != "-" } ? try manifest.dataHash() : 0
        // Hashing big data files takes a while: an interrupt then leaves nothing behind.
        if Task.isCancelled { return RunSummary(interruptedBeforeStart: ()) }
        // The night takes its numbers last, once nothing but sending is left to do.
        if runNight.begins {
            do throws(RunError) {
                if try runNight.begin(manifest: manifest, isCancelled: { Task.isCancelled }) { plan = try planOutputs(runNight) }
            } catch {
                // An interrupt ends the wait for the ledger's lock, as for the trail's: nothing
                // sent (a number an output before took stays taken, as a night's number does).
                if Task.isCancelled { return RunSummary(interruptedBeforeStart: ()) }
                throw error
            }
        }
        for (index, encryptor) in encryptors {
            plan.targets[index].recipients = encryptor.fingerprints
            // Said in the log: a recipient's key file swapped for another shows here.
            events(.note("\(plan.targets[index].path) is encrypted to \(encryptor.fingerprints.joined(separator: ", "))\(plan.targets[index].sealedShard ? " (its shard file stays sealed until merge)" : "")"))
            for warning in encryptor.expiryWarnings(within: plan.targets[index].encrypt?.warnExpiryDays ?? 30, for: plan.targets[index].path) {
                events(.warning(warning))
            }
        }
        let targets = plan.targets
        summary.outputs = targets.map(\.path)
        warnWhereNothingResumes(targets)
        guard let outputs = try await openOutputs(plan: plan, dataHash: dataHash, encryptors: encryptors) else {
            // Interrupted while waiting for a journal's lock: nothing was opened or sent.
            return RunSummary(interruptedBeforeStart: ())
        }
        for target in targets {
            if let finished = target.finishedNight { events(.warning("\(target.path): \(finished): nothing is sent for it")) }
        }
        for finished in outputs.finishedBefore {
            let next = finished.failed > 0 ? "; \(finished.failed) failed row\(finished.failed == 1 ? "" : "s"): --retry-failed sends \(finished.failed == 1 ? "it" : "them")" : ""
            events(.warning("\(finished.path) was already finished at \(Timestamp.rfc3339(finished.finished)): nothing is sent for it\(next)"))
        }
        summary = try await sendAndCommit(outputs: outputs, plan: plan, baseURL: baseURL, start: start, credentials: credentials,
                                          encryptors: encryptors)
        summary.outputs = plan.writtenFiles
        // Left as it was: a finished night's, and one `--retry-failed` found no failed row in.
        summary.leftAsTheyWere = targets.indices.filter { index in
            targets[index].finishedNight != nil || (options.mode == .retryFailed && outputs.files[index] == nil && !targets[index].isStandardOutput)
        }.flatMap { targets[$0].paths }
        summary.night = runNight.book.isEmpty ? nil : night.date
        summary.keyExpiries = encryptors.values.reduce(into: [:]) { all, encryptor in all.merge(encryptor.expiries) { first, _ in first } }
        summary.tally = outputs.carriedTally.adding(summary.tally)
        if !summary.interrupted && summary.stopReason == nil {
            summary.rejects = zip(targets, outputs.rejectsRows(targets)).compactMap { target, rows in
                guard let path = target.rejects?.path, let rows, !summary.leftAsTheyWere.contains(path) else { return nil }
                return RejectsFile(path: path, rows: rows)
            }
            try await handOver(&summary, night: runNight, plan: plan, outputs: outputs)
        }
        return summary
    }

    /// The run's outputs, named for its night as decided (and, once begun, numbered), checked
    /// before anything is opened, each marked with its night's verdict.
    private func planOutputs(_ night: RunNight) throws(RunError) -> OutputPlanner {
        var plan = try OutputPlanner(manifest: manifest, output: options.output, format: options.format, shard: options.shard,
                                     limit: options.limit, nights: night.book)
        if (options.resume || options.retryFailed) && plan.writesStandardOutput {
            throw RunError.usage(OutputError.standardOutputNotResumable(flag: options.resume ? .resume : .retryFailed))
        }
        try plan.check(sideFiles: options.sideFiles)
        for warning in night.apply(to: &plan.targets) { events(.warning(warning)) }
        return plan
    }

    /// A night whose files are in place: judged on the whole night, from its files' rows,
    /// recorded in its outputs' ledgers when they add up, and, when every night is whole,
    /// delivered; a night not whole waits for a person (the summary says what to run).
    private func handOver(_ summary: inout RunSummary, night: RunNight, plan: OutputPlanner, outputs: RunOutputs) async throws(RunError) {
        summary.allowance = settings.failureAllowance
        summary.nightRows = nightRows
        let targets = plan.targets
        summary.nights = try night.handOver(targets, counted: outputs.counted, manifest: manifest, byRequest: plan.byRequest,
                                            selection: selection, allowance: settings.failureAllowance,
                                            dataChanged: !summary.dataChanged.isEmpty, retryable: { index in PrivateFile.inspect(SideFile.journal.of(targets[index].path)) != .none })
        for outcome in summary.nights {
            switch outcome.state {
            case .whole, .deliveredOtherData: break
            case .beyondMaxFailed:
                if targets.contains(where: { $0.path == outcome.path && $0.deliver != nil }) {
                    events(.warning("\(outcome.path) is not delivered: the night has \(outcome.notOk) row\(outcome.notOk == 1 ? "" : "s") not ok of \(outcome.rows), beyond max_failed"))
                }
            case .doesNotAddUp(let counted):
                events(.warning("the night of \(outcome.date) does not add up in \(outcome.path): its files hold \(counted) row\(counted == 1 ? "" : "s") (the output's and its rejects file's), its data files \(outcome.rows); it is not recorded as finished, and not delivered"))
            case .dataChanged:
                events(.warning("the night of \(outcome.date) in \(outcome.path) is not recorded as finished, and not delivered: a data file changed while it was written"))
            case .notFinished:
                events(.warning("the night of \(outcome.date) in \(outcome.path) was begun and never recorded as finished (a run stopped before it recorded its files): it is not delivered"))
            }
        }
        guard summary.exitCode == .ok else { return }
        summary.deliveries = await deliver(targets)
        // A signal that cut a delivery short (while it waited or uploaded) ends the run as any
        // signal does (130): the night is finished and recorded, and the next run delivers it.
        // One that came once every delivery had ended interrupted none of them.
        if summary.deliveries.cutShort { summary.interrupted = true }
    }

    /// Delivers each output the run wrote for its night (or found finished) where its manifest
    /// says (`output.deliver`): off the cooperative pool, as uploads block.
    private func deliver(_ targets: [OutputTarget]) async -> [DeliveryOutcome] {
        let (manifest, settings, events) = (manifest, settings, events)
        let deliverable = targets.filter { $0.deliver != nil && $0.night?.records == true }
        guard !deliverable.isEmpty else { return [] }
        return await Blocking.run("showbatch-deliver") { () -> [DeliveryOutcome] in
            deliverable.flatMap { target -> [DeliveryOutcome] in
                if let when = target.deliveredAt {
                    let name = (target.path as NSString).lastPathComponent
                    return [DeliveryOutcome(path: target.path, destination: target.deliver!.destination.url(of: name), size: 0, result: .already(when))]
                }
                return Deliverer.deliverInOrder(target.path, spec: target.deliver!, night: target.night!, manifest: manifest.file, retry: manifest.retry,
                                                timeout: settings.timeout, note: { events(.warning($0)) },
                                                isCancelled: { Task.isCancelled }).map { redactor.redacted($0) }
            }
        }
    }

    /// `--resume` in a nightly job's command line starts over when there is nothing to go on
    /// from, and says so: a finished output is then written again.
    private func warnWhereNothingResumes(_ targets: [OutputTarget]) {
        guard options.mode == .resume && !options.resumeAuto else { return }
        for target in targets where !target.isStandardOutput && PrivateFile.inspect(SideFile.journal.of(target.path)) == .none {
            let finished = PrivateFile.inspect(target.path) != .none
            events(.warning("\(target.path) has no journal, so there is nothing to resume: \(finished ? "it is written again from the start" : "starting it from the beginning")"))
        }
    }

    /// Opens the journals and outputs of `plan`; nil when interrupted while waiting for a
    /// journal's lock (nothing was opened).
    private func openOutputs(plan: OutputPlanner, dataHash: UInt64, encryptors: [Int: OpenPGPEncryptor]) async throws(RunError) -> RunOutputs? {
        let targets = plan.targets
        let (manifest, options, events) = (manifest, options, events)
        do {
            // A journal's lock may be waited for (up to 5 s): off the cooperative pool.
            return try await Blocking.run("showbatch-journals") { () throws(RunError) -> RunOutputs in
                try RunOutputs(targets: targets, identity: { target in
                    plan.journalIdentity(of: target, dataHash: dataHash, shard: options.shard, limit: options.limit)
                }, mode: options.mode, sharded: options.shard != nil, staleAfter: options.resumeAuto ? manifest.resumeMaxAge : nil,
                   note: { events(.note($0)) }, check: { index in
                    OutputCheck(manifest: manifest, target: index, byRequest: plan.byRequest, shard: options.shard)
                }, waitingForLock: { path in
                    events(.note("the journal of \(path) is locked by another process: waiting up to 5 s for it"))
                }, encryptors: encryptors.filter { !targets[$0.key].sealedShard }, isCancelled: { Task.isCancelled })
            }
        } catch {
            guard Task.isCancelled else { throw error }
            return nil
        }
    }

    /// Sends the run's rows, then commits the outputs, or leaves them for `--resume` when the
    /// run stops or is interrupted.
    private func sendAndCommit(outputs: RunOutputs, plan: OutputPlanner, baseURL: String, start: ContinuousClock.Instant,
                               credentials: Credentials?, encryptors: [Int: OpenPGPEncryptor]) async throws(RunError) -> RunSummary {
        do {
            var summary = try await send(outputs: outputs, plan: plan, baseURL: baseURL, start: start, credentials: credentials,
                                         encryptors: encryptors)
            if summary.interrupted || summary.stopReason != nil {
                abandon(outputs)
            } else {
                do {
                    // gpg makes encrypted outputs' messages here, and every output is synced.
                    try await Blocking.run("showbatch-commit") { () throws(RunError) in try outputs.commit() }
                    for (target, file) in zip(plan.targets, outputs.files) {
                        guard let file else { continue }
                        summary.writtenRows[target.path] = file.ownRows
                        if let rejects = target.rejects { summary.writtenRows[rejects.path] = file.checkpoint.rejects?.rows ?? 0 }
                        if let recipients = target.recipients { summary.recipients[target.path] = recipients }
                    }
                } catch where Task.isCancelled {
                    // Interrupted while an encrypted output was being made: its sealed file and
                    // journal are kept, and --resume finishes it.
                    summary.interrupted = true
                }
            }
            return summary
        } catch {
            abandon(outputs)
            throw error
        }
    }

    /// Leaves the outputs for `--resume`, saying what could not be written at the end: the rows
    /// after the checkpoint before are then sent again by `--resume`.
    private func abandon(_ outputs: RunOutputs) {
        for failure in outputs.abandon() {
            events(.warning("the last checkpoint could not be written (\(failure.description)); --resume goes on from the one before it and sends the rows after it again"))
        }
    }

    /// The GnuPG encryptor of each encrypted target, its recipients' keys loaded (they were
    /// checked when the manifest was, and are again now). A shard of an encrypted output stays
    /// sealed for `merge`, which needs the state key to read it.
    private func makeEncryptors(_ targets: [OutputTarget]) throws(RunError) -> [Int: OpenPGPEncryptor] {
        var encryptors: [Int: OpenPGPEncryptor] = [:]
        for (index, target) in targets.enumerated() {
            guard let spec = target.encrypt else { continue }
            if target.sealedShard && spec.stateKey == nil {
                throw RunError.manifest(manifest.diagnostic(at: spec.mark, "an encrypted output run in shards needs encrypt.state_key: merge reads the shards' sealed files with it"))
            }
            do {
                encryptors[index] = try OpenPGPEncryptor(recipients: spec.recipients, armor: spec.armor, sign: spec.sign)
            } catch {
                // This machine, not the manifest: GnuPG cannot run, or its home cannot be made.
                if error.isThisMachine {
                    throw RunError.runtime(OutputError.encryptionFailed(role: nil, file: target.path, reason: error.message, kept: nil))
                }
                // The manifest was loaded for a run, its keys not checked yet: the refusal is
                // positioned as validate positions it.
                if let problem = OpenPGPEncryptor.validate(spec.recipients).first, problem.index < spec.recipientMarks.count {
                    throw RunError.manifest(manifest.diagnostic(at: spec.recipientMarks[problem.index],
                                                                EncryptSpec.recipientProblem(problem, context: spec.context)))
                }
                // The recipients are fine: the signing key is what cannot be used.
                if let sign = spec.sign {
                    throw RunError.manifest(manifest.diagnostic(at: sign.mark, "\(spec.context).encrypt.sign: \(error.message)"))
                }
                throw RunError.usage(OutputError.encryptionFailed(role: nil, file: target.path, reason: error.message, kept: nil))
            }
        }
        return encryptors
    }

    /// Sends every work item and writes its row; interrupted runs come back marked so.
    private func send(outputs: RunOutputs, plan: OutputPlanner, baseURL: String, start: ContinuousClock.Instant,
                      credentials: Credentials?, encryptors: [Int: OpenPGPEncryptor]) async throws(RunError) -> RunSummary {
        let paths = plan.targets.map(\.path)
        // Counted for a progress bar or JSON logs (reading a data file twice costs a little).
        let total = options.progress == .never && options.logFormat == .text ? nil : countWorkItems()
        let rate = settings.rate
        events(.started(RunStart(manifest: manifest.file, outputs: paths, rows: total,
                                 shard: options.shard.map { "\($0.index)/\($0.count)" }, mode: options.mode.rawValue, baseURL: baseURL,
                                 rateLimit: rate, outputModes: outputs.modes)))

        // With the Vault API `concurrency` counts calls, each of several rows: one worker per row.
        let rowsPerCall = manifest.rowsPerCall
        let concurrency = min(settings.concurrency * rowsPerCall, 8192)
        let window = max(concurrency * 4, 64)
        let counts = AttemptCounts()
        let pause = CircuitPause(settings: CircuitPause.settings(manifest.circuit, concurrency: concurrency, rowsPerCall: rowsPerCall),
                                 seed: pauseSeed, events: events)
        defer { pause.shutDown() }
        let (attempts, pacer, calls) = attemptContext(credentials: credentials, pause: pause, counts: counts)
        let feed = RequestFeed(manifest: manifest, baseURL: baseURL, selection: selection, byRequest: plan.byRequest,
                               extras: plan.extras, skips: outputs.skips)
        let writer = RowWriter(outputs: outputs, labelFiles: plan.labelFileWriter(others: options.sideFiles.values.sorted(), encryptors: encryptors),
                               carried: outputs.carried)
        let dispatch = RunDispatch(manifest: manifest, feed: feed, writer: writer, byRequest: plan.byRequest,
                                   failFast: options.failFast, window: window, failureLimit: manifest.circuit.failedRows,
                                   pause: pause, onPark: onPark)
        pause.onVerdicts { [dispatch] in dispatch.decided($0) }
        let ticker = progressTicker(writer: writer, total: total, carried: outputs.carried.rows, start: start)
        // With the curl transport, every worker runs on the transport's own thread.
        let (outcome, written) = await withTaskCancellationHandler {
            await withTaskExecutorPreference(transport.executor) {
                await withTaskGroup(of: Void.self) { group in
                    for _ in 0..<concurrency {
                        group.addTask { await dispatch.work(attempts) }
                    }
                }
            }
            let outcome = await dispatch.finish()
            return (outcome, await Blocking.run("showbatch-writer-join") { writer.finish() })
        } onCancel: {
            // At once, whatever the run is doing: the workers may be waiting for room in the
            // writer's queue, or the writer be working through it.
            writer.interrupt()
        }
        ticker.cancel()
        var summary = RunSummary(written: written, carried: outputs.carried.rows, unfinished: outcome.unfinished, counts: counts)
        summary.tokenRenewals = credentials?.renewals ?? 0
        summary.answered429 = pacer.answered429
        summary.calls = calls?.callsSent.load(ordering: .relaxed)
        summary.pace = settings.rate.map { rate in settings.rateSource.map { "\(Units.rateText(rate)) (\($0))" } ?? Units.rateText(rate) }
        summary.pacePerSecond = settings.rate.map { Double($0.count) / $0.per.seconds }
        let writeError = outcome.writeError ?? written.error
        // Rows after a gap (a cancelled request) stay unwritten: order is never broken.
        let stoppedEarly = outcome.stopped && !outcome.exhausted && !Task.isCancelled && writeError == nil
        let remaining = feed.stop(countingRest: stoppedEarly)
        if stoppedEarly { summary.skipped = remaining }
        // Every row read: the data files must still be what the manifest's reading counted.
        if let rowsRead = feed.rowsRead, !Task.isCancelled {
            let check = DataFileCheck(manifest: manifest, rowsRead: rowsRead, shard: options.shard)
            summary.unfinished += check.unread
            summary.dataChanged = check.changes
            for change in check.changes { events(.warning(change)) }
        }
        summary.elapsed = ContinuousClock.now - start
        var last = RunProgress(done: summary.rows, total: total, failed: summary.failed, elapsed: summary.elapsed,
                               ok: summary.ok, retries: summary.retries)
        last.carried = summary.replayed
        events(.progress(last))
        if let writeError { throw writeError }
        let interruptedStop = Runner.endedByInterrupt(outcome.stopReason, runCancelled: Task.isCancelled)
        summary.stopReason = interruptedStop ? nil : outcome.stopReason?.reason
        summary.interrupted = summary.stopReason == nil && (Task.isCancelled || outcome.gap || interruptedStop)
        return summary
    }

    /// Whether a run that stopped for `stop` was in fact interrupted: a wait that an interrupt
    /// ended (a token fetch) says so itself; a request that ended cancelled reads as one when
    /// the run was cancelled, since the interrupt reaches the workers one by one and one may
    /// see another's cancellation (a pause resuming every parked worker) before its own.
    static func endedByInterrupt(_ stop: RunStop?, runCancelled: Bool) -> Bool {
        guard let stop else { return false }
        return stop.byInterrupt || (runCancelled && stop == RunDispatch.cancelledOnItsOwn)
    }

}
