import Foundation
import ShowbatchBasics
import ShowbatchManifest
#if canImport(Glibc)
import Glibc
#endif

/// The nights an output whose name holds `${run.date}` or `${run.seq}` has had: which number
/// each date got, the hash of its data files and of the file written. Kept in the output's
/// folder (the volume that outlives a pod) as `.NAME.sequence`, replaced atomically, mode 0600,
/// never through a link, under a lock on the folder while it is changed.
struct NightLedger: Equatable {
    /// One night written for the output.
    struct Night: Equatable {
        var date: NightDate
        var seq: Int
        /// The FNV-1a of the run's data files, in hex: a night sent again is seen by it.
        var data: String
        /// The file's name that night.
        var file: String
        var size: Int
        var sha256: String
        /// When it was put in place (RFC 3339).
        var finished: String
    }

    /// Nights kept: enough to see a repeat of any of the last month's, twice over.
    static let kept = 62

    /// The state's path, in the folder of the output named by `template`.
    let path: String
    /// Oldest first.
    private(set) var nights: [Night] = []

    /// The state of the output named by `template` (a path with `${run.…}`); empty when there is
    /// none yet. One that cannot be read stops the run: it holds the numbers, which are never
    /// guessed.
    static func read(template: String) throws(RunError) -> NightLedger {
        let folder = (template as NSString).deletingLastPathComponent
        let path = (folder.isEmpty ? "" : folder + "/") + NightName.stateName(of: template)
        var ledger = NightLedger(path: path)
        let opened: FileDescriptor?
        do { opened = try FileDescriptor.openOwn(path) } catch { throw ledger.unreadable(error.reason) }
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
            guard let date = text("date").flatMap(NightDate.init(compact:)), let seq = integer("seq"), seq >= 1,
                  let data = text("data"), let name = text("file"), let size = integer("size"), let sha = text("sha256"),
                  let finished = text("finished") else {
                throw ledger.unreadable("a night in it is not whole")
            }
            ledger.nights.append(Night(date: date, seq: seq, data: data, file: name, size: size, sha256: sha, finished: finished))
        }
        return ledger
    }

    private func unreadable(_ reason: String) -> RunError {
        .runtime("cannot read \(path), which keeps the sequence numbers of the output's nights: \(reason); the run does not guess a number")
    }

    /// The night recorded for `date`.
    func night(on date: NightDate) -> Night? { nights.last { $0.date == date } }

    /// The number `date` has: its own when recorded, else one more than the last.
    func number(for date: NightDate) -> Int {
        night(on: date)?.seq ?? (nights.map(\.seq).max() ?? 0) + 1
    }

    /// A night of another date whose data files hashed the same.
    func repeatOf(_ date: NightDate, data: String) -> Night? {
        nights.last { $0.date != date && $0.data == data }
    }

    /// Records `night` (replacing what its date had) in the state of `template`, under a lock on
    /// the folder, so that two runs of other nights recording at once both keep theirs.
    static func record(_ night: Night, template: String) throws(RunError) {
        let folder = (template as NSString).deletingLastPathComponent
        let lock = open(folder.isEmpty ? "." : folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard lock >= 0 else { throw RunError.runtime("cannot lock \(folder) to record the night: \(describeErrno(errno))") }
        defer { close(lock) }
        while flock(lock, LOCK_EX) != 0 {
            guard errno == EINTR else { throw RunError.runtime("cannot lock \(folder) to record the night: \(describeErrno(errno))") }
        }
        var ledger = try read(template: template)
        ledger.nights.removeAll { $0.date == night.date }
        ledger.nights.append(night)
        ledger.nights.sort { ($0.seq, $0.date) < ($1.seq, $1.date) }
        if ledger.nights.count > kept { ledger.nights.removeFirst(ledger.nights.count - kept) }
        try PrivateFile.replaceAtomically(ledger.path, with: ledger.encoded, mode: 0o600)
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

    /// The number this night has for the output named by `template` (1 for one that names no night).
    func number(of template: String) -> Int { ledgers[template]?.number(for: date) ?? 1 }

    /// `path` (the output's, or its rejects file's) with this night filled in, numbered as the
    /// output named by `template`.
    func expand(_ path: String, template: String) -> String {
        NightName.expand(path, date: date, seq: number(of: template))
    }

    /// The first output whose nights hold another date with these data files: the export
    /// upstream did not run, and yesterday's rows would be sent again.
    func repeated(data: String) -> (template: String, night: NightLedger.Night)? {
        for (template, ledger) in ledgers.sorted(by: { $0.key < $1.key }) {
            if let night = ledger.repeatOf(date, data: data) { return (template, night) }
        }
        return nil
    }
}
