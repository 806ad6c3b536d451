import ShowbatchBasics
import ShowbatchManifest

/// One line of a journal.
enum JournalRecord: Equatable {
    /// What the journal is valid for; always the first line.
    case identity(Journal.Identity)
    /// An encrypted output's data key, wrapped under the state key (or kept in memory only);
    /// the second line when there is one.
    case dataKey(Journal.StoredKey)
    /// Where a failed row's bytes are.
    case failed(Journal.FailedRow)
    /// A row that is not failed went to the rejects file (`reject_partial`): merge needs to know.
    case rejected(Int)
    /// How far the output is written, and on disk.
    case checkpoint(Journal.Checkpoint)
    /// The run finished: the output's size and hash.
    case end(size: Int, hash: UInt64)
}

/// Why a journal cannot be used, in words (no byte of it is quoted).
struct JournalProblem: Error, Equatable {
    let reason: String
    /// True when it is no journal of this version of showbatch (rather than one that was damaged
    /// or edited).
    var foreign = false
}

/// The one encoding of a journal: every line is written by `Writer` and read by `read`, for the
/// journal of a run, the one a `--retry-failed` run writes whole, and the ones `merge` checks.
///
/// Lines are JSON objects: the identity (`showbatch_journal`), then `failed` records
/// (`[ordinal, start, end]`) and `checkpoint`s, and last `end`. Each checkpoint and end line
/// carries `chain`, the FNV-1a of every byte of the journal before it, so that the records a
/// checkpoint covers cannot be edited, dropped, swapped or moved without the chain saying so. The
/// reader also checks what the records say against each other: failed rows in order and inside
/// the output written so far, checkpoints that only grow, counts that add up to the rows and hold
/// every failed row recorded, an end that is the last checkpoint. (What they say against the
/// output's own bytes is `OutputCheck`'s part.)
enum JournalCodec {
    /// The format's version, in the identity line.
    static let version = 3

    /// Encodes records as lines, keeping the chain.
    struct Writer {
        /// FNV-1a of every byte written so far.
        private(set) var chain: UInt64

        /// A writer of a new journal, or one going on after `chain` (a resumed run).
        init(chain: UInt64 = fnvOffsetBasis) {
            self.chain = chain
        }

        /// Appends `record`'s line to `buffer`.
        mutating func encode(_ record: JournalRecord, into buffer: inout [UInt8]) {
            let start = buffer.count
            JSONWriter.append(to: &buffer) { writer in
                writer.object { writer in
                    switch record {
                    case .identity(let identity):
                        writer.key("showbatch_journal")
                        writer.integer(JournalCodec.version)
                        identity.writeFields(&writer)
                    case .dataKey(let stored):
                        writer.key("data_key")
                        switch stored {
                        case .wrapped(let text): writer.string(text)
                        case .memoryOnly: writer.null()
                        }
                    case .rejected(let ordinal):
                        writer.key("rejected")
                        writer.integer(ordinal)
                    case .failed(let row):
                        writer.key("failed")
                        writer.array { writer in
                            writer.integer(row.ordinal)
                            writer.integer(row.start)
                            writer.integer(row.end)
                        }
                    case .checkpoint(let checkpoint):
                        writer.key("checkpoint")
                        writer.object { writer in
                            writer.key("ordinal")
                            writer.integer(checkpoint.ordinal)
                            writer.key("offset")
                            writer.integer(checkpoint.offset)
                            writer.key("rows")
                            writer.integer(checkpoint.counts.rows)
                            writer.key("ok")
                            writer.integer(checkpoint.counts.ok)
                            writer.key("partial")
                            writer.integer(checkpoint.counts.partial)
                            writer.key("failed")
                            writer.integer(checkpoint.counts.failed)
                            writer.key("hash")
                            writer.string(String(checkpoint.hash, radix: 16))
                            if let rejects = checkpoint.rejects {
                                writer.key("rejects_offset")
                                writer.integer(rejects.offset)
                                writer.key("rejects_hash")
                                writer.string(String(rejects.hash, radix: 16))
                                writer.key("rejects_rows")
                                writer.integer(rejects.rows)
                                writer.key("own_rows")
                                writer.integer(checkpoint.ownRows ?? 0)
                            }
                            if let at = checkpoint.at {
                                writer.key("at")
                                writer.integer(at)
                            }
                        }
                        writer.key("chain")
                        writer.string(String(chain, radix: 16))
                    case .end(let size, let hash):
                        writer.key("end")
                        writer.object { writer in
                            writer.key("size")
                            writer.integer(size)
                            writer.key("hash")
                            writer.string(String(hash, radix: 16))
                        }
                        writer.key("chain")
                        writer.string(String(chain, radix: 16))
                    }
                }
            }
            buffer.append(0x0A)
            chain = fnv1a(buffer[start...], seed: chain)
        }
    }

