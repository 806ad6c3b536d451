import Foundation
import ShowbatchBasics
import ShowbatchManifest
#if canImport(Glibc)
import Glibc
#endif

/// The nights an output whose name holds `${run.date}` or `${run.seq}` has had: which number
/// each date got, the hash of its data files and of the file written, whether it was delivered.
/// Kept in the output's folder (the volume that outlives a pod) as `.NAME.sequence`, replaced
/// atomically, mode 0600, never through a link, changed only under the lock of a private lock
/// file beside it (`.NAME.sequence.lock`), so that two runs of other nights never take one number.
struct NightLedger: Equatable {
    /// One night of the output: reserved when its run began, finished once its file was in place.
    struct Night: Equatable {
        var date: NightDate
        var seq: Int
        /// The hash of the run's data rows (`Manifest.rowsHash`), in hex: a night sent again is seen by it.
        var data: String
        /// The file's name that night.
        var file: String
        var size = 0
        /// Empty while the night is only reserved.
        var sha256 = ""
        /// When it was put in place (RFC 3339); empty while reserved.
        var finished = ""
        /// Its rows were all ok, or within `max_failed`: it may go to the processor.
        var complete = false
        /// When it was delivered (`output.deliver`), if it was.
        var delivered = ""
        /// Its output is delivered (`output.deliver`): a later night is not delivered before it.
        var deliver = false

        var isFinished: Bool { !finished.isEmpty }
    }

    /// Nights kept: enough to see a repeat of any of the last month's, twice over.
    static let kept = 62
    /// Numbers beyond this are not a night's (a hand-edited state).
    static let maxSeq = 999_999_999_999

    /// The state's path, in the folder of the output named by `template`.
    let path: String
    /// Oldest first.
    private(set) var nights: [Night] = []

    /// The state of the output named by `template` (a path with `${run.…}`); empty when there is
    /// none yet. One that cannot be read stops the run: it holds the numbers, which are never
    /// guessed.
    static func read(template: String) throws(RunError) -> NightLedger {
        var ledger = NightLedger(path: statePath(of: template))
        let opened: FileDescriptor?
        do { opened = try FileDescriptor.openOwn(ledger.path) } catch { throw ledger.unreadable(error.reason) }
        guard let file = opened else { return ledger }
        let bytes: [UInt8]
        do { bytes = try file.readAll(limit: 1 << 20) } catch { throw ledger.unreadable(error.reason) }
        guard let value = try? JSONParser.parse(bytes), case .number("1")? = value["showbatch_sequence"],
              case .array(let items)? = value["nights"] else {
            throw ledger.unreadable("it is not the sequence state of this version of showbatch")
        }
        for item in items {
            func text(_ key: String) -> String? { if case .string(let text)? = item[key] { return text } else { return nil } }
            func integer(_ key: String) -> Int? { if case .number(let text)? = item[key] { return Int(text) } else { return nil } }
            guard let date = text("date").flatMap(NightDate.init(compact:)), let seq = integer("seq"), (1...maxSeq).contains(seq),
                  let data = text("data"), let name = text("file"), let size = integer("size"), size >= 0, let sha = text("sha256"),
                  let finished = text("finished"), case .bool(let complete)? = item["complete"], let delivered = text("delivered") else {
                throw ledger.unreadable("a night in it is not whole")
            }
            // Older states have no `deliver`: their nights are not waited for.
            var deliver = false
            if case .bool(let value)? = item["deliver"] { deliver = value }
            ledger.nights.append(Night(date: date, seq: seq, data: data, file: name, size: size, sha256: sha, finished: finished,
                                       complete: complete, delivered: delivered, deliver: deliver))
        }
        return ledger
    }

    /// `.NAME.sequence` in the folder of `template`.
    static func statePath(of template: String) -> String {
        let folder = (template as NSString).deletingLastPathComponent
        return (folder.isEmpty ? "" : folder + "/") + NightName.stateName(of: template)
    }

    private func unreadable(_ reason: String) -> RunError {
        .runtime("cannot read \(path), which keeps the sequence numbers of the output's nights: \(reason); the run does not guess a number")
    }

    /// The night recorded (or reserved) for `date`.
    func night(on date: NightDate) -> Night? { nights.last { $0.date == date } }

