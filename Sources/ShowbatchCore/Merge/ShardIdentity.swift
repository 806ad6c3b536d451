import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// What a finished shard's output is, left beside it (`<output>.identity`) for `merge` to check:
/// the run it belongs to (the journal's identity: manifest, data, shard, format, columns) and
/// what the file holds (rows, size, hash), and its rejects file's when it has one. A shard whose
/// run finished with every row ok keeps no journal; without this, a foreign or stale shard file
/// would merge as if it were this manifest's. Holds no revealed, header or payload value.
struct ShardIdentity: Equatable {
    var run: Journal.Identity
    var rows: Int
    var size: Int
    var hash: UInt64
    var rejects: (size: Int, hash: UInt64, rows: Int)?
    /// A shard of an encrypted output: the data key its files are sealed under, wrapped under the
    /// state key (as its journal held it). Size and hash are then the plaintext's.
    var wrappedKey: String?
    /// Its rows by status, its rejects file's included (the night's max_failed is merge's to
    /// apply); nil in an identity an older showbatch wrote.
    var counts: RowCounts?

    static func == (lhs: ShardIdentity, rhs: ShardIdentity) -> Bool {
        lhs.run == rhs.run && lhs.rows == rhs.rows && lhs.size == rhs.size && lhs.hash == rhs.hash
            && lhs.rejects?.size == rhs.rejects?.size && lhs.rejects?.hash == rhs.rejects?.hash && lhs.rejects?.rows == rhs.rejects?.rows
            && lhs.wrappedKey == rhs.wrappedKey
    }

    /// The identity of an output finished at `checkpoint`.
    init(run: Journal.Identity, checkpoint: Journal.Checkpoint, wrappedKey: String? = nil) {
        self.run = run
        rows = checkpoint.ownRows ?? checkpoint.counts.rows
        size = checkpoint.offset
        hash = checkpoint.hash
        rejects = checkpoint.rejects.map { ($0.offset, $0.hash, $0.rows) }
        self.wrappedKey = wrappedKey
        counts = checkpoint.counts
    }

    private init(run: Journal.Identity, rows: Int, size: Int, hash: UInt64, rejects: (size: Int, hash: UInt64, rows: Int)?,
                 wrappedKey: String?) {
        self.run = run
        self.rows = rows
        self.size = size
        self.hash = hash
        self.rejects = rejects
        self.wrappedKey = wrappedKey
    }

    /// Writes it beside `output` at once (a reader sees the old one or the new one), mode 0600,
    /// never through a link.
    func write(beside output: String) throws(RunError) {
        var bytes: [UInt8] = []
        JSONWriter.append(to: &bytes) { writer in
            writer.object { writer in
                writer.key("showbatch_shard")
                writer.integer(1)
                run.writeFields(&writer)
                writer.key("rows")
                writer.integer(rows)
                writer.key("size")
                writer.integer(size)
                writer.key("hash")
                writer.string(String(hash, radix: 16))
                if let wrappedKey {
                    writer.key("data_key")
                    writer.string(wrappedKey)
                }
                if let counts {
                    writer.key("counts")
                    writer.object { writer in
                        writer.key("ok"); writer.integer(counts.ok)
                        writer.key("partial"); writer.integer(counts.partial)
                        writer.key("failed"); writer.integer(counts.failed)
                    }
                }
                if let rejects {
                    writer.key("rejects")
                    writer.object { writer in
                        writer.key("rows")
                        writer.integer(rejects.rows)
                        writer.key("size")
                        writer.integer(rejects.size)
                        writer.key("hash")
                        writer.string(String(rejects.hash, radix: 16))
                    }
                }
            }
        }
        bytes.append(0x0A)
        try PrivateFile.replaceAtomically(SideFile.identity.of(output), with: bytes, mode: 0o600)
    }

    /// The identity left beside `output`: nil when there is none; a reason when it is not one.
    static func read(beside output: String) -> Result<ShardIdentity, JournalProblem>? {
        let path = SideFile.identity.of(output)
        guard PrivateFile.inspect(path) != .none else { return nil }
        guard let file = try? FileDescriptor.openOwn(path), let bytes = try? file.readAll(limit: 1 << 20) else {
            return .failure(JournalProblem(reason: "\(path) cannot be read\(PrivateFile.refusal(path).map { ": " + $0 } ?? "")"))
        }
        guard let value = try? JSONParser.parse(bytes), case .number("1")? = value["showbatch_shard"] else {
            return .failure(JournalProblem(reason: "\(path) is not a shard identity of this version of showbatch"))
        }
        func text(_ key: String, in object: JSONValue? = nil) -> String? {
            if case .string(let text)? = (object ?? value)[key] { return text } else { return nil }
        }
        func integer(_ key: String, in object: JSONValue? = nil) -> Int? {
            if case .number(let text)? = (object ?? value)[key] { return Int(text) } else { return nil }
        }
        guard let run = Journal.Identity(fields: value), let rows = integer("rows"),
              let size = integer("size"), let hash = text("hash").flatMap({ UInt64($0, radix: 16) }) else {
            return .failure(JournalProblem(reason: "\(path) is not a whole shard identity"))
        }
        var rejects: (size: Int, hash: UInt64, rows: Int)?
        if let side = value["rejects"] {
            guard let rows = integer("rows", in: side), let size = integer("size", in: side),
                  let hash = text("hash", in: side).flatMap({ UInt64($0, radix: 16) }) else {
                return .failure(JournalProblem(reason: "\(path) is not a whole shard identity"))
            }
            rejects = (size, hash, rows)
        }
        var wrappedKey: String?
        if let key = value["data_key"] {
            guard case .string(let text) = key else { return .failure(JournalProblem(reason: "\(path) is not a whole shard identity")) }
            wrappedKey = text
        }
        var counts: RowCounts?
        if let side = value["counts"] {
            guard let ok = integer("ok", in: side), let partial = integer("partial", in: side), let failed = integer("failed", in: side),
                  ok >= 0, partial >= 0, failed >= 0 else {
                return .failure(JournalProblem(reason: "\(path) is not a whole shard identity"))
            }
            counts = RowCounts(rows: ok + partial + failed, ok: ok, partial: partial, failed: failed)
        }
        var identity = ShardIdentity(run: run, rows: rows, size: size, hash: hash, rejects: rejects, wrappedKey: wrappedKey)
        identity.counts = counts
        return .success(identity)
    }
}
