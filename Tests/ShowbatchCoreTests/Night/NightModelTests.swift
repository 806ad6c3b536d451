import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore

/// The night's decisions (`NightDecision`, `OutputStart`, `Journal.stays`, `DeliveryStep`) driven
/// by seeded random sequences of what happens to nights in production, against a model of the
/// ledger, the files and a processor that takes each file the moment it is renamed in: runs of
/// nights in any order and mode, kills at every step (while rows are sent, after the files are
/// in place, before and after the rename, during the trigger file), `deliver`, data files
/// changed, the manifest fixed, side files lost, and a person answering a refusal as the
/// processor tells them. After every step: no number used twice or skipped; no night reaches the
/// processor twice; what it got holds every data row of its night in exactly one of the output
/// and the rejects, its trailer's count the output's rows; exit 0 only when the night is whole.
@Suite struct NightModelTests {
    /// Seeds per case; the cases run in parallel (20,000 in all).
    static let perCase = 2_500

    @Test(arguments: 0..<8) func randomSequencesKeepTheInvariants(part: Int) async {
        var seen = NightModel.Seen()
        for seed in (part * Self.perCase)..<((part + 1) * Self.perCase) {
            if seed % 250 == 0 { await Task.yield() }
            var model = NightModel(seed: UInt64(seed))
            defer { seen.add(model.seen) }
            if let problem = model.run() {
                var again = NightModel(seed: UInt64(seed), tracing: true)
                _ = again.run()
                Issue.record("seed \(seed): \(problem)\nsteps: \(again.trace.joined(separator: "; "))")
                return
            }
        }
        // The sequences reach every part of the life of a night, so that the invariants are tested there.
        #expect(seen.delivered > 100 && seen.settledFound > 10 && seen.renamedAfterKill > 10 && seen.refusedUncertain > 10
                && seen.markedByHand > 10 && seen.sentAgain > 0 && seen.retried > 100 && seen.rewritten > 100 && seen.notWhole > 100,
                "\(seen)")
    }
}

/// One night's files on the volume, as the model keeps them: which data rows went to the output
/// and which to the rejects file, and a version that stands for their bytes.
private struct Files: Equatable {
    var output: [Int] = []
    var rejects: [Int] = []
    var version = 0
    /// Failed rows (sent again by `--retry-failed`) the kept journal holds; nil without a journal.
    var journal: Set<Int>?
    /// A run of it stopped while sending: its journal has a checkpoint, these rows written.
    var unfinished: [Int]?
}

private struct NightModel {
    /// How often each part of a night's life came up.
    struct Seen {
        var delivered = 0, settledFound = 0, renamedAfterKill = 0, refusedUncertain = 0, markedByHand = 0, sentAgain = 0
        var retried = 0, rewritten = 0, notWhole = 0

        mutating func add(_ other: Seen) {
            delivered += other.delivered; settledFound += other.settledFound; renamedAfterKill += other.renamedAfterKill
            refusedUncertain += other.refusedUncertain; markedByHand += other.markedByHand; sentAgain += other.sentAgain
            retried += other.retried; rewritten += other.rewritten; notWhole += other.notWhole
        }
    }

    private(set) var seen = Seen()
    private var random: SeededGenerator
    let tracing: Bool
    private(set) var trace: [String] = []

    /// The ledger: by day.
    private var ledger: [Int: NightRecord] = [:]
    private var highest = 0
    /// The volume: by day.
    private var files: [Int: Files] = [:]
    /// The data files: each day's rows, and which of them come back partial until the manifest is
    /// fixed, and which fail now and then (an outage's 503 after the retries).
    private var data: [Int: [Int]] = [:]
    private var partialRows: Set<Int> = []
    private var flakyRows: Set<Int> = []
    private var manifestVersion = 0
    private var fixedFrom = Int.max
    /// The server: what is under the final name (its version, or another's file), and uploads
    /// not renamed yet, by temporary name.
    private var serverFinal: [Int: Int] = [:]
    private var parts: [String: (day: Int, version: Int)] = [:]
    /// What the processor took, by day: each the rows it held.
    private var taken: [Int: [(output: [Int], rejects: [Int])]] = [:]
    /// Versions of each day's file, by the rows they hold.
    private var contents: [Int: [Int: Files]] = [:]
    private var nextVersion = 1
    private var nextRow = 0
    private var nextPart = 0
    /// Refusals waiting for a person, by day.
    private var uncertain: Set<Int> = []
    /// The processor takes each file the moment it is renamed in (else it leaves it there).
    private var eager = true