    /// What a journal says, once read and checked.
    struct Contents {
        var identity: Journal.Identity
        /// An encrypted output's data key, as stored.
        var dataKey: Journal.StoredKey?
        /// The failed rows the last checkpoint covers.
        var failedRows: [Journal.FailedRow] = []
        /// The other rows the rejects file holds (partial ones), by ordinal, that it covers.
        var rejectedRows: [Int] = []
        var lastCheckpoint: Journal.Checkpoint?
        /// The output's size and hash, when its run finished.
        var ended: (size: Int, hash: UInt64)?
        /// The journal's bytes up to the last record that counts: where a resumed run appends.
        var length: Int
        /// The chain at `length`.
        var chain: UInt64
    }

    /// Reads a journal's bytes: nil when it has no whole identity line (torn as it was started);
    /// a problem when any line after it is not a record, a checkpoint's chain does not match, or
    /// the records contradict each other. A last line without its line break is torn (a crash
    /// while it was written) and does not count, nor do failed records after the last checkpoint.
    static func read(_ bytes: [UInt8]) throws(JournalProblem) -> Contents? {
        var lines: [(start: Int, end: Int)] = []
        var lineStart = 0
        for index in bytes.indices where bytes[index] == 0x0A {
            lines.append((lineStart, index))
            lineStart = index + 1
        }
        // A torn last line (no line break), or the zeros a lost write can leave, is not a record.
        guard let first = lines.first else { return nil }
        let identity = try identityLine(Array(bytes[first.start..<first.end]))
        var reading = Reading(contents: Contents(identity: identity, length: first.end + 1, chain: fnv1a(bytes[...first.end])))
        var chain = reading.contents.chain
        for (number, line) in lines.enumerated().dropFirst() {
            let place = "its line \(number + 1)"
            guard reading.contents.ended == nil else { throw JournalProblem(reason: "\(place) follows its end") }
            guard let value = try? JSONParser.parse(Array(bytes[line.start..<line.end])), case .object(let members) = value else {
                throw JournalProblem(reason: "\(place) is not a journal record")
            }
            let keys = members.map(\.key)
            // Records that are part of what a resumed run goes on from move its place and chain.
            var sealing = true
            switch keys {
            case ["data_key"]:
                guard number == 1 else { throw JournalProblem(reason: "\(place) is a data key record, which only its line 2 may be") }
                switch value["data_key"] {
                case .string(let text)?: reading.contents.dataKey = .wrapped(text)
                case .null?: reading.contents.dataKey = .memoryOnly
                default: throw JournalProblem(reason: "\(place) is not a data key record")
                }
            case ["failed"]:
                try reading.failed(value["failed"], place)
                sealing = false
            case ["rejected"]:
                try reading.rejected(value["rejected"], place)
                sealing = false
            case ["checkpoint", "chain"], ["end", "chain"]:
                guard case .string(let text)? = value["chain"], UInt64(text, radix: 16) == chain else {
                    throw JournalProblem(reason: "\(place) does not match the records before it (they were edited, dropped or moved since)")
                }
                if keys[0] == "end" { try reading.end(value["end"], place) } else { try reading.checkpoint(value["checkpoint"], place) }
            default:
                throw JournalProblem(reason: "\(place) is not a journal record")
            }
            if sealing {
                reading.contents.length = line.end + 1
                reading.contents.chain = fnv1a(bytes[line.start...line.end], seed: chain)
            }
            chain = fnv1a(bytes[line.start...line.end], seed: chain)
        }
        return reading.contents
    }

    /// What `read` has gathered so far, and the records it checks one at a time.
    private struct Reading {
        var contents: Contents
        /// Failed and rejected rows since the last checkpoint: counted only once one covers them.
        var pending: [Journal.FailedRow] = []
        var pendingRejected: [Int] = []
        /// The last ordinal a failed or rejected record named: they come in work-item order.
        var lastNamed = -1
        var previous: Journal.Checkpoint?

