import Foundation
import ShowbatchBasics
import ShowbatchManifest
#if canImport(Glibc)
import Glibc
#endif

/// A copy, beside an output, of what its night's ledger says of its delivery: the file, where,
/// which bytes, when, and the ledger's generation then. Never the authority (the ledger is); a
/// record that the ledger contradicts says the ledger was lost or rolled back (`NightWitnesses`).
struct DeliveryRecord: Equatable {
    /// The file's name on the server.
    var file: String
    /// The folder's URL (no credentials).
    var to: String
    var size: Int
    var sha256: String
    /// When it was put in place on the server (RFC 3339).
    var delivered: String
    /// The generation of the night's ledger that recorded it: a ledger older than that was
    /// rolled back.
    var generation = 0
    /// The night and its number.
    var date: NightDate?
    var seq = 0

    /// The record beside `output`: nil when there is none.
    static func read(beside output: String) throws(RunError) -> DeliveryRecord? {
        try read(SideFile.delivered.of(output))
    }

    /// The record at `path`: nil when there is none.
    static func read(_ path: String) throws(RunError) -> DeliveryRecord? {
        let opened: FileDescriptor?
        do { opened = try FileDescriptor.openOwn(path) } catch { throw RunError.runtime(DeliveryError.recordUnreadable(path: path, reason: error.reason)) }
        guard let file = opened else { return nil }
        guard let bytes = try? file.readAll(limit: 1 << 16), let value = try? JSONParser.parse(bytes),
              case .number("1")? = value["showbatch_delivery"] else {
            throw RunError.runtime(DeliveryError.recordOfAnotherVersion(path: path))
        }
        func text(_ key: String) -> String? { if case .string(let text)? = value[key] { return text } else { return nil } }
        func integer(_ key: String) -> Int? { if case .number(let text)? = value[key] { return Int(text) } else { return nil } }
        guard let name = text("file"), let to = text("to"), let size = integer("size"), let sha = text("sha256"), let when = text("delivered") else {
            throw RunError.runtime(DeliveryError.recordNotWhole(path: path))
        }
        return DeliveryRecord(file: name, to: to, size: size, sha256: sha, delivered: when, generation: integer("generation") ?? 0,
                              date: text("date").flatMap(NightDate.init(compact:)), seq: integer("seq") ?? 0)
    }

    /// Writes it beside `output` at once, mode 0600, never through a link.
    func write(beside output: String) throws(RunError) {
        var bytes: [UInt8] = []
        JSONWriter.append(to: &bytes) { writer in
            writer.object { writer in
                writer.key("showbatch_delivery"); writer.integer(1)
                writer.key("file"); writer.string(file)
                writer.key("to"); writer.string(to)
                writer.key("size"); writer.integer(size)
                writer.key("sha256"); writer.string(sha256)
                writer.key("delivered"); writer.string(delivered)
                writer.key("generation"); writer.integer(generation)
                if let date { writer.key("date"); writer.string(date.compact) }
                writer.key("seq"); writer.integer(seq)
            }
        }
        bytes.append(0x0A)
        try PrivateFile.replaceAtomically(SideFile.delivered.of(output), with: bytes, mode: 0o600, syncingFolder: true)
    }
}

/// How one output's delivery ended.
package struct DeliveryOutcome: Sendable, Equatable {
    package enum Result: Sendable, Equatable {
        /// Uploaded and put in place by this run.
        case delivered
        /// An earlier run delivered these bytes (its record says when).
        case already(String)
        /// The file was on the server under its name with its size (a run stopped after the
        /// rename): recorded, not uploaded again.
        case found
        /// Recorded as delivered by a person who checked with the processor (`--mark-delivered`).
        case markedDelivered
        /// Not delivered, for a reason a later try may not have (a server down or stalled): why.
        /// The output is kept, and the next run delivers it.
        case failed(String)
        /// Not delivered, for a reason only a person fixes (a host key refused, a login refused, no
        /// permission, a full disk, another file under the name, a hand-over whose outcome cannot
        /// be known): why, and what to run once it is fixed. Trying again changes nothing.
        case refused(String)

        /// Not delivered.
        package var isFailure: Bool {
            switch self {
            case .failed, .refused: return true
            case .delivered, .already, .found, .markedDelivered: return false
            }
        }
    }

    /// The output on this machine.
    package var path: String
    /// Where it is on the server (`sftp://host/folder/name`).
    package var destination: String
    package var size: Int
    package var result: Result
    /// A signal cut it short (it is `.failed`): it ended an operation on the server or a wait to
    /// try again, or kept a try from being made.
    package var interrupted = false
}

