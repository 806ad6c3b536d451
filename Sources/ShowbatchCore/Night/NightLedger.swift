import Foundation
import ShowbatchBasics
import ShowbatchManifest
#if canImport(Glibc)
import Glibc
#endif

/// One night of an output, as its ledger records it: begun (its number taken as its run began),
/// finished (its files in place and their rows counted), and delivered (put in place on the
/// processor's server). The one record of the night: a side file may copy what it says, never
/// decide it.
struct NightRecord: Equatable, Sendable {
    var date: NightDate
    var seq: Int
    /// The data files' rows as a multiset (`Manifest.nightRowsHash`): a night sent again is
    /// seen by it in any order. Empty when the manifest reads no data file.
    var data: String
    /// The manifest's row identity (`Manifest.rowIdentity`) the night was finished with: a night
    /// finished with other labels or paths is written again. Empty while only begun.
    var manifest = ""
    /// The file's name that night; empty while only begun.
    var file = ""
    var size = 0
    var sha256 = ""
    /// When it was put in place (RFC 3339); empty while only begun.
    var finished = ""
    /// Its rows, counted from its files when it was finished.
    var rows: NightRows?
    /// Its rows were all ok, or within `max_failed`, and added up: it may go to the processor.
    var complete = false
    /// Its output is delivered (`output.deliver`): a later night is not delivered before it.
    var deliver = false
    /// Where the file was being put in place on the server: the rename was asked for, and its
    /// answer not recorded yet (a run killed in between leaves this).
    var handing: Handing?
    /// Its delivery, once the server put the file in place under its own name.
    var delivery: Delivery?

    /// The rows of a finished night, counted from its files.
    struct NightRows: Equatable, Sendable {
        /// The data files' records (work items) the night has.
        var data: Int
        /// Rows in the output file, and in its rejects file.
        var output: Int
        var rejects: Int
        /// By status, over both files.
        var ok: Int
        var partial: Int
        var failed: Int
        /// Rows not ok.
        var notOk: Int { partial + failed }
    }

    /// The rename to the processor's server that was asked for.
    struct Handing: Equatable, Sendable {
        /// The folder's URL (no credentials).
        var to: String
        /// The temporary name the file was uploaded as.
        var part: String
        var at: String
    }

    /// A delivery: the file's name on the server, the folder, its bytes and when.
    struct Delivery: Equatable, Sendable {
        var to: String
        var file: String
        var size: Int
        var sha256: String
        var at: String
        /// Its trigger file (`deliver.done`) is written, or it has none.
        var done = true
        /// A person recorded it (`deliver --mark-delivered`) after checking with the processor.
        var byHand = false
    }

    var isFinished: Bool { !finished.isEmpty }
    var isDelivered: Bool { delivery != nil }
}

/// The nights an output whose name holds `${run.date}` or `${run.seq}` has had: which number
/// each date got, how each was finished, and whether it was delivered. Kept in the output's folder
/// (the volume that outlives a pod) as `.NAME.sequence`, replaced atomically and synced, mode
/// 0600, never through a link, changed only under the lock of a private lock file beside it
/// (`.NAME.sequence.lock`), so that two runs of other nights never take one number. Each change
/// raises its `generation`, which the delivery records beside the files copy: a ledger rolled
/// back behind them is seen (`NightWitnesses`).
struct NightLedger: Equatable {
    /// Nights kept: enough to see a repeat of any of the last month's, twice over.
    static let kept = 62
    /// Numbers beyond this are not a night's (a hand-edited state).
    static let maxSeq = 999_999_999_999

    /// The state's path, in the folder of the output named by `template`.
    let path: String
    /// Raised by every change.
    private(set) var generation = 0
    /// The highest number any night ever had, kept when old nights are dropped.
    private(set) var highest = 0
    /// Oldest first.
    private(set) var nights: [NightRecord] = []
    /// There was no state file.
    private(set) var isNew = true
    /// Where the audit trail stood when this output's last entry was added to it: no trail may
    /// then be shorter, or end otherwise at that point.
    private(set) var audit: AuditAnchor?