        /// A failed-row record: `[ordinal, start, end]`, after the one before it in the file and the work.
        mutating func failed(_ value: JSONValue?, _ place: String) throws(JournalProblem) {
            guard case .array(let items)? = value, items.count == 3, let numbers = integers(items) else {
                throw JournalProblem(reason: "\(place) is not a failed-row record")
            }
            let row = Journal.FailedRow(ordinal: numbers[0], start: numbers[1], end: numbers[2])
            let last = pending.last ?? contents.failedRows.last
            guard row.ordinal >= 0, row.start >= 0, row.start < row.end else {
                throw JournalProblem(reason: "\(place) names no row (ordinal \(row.ordinal), bytes \(row.start)…\(row.end))")
            }
            if let last, row.ordinal <= last.ordinal || row.start < last.end {
                throw JournalProblem(reason: "\(place) is out of order: a failed row must come after the one before it, in the file and in the work")
            }
            if let previous, row.ordinal <= previous.ordinal {
                throw JournalProblem(reason: "\(place) names a failed row its last checkpoint had already counted")
            }
            guard row.ordinal > lastNamed else {
                throw JournalProblem(reason: "\(place) is out of order: a failed row must come after the one before it, in the file and in the work")
            }
            lastNamed = row.ordinal
            pending.append(row)
        }

        /// A rejected-row record, in work-item order.
        mutating func rejected(_ value: JSONValue?, _ place: String) throws(JournalProblem) {
            guard let ordinal = integer(value), ordinal > lastNamed, ordinal > (previous?.ordinal ?? -1) else {
                throw JournalProblem(reason: "\(place) is not a rejected-row record in work-item order")
            }
            lastNamed = ordinal
            pendingRejected.append(ordinal)
        }

        /// A checkpoint (its chain checked by the caller): it covers the rows recorded since the one before.
        mutating func checkpoint(_ object: JSONValue?, _ place: String) throws(JournalProblem) {
            guard let object, let checkpoint = JournalCodec.checkpoint(object) else {
                throw JournalProblem(reason: "\(place) is not a checkpoint")
            }
            try consistent(checkpoint, after: previous, failed: contents.failedRows.count + pending.count,
                           lastFailed: pending.last ?? contents.failedRows.last, place)
            contents.failedRows += pending
            pending = []
            contents.rejectedRows += pendingRejected
            pendingRejected = []
            previous = checkpoint
            contents.lastCheckpoint = checkpoint
        }

        /// The end record: the output as the last checkpoint left it, nothing recorded after it.
        mutating func end(_ value: JSONValue?, _ place: String) throws(JournalProblem) {
            guard let size = integer(value?["size"]), case .string(let hashText)? = value?["hash"],
                  let hash = UInt64(hashText, radix: 16), value.map({ if case .object(let m) = $0 { return m.count } else { return 0 } }) == 2 else {
                throw JournalProblem(reason: "\(place) is not an end record")
            }
            guard let last = previous, pending.isEmpty, pendingRejected.isEmpty, last.offset == size, last.hash == hash else {
                throw JournalProblem(reason: "\(place) ends the output elsewhere than its last checkpoint")
            }
            contents.ended = (size, hash)
        }
    }

    /// The identity line's fields; a problem when it is not a showbatch journal of this version.
    private static func identityLine(_ line: [UInt8]) throws(JournalProblem) -> Journal.Identity {
        guard let value = try? JSONParser.parse(line), case .number(let version)? = value["showbatch_journal"] else {
            throw JournalProblem(reason: "it is not a showbatch journal", foreign: true)
        }
        guard version == String(JournalCodec.version) else {
            throw JournalProblem(reason: "it was written by another version of showbatch (journal format \(version))", foreign: true)
        }
        guard let identity = Journal.Identity(fields: value) else { throw JournalProblem(reason: "its first line is not a whole identity") }
        return identity
    }

    /// A checkpoint must follow the one before it and agree with the failed rows recorded.
    private static func consistent(_ checkpoint: Journal.Checkpoint, after previous: Journal.Checkpoint?, failed: Int,
                                   lastFailed: Journal.FailedRow?, _ place: String) throws(JournalProblem) {
        let counts = checkpoint.counts
        guard counts.rows >= 0, counts.ok >= 0, counts.partial >= 0, counts.failed >= 0, checkpoint.offset >= 0,
              counts.rows == counts.ok + counts.partial + counts.failed else {
            throw JournalProblem(reason: "\(place) counts rows that do not add up")
        }
        guard checkpoint.ordinal >= -1, (checkpoint.ordinal == -1) == (counts.rows == 0), checkpoint.ordinal + 1 >= counts.rows else {
            throw JournalProblem(reason: "\(place) counts \(counts.rows) rows up to work item \(checkpoint.ordinal), which cannot be")
        }
        if let previous {
            let before = previous.counts
            guard checkpoint.ordinal >= previous.ordinal, checkpoint.offset >= previous.offset, counts.rows >= before.rows,
                  counts.ok >= before.ok, counts.partial >= before.partial, counts.failed >= before.failed,
                  (checkpoint.rejects?.offset ?? 0) >= (previous.rejects?.offset ?? 0) else {
                throw JournalProblem(reason: "\(place) goes back from the checkpoint before it")
            }
        }
        if let lastFailed, lastFailed.ordinal > checkpoint.ordinal {
            throw JournalProblem(reason: "\(place) comes before a failed row it should count")
        }
        guard counts.failed == failed else {
            throw JournalProblem(reason: "\(place) counts \(counts.failed) failed rows, and \(failed) are recorded")
        }
        if let rejects = checkpoint.rejects {
            guard let own = checkpoint.ownRows, own >= 0, rejects.rows >= 0, own + rejects.rows == counts.rows, rejects.offset >= 0 else {
                throw JournalProblem(reason: "\(place) splits its rows between the output and its rejects file in a way that does not add up")
            }
        }
    }