extension [DeliveryOutcome] {
    /// Whether a signal cut one of these deliveries short: the command that made them (`run`,
    /// `merge` or `deliver`) then ends as interrupted (130), the night kept for the next try. A
    /// signal that came when no delivery was left to cut short interrupted none: a night
    /// delivered whole is delivered, whenever a signal comes.
    package var cutShort: Bool { contains(where: \.interrupted) }
}

/// What a delivery does next for a night, from its ledger record and (once listed) the upload
/// folder: a pure function, so that each case is table-tested and the night's model test drives it.
enum DeliveryStep: Equatable {
    /// The ledger says it was delivered, its trigger file written: nothing to do.
    case already(String)
    /// Delivered, its trigger file not written yet: only the trigger.
    case trigger
    /// The final name holds our file (the rename was done, its answer lost): recorded, nothing sent.
    case found
    /// A file of our size is under the name, and no hand-over of ours is recorded: read it back.
    case readBack
    /// Our upload is whole under its temporary name and the rename's answer was lost: rename it.
    case rename(part: String)
    /// Nothing of ours is there: leftovers removed, uploaded, renamed.
    case upload
    /// Only a person can decide: why.
    case refuse(String)

    /// `record`: the night's ledger record; `size`: the file's; `name`: its name on the server;
    /// `server`: the folder's entries of interest (nil before it is listed).
    /// `url` is where `name` is, as messages say it; `manifest` names the commands a person runs
    /// once they know.
    static func next(_ record: NightRecord, size: Int, name: String, server: [String: RemoteEntry]?, url: String? = nil,
                     manifest: String = "MANIFEST") -> DeliveryStep {
        let url = url ?? name
        if let delivery = record.delivery { return delivery.done ? .already(delivery.at) : .trigger }
        guard let server else { return .upload }
        if let final = server[name] {
            guard final.kind == .regular else {
                return .refuse("\(url) is on the server and is not a regular file (a link or a folder): it is not replaced, and nothing is written through it")
            }
            guard final.size == size else {
                return .refuse("\(url) is on the server already, and is not this file (\(final.size) bytes, not these \(size)): it is not replaced (the processor may have a file of another run under this name)")
            }
            return record.handing != nil ? .found : .readBack
        }
        guard let handing = record.handing else { return .upload }
        if let part = server[handing.part], part.kind == .regular, part.size == size { return .rename(part: handing.part) }
        let command = "showbatch deliver \(manifest) --date \(record.date)"
        return .refuse("the night of \(record.date) (sequence \(record.seq)) was being renamed into place on the server at \(handing.at), and neither \(name) nor its upload \(handing.part) is there now: the processor may have taken it, and sending it again could give it to them twice. Ask the processor: if they have it, record it (\(command) --mark-delivered); if not, send it again (\(command) --send-again)")
    }
}