    init(seed: UInt64, tracing: Bool = false) {
        random = SeededGenerator(seed: seed)
        self.tracing = tracing
    }

    private mutating func chance(_ p: Double) -> Bool { random.unit() < p }
    private mutating func pick(_ n: Int) -> Int { Int(random.next() % UInt64(n)) }
    private mutating func note(_ text: String) { if tracing { trace.append(text) } }

    private func date(_ day: Int) -> NightDate { NightDate(year: 2026, month: 11, day: day + 1)! }
    private func name(_ day: Int, _ seq: Int) -> String { "c-\(day)-\(seq).csv" }

    /// Runs a sequence of 12 to 30 steps; what broke an invariant, or nil.
    mutating func run() -> String? {
        eager = chance(0.6)
        let steps = 12 + pick(19)
        for _ in 0..<steps {
            let day = pick(4)
            if data[day] == nil { newData(day) }
            switch pick(21) {
            case 0...6:
                let modes: [RunMode] = [.fresh, .resume, .retryFailed]
                let mode = chance(0.6) ? RunMode.fresh : modes[pick(3)]
                if let problem = runNight(day, mode: mode, kill: chance(0.35) ? pick(6) : nil) { return problem }
            case 7...9:
                if let problem = deliver(day, kill: chance(0.3) ? pick(3) : nil, choice: .deliver) { return problem }
            case 10, 11:
                note("data of \(day) changed")
                newData(day)
            case 12:
                note("manifest fixed")
                manifestVersion += 1
                fixedFrom = manifestVersion
            case 13:
                note("journal of \(day) lost")
                files[day]?.journal = nil
                files[day]?.unfinished = nil
            case 14:
                note("file of \(day) removed (hygiene)")
                if ledger[day]?.isDelivered == true { files[day] = nil }
            case 18:
                // Someone cleans the server's folder of uploads never renamed.
                note("uploads of \(day) removed from the server")
                for (part, upload) in parts where upload.day == day { parts[part] = nil }
            case 15...17:
                if let waiting = uncertain.randomElement(using: &random) {
                    let day = waiting
                    // The person asks the processor, and does what the answer asks for.
                    let has = taken[day] != nil
                    note("person: processor \(has ? "has" : "has not") \(day)")
                    if let problem = deliver(day, kill: nil, choice: has ? .markDelivered : .sendAgain) { return problem }
                }
            default:
                if let problem = runNight(day, mode: .resume, kill: nil) { return problem }
            }
            if let problem = invariants() { return problem }
        }
        return nil
    }

    private mutating func newData(_ day: Int) {
        let count = 1 + pick(6)
        var rows: [Int] = []
        for _ in 0..<count {
            let row = nextRow
            nextRow += 1
            rows.append(row)
            if chance(0.15) { partialRows.insert(row) }
            if chance(0.2) { flakyRows.insert(row) }
        }
        data[day] = rows
    }

    /// A row's answer now: ok, partial (a label not found, until the manifest is fixed) or
    /// failed (a flaky row fails half the time).
    private mutating func answer(_ row: Int) -> RowStatus {
        if partialRows.contains(row) && manifestVersion < fixedFrom { return .partial }
        if flakyRows.contains(row) && chance(0.5) { return .failed }
        return .ok
    }