    private static func integer(_ value: JSONValue?) -> Int? {
        if case .number(let text)? = value { return Int(text) } else { return nil }
    }

    private static func integers(_ values: [JSONValue]) -> [Int]? {
        let numbers = values.compactMap { integer($0) }
        return numbers.count == values.count ? numbers : nil
    }

    private static func checkpoint(_ value: JSONValue) -> Journal.Checkpoint? {
        guard case .object(let members) = value else { return nil }
        var keys = Set(members.map(\.key))
        let at = integer(value["at"])
        if at != nil { keys.remove("at") }
        let plain: Set = ["ordinal", "offset", "rows", "ok", "partial", "failed", "hash"]
        let withRejects = plain.union(["rejects_offset", "rejects_hash", "rejects_rows", "own_rows"])
        guard keys.count == members.count - (at == nil ? 0 : 1), keys == plain || keys == withRejects else { return nil }
        guard let ordinal = integer(value["ordinal"]), let offset = integer(value["offset"]), let rows = integer(value["rows"]),
              let ok = integer(value["ok"]), let partial = integer(value["partial"]), let failed = integer(value["failed"]),
              case .string(let hash)? = value["hash"], let hashValue = UInt64(hash, radix: 16) else { return nil }
        var checkpoint = Journal.Checkpoint(ordinal: ordinal, offset: offset, counts: RowCounts(rows: rows, ok: ok, partial: partial, failed: failed),
                                            hash: hashValue)
        checkpoint.at = at
        if keys == withRejects {
            guard let rejectsOffset = integer(value["rejects_offset"]), case .string(let text)? = value["rejects_hash"],
                  let rejectsHash = UInt64(text, radix: 16), let rejectsRows = integer(value["rejects_rows"]),
                  let ownRows = integer(value["own_rows"]) else { return nil }
            checkpoint.rejects = (rejectsOffset, rejectsHash, rejectsRows)
            checkpoint.ownRows = ownRows
        }
        return checkpoint
    }

    /// What differs between a journal's identity and the identity of this run, in words; nil
    /// when they are the same.
    static func difference(_ found: Journal.Identity, from identity: Journal.Identity) -> String? {
        if found.output != identity.output { return "it is the journal of another output (\(found.output))" }
        if found.format != identity.format { return "it was written as \(found.format), and this run writes \(identity.format)" }
        if found.shard != identity.shard {
            let was = found.shard.isEmpty ? "no shard" : "shard \(found.shard)"
            return "it was written for \(was), and this run is \(identity.shard.isEmpty ? "not sharded" : "shard \(identity.shard)")"
        }
        if found.manifest != identity.manifest {
            return "the manifest changed since (its endpoint, requests, labels, outputs or retry rules)"
        }
        if found.data != identity.data { return "the content of a data file changed since" }
        let foundKeys = found.columns.first { $0.hasPrefix("recipients:") }, keys = identity.columns.first { $0.hasPrefix("recipients:") }
        if foundKeys != keys && found.columns.filter({ !$0.hasPrefix("recipients:") }) == identity.columns.filter({ !$0.hasPrefix("recipients:") }) {
            func words(_ entry: String?) -> String { entry.map { String($0.dropFirst("recipients:".count)) } ?? "no recorded recipients" }
            return "it was sealed for \(words(foundKeys)), and the manifest's recipients are now \(words(keys)): a night is encrypted only to the keys it was sealed for (run it again for the new keys)"
        }
        if found.columns != identity.columns {
            return "its output columns were \(found.columns.joined(separator: ", ")), and this run's are \(identity.columns.joined(separator: ", "))"
        }
        return nil
    }
}
