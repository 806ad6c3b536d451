import Foundation
import ShowbatchBasics
import ShowbatchManifest
#if canImport(Glibc)
import Glibc
#endif

/// What a delivery record beside an output says: the file was uploaded, when, where, and which
/// bytes. A rerun of a delivered night delivers nothing.
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

    /// The record beside `output`: nil when there is none.
    static func read(beside output: String) throws(RunError) -> DeliveryRecord? {
        let path = SideFile.delivered.of(output)
        let opened: FileDescriptor?
        do { opened = try FileDescriptor.openOwn(path) } catch { throw RunError.runtime("cannot read \(path), the record of \(output)'s delivery: \(error.reason)") }
        guard let file = opened else { return nil }
        guard let bytes = try? file.readAll(limit: 1 << 16), let value = try? JSONParser.parse(bytes),
              case .number("1")? = value["showbatch_delivery"] else {
            throw RunError.runtime("\(path) is not a delivery record of this version of showbatch")
        }
        func text(_ key: String) -> String? { if case .string(let text)? = value[key] { return text } else { return nil } }
        guard let name = text("file"), let to = text("to"), case .number(let sizeText)? = value["size"], let size = Int(sizeText),
              let sha = text("sha256"), let when = text("delivered") else {
            throw RunError.runtime("\(path) is not a whole delivery record")
        }
        var generation = 0
        if case .number(let text)? = value["generation"], let number = Int(text) { generation = number }
        return DeliveryRecord(file: name, to: to, size: size, sha256: sha, delivered: when, generation: generation)
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
            }
        }
        bytes.append(0x0A)
        try PrivateFile.replaceAtomically(SideFile.delivered.of(output), with: bytes, mode: 0o600)
    }
}

/// How one output's delivery ended.
package struct DeliveryOutcome: Sendable, Equatable {
    package enum Result: Sendable, Equatable {
        /// Uploaded and put in place by this run.
        case delivered
        /// An earlier run delivered these bytes (its record says when).
        case already(String)
        /// The file was on the server under its name with its size (a run killed after the
        /// rename): recorded, not uploaded again.
        case found
        /// Not delivered: why. The output is kept, and the next run delivers it.
        case failed(String)
    }

    /// The output on this machine.
    package var path: String
    /// Where it is on the server (`sftp://host/folder/name`).
    package var destination: String
    package var size: Int
    package var result: Result
}

/// Puts a finished output on the processor's SFTP server once: under a temporary name
/// (`.NAME.part`), its size checked, then renamed to its own name, and a trigger file after it
/// when `done` says so; then a record beside the output. Each step can be repeated after a
/// crash: a file already in place under its name with its size is taken as delivered.
enum Deliverer {
    /// Delivers `path` (a finished output of the night `night`) as `spec` says, retrying what
    /// `retry` retries with its backoff; `isCancelled` is asked between attempts.
    static func deliver(_ path: String, spec: DeliverSpec, night: NightTarget, retry: RetryPolicy, timeout: Duration,
                        note: (String) -> Void, isCancelled: () -> Bool = { false }) -> DeliveryOutcome {
        let name = (path as NSString).lastPathComponent
        var outcome = DeliveryOutcome(path: path, destination: spec.destination.url(of: name), size: 0, result: .delivered)
        do throws(RunError) {
            let digest = try FileDigest.of(path)
            outcome.size = digest.size
            // The night's ledger says whether it was delivered, whatever side file is there or not.
            if let recorded = try NightLedger.read(template: night.template).night(on: night.date), let delivery = recorded.delivery {
                if delivery.sha256 == digest.sha256 {
                    outcome.result = .already(delivery.at)
                } else {
                    outcome.result = .failed("\(path) was delivered\(recorded.deliveredWhere) at \(delivery.at) and has changed since; a processor takes a night's file once, so it is not sent again")
                }
                return outcome
            }
            var random = SeededGenerator(seed: UInt64(digest.size))
            var attempt = 1
            while true {
                do throws(DeliveryFailure) {
                    let found = try upload(path, name: name, digest: digest, spec: spec, night: night, timeout: timeout)
                    outcome.result = found ? .found : .delivered
                    break
                } catch {
                    guard error.retries && retry.network && attempt < retry.attempts && !isCancelled() else {
                        outcome.result = .failed(error.message)
                        return outcome
                    }
                    let wait = retry.backoff(after: attempt, random: &random)
                    note("delivering \(path) failed (\(error.message)); trying again in \(Units.text(wait)) (attempt \(attempt + 1) of \(retry.attempts))")
                    // In slices: an interrupt ends the wait.
                    let until = Date().addingTimeInterval(wait.seconds)
                    while Date() < until && !isCancelled() { Thread.sleep(forTimeInterval: min(0.05, until.timeIntervalSinceNow)) }
                    if isCancelled() {
                        outcome.result = .failed("interrupted while waiting to try again (\(error.message))")
                        return outcome
                    }
                    attempt += 1
                }
            }
            let delivery = NightRecord.Delivery(to: spec.destination.description, file: name, size: digest.size, sha256: digest.sha256,
                                                at: Timestamp.rfc3339())
            // The night's ledger is the one record of it; the record beside the file is a copy.
            let generation = try NightLedger.markDelivered(night.date, delivery, template: night.template)
            try DeliveryRecord(file: name, to: delivery.to, size: delivery.size, sha256: delivery.sha256, delivered: delivery.at,
                               generation: generation).write(beside: path)
            return outcome
        } catch {
            outcome.result = .failed(error.description)
            return outcome
        }
    }

