import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// The ledgers of a manifest's night-named outputs (those whose path holds `${run.date}` or
/// `${run.seq}`), read once for a command's `Night`, and the number the night has for each.
/// What a command does with each output's night is `NightDecision`'s; this gathers what it
/// decides from and carries out the beginning of a night.
struct NightBook {
    let night: Night
    /// By output template (the path as the manifest gives it).
    private(set) var ledgers: [String: NightLedger] = [:]
    /// Numbers taken by `begin`, by template.
    private var begun: [String: Int] = [:]

    /// The ledgers of `manifest`'s night-named outputs, each checked against the files and
    /// delivery records beside it (`NightWitnesses`: a ledger lost or rolled back is refused, exit
    /// 3); with `rebuild` (`--rebuild-ledger`), rebuilt from them first.
    init(manifest: Manifest, night: Night, rebuild: Bool = false) throws(RunError) {
        self.night = night
        for spec in manifest.nightNamedOutputs where ledgers[spec.path] == nil {
            let witnesses = try NightWitnesses(template: spec.path)
            if rebuild {
                let (nights, generation) = try witnesses.rebuilt(over: try NightLedger.read(template: spec.path))
                try NightLedger.rebuild(nights, generation: generation, template: spec.path)
            }
            let ledger = try NightLedger.read(template: spec.path)
            try witnesses.check(ledger)
            ledgers[spec.path] = ledger
        }
    }

    var date: NightDate { night.date }

    /// No output names the night.
    var isEmpty: Bool { ledgers.isEmpty }

    /// The templates, in one order.
    var templates: [String] { ledgers.keys.sorted() }

    /// The number this night has for the output named by `template`: its own, or the one it
    /// would take (1 for an output that names no night).
    func number(of template: String) -> Int { begun[template] ?? ledgers[template]?.number(for: date) ?? 1 }

    /// `path` (the output's, or its rejects file's) with this night filled in, numbered as the
    /// output named by `template`.
    func expand(_ path: String, template: String) -> String {
        NightName.expand(path, date: date, seq: number(of: template))
    }

    /// The night of this date the output named by `template` has recorded (or begun).
    func record(of template: String) -> NightRecord? { ledgers[template]?.night(on: date) }

    /// What is known of the output's night, for `NightDecision`: its ledger's records, and its
    /// files as the record names them (a shard's: the merged file's).
    func facts(of template: String, data: String, manifest: String, shard: Shard?) -> NightFacts {
        let ledger = ledgers[template]
        let record = ledger?.night(on: date)
        var facts = NightFacts(night: night, record: record, latest: ledger?.latest,
                               repeatOf: record == nil && !data.isEmpty ? ledger?.repeatOf(date, data: data) : nil,
                               data: data, manifest: manifest)
        guard let record, record.isFinished else { return facts }
        let folder = (template as NSString).deletingLastPathComponent
        let file = (folder.isEmpty ? "" : folder + "/") + record.file
        if case .regular = PrivateFile.inspect(file), let digest = try? FileDigest.of(file), digest.sha256 == record.sha256 {
            facts.fileAsRecorded = true
        }
        if shard == nil {
            facts.leftovers = [SideFile.journal, .partial, .journalNext].contains { PrivateFile.inspect($0.of(file)) != .none }
        }
        return facts
    }

    /// Begins this night for every output, under each ledger's lock, as a run that writes the
    /// night starts sending: two runs of other nights never take one number, and an interrupted
    /// night keeps its number for the run that goes on with it. `delivered`: the templates of
    /// outputs with `output.deliver`. Returns whether a number differs from the one planned.
    mutating func begin(data: String, delivered: Set<String> = [], isCancelled: () -> Bool) throws(RunError) -> Bool {
        var changed = false
        for template in templates {
            let planned = number(of: template)
            begun[template] = try NightLedger.begin(date, data: data, template: template, deliver: delivered.contains(template),
                                                    isCancelled: isCancelled)
            ledgers[template] = try NightLedger.read(template: template)
            if begun[template] != planned { changed = true }
        }
        return changed
    }
}

extension Manifest {
    /// The outputs whose path names the night (`${run.date}`, `${run.seq}`).
    var nightNamedOutputs: [OutputSpec] {
        ([output] + requests.map(\.output)).compactMap { $0 }.filter { NightName.names($0.path) }
    }
}