    private func dataHash(_ day: Int) -> String { Manifest.rowsHashPrefix + (data[day] ?? []).sorted().map(String.init).joined(separator: ",") }

    // MARK: A run

    /// `showbatch run --date DAY` in `mode`; `kill`: 0 while sending rows, 1 after the files are
    /// in place (before the ledger records them), 2..5 at a delivery step.
    private mutating func runNight(_ day: Int, mode: RunMode, kill: Int?) -> String? {
        note("run \(day) \(mode.rawValue)\(kill.map { " kill@\($0)" } ?? "")")
        let record = ledger[day]
        var facts = NightFacts(night: Night(date: date(day), today: NightDate(year: 2026, month: 12, day: 6)!), record: record,
                               latest: ledger.values.max { $0.date < $1.date },
                               repeatOf: record == nil ? ledger.values.first { $0.date != date(day) && $0.data == dataHash(day) } : nil,
                               data: dataHash(day), manifest: "m\(manifestVersion)")
        if let record, record.isFinished, let current = files[day] {
            facts.fileAsRecorded = record.sha256 == "v\(current.version)"
            facts.leftovers = current.journal != nil || current.unfinished != nil
        } else if let current = files[day] {
            facts.leftovers = current.journal != nil || current.unfinished != nil
        }
        let verdict = NightDecision.run(facts, NightFlags(mode: mode, allowRepeat: true), path: "out/c.csv")
        note("  verdict \(verdict)")
        switch verdict {
        case .refuse:
            return nil
        case .leave(.delivered):
            return nil
        case .leave(.handing):
            return deliver(day, kill: kill.map { $0 - 2 }, choice: .deliver)
        case .leave(.finished):
            guard ledger[day]?.complete == true else { return "left a finished night that is not whole" }
            return deliver(day, kill: kill.map { $0 - 2 }, choice: .deliver)
        case .leave(.merged):
            return "an unsharded run left a night as merged"
        case .begin:
            guard record == nil else { return "began a night that has a number" }
            highest += 1
            ledger[day] = NightRecord(date: date(day), seq: highest, data: dataHash(day), deliver: true)
        case .write(let again):
            guard record != nil else { return "wrote a night that has no number" }
            if again != nil { seen.rewritten += 1 }
        }
        // How the output begins, as RunOutputs decides it.
        var current = files[day] ?? Files()
        var start = OutputStart.Files(path: "out/c.csv")
        start.hasJournal = current.journal != nil || current.unfinished != nil
        start.outputExists = files[day] != nil && current.unfinished == nil
        var how = OutputStart.withoutJournal(start, mode: mode)
            ?? OutputStart.start(mode: mode, discarded: nil, hasCheckpoint: current.unfinished != nil || current.journal != nil)
        // A journal whose run finished has its end: resuming it finds the output finished.
        if how == .resume && current.unfinished == nil { how = .unchanged(reason: "finished before") }
        note("  start \(how)")
        let rows = data[day]!
        var written: [(Int, RowStatus)] = []
        var carried: [(Int, RowStatus)] = []
        switch how {
        case .refused, .standardOutput:
            return nil
        case .unchanged:
            // Nothing sent: the night is what its record says, or, after a kill between the
            // files and the record, what its journal says.
            if mode == .resume, current.unfinished == nil, current.journal != nil, ledger[day]?.isFinished == false {
                return recordFiles(day, current, kill: kill)
            }
            if let record = ledger[day], record.isFinished, !record.complete { return nil }  // exit 1
            if ledger[day]?.isFinished == true { return deliver(day, kill: kill.map { $0 - 2 }, choice: .deliver) }
            return nil
        case .fresh, .discard:
            current = Files()
            for row in rows { written.append((row, answer(row))) }
        case .resume:
            let done = current.unfinished ?? []
            carried = done.map { ($0, current.rejects.contains($0) ? .failed : .ok) }
            for row in rows where !done.contains(row) { written.append((row, answer(row))) }
            current.output = current.output.filter { done.contains($0) }
            current.rejects = current.rejects.filter { done.contains($0) }
        case .retry:
            guard let failed = current.journal else { return nil }
            seen.retried += 1
            var stillFailed: Set<Int> = []
            for row in rows where failed.contains(row) {
                let status = answer(row)
                if status == .ok {
                    current.rejects.removeAll { $0 == row }
                    current.output.append(row)
                    current.output.sort()
                } else if status == .failed {
                    stillFailed.insert(row)
                }
            }
            current.journal = Journal.stays(failed: stillFailed.count, rejected: current.rejects.count - stillFailed.count,
                                            publishesMessage: false, keyWrapped: false) ? stillFailed : nil
            nextVersion += 1
            current.version = nextVersion
            contents[day, default: [:]][current.version] = current
            return recordFiles(day, current, kill: kill)
        }
        // Every failed or partial row goes to the rejects file (rejects set, partial rows too).
        for (row, status) in written {
            if status == .ok { current.output.append(row) } else { current.rejects.append(row) }
        }
        current.output.sort()
        current.rejects.sort()
        if kill == 0 {
            // Killed while sending: a checkpoint of half the rows, nothing in place.
            let kept = Array(rows.prefix(rows.count / 2))
            current.unfinished = kept
            current.output = current.output.filter { kept.contains($0) }
            current.rejects = current.rejects.filter { kept.contains($0) }
            files[day] = current
            return nil
        }
        let failed = Set(written.filter { $0.1 == .failed }.map(\.0)).union(carried.filter { $0.1 == .failed }.map(\.0))
        current.unfinished = nil
        current.journal = Journal.stays(failed: failed.count, rejected: current.rejects.count - failed.count,
                                        publishesMessage: false, keyWrapped: false) ? failed : nil
        nextVersion += 1
        current.version = nextVersion
        contents[day, default: [:]][current.version] = current
        return recordFiles(day, current, kill: kill)
    }