    /// One try: true when the file was found in place already.
    private static func upload(_ path: String, name: String, digest: FileDigest, spec: DeliverSpec, night: NightTarget,
                               timeout: Duration) throws(DeliveryFailure) -> Bool {
        let client = try SFTPClient(spec: spec, timeout: timeout)
        if let size = try client.size(of: name) {
            // Ours only if it is these bytes: card files of one row count are often one size.
            guard size == digest.size, try client.digest(of: name) == digest else {
                throw DeliveryFailure(message: "\(spec.destination.url(of: name)) is on the server already, and is not this file (\(size) bytes, not these \(digest.size)\(size == digest.size ? " of another SHA-256" : "")): it is not replaced (the processor may have a file of another run under this name)", retries: false)
            }
            try writeDone(client, spec: spec, name: name, night: night)
            return true
        }
        let temporary = "." + name + ".part"
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw DeliveryFailure(message: "cannot read \(path): \(describeErrno(errno))", retries: false) }
        defer { close(fd) }
        do throws(DeliveryFailure) {
            try client.upload(fd, size: digest.size, as: temporary)
        } catch {
            // A part left on a full server is removed; a next try uploads it again anyway.
            client.remove(temporary)
            throw error
        }
        let uploaded = try client.size(of: temporary)
        guard uploaded == digest.size else {
            client.remove(temporary)
            throw DeliveryFailure(message: "\(temporary) has \(uploaded.map(String.init) ?? "no") bytes on the server after the upload, not \(digest.size): the upload was cut short", retries: true)
        }
        let placed = try client.rename(temporary, to: name)
        guard placed == digest.size else {
            throw DeliveryFailure(message: "\(name) has \(placed.map(String.init) ?? "no") bytes on the server after the rename, not \(digest.size)", retries: false)
        }
        try writeDone(client, spec: spec, name: name, night: night)
        return false
    }

    /// The trigger file, written after the file is in place (empty: its name is what it says).
    private static func writeDone(_ client: SFTPClient, spec: DeliverSpec, name: String, night: NightTarget) throws(DeliveryFailure) {
        guard let done = spec.doneName(file: name, date: night.date, seq: night.seq) else { return }
        let empty = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { close(empty) }
        try client.upload(empty, size: 0, as: done)
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
                               timeout: Duration, note: (String) -> Void, isCancelled: () -> Bool = { false }) -> [DeliveryOutcome] {
        let name = (path as NSString).lastPathComponent
        var outcomes: [DeliveryOutcome] = []
        func heldBack(_ earlier: NightRecord, _ reason: String) -> [DeliveryOutcome] {
            outcomes + [DeliveryOutcome(path: path, destination: spec.destination.url(of: name), size: 0, result: .failed(
                "the night of \(earlier.date) (sequence \(earlier.seq)) comes before it and \(reason); a processor rejects a gap in the sequence, so this night is delivered after it"))]
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
            guard earlier.complete else { return heldBack(earlier, "has rows not ok beyond max_failed (\(rerun) --retry-failed sends them again)") }
            let earlierPath = folder.isEmpty ? earlier.file : folder + "/" + earlier.file
            guard case .regular = PrivateFile.inspect(earlierPath), let digest = try? FileDigest.of(earlierPath), digest.sha256 == earlier.sha256 else {
                return heldBack(earlier, "its file \(earlierPath) is gone or changed since it was finished (\(rerun) writes it again)")
            }
            let outcome = deliver(earlierPath, spec: spec, night: NightTarget(template: night.template, date: earlier.date, seq: earlier.seq, records: true),
                                  retry: retry, timeout: timeout, note: note, isCancelled: isCancelled)
            outcomes.append(outcome)
            if case .failed = outcome.result { return heldBack(earlier, "could not be delivered") }
        }
        return outcomes + [deliver(path, spec: spec, night: night, retry: retry, timeout: timeout, note: note, isCancelled: isCancelled)]
    }
}

extension Redactor {
    /// `outcome` with a failure's message cleared of the run's secrets.
    func redacted(_ outcome: DeliveryOutcome) -> DeliveryOutcome {
        var outcome = outcome
        if case .failed(let message) = outcome.result { outcome.result = .failed(redact(message)) }
        return outcome
    }
}
