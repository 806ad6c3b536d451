import Foundation
import Testing
import ShowbatchManifest
@testable import ShowbatchCore

/// A wire-format key of `type` with `bytes` as its body.
private func key(_ type: String, _ bytes: [UInt8]) -> [UInt8] {
    let name = Array(type.utf8)
    return [0, 0, 0, UInt8(name.count)] + name + [0, 0, 0, UInt8(bytes.count)] + bytes
}

private let ours = key("ssh-ed25519", Array(repeating: 7, count: 32))
private let other = key("ssh-ed25519", Array(repeating: 9, count: 32))
private let rsa = key("ssh-rsa", Array(repeating: 3, count: 40))
private func b64(_ key: [UInt8]) -> String { Data(key).base64EncodedString() }

/// A hashed host name as `ssh-keygen -H` writes it.
private func hashed(_ name: String, salt: [UInt8] = Array(0..<20)) -> String {
    "|1|\(Data(salt).base64EncodedString())|\(Data(hmacSHA1(key: salt, Array(name.utf8))).base64EncodedString())"
}

/// known_hosts as OpenSSH reads it.
@Suite struct KnownHostsTests {
    @Test(arguments: [
        // Plain names, with the port's brackets when it is not 22.
        ("[sftp.example]:2222 ssh-ed25519 \(b64(ours))", "sftp.example", 2222, KnownHosts.Verdict.known(line: 1)),
        ("sftp.example ssh-ed25519 \(b64(ours))", "sftp.example", 2222, .unknown),
        ("sftp.example ssh-ed25519 \(b64(ours))", "sftp.example", 22, .known(line: 1)),
        ("SFTP.Example ssh-ed25519 \(b64(ours))", "sftp.example", 22, .known(line: 1)),
        // Hashed, with and without the port.
        ("\(hashed("[sftp.example]:2222")) ssh-ed25519 \(b64(ours))", "sftp.example", 2222, .known(line: 1)),
        ("\(hashed("sftp.example")) ssh-ed25519 \(b64(ours))", "sftp.example", 22, .known(line: 1)),
        ("\(hashed("sftp.example")) ssh-ed25519 \(b64(ours))", "sftp.example", 2222, .unknown),
        // Patterns: * and ?, a list, a negation that wins.
        ("*.example ssh-ed25519 \(b64(ours))", "sftp.example", 22, .known(line: 1)),
        ("sftp.exampl? ssh-ed25519 \(b64(ours))", "sftp.example", 22, .known(line: 1)),
        ("[sftp.*]:* ssh-ed25519 \(b64(ours))", "sftp.example", 2222, .known(line: 1)),
        ("other.host,*.example,!sftp.example ssh-ed25519 \(b64(ours))", "sftp.example", 22, .unknown),
        ("other.host,*.example ssh-ed25519 \(b64(ours))", "sftp.example", 22, .known(line: 1)),
        // Another key of the type: changed; of another type only: unknown.
        ("sftp.example ssh-ed25519 \(b64(other))", "sftp.example", 22, .changed(lines: [1])),
        ("sftp.example ssh-rsa \(b64(rsa))", "sftp.example", 22, .unknown),
        ("sftp.example ssh-ed25519 \(b64(other))\nsftp.example ssh-ed25519 \(b64(ours))", "sftp.example", 22, .known(line: 2)),
        // @revoked refuses the key whatever else the file says; @cert-authority is not a host key.
        ("sftp.example ssh-ed25519 \(b64(ours))\n@revoked * ssh-ed25519 \(b64(ours))", "sftp.example", 22, .revoked(line: 2)),
        ("@cert-authority sftp.example ssh-ed25519 \(b64(ours))", "sftp.example", 22, .unknown),
        // Comments, blank lines and a line it cannot read.
        ("# the processor\n\nnot a key line\nsftp.example ssh-ed25519 \(b64(ours)) comment", "sftp.example", 22, .known(line: 4)),
    ])
    func aKeyIsCheckedAsOpenSSHChecksIt(text: String, host: String, port: Int, expected: KnownHosts.Verdict) {
        #expect(KnownHosts(text: text).check(host: host, port: port, key: ours) == expected)
    }

    /// What libssh2 is given: this host's keys that are not revoked, in its plain form.
    @Test func libssh2IsGivenTheHostsKeysPlainly() {
        let text = "\(hashed("[h.example]:2222")) ssh-ed25519 \(b64(ours))\n*.other ssh-rsa \(b64(rsa))\n@revoked [h.example]:2222 ssh-ed25519 \(b64(other))\n[h.example]:2222 ssh-ed25519 \(b64(other))\n"
        #expect(KnownHosts(text: text).plainLines(host: "h.example", port: 2222) == "[h.example]:2222 ssh-ed25519 \(b64(ours))\n")
        #expect(KnownHosts(text: "h.example ssh-ed25519 \(b64(ours))").plainLines(host: "h.example", port: 22) == "h.example ssh-ed25519 \(b64(ours))\n")
    }
}