    /// The files are in place: counted, recorded when they add up, delivered when whole.
    private mutating func recordFiles(_ day: Int, _ current: Files, kill: Int?) -> String? {
        files[day] = current
        if kill == 1 { return nil }
        guard var night = ledger[day] else { return "recorded a night without a number" }
        let rows = data[day]!
        let notOk = current.rejects.count
        let counted = NightRecord.NightRows(data: rows.count, output: current.output.count, rejects: current.rejects.count,
                                            ok: current.output.count, partial: 0, failed: notOk)
        let finish = NightDecision.finish(counted, allowed: 0)
        if case .doesNotAddUp = finish {
            note("  does not add up")
            return nil
        }
        night.file = name(day, night.seq)
        night.sha256 = "v\(current.version)"
        night.finished = "t"
        night.rows = counted
        night.complete = finish == .whole
        night.manifest = "m\(manifestVersion)"
        night.data = dataHash(day)
        ledger[day] = night
        note("  recorded \(finish)")
        guard finish == .whole else {
            seen.notWhole += 1
            return nil
        }
        // Exit 0 is only ever given for a whole night.
        if Set(current.output + current.rejects) != Set(rows) || current.output.count + current.rejects.count != rows.count {
            return "a night recorded whole does not hold its data rows once each"
        }
        return deliver(day, kill: kill.map { $0 - 2 }, choice: .deliver)
    }

    // MARK: A delivery