    /// A point of an audit trail: its file, its size then, and the SHA-256 of its last line then.
    struct AuditAnchor: Equatable, Sendable {
        var path: String
        var size: Int
        var last: String
    }

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
        guard let value = try? JSONParser.parse(bytes), case .number(let version)? = value["showbatch_sequence"],
              version == "1" || version == "2", case .array(let items)? = value["nights"] else {
            throw ledger.unreadable("it is not the sequence state of this version of showbatch")
        }
        ledger.isNew = false
        if case .number(let text)? = value["generation"], let generation = Int(text), generation >= 0 { ledger.generation = generation }
        for item in items {
            guard let night = version == "1" ? NightLedger.decodeVersion1(item) : NightLedger.decode(item) else {
                throw ledger.unreadable("a night in it is not whole")
            }
            ledger.nights.append(night)
        }
        if let anchor = value["audit"], case .string(let path)? = anchor["path"], case .number(let size)? = anchor["size"],
           let bytes = Int(size), case .string(let last)? = anchor["last"] {
            ledger.audit = AuditAnchor(path: path, size: bytes, last: last)
        }
        var highest = ledger.nights.map(\.seq).max() ?? 0
        if case .number(let text)? = value["highest"], let kept = Int(text), (0...maxSeq).contains(kept) { highest = max(highest, kept) }
        ledger.highest = highest
        return ledger
    }

    /// `.NAME.sequence` in the folder of `template`.
    static func statePath(of template: String) -> String {
        let folder = (template as NSString).deletingLastPathComponent
        return (folder.isEmpty ? "" : folder + "/") + NightName.stateName(of: template)
    }

    private func unreadable(_ reason: String) -> RunError {
        .runtime(NightError.ledgerUnreadable(ledger: path, reason: reason))
    }

    /// The night recorded (or begun) for `date`.
    func night(on date: NightDate) -> NightRecord? { nights.last { $0.date == date } }

    /// The night of the latest date.
    var latest: NightRecord? { nights.max { $0.date < $1.date } }

    /// The number `date` has: its own when recorded, else one more than any night had.
    func number(for date: NightDate) -> Int {
        night(on: date)?.seq ?? highest + 1
    }

    /// The nights before `seq` that are to be delivered and are not yet, oldest first: those
    /// after the last night delivered (a processor that rejects a gap takes them first).
    func undelivered(before seq: Int) -> [NightRecord] {
        let last = nights.filter(\.isDelivered).map(\.seq).max() ?? 0
        return nights.filter { $0.seq > last && $0.seq < seq && $0.deliver && !$0.isDelivered }.sorted { $0.seq < $1.seq }
    }

    /// A night of another date whose data files held the same rows.
    func repeatOf(_ date: NightDate, data: String) -> NightRecord? {
        nights.last { $0.date != date && NightRecord.sameRows($0.data, data) == true }
    }

    // MARK: Changes, each under the lock

    /// Begins the night of `date` (as its run begins): takes the next number, unless the date has
    /// one. Returns the number the date then has. `deliver`: the output is delivered, so later
    /// nights wait for this one.
    static func begin(_ date: NightDate, data: String, template: String, deliver: Bool = false,
                      isCancelled: () -> Bool = { false }) throws(RunError) -> Int {
        try update(template: template, isCancelled: isCancelled) { (ledger: inout NightLedger) throws(RunError) -> Int in
            if let night = ledger.night(on: date) { return night.seq }
            // Checked again under the lock: a later night may have begun meanwhile.
            if let latest = ledger.latest, latest.date > date { throw NightRefusal.outOfOrder(date, latest: latest).error }
            let seq = ledger.highest + 1
            guard seq <= maxSeq else { throw RunError.runtime(NightError.numberBeyond(ledger: ledger.path, max: maxSeq)) }
            ledger.nights.append(NightRecord(date: date, seq: seq, data: data, deliver: deliver))
            return seq
        }
    }

    /// Records `night` as finished, replacing what its date had; a delivered night is never
    /// replaced (the caller never asks; checked here too).
    static func finish(_ night: NightRecord, template: String) throws(RunError) {
        _ = try update(template: template) { (ledger: inout NightLedger) throws(RunError) -> Int in
            if let recorded = ledger.night(on: night.date), recorded.isDelivered || recorded.handing != nil {
                throw RunError.runtime(NightError.deliveredNotRecordedAgain(ledger: ledger.path, date: night.date))
            }
            ledger.nights.removeAll { $0.date == night.date }
            ledger.nights.append(night)
            return night.seq
        }
    }

    /// Records that the night of `date` is being put in place on the server: the rename of its
    /// upload (`handing.part`) was asked for, or is about to be; nil clears it (the rename was
    /// refused, its upload removed).
    static func markHanding(_ date: NightDate, _ handing: NightRecord.Handing?, template: String) throws(RunError) {
        _ = try update(template: template) { (ledger: inout NightLedger) throws(RunError) -> Int in
            guard let index = ledger.nights.lastIndex(where: { $0.date == date }) else {
                throw RunError.runtime(NightError.noNight(ledger: ledger.path, date: date, toRecordDelivered: false))
            }
            guard ledger.nights[index].delivery == nil else {
                throw RunError.runtime(NightError.deliveredNotHandedAgain(ledger: ledger.path, date: date))
            }
            ledger.nights[index].handing = handing
            return 0
        }
    }

    /// Records that the night of `date`'s trigger file is written.
    static func markDone(_ date: NightDate, template: String) throws(RunError) {
        _ = try update(template: template) { (ledger: inout NightLedger) throws(RunError) -> Int in
            guard let index = ledger.nights.lastIndex(where: { $0.date == date }) else { return 0 }
            ledger.nights[index].delivery?.done = true
            return 0
        }
    }

    /// Records the night of `date` as delivered. Returns the ledger's generation then, which the
    /// delivery record beside the file copies.
    @discardableResult
    static func markDelivered(_ date: NightDate, _ delivery: NightRecord.Delivery, template: String) throws(RunError) -> Int {
        try update(template: template) { (ledger: inout NightLedger) throws(RunError) -> Int in
            guard let index = ledger.nights.lastIndex(where: { $0.date == date }) else {
                throw RunError.runtime(NightError.noNight(ledger: ledger.path, date: date, toRecordDelivered: true))
            }
            ledger.nights[index].delivery = delivery
            ledger.nights[index].handing = nil
            return ledger.generation + 1
        }
    }

    /// Records where the audit trail stands now.
    static func anchorAudit(_ anchor: AuditAnchor, template: String) throws(RunError) {
        _ = try update(template: template) { (ledger: inout NightLedger) throws(RunError) -> Int in
            ledger.audit = anchor
            return 0
        }
    }

    /// Replaces the whole ledger (`--rebuild-ledger`, from the records beside the files).
    static func rebuild(_ nights: [NightRecord], generation: Int, template: String) throws(RunError) {
        _ = try update(template: template) { (ledger: inout NightLedger) throws(RunError) -> Int in
            ledger.nights = nights
            ledger.generation = max(ledger.generation, generation)
            ledger.highest = max(ledger.highest, nights.map(\.seq).max() ?? 0)
            return 0
        }
    }

    /// Reads, changes and replaces the state under its lock; returns what `change` returns.
    /// Only `begin` gives the wait up for a signal: the records made after the fact (a night
    /// finished, handed, delivered, done) are what keep it whole and once, so they wait their
    /// bounded 30 s whatever signal comes, and the command ends as interrupted after them.
    private static func update(template: String, isCancelled: () -> Bool = { false },
                               _ change: (inout NightLedger) throws(RunError) -> Int) throws(RunError) -> Int {
        let lockPath = statePath(of: template) + ".lock"
        // Kept, never replaced: a lock on a file another run has just replaced locks nothing.
        var opened = try PrivateFile.openExisting(lockPath, for: lockPath)
        if opened == nil { opened = try PrivateFile.createNew(lockPath, for: lockPath) }
        if opened == nil { opened = try PrivateFile.openExisting(lockPath, for: lockPath) }
        guard let lock = opened else { throw RunError.runtime(FileError(.open, lockPath, cause: .reason("it came and went"))) }
        defer { close(lock) }
        // A lock held by another run is waited for, at most 30 s, and an interrupt ends the wait.
        let deadline = Date().addingTimeInterval(30)
        while flock(lock, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else { throw RunError.runtime(FileError(.lock, lockPath, errno: errno)) }
            if isCancelled() || Date() > deadline {
                throw RunError.runtime(NightError.ledgerLocked(path: lockPath, waited: !isCancelled()))
            }
            usleep(20_000)
        }
        var ledger = try read(template: template)
        let result = try change(&ledger)
        ledger.generation += 1
        ledger.highest = max(ledger.highest, ledger.nights.map(\.seq).max() ?? 0)
        ledger.nights.sort { ($0.seq, $0.date) < ($1.seq, $1.date) }
        if ledger.nights.count > kept { ledger.nights.removeFirst(ledger.nights.count - kept) }
        try PrivateFile.replaceAtomically(ledger.path, with: ledger.encoded, mode: 0o600, syncingFolder: true)
        return result
    }

    // MARK: The file's form

    private var encoded: [UInt8] {
        var bytes: [UInt8] = []
        JSONWriter.append(to: &bytes) { writer in
            writer.object { writer in
                writer.key("showbatch_sequence"); writer.integer(2)
                writer.key("generation"); writer.integer(generation)
                writer.key("highest"); writer.integer(highest)
                if let audit {
                    writer.key("audit")
                    writer.object { writer in
                        writer.key("path"); writer.string(audit.path)
                        writer.key("size"); writer.integer(audit.size)
                        writer.key("last"); writer.string(audit.last)
                    }
                }
                writer.key("nights")
                writer.array { writer in
                    for night in nights { NightLedger.encode(night, &writer) }
                }
            }
        }
        bytes.append(0x0A)
        return bytes
    }

    private static func encode(_ night: NightRecord, _ writer: inout JSONWriter) {
        writer.object { writer in
            writer.key("date"); writer.string(night.date.compact)
            writer.key("seq"); writer.integer(night.seq)
            writer.key("data"); writer.string(night.data)
            writer.key("manifest"); writer.string(night.manifest)
            writer.key("file"); writer.string(night.file)
            writer.key("size"); writer.integer(night.size)
            writer.key("sha256"); writer.string(night.sha256)
            writer.key("finished"); writer.string(night.finished)
            if let rows = night.rows {
                writer.key("rows")
                writer.object { writer in
                    writer.key("data"); writer.integer(rows.data)
                    writer.key("output"); writer.integer(rows.output)
                    writer.key("rejects"); writer.integer(rows.rejects)
                    writer.key("ok"); writer.integer(rows.ok)
                    writer.key("partial"); writer.integer(rows.partial)
                    writer.key("failed"); writer.integer(rows.failed)
                }
            }
            writer.key("complete"); writer.bool(night.complete)
            writer.key("deliver"); writer.bool(night.deliver)
            if let handing = night.handing {
                writer.key("handing")
                writer.object { writer in
                    writer.key("to"); writer.string(handing.to)
                    writer.key("part"); writer.string(handing.part)
                    writer.key("at"); writer.string(handing.at)
                }
            }
            if let delivery = night.delivery {
                writer.key("delivered")
                writer.object { writer in
                    writer.key("to"); writer.string(delivery.to)
                    writer.key("file"); writer.string(delivery.file)
                    writer.key("size"); writer.integer(delivery.size)
                    writer.key("sha256"); writer.string(delivery.sha256)
                    writer.key("at"); writer.string(delivery.at)
                    writer.key("done"); writer.bool(delivery.done)
                    writer.key("by_hand"); writer.bool(delivery.byHand)
                }
            }
        }
    }

    private static func decode(_ item: JSONValue) -> NightRecord? {
        func text(_ value: JSONValue?, _ key: String) -> String? { if case .string(let text)? = value?[key] { return text } else { return nil } }
        func integer(_ value: JSONValue?, _ key: String) -> Int? {
            if case .number(let text)? = value?[key], let number = Int(text), number >= 0 { return number } else { return nil }
        }
        guard let date = text(item, "date").flatMap(NightDate.init(compact:)), let seq = integer(item, "seq"), (1...maxSeq).contains(seq),
              let data = text(item, "data"), let manifest = text(item, "manifest"), let file = text(item, "file"),
              let size = integer(item, "size"), let sha = text(item, "sha256"), let finished = text(item, "finished"),
              case .bool(let complete)? = item["complete"], case .bool(let deliver)? = item["deliver"] else { return nil }
        var night = NightRecord(date: date, seq: seq, data: data, manifest: manifest, file: file, size: size, sha256: sha,
                                finished: finished, complete: complete, deliver: deliver)
        if let rows = item["rows"] {
            guard let dataRows = integer(rows, "data"), let output = integer(rows, "output"), let rejects = integer(rows, "rejects"),
                  let ok = integer(rows, "ok"), let partial = integer(rows, "partial"), let failed = integer(rows, "failed") else { return nil }
            night.rows = NightRecord.NightRows(data: dataRows, output: output, rejects: rejects, ok: ok, partial: partial, failed: failed)
        }
        if let handing = item["handing"] {
            guard let to = text(handing, "to"), let part = text(handing, "part"), let at = text(handing, "at") else { return nil }
            night.handing = NightRecord.Handing(to: to, part: part, at: at)
        }
        if let delivered = item["delivered"] {
            guard let to = text(delivered, "to"), let name = text(delivered, "file"), let size = integer(delivered, "size"),
                  let sha = text(delivered, "sha256"), let at = text(delivered, "at") else { return nil }
            night.delivery = NightRecord.Delivery(to: to, file: name, size: size, sha256: sha, at: at)
            if case .bool(let done)? = delivered["done"] { night.delivery?.done = done }
            if case .bool(let byHand)? = delivered["by_hand"] { night.delivery?.byHand = byHand }
        }
        return night
    }

    /// A night as showbatch's first sequence state kept it: a delivery was only its time.
    private static func decodeVersion1(_ item: JSONValue) -> NightRecord? {
        func text(_ key: String) -> String? { if case .string(let text)? = item[key] { return text } else { return nil } }
        func integer(_ key: String) -> Int? { if case .number(let text)? = item[key] { return Int(text) } else { return nil } }
        guard let date = text("date").flatMap(NightDate.init(compact:)), let seq = integer("seq"), (1...maxSeq).contains(seq),
              let data = text("data"), let name = text("file"), let size = integer("size"), size >= 0, let sha = text("sha256"),
              let finished = text("finished"), case .bool(let complete)? = item["complete"], let delivered = text("delivered") else {
            return nil
        }
        var deliver = false
        if case .bool(let value)? = item["deliver"] { deliver = value }
        var night = NightRecord(date: date, seq: seq, data: data, file: name, size: size, sha256: sha, finished: finished,
                                complete: complete, deliver: deliver)
        if !delivered.isEmpty { night.delivery = NightRecord.Delivery(to: "", file: name, size: size, sha256: sha, at: delivered) }
        return night
    }
}

extension NightRecord {
    /// Whether two data hashes say the same rows: nil when one is of the ordered kind an earlier
    /// showbatch kept, which cannot be compared with a multiset's.
    static func sameRows(_ one: String, _ other: String) -> Bool? {
        if one.isEmpty && other.isEmpty { return true }
        guard one.hasPrefix(Manifest.rowsHashPrefix), other.hasPrefix(Manifest.rowsHashPrefix) else { return nil }
        return one == other
    }
}
