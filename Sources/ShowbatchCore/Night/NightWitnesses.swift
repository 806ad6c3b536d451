import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// What else in an output's folder says which nights it had: the files named for them
/// (`cards-20261201-0003.csv`, the date and number in the name) and the delivery records beside
/// them (`NAME.delivered`, copies of what the ledger said when each was delivered, with the
/// ledger's generation then). None of them decides anything alone; together they catch a ledger
/// that was lost or rolled back, which would number a night anew or send a delivered one again,
/// and they are what `--rebuild-ledger` rebuilds it from.
struct NightWitnesses {
    /// A file named for a night, and the delivery record beside it, if any.
    struct Witness {
        var file: String
        var date: NightDate?
        var seq: Int?
        var record: DeliveryRecord?
    }

    let template: String
    let folder: String
    private(set) var witnesses: [Witness] = []

    /// The night-named files in the folder of the output named by `template`.
    init(template: String) throws(RunError) {
        self.template = template
        let parent = (template as NSString).deletingLastPathComponent
        folder = parent.isEmpty ? "." : parent
        guard let pattern = NightWitnesses.pattern(of: (template as NSString).lastPathComponent),
              let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return }
        var byFile: [String: Witness] = [:]
        for name in names.sorted() {
            let isRecord = name.hasSuffix(SideFile.delivered.rawValue)
            let file = isRecord ? String(name.dropLast(SideFile.delivered.rawValue.count)) : name
            guard let (date, seq) = NightWitnesses.night(in: file, pattern) else { continue }
            var witness = byFile[file] ?? Witness(file: file, date: date, seq: seq)
            if isRecord { witness.record = try DeliveryRecord.read(folder + "/" + name) }
            byFile[file] = witness
        }
        witnesses = byFile.values.sorted { $0.file < $1.file }
    }

    /// Refuses (exit 3) a ledger the files beside it contradict: missing although nights were
    /// written, older than a delivery record, saying undelivered a night a record says delivered,
    /// or numbering lower than a file's number.
    func check(_ ledger: NightLedger) throws(RunError) {
        for witness in witnesses {
            let record = witness.record
            if ledger.isNew {
                throw RunError.runtime(NightError.ledgerMissing(ledger: ledger.path, template: template, witness: "\(folder)/\(witness.file)", isDeliveryRecord: record != nil))
            }
            if let record, record.generation > ledger.generation {
                throw RunError.runtime(NightError.ledgerOlder(ledger: ledger.path, record: "\(folder)/\(witness.file).delivered", ledgerGeneration: ledger.generation, recordGeneration: record.generation))
            }
            if let record, let date = witness.date ?? record.date, let night = ledger.night(on: date), !night.isDelivered, night.seq == (witness.seq ?? night.seq) {
                throw RunError.runtime(NightError.ledgerSaysUndelivered(ledger: ledger.path, date: date, record: "\(folder)/\(witness.file).delivered", to: record.to, at: record.delivered))
            }
            if let seq = witness.seq, seq > ledger.highest {
                throw RunError.runtime(NightError.ledgerNumbersLower(ledger: ledger.path, highest: ledger.highest, file: "\(folder)/\(witness.file)", seq: seq))
            }
        }
    }

    /// The nights the files and records say, for `--rebuild-ledger`: each record's night
    /// delivered, each file's finished (not complete, so that the next run writes it again
    /// whole rather than deliver what no ledger vouched for). Refused when there is nothing.
    func rebuilt(over ledger: NightLedger) throws(RunError) -> (nights: [NightRecord], generation: Int) {
        guard !witnesses.isEmpty else {
            throw RunError.usage(NightError.nothingToRebuild(template: template))
        }
        var nights = ledger.nights
        var generation = ledger.generation
        for witness in witnesses {
            guard let date = witness.date ?? witness.record?.date else { continue }
            let seq = witness.seq ?? witness.record?.seq ?? 0
            guard seq > 0 else { continue }
            let path = folder + "/" + witness.file
            var night = nights.last { $0.date == date } ?? NightRecord(date: date, seq: seq, data: "")
            night.seq = seq
            night.file = witness.file
            if case .regular = PrivateFile.inspect(path), let digest = try? FileDigest.of(path) {
                if night.sha256 != digest.sha256 { night.complete = false }
                night.size = digest.size
                night.sha256 = digest.sha256
                if night.finished.isEmpty { night.finished = Timestamp.rfc3339() }
            }
            if let record = witness.record {
                night.delivery = NightRecord.Delivery(to: record.to, file: record.file, size: record.size, sha256: record.sha256,
                                                      at: record.delivered)
                night.handing = nil
                if night.sha256.isEmpty { (night.size, night.sha256) = (record.size, record.sha256) }
                if night.finished.isEmpty { night.finished = record.delivered }
                night.deliver = true
                generation = max(generation, record.generation)
            }
            nights.removeAll { $0.date == date }
            nights.append(night)
        }
        return (nights, generation)
    }

    /// A regular expression of a night-named file name: each `${run.date}` eight digits, each
    /// `${run.seq…}` digits; nil when the name names no night.
    static func pattern(of name: String) -> NSRegularExpression? {
        var regex = "^"
        var last = name.startIndex
        var named: Set<String> = []
        for (range, reference) in NightName.references(in: name) {
            regex += NSRegularExpression.escapedPattern(for: String(name[last..<range.lowerBound]))
            // A reference written twice is captured once.
            func group(_ key: String) -> String { named.insert(key).inserted ? "?<\(key)>" : "?:" }
            switch reference {
            case .success(.date): regex += "(\(group("date"))[0-9]{8})"
            case .success(.seq(let width)): regex += "(\(group("seq"))[0-9]\(width == 0 ? "+" : "{\(width),}"))"
            case .failure: return nil
            }
            last = range.upperBound
        }
        regex += NSRegularExpression.escapedPattern(for: String(name[last...])) + "$"
        return try? NSRegularExpression(pattern: regex)
    }

    /// The night a file name says (its date and number, where the name has them); nil when the
    /// name is not of this pattern.
    static func night(in name: String, _ pattern: NSRegularExpression) -> (NightDate?, Int?)? {
        let range = NSRange(name.startIndex..., in: name)
        guard let match = pattern.firstMatch(in: name, range: range) else { return nil }
        func group(_ key: String) -> String? {
            let found = match.range(withName: key)
            guard found.location != NSNotFound, let text = Range(found, in: name) else { return nil }
            return String(name[text])
        }
        return (group("date").flatMap(NightDate.init(compact:)), group("seq").flatMap { Int($0) })
    }
}