/// Puts a finished output on the processor's SFTP server once. The rename is the hand-over:
/// the file is uploaded under a temporary name no one else knows (`.NAME.<random>.part`), its
/// size and kind checked in the folder's listing, the rename recorded in the night's ledger as
/// asked for, then done; once the server says it is done the night is recorded delivered at once,
/// and the final name is never opened again. A run stopped anywhere between is settled by the
/// next from the ledger and the listing (`DeliveryStep`), never by sending again what may be
/// at the processor's.
enum Deliverer {
    /// Delivers `path` (a finished output of the night `night`) as `spec` says, retrying what
    /// `retry` retries with its backoff; `isCancelled` is asked while anything waits.
    static func deliver(_ path: String, spec: DeliverSpec, night: NightTarget, manifest: String, retry: RetryPolicy, timeout: Duration,
                        note: (String) -> Void, isCancelled: @escaping () -> Bool = { false }) -> DeliveryOutcome {
        let name = (path as NSString).lastPathComponent
        var outcome = DeliveryOutcome(path: path, destination: spec.destination.url(of: name), size: 0, result: .delivered)
        let digest: FileDigest
        do throws(RunError) {
            digest = try FileDigest.of(path)
            outcome.size = digest.size
            guard let record = try NightLedger.read(template: night.template).night(on: night.date) else {
                outcome.result = .refused("the ledger has no night of \(night.date) for \(path): nothing is delivered that it does not record")
                return outcome
            }
            if case .already(let at) = DeliveryStep.next(record, size: digest.size, name: name, server: nil) {
                outcome.result = .already(at)
                return outcome
            }
            if let delivered = record.delivery, delivered.sha256 != digest.sha256 {
                outcome.result = .refused("\(path) was delivered\(record.deliveredWhere) at \(delivered.at) and has changed since; a processor takes a night's file once, so it is not sent again")
                return outcome
            }
        } catch {
            outcome.result = .failed(error.description)
            return outcome
        }
        var random = SeededGenerator(seed: UInt64(digest.size))
        var attempt = 1
        while true {
            do throws(DeliveryFailure) {
                let hand = Hand(path: path, name: name, digest: digest, spec: spec, night: night, manifest: manifest, timeout: timeout,
                                isCancelled: isCancelled)
                outcome.result = try hand.over()
                return outcome
            } catch {
                switch error.kind {
                case .person:
                    outcome.result = .refused(error.message)
                    return outcome
                case .interrupted:
                    outcome.result = .failed(error.message)
                    outcome.interrupted = true
                    return outcome
                case .retry:
                    guard retry.network && attempt < retry.attempts else {
                        outcome.result = .failed(error.message)
                        return outcome
                    }
                    // A try a signal keeps from being made is a delivery cut short.
                    guard !isCancelled() else {
                        outcome.result = .failed(error.message)
                        outcome.interrupted = true
                        return outcome
                    }
                }
                let wait = retry.backoff.delay(after: attempt, random: &random)
                note("delivering \(path) failed (\(error.message)); trying again in \(Units.text(wait)) (attempt \(attempt + 1) of \(retry.attempts))")
                // In slices: an interrupt ends the wait.
                let until = Date().addingTimeInterval(wait.seconds)
                while Date() < until && !isCancelled() { Thread.sleep(forTimeInterval: min(0.05, max(0, until.timeIntervalSinceNow))) }
                if isCancelled() {
                    outcome.result = .failed("interrupted while waiting to try again (\(error.message))")
                    outcome.interrupted = true
                    return outcome
                }
                attempt += 1
            }
        }
    }

    /// One try at the hand-over of one file, on one SSH session.
    private struct Hand {
        let path: String
        let name: String
        let digest: FileDigest
        let spec: DeliverSpec
        let night: NightTarget
        let manifest: String
        let timeout: Duration
        let isCancelled: () -> Bool

        /// The names of the folder this file's hand-over looks at: its own, its trigger's, and
        /// every temporary name of it (killed uploads leave theirs).
        private func concerns(_ entry: String) -> Bool {
            entry == name || entry == doneName || (entry.hasPrefix("." + name + ".") && entry.hasSuffix(".part"))
        }

        private var doneName: String? { spec.doneName(file: name, date: night.date, seq: night.seq) }