    /// Delivers the night of `day`; `kill`: 0 before the rename (after the hand-over is
    /// recorded), 1 after the rename (before the ledger records it), 2 during the trigger file.
    private mutating func deliver(_ day: Int, kill: Int?, choice: NightDelivery.Choice) -> String? {
        guard var night = ledger[day], night.isFinished, night.complete, let current = files[day] ?? (night.isDelivered ? Files() : nil) else { return nil }
        if !night.isDelivered && night.sha256 != "v\(current.version)" { return nil }
        note("  deliver \(day) \(choice)\(kill.map { " kill@\($0)" } ?? "")")
        switch choice {
        case .markDelivered:
            guard !night.isDelivered else { return nil }
            night.delivery = NightRecord.Delivery(to: "p", file: night.file, size: current.version, sha256: night.sha256, at: "t", byHand: true)
            night.handing = nil
            ledger[day] = night
            uncertain.remove(day)
            seen.markedByHand += 1
            return nil
        case .sendAgain:
            night.handing = nil
            ledger[day] = night
            uncertain.remove(day)
            seen.sentAgain += 1
        case .deliver:
            break
        }
        let size = current.version
        if case .already = DeliveryStep.next(night, size: size, name: night.file, server: nil) { return nil }
        var server: [String: RemoteEntry] = [:]
        if let final = serverFinal[day] { server[night.file] = RemoteEntry(kind: .regular, size: final) }
        for (part, upload) in parts where upload.day == day { server[part] = RemoteEntry(kind: .regular, size: upload.version) }
        var step = DeliveryStep.next(night, size: size, name: night.file, server: server)
        note("    step \(step)")
        if step == .readBack { step = serverFinal[day] == size ? .found : .refuse("other") }
        switch step {
        case .already:
            return nil
        case .trigger:
            night.delivery?.done = true
            ledger[day] = night
            return nil
        case .found:
            night.delivery = NightRecord.Delivery(to: "p", file: night.file, size: size, sha256: night.sha256, at: "t", done: true)
            night.handing = nil
            ledger[day] = night
            seen.settledFound += 1
            return nil
        case .refuse:
            uncertain.insert(day)
            seen.refusedUncertain += 1
            return nil
        case .readBack:
            return "read back twice"
        case .rename(let part):
            seen.renamedAfterKill += 1
            return rename(day, part: part, kill: kill)
        case .upload:
            for (part, upload) in parts where upload.day == day { parts[part] = nil }
            nextPart += 1
            let part = ".\(night.file).\(nextPart).part"
            parts[part] = (day, size)
            night.handing = NightRecord.Handing(to: "p", part: part, at: "t")
            ledger[day] = night
            return rename(day, part: part, kill: kill)
        }
    }

    private mutating func rename(_ day: Int, part: String, kill: Int?) -> String? {
        if kill == 0 { return nil }
        guard let upload = parts.removeValue(forKey: part), var night = ledger[day] else { return "renamed nothing" }
        guard serverFinal[day] == nil else { return "renamed over a file" }
        // In the processor's folder it is the processor's; an eager one takes it at once, and
        // the final name is empty again.
        guard let content = contents[day]?[upload.version] else { return "uploaded a file that was never written" }
        taken[day, default: []].append((content.output, content.rejects))
        if !eager { serverFinal[day] = upload.version }
        if kill == 1 { return nil }
        night.delivery = NightRecord.Delivery(to: "p", file: night.file, size: upload.version, sha256: night.sha256, at: "t", done: kill != 2)
        night.handing = nil
        ledger[day] = night
        seen.delivered += 1
        return nil
    }

    // MARK: The invariants

    private func invariants() -> String? {
        let numbers = ledger.values.map(\.seq).sorted()
        if numbers != Array(0..<numbers.count).map({ $0 + 1 }) { return "numbers \(numbers) are not 1 to \(numbers.count), each once" }
        for (day, deliveries) in taken {
            if deliveries.count > 1 { return "the processor got the night of \(day) \(deliveries.count) times" }
            let got = deliveries[0]
            let rows = got.output + got.rejects
            if Set(rows).count != rows.count { return "a delivered file holds a row twice" }
            // The night it got was whole: every row of its data, once.
            guard let night = ledger[day], let counted = night.rows else { return "a night delivered without a record" }
            if rows.count != counted.data || got.rejects.count > 0 { return "the processor got a night that is not whole: \(got)" }
        }
        for (day, night) in ledger where night.isDelivered && taken[day] == nil {
            return "the night of \(day) is recorded delivered and the processor never got it"
        }
        return nil
    }
}
