import Foundation
import Testing
import TestSupport

/// The neighbour of these tests (a uid with no account, as on a shared machine any other user).
private let neighbour: uid_t = 2001

/// A shell command running showbatch as `uid` (`setpriv`, so no account is needed) with `arguments`.
private func asUser(_ uid: uid_t, _ arguments: String) -> [String] {
    uid == 0 ? ["-c", "exec \"$0\" \(arguments)", binary]
        : ["-c", "exec setpriv --reuid=\(uid) --regid=\(uid) --clear-groups \"$0\" \(arguments)", binary]
}

/// A run of this manifest stops (exit 4) after 20 rows: the emulator goes down for an hour and
/// the pause gives up after a second, leaving `shared/r.csv.partial` and its journal to resume.
private let stoppingManifest = """
vault: tnt1
concurrency: 2
circuit: {max_pause: 1s}
emulator: {aliases: {tok_0: "4111111111111111"}, outage: {after: 20, for: 1h}}
output: {path: shared/r.csv}
requests: [{name: "r${row.id}", each: {csv: d.csv}, path: /p, payload: {c: "${row.alias}"}, labels: {c: json.c}}]
"""

private let data = "id,alias\n" + (0..<100).map { "\($0),tok_0" }.joined(separator: "\n") + "\n"

/// What every refusal of a file another user could have planted ends with.
private let refusal = "; showbatch never resumes, merges, reads or writes into a file another user could have planted or can change: remove it and run again\n"

/// A work folder holding `shared/`, mode 1777 as a shared output folder on a multi-user host.
private func sharedWorkspace(_ manifest: String = stoppingManifest) -> Workspace {
    let work = Workspace(["m.yaml": manifest, "d.csv": data])
    chmod(work.path, 0o755)
    chmod(work.path + "/m.yaml", 0o644)
    chmod(work.path + "/d.csv", 0o644)
    mkdir(work.path + "/shared", 0o1777)
    chmod(work.path + "/shared", 0o1777)
    return work
}

private func owner(_ path: String) -> uid_t? {
    var info = stat()
    return lstat(path, &info) == 0 ? info.st_uid : nil
}

/// Files another user could have planted beside an output, or can change, are never resumed,
/// merged, locked or written into (they were: a neighbour's `.partial` was finished as the
/// victim's export, and a planted 0666 journal took a whole run's journal).
@Suite(.enabled(if: getuid() == 0, "runs as other users through setpriv, which needs root"))
struct PlantedFileTests {
    /// A neighbour ran the same manifest into the shared folder and left its interrupted files,
    /// made writable by all; the victim's `--resume=auto` went on from them.
    @Test(arguments: [0, 2002] as [uid_t])
    func aNeighboursInterruptedRunIsNeverResumed(victim: uid_t) async throws {
        let work = sharedWorkspace()
        defer { work.remove() }
        let planted = try await showbatch(["-c", "setpriv --reuid=\(neighbour) --regid=\(neighbour) --clear-groups \"$0\" run m.yaml --emulate --quiet; echo $?; chmod 666 shared/r.csv.partial shared/r.csv.journal", binary],
                                          in: work.path, shell: true)
        #expect(planted.stdout == "4\n", "\(planted.stderr)")
        let before = work.read("shared/r.csv.partial")
        #expect(owner(work.path + "/shared/r.csv.partial") == neighbour)
        let run = try await showbatch(asUser(victim, "run m.yaml --emulate --resume=auto"), in: work.path, shell: true)
        #expect(run.status == 3)
        let victimName = victim == 0 ? "root (uid 0)" : "uid \(victim)"
        #expect(run.stderr == "showbatch: error: shared/r.csv.partial belongs to uid 2001, not to \(victimName), who runs showbatch" + refusal)
        #expect(work.read("shared/r.csv.partial") == before && !work.exists("shared/r.csv"))
        #expect(owner(work.path + "/shared/r.csv.partial") == neighbour)
    }

    /// An empty journal the neighbour planted, mode 0666, before the victim's first run: the run
    /// wrote its journal (identity, offsets, hashes) into it and exited 0.
    @Test func aPlantedJournalIsNeverWrittenInto() async throws {
        let work = sharedWorkspace(stoppingManifest.replacingOccurrences(of: "outage: {after: 20, for: 1h}", with: "latency: 0ms"))
        defer { work.remove() }
        let planted = try await showbatch(["-c", "setpriv --reuid=\(neighbour) --regid=\(neighbour) --clear-groups sh -c 'umask 000; : > shared/r.csv.journal'"],
                                          in: work.path, shell: true)
        #expect(planted.status == 0 && owner(work.path + "/shared/r.csv.journal") == neighbour, "\(planted.stderr)")
        let run = try await showbatch(["run", "m.yaml", "--emulate"], in: work.path)
        #expect(run.status == 3)
        #expect(run.stderr == "showbatch: error: shared/r.csv.journal belongs to uid 2001, not to root (uid 0), who runs showbatch" + refusal)
        #expect(work.read("shared/r.csv.journal") == "" && !work.exists("shared/r.csv"))
    }