        func over() throws(DeliveryFailure) -> DeliveryOutcome.Result {
            if let doneName, doneName == name || (doneName.hasPrefix("." + name + ".") && doneName.hasSuffix(".part")) {
                throw DeliveryFailure("deliver.done names \(doneName), the delivered file itself: the empty trigger file would replace it on the server; give it a name of its own", .person)
            }
            let client = try SFTPClient(spec: spec, timeout: timeout, isCancelled: isCancelled)
            let record = try ledgerRecord()
            let server = try client.list(concerns)
            switch DeliveryStep.next(record, size: digest.size, name: name, server: server, url: spec.destination.url(of: name), manifest: manifest) {
            case .already(let at):
                return .already(at)
            case .trigger:
                try writeDone(client)
                return .already(record.deliveredAt)
            case .found:
                try recordDelivered(client)
                return .found
            case .readBack:
                guard try client.digest(of: name) == digest else {
                    throw DeliveryFailure("\(spec.destination.url(of: name)) is on the server already, and is not this file (\(digest.size) bytes, not these \(digest.size) of another SHA-256): it is not replaced (the processor may have a file of another run under this name)", .person)
                }
                try recordDelivered(client)
                return .found
            case .refuse(let why):
                throw DeliveryFailure(why, .person)
            case .rename(let part):
                return try rename(part, client)
            case .upload:
                // What earlier tries left (a link planted there included) goes first, never followed.
                for leftover in server.keys.sorted() where leftover != name && leftover != doneName {
                    try client.remove(leftover)
                }
                let part = "." + name + "." + RunOptions.newRunID() + ".part"
                let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
                guard fd >= 0 else { throw DeliveryFailure("cannot read \(path): \(describeErrno(errno))", .person) }
                defer { close(fd) }
                do throws(DeliveryFailure) {
                    try client.upload(fd, size: digest.size, as: part)
                } catch {
                    // Whatever part of it is there is removed (a full disk keeps no half file).
                    if error.kind != .interrupted { try? client.remove(part) }
                    throw error
                }
                // The upload is checked in the listing before it is handed over: a regular file of its size.
                let uploaded = try client.list { $0 == part }[part]
                guard let uploaded, uploaded.kind == .regular, uploaded.size == digest.size else {
                    try? client.remove(part)
                    throw DeliveryFailure("\(part) is \(uploaded.map { $0.kind == .regular ? "\($0.size) bytes" : "not a regular file" } ?? "not") on the server after the upload, not \(digest.size) bytes: the upload was cut short or replaced; it is removed", .retry)
                }
                return try rename(part, client)
            }
        }

        /// The rename, the hand-over: recorded as asked for first, so that a run stopped before
        /// its answer is settled by the next, never sent again.
        private func rename(_ part: String, _ client: SFTPClient) throws(DeliveryFailure) -> DeliveryOutcome.Result {
            try ledger { () throws(RunError) in
                try NightLedger.markHanding(night.date, NightRecord.Handing(to: spec.destination.description, part: part, at: Timestamp.rfc3339()),
                                            template: night.template)
            }
            do throws(DeliveryFailure) {
                try client.rename(part, to: name)
            } catch {
                // No answer (a stall, a dropped session, a signal): the server may still do it, so
                // the hand-over stays recorded and the next try or run settles it from the folder.
                guard error.kind == .person else { throw error }
                // The server answered no: what happened is what the folder shows now.
                let server = try client.list(concerns)
                switch DeliveryStep.next(try ledgerRecord(), size: digest.size, name: name, server: server, url: spec.destination.url(of: name), manifest: manifest) {
                case .found:
                    try recordDelivered(client)
                    return .delivered
                case .rename:
                    // Refused, and the upload still there: it goes, and so does the hand-over's record.
                    try? client.remove(part)
                    try ledger { () throws(RunError) in try NightLedger.markHanding(night.date, nil, template: night.template) }
                    throw error
                case .refuse(let why):
                    throw DeliveryFailure(why, .person)
                default:
                    throw error
                }
            }
            try recordDelivered(client)
            return .delivered
        }

        /// The night is delivered: the ledger says so at once, then a copy beside the file, then
        /// the trigger file.
        private func recordDelivered(_ client: SFTPClient) throws(DeliveryFailure) {
            let delivery = NightRecord.Delivery(to: spec.destination.description, file: name, size: digest.size, sha256: digest.sha256,
                                                at: Timestamp.rfc3339(), done: doneName == nil)
            let generation = try ledger { () throws(RunError) -> Int in try NightLedger.markDelivered(night.date, delivery, template: night.template) }
            try ledger { () throws(RunError) in
                try DeliveryRecord(file: name, to: delivery.to, size: delivery.size, sha256: delivery.sha256, delivered: delivery.at,
                                   generation: generation, date: night.date, seq: night.seq).write(beside: path)
            }
            try writeDone(client)
        }

        /// The trigger file, written once the file is in place (empty: its name is what it says);
        /// what is under its name (a link) is removed first, never written through.
        private func writeDone(_ client: SFTPClient) throws(DeliveryFailure) {
            guard let done = doneName else { return }
            try client.remove(done)
            let empty = open("/dev/null", O_RDONLY | O_CLOEXEC)
            defer { close(empty) }
            try client.upload(empty, size: 0, as: done)
            try ledger { () throws(RunError) in try NightLedger.markDone(night.date, template: night.template) }
        }