    /// The number `date` has: its own when recorded, else one more than the last.
    func number(for date: NightDate) -> Int {
        night(on: date)?.seq ?? (nights.map(\.seq).max() ?? 0) + 1
    }

    /// The nights before `seq` that are to be delivered and are not yet, oldest first: those
    /// after the last night delivered (a processor that rejects a gap takes them first).
    func undelivered(before seq: Int) -> [Night] {
        let last = nights.filter { !$0.delivered.isEmpty }.map(\.seq).max() ?? 0
        return nights.filter { $0.seq > last && $0.seq < seq && $0.deliver && $0.delivered.isEmpty }.sorted { $0.seq < $1.seq }
    }

    /// A night of another date whose data files hashed the same.
    func repeatOf(_ date: NightDate, data: String) -> Night? {
        nights.last { $0.date != date && $0.data == data }
    }

    /// Reserves the next number for `date` (as its run begins), unless the date has one: the
    /// number that date then has.
    /// `deliver`: the output is delivered, so later nights wait for this one.
    static func reserve(_ date: NightDate, data: String, template: String, deliver: Bool = false,
                        isCancelled: () -> Bool = { false }) throws(RunError) -> Int {
        try update(template: template, isCancelled: isCancelled) { (ledger: inout NightLedger) throws(RunError) -> Int in
            if let night = ledger.night(on: date) { return night.seq }
            // Checked again under the lock: a later night may have begun meanwhile.
            if let latest = ledger.nights.max(by: { $0.date < $1.date }), latest.date > date {
                throw Nights.outOfOrder(date, latest)
            }
            let seq = ledger.number(for: date)
            guard seq <= maxSeq else { throw RunError.runtime("\(ledger.path) holds a number beyond \(maxSeq): it is not a night's") }
            ledger.nights.append(Night(date: date, seq: seq, data: data, file: "", deliver: deliver))
            return seq
        }
    }

    /// Records `night` as finished (replacing what its date had, delivered or not).
    static func record(_ night: Night, template: String) throws(RunError) {
        _ = try update(template: template) { (ledger: inout NightLedger) throws(RunError) -> Int in
            ledger.nights.removeAll { $0.date == night.date }
            ledger.nights.append(night)
            return night.seq
        }
    }

    /// Records that the night of `date` was delivered at `when`.
    static func markDelivered(_ date: NightDate, at when: String, template: String) throws(RunError) {
        _ = try update(template: template) { (ledger: inout NightLedger) throws(RunError) -> Int in
            guard let index = ledger.nights.lastIndex(where: { $0.date == date }) else { return 0 }
            ledger.nights[index].delivered = when
            return ledger.nights[index].seq
        }
    }

    /// Reads, changes and replaces the state under its lock.
    private static func update(template: String, isCancelled: () -> Bool = { false },
                               _ change: (inout NightLedger) throws(RunError) -> Int) throws(RunError) -> Int {
        let lockPath = statePath(of: template) + ".lock"
        // Kept, never replaced: a lock on a file another run has just replaced locks nothing.
        var opened = try PrivateFile.openExisting(lockPath, for: lockPath)
        if opened == nil { opened = try PrivateFile.createNew(lockPath, for: lockPath) }
        if opened == nil { opened = try PrivateFile.openExisting(lockPath, for: lockPath) }
        guard let lock = opened else { throw RunError.runtime("cannot open \(lockPath): it came and went") }
        defer { close(lock) }
        // A lock held by another run is waited for, at most 30 s, and an interrupt ends the wait.
        let deadline = Date().addingTimeInterval(30)
        while flock(lock, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else { throw RunError.runtime("cannot lock \(lockPath): \(describeErrno(errno))") }
            if isCancelled() || Date() > deadline {
                throw RunError.runtime("\(lockPath) is locked by another run\(isCancelled() ? "" : " for over 30 s"): the night's number was not taken")
            }
            usleep(20_000)
        }
        var ledger = try read(template: template)
        let seq = try change(&ledger)
        ledger.nights.sort { ($0.seq, $0.date) < ($1.seq, $1.date) }
        if ledger.nights.count > kept { ledger.nights.removeFirst(ledger.nights.count - kept) }
        try PrivateFile.replaceAtomically(ledger.path, with: ledger.encoded, mode: 0o600)
        return seq
    }