/// What a delivery does next, from the night's ledger and the folder's listing.
@Suite struct DeliveryStepTests {
    static func record(handing: Bool = false, delivered: Bool = false, done: Bool = true) -> NightRecord {
        var record = NightRecord(date: NightDate(parsing: "2026-12-01")!, seq: 4, data: "", file: "c.csv", size: 10, sha256: "ab",
                                 finished: "2026-12-02T02:00:00.000Z", complete: true, deliver: true)
        if handing { record.handing = NightRecord.Handing(to: "sftp://p/in/", part: ".c.csv.1.part", at: "2026-12-02T02:01:00.000Z") }
        if delivered { record.delivery = NightRecord.Delivery(to: "sftp://p/in/", file: "c.csv", size: 10, sha256: "ab", at: "2026-12-02T02:01:01.000Z", done: done) }
        return record
    }

    static let regular = RemoteEntry(kind: .regular, size: 10)

    @Test(arguments: [
        // The ledger decides first: nothing listed, nothing sent.
        (record(delivered: true), nil, DeliveryStep.already("2026-12-02T02:01:01.000Z")),
        (record(delivered: true, done: false), nil, .trigger),
        (record(), nil, .upload),
        // Nothing of ours there: uploaded. A leftover part of a killed upload does not count.
        (record(), [:], .upload),
        (record(), [".c.csv.2.part": regular], .upload),
        // The final name holds a file of our size: ours when a rename was asked for, else read back.
        (record(handing: true), ["c.csv": regular], .found),
        (record(), ["c.csv": regular], .readBack),
        // Another file, or a link, under the name: never replaced.
        (record(), ["c.csv": RemoteEntry(kind: .regular, size: 3)], .refuse("c.csv is on the server already, and is not this file (3 bytes, not these 10): it is not replaced (the processor may have a file of another run under this name)")),
        (record(handing: true), ["c.csv": RemoteEntry(kind: .link, size: 10)], .refuse("c.csv is on the server and is not a regular file (a link or a folder): it is not replaced, and nothing is written through it")),
        // The rename was asked for and its answer lost: the upload still there is renamed; with
        // neither there, the processor may have it, and only a person can tell.
        (record(handing: true), [".c.csv.1.part": regular], .rename(part: ".c.csv.1.part")),
        (record(handing: true), [".c.csv.1.part": RemoteEntry(kind: .link, size: 10)], .refuse(uncertain)),
        (record(handing: true), [:], .refuse(uncertain)),
    ] as [(NightRecord, [String: RemoteEntry]?, DeliveryStep)])
    func theNextStep(record: NightRecord, server: [String: RemoteEntry]?, expected: DeliveryStep) {
        #expect(DeliveryStep.next(record, size: 10, name: "c.csv", server: server, manifest: "m.yaml") == expected)
    }

    static let uncertain = "the night of 2026-12-01 (sequence 4) was being renamed into place on the server at 2026-12-02T02:01:00.000Z, and neither c.csv nor its upload .c.csv.1.part is there now: the processor may have taken it, and sending it again could give it to them twice. Ask the processor: if they have it, record it (showbatch deliver m.yaml --date 2026-12-01 --mark-delivered); if not, send it again (showbatch deliver m.yaml --date 2026-12-01 --send-again)"

    /// The folder's listing as OpenSSH's server writes it: kinds and sizes, a link's target cut off.
    @Test func aListingIsReadAsTheServerWritesIt() {
        let listing = """
        drwxrwxrwt    2 root     root          120 Dec  6 03:44 .
        -rw-------    1 u        g             418 Dec  6 03:44 cards 1.csv
        lrwxrwxrwx    1 u        g              11 Dec  6 03:44 .cards 1.csv.ab.part -> /etc/passwd
        -rw-r--r--    1 u        g               0 Dec  6 03:44 other
        """
        let found = SFTPClient.entries(in: listing) { $0.hasPrefix("cards") || $0.hasPrefix(".cards") }
        #expect(found == ["cards 1.csv": RemoteEntry(kind: .regular, size: 418), ".cards 1.csv.ab.part": RemoteEntry(kind: .link, size: 11)])
    }

    /// libcurl's words for an SFTP status, as the server's answer.
    @Test(arguments: [
        ("Upload failed: Permission denied (3/-31)", "Permission denied (SFTP status 3)"),
        ("rename command failed: Operation failed", "Operation failed"),
        ("Could not open directory for reading: No such file or directory", "No such file or directory"),
    ])
    func theServersWords(curl: String, expected: String) {
        #expect(SFTPClient.serverWords(curl) == expected)
    }
}