        private func ledgerRecord() throws(DeliveryFailure) -> NightRecord {
            let record = try ledger { () throws(RunError) -> NightRecord? in try NightLedger.read(template: night.template).night(on: night.date) }
            guard let record else { throw DeliveryFailure("the ledger has no night of \(night.date) any more", .person) }
            return record
        }

        /// A ledger that cannot be read or written stops the hand-over: only a person fixes it.
        private func ledger<T>(_ body: () throws(RunError) -> T) throws(DeliveryFailure) -> T {
            do { return try body() } catch { throw DeliveryFailure(error.description, .person) }
        }
    }
}

extension Deliverer {
    /// Delivers `path`, the night `night` of its output, after each earlier night of that output
    /// that is to be delivered and is not yet, in their order: a processor rejects a gap in the
    /// sequence. An earlier night that cannot go (not finished, rows not ok beyond `max_failed`,
    /// its file gone or changed, its delivery failing) holds this one back, and this one's
    /// failure says why. The outcomes, earlier nights first; `manifest` names the commands that
    /// fix an earlier night.
    static func deliverInOrder(_ path: String, spec: DeliverSpec, night: NightTarget, manifest: String, retry: RetryPolicy,
                               timeout: Duration, note: (String) -> Void, isCancelled: @escaping () -> Bool = { false }) -> [DeliveryOutcome] {
        let name = (path as NSString).lastPathComponent
        var outcomes: [DeliveryOutcome] = []
        func heldBack(_ earlier: NightRecord, _ reason: String, person: Bool = false) -> [DeliveryOutcome] {
            let why = "the night of \(earlier.date) (sequence \(earlier.seq)) comes before it and \(reason); a processor rejects a gap in the sequence, so this night is delivered after it"
            return outcomes + [DeliveryOutcome(path: path, destination: spec.destination.url(of: name), size: 0, result: person ? .refused(why) : .failed(why))]
        }
        let ledger: NightLedger
        do {
            ledger = try NightLedger.read(template: night.template)
        } catch {
            return [DeliveryOutcome(path: path, destination: spec.destination.url(of: name), size: 0, result: .failed(error.description))]
        }
        let folder = (path as NSString).deletingLastPathComponent
        for earlier in ledger.undelivered(before: night.seq) {
            let rerun = "showbatch run \(manifest) --date \(earlier.date)"
            guard earlier.isFinished else { return heldBack(earlier, "was begun and never finished (finish it: \(rerun) --resume)") }
            guard earlier.complete else { return heldBack(earlier, "has rows not ok beyond max_failed: \(NightRecord.fix(earlier, manifest: manifest))") }
            let earlierPath = folder.isEmpty ? earlier.file : folder + "/" + earlier.file
            guard case .regular = PrivateFile.inspect(earlierPath), let digest = try? FileDigest.of(earlierPath), digest.sha256 == earlier.sha256 else {
                return heldBack(earlier, "its file \(earlierPath) is gone or changed since it was finished (\(rerun) writes it again)")
            }
            let outcome = deliver(earlierPath, spec: spec, night: NightTarget(template: night.template, date: earlier.date, seq: earlier.seq, records: true),
                                  manifest: manifest, retry: retry, timeout: timeout, note: note, isCancelled: isCancelled)
            outcomes.append(outcome)
            if case .refused = outcome.result { return heldBack(earlier, "could not be delivered", person: true) }
            if outcome.result.isFailure { return heldBack(earlier, "could not be delivered") }
        }
        return outcomes + [deliver(path, spec: spec, night: night, manifest: manifest, retry: retry, timeout: timeout, note: note,
                                   isCancelled: isCancelled)]
    }
}

extension Redactor {
    /// `outcome` with a failure's message cleared of the run's secrets.
    func redacted(_ outcome: DeliveryOutcome) -> DeliveryOutcome {
        var outcome = outcome
        switch outcome.result {
        case .failed(let message): outcome.result = .failed(redact(message))
        case .refused(let message): outcome.result = .refused(redact(message))
        default: break
        }
        return outcome
    }
}