    private var encoded: [UInt8] {
        var bytes: [UInt8] = []
        JSONWriter.append(to: &bytes) { writer in
            writer.object { writer in
                writer.key("showbatch_sequence")
                writer.integer(1)
                writer.key("nights")
                writer.array { writer in
                    for night in nights {
                        writer.object { writer in
                            writer.key("date"); writer.string(night.date.compact)
                            writer.key("seq"); writer.integer(night.seq)
                            writer.key("data"); writer.string(night.data)
                            writer.key("file"); writer.string(night.file)
                            writer.key("size"); writer.integer(night.size)
                            writer.key("sha256"); writer.string(night.sha256)
                            writer.key("finished"); writer.string(night.finished)
                            writer.key("complete"); writer.bool(night.complete)
                            writer.key("delivered"); writer.string(night.delivered)
                            writer.key("deliver"); writer.bool(night.deliver)
                        }
                    }
                }
            }
        }
        bytes.append(0x0A)
        return bytes
    }
}

/// The night a run writes, for each output whose name holds `${run.date}` or `${run.seq}`: its
/// sequence state, and the number this night has. Read before anything is planned or sent.
struct Nights {
    let date: NightDate
    /// By output template (the path as the manifest gives it).
    private(set) var ledgers: [String: NightLedger] = [:]
    /// Numbers taken by `reserve`, by template.
    private var reserved: [String: Int] = [:]

    /// The states of `manifest`'s night-named outputs.
    init(manifest: Manifest, date: NightDate) throws(RunError) {
        self.date = date
        let specs = ([manifest.output] + manifest.requests.map(\.output)).compactMap { $0 }
        for spec in specs where NightName.names(spec.path) && ledgers[spec.path] == nil {
            ledgers[spec.path] = try NightLedger.read(template: spec.path)
        }
    }

    /// No output names the night.
    var isEmpty: Bool { ledgers.isEmpty }

    /// Takes this night's number for every output, under each state's lock, as a run that writes
    /// the night begins: two runs of other nights never take one number, and an interrupted night
    /// keeps its number for the run that goes on with it.
    /// `delivered` are the templates of outputs with `output.deliver`.
    mutating func reserve(data: String, delivered: Set<String> = [], isCancelled: () -> Bool) throws(RunError) {
        for template in ledgers.keys.sorted() {
            reserved[template] = try NightLedger.reserve(date, data: data, template: template, deliver: delivered.contains(template),
                                                         isCancelled: isCancelled)
            ledgers[template] = try NightLedger.read(template: template)
        }
    }

    /// The number this night has for the output named by `template` (1 for one that names no night).
    func number(of template: String) -> Int { reserved[template] ?? ledgers[template]?.number(for: date) ?? 1 }

    /// `path` (the output's, or its rejects file's) with this night filled in, numbered as the
    /// output named by `template`.
    func expand(_ path: String, template: String) -> String {
        NightName.expand(path, date: date, seq: number(of: template))
    }

    /// The night of this date recorded (or reserved) for the output named by `template`.
    func night(of template: String) -> NightLedger.Night? { ledgers[template]?.night(on: date) }

    /// The first output whose nights hold another date with these data files: the export
    /// upstream did not run, and yesterday's rows would be sent again. A date the output has a
    /// night for already is a rerun, not a repeat.
    func repeated(data: String) -> (template: String, night: NightLedger.Night)? {
        for (template, ledger) in ledgers.sorted(by: { $0.key < $1.key }) where ledger.night(on: date) == nil {
            if let night = ledger.repeatOf(date, data: data) { return (template, night) }
        }
        return nil
    }

    /// The refusal of a new night of `date` that would be numbered after the later `latest`.
    static func outOfOrder(_ date: NightDate, _ latest: NightLedger.Night) -> RunError {
        .usage("the night of \(date) would come after the night of \(latest.date) (\(latest.file.isEmpty ? "begun" : latest.file), sequence \(latest.seq)), which is later: a processor takes nights in order; check --date and TZ")
    }

    /// The first output for which this date would be a new night before the latest it has: its
    /// number would come after a later date's (a mistyped `--date`, a wrong `TZ`).
    func earlierThanLatest() -> (template: String, night: NightLedger.Night)? {
        for (template, ledger) in ledgers.sorted(by: { $0.key < $1.key }) where ledger.night(on: date) == nil {
            if let latest = ledger.nights.max(by: { $0.date < $1.date }), latest.date > date { return (template, latest) }
        }
        return nil
    }
}