    /// A shard's file that is not the merging user's is not merged (a neighbour's forged rows
    /// were).
    @Test func mergeRefusesAShardFileOfAnotherUser() async throws {
        let work = sharedWorkspace(stoppingManifest.replacingOccurrences(of: "outage: {after: 20, for: 1h}", with: "latency: 0ms"))
        defer { work.remove() }
        for shard in ["0/2", "1/2"] {
            let run = try await showbatch(["run", "m.yaml", "--emulate", "--quiet", "--shard", shard], in: work.path)
            #expect(run.status == 0, "\(run.stderr)")
        }
        chown(work.path + "/shared/r-shard-1.csv", neighbour, neighbour)
        let merge = try await showbatch(["merge", "m.yaml", "--shards", "2"], in: work.path)
        #expect(merge.status == 3)
        #expect(merge.stderr == "showbatch: error: shared/r-shard-1.csv belongs to uid 2001, not to root (uid 0), who runs showbatch" + refusal)
        #expect(!work.exists("shared/r.csv") && !work.exists("shared/r.csv.partial"))
    }

    /// An output folder of the neighbour's, or one anyone can write without the sticky bit: its
    /// files can be replaced under the run, so none is kept there. A sticky shared folder is fine.
    @Test(arguments: [("owned", "cannot use shared/r.csv: the folder shared belongs to uid 2001, who can replace any file in it"),
                      ("0777", "cannot use shared/r.csv: the folder shared can be written by other users and has no sticky bit (mode 777), so they can replace the files in it"),
                      ("1777", nil)])
    func aFolderOthersCanReplaceFilesInIsRefused(folder: String, message: String?) async throws {
        let work = sharedWorkspace(stoppingManifest.replacingOccurrences(of: "outage: {after: 20, for: 1h}", with: "latency: 0ms"))
        defer { work.remove() }
        switch folder {
        case "owned":
            chmod(work.path + "/shared", 0o755)
            chown(work.path + "/shared", neighbour, neighbour)
        case "0777": chmod(work.path + "/shared", 0o777)
        default: break
        }
        let run = try await showbatch(["run", "m.yaml", "--emulate", "--quiet"], in: work.path)
        if let message {
            #expect(run.status == 3)
            #expect(run.stderr == "showbatch: error: \(message); showbatch keeps its files only where no other user can plant or swap them: use a folder of your own (mode 0700 or 0755), or one with the sticky bit\n")
            #expect(!work.exists("shared/r.csv.journal") && !work.exists("shared/r.csv"))
        } else {
            #expect(run.status == 0 && run.stderr == "", "\(run.stderr)")
            #expect(work.read("shared/r.csv")?.split(separator: "\n").count == 101)
        }
    }
}

/// The user's own side files are trusted only while no one else can reach them: one another
/// user can write, or that has a second name, is refused like a planted one.
@Suite struct ExposedSideFileTests {
    @Test(arguments: ["0666", "link"])
    func anExposedJournalIsNotResumed(how: String) async throws {
        let work = sharedWorkspace()
        defer { work.remove() }
        let stopped = try await showbatch(["run", "m.yaml", "--emulate", "--quiet"], in: work.path)
        #expect(stopped.status == 4, "\(stopped.stderr)")
        let journal = work.path + "/shared/r.csv.journal"
        let problem: String
        if how == "0666" {
            chmod(journal, 0o666)
            problem = "can be written by other users (mode 666)"
        } else {
            link(journal, work.path + "/elsewhere")
            problem = "has 2 links (a hard link elsewhere gives it another name, maybe in another user's folder)"
        }
        let before = work.read("shared/r.csv.journal")
        let run = try await showbatch(["run", "m.yaml", "--emulate", "--resume=auto"], in: work.path)
        #expect(run.status == 3)
        #expect(run.stderr == "showbatch: error: shared/r.csv.journal \(problem)" + refusal)
        #expect(work.read("shared/r.csv.journal") == before)
    }
}

/// A TMPDIR any user can write, without the sticky bit: a neighbour renamed the private GnuPG
/// home as it appeared and put one in its place whose gpg.conf added their key. No home is made
/// there; nothing is sent.
@Suite struct SharedTemporaryFolderTests {
    @Test func aTMPDIRAnyoneCanReplaceTheHomeInIsRefused() async throws {
        let work = Workspace(["m.yaml": """
            vault: tnt1
            emulator: {aliases: {tok_0: "4111111111111111"}}
            output: {path: out/r.csv.pgp, encrypt: {recipients: ["\(GPGFixture.shared.alice.file)"]}}
            requests: [{name: a, path: /p, payload: {c: tok_0}, labels: {c: json.c}}]
            """])
        defer { work.remove() }
        mkdir(work.path + "/tmp", 0o777)
        chmod(work.path + "/tmp", 0o777)
        let run = try await showbatch(["run", "m.yaml", "--emulate"], in: work.path, environment: ["TMPDIR": work.path + "/tmp"])
        #expect(run.status == 3)
        #expect(run.stderr == "showbatch: error: cannot encrypt out/r.csv.pgp: cannot make a private GnuPG home in \(work.path)/tmp: other users can write it and it has no sticky bit (mode 777), so they could replace the home in it; set TMPDIR to a folder of your own (mode 0700)\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: work.path + "/tmp") == [] && !work.exists("out"))
    }
}
