import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import ShowbatchEmulator
import TestSupport

/// A token from the emulator's token endpoint.
private func issueToken(_ emulator: Emulator) async throws -> String {
    let transport = CurlTransport(maxConnections: 1)
    let request = PreparedRequest(name: "token", method: .post, url: emulator.baseURL + "/oauth/token",
                                  headers: [("Content-Type", "application/x-www-form-urlencoded")], body: Array("grant_type=client_credentials".utf8))
    guard case .response(200, _, let body) = await transport.send(request, timeout: .seconds(5)),
          case .string(let token)? = try JSONParser.parse(body)["access_token"] else { throw POSIXError(.EIO) }
    return token
}

/// Writes `token` as kubelet writes a Secret's key: in a new timestamped folder, then `..data`
/// swapped to it in one rename; `token` itself is a link to `..data/token`.
private func mount(_ token: String, in folder: String, version: Int) throws {
    let manager = FileManager.default
    let versioned = "..2026_12_01_00_00_0\(version).000000000"
    try manager.createDirectory(atPath: folder + "/" + versioned, withIntermediateDirectories: true)
    try Data(token.utf8).write(to: URL(fileURLWithPath: folder + "/" + versioned + "/token"))
    try? manager.removeItem(atPath: folder + "/..data_tmp")
    try manager.createSymbolicLink(atPath: folder + "/..data_tmp", withDestinationPath: versioned)
    guard rename(folder + "/..data_tmp", folder + "/..data") == 0 else { throw POSIXError(.EIO) }
    if (try? manager.destinationOfSymbolicLink(atPath: folder + "/token")) == nil {
        try manager.createSymbolicLink(atPath: folder + "/token", withDestinationPath: "..data/token")
    }
}

/// `auth.token_file` as a pod has it: a Kubernetes Secret mounted through links, rotated while
/// the run goes on; and a file that cannot be read says why.
@Suite(.serialized) struct TokenFileTests {
    /// The token is read through kubelet's links; when it is rotated (and the old one runs out),
    /// the run takes the new one, waiting for the file to change after a 401, and every row ends ok.
    @Test(.timeLimit(.minutes(1))) func aSecretMountedThroughLinksIsReadAndRotated() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        concurrency: 4
        retry: {attempts: 1}
        circuit: {max_pause: 30s}
        auth: {token_file: secret/token}
        output: {path: r.csv}
        requests: [{name: "r${row.id}", each: {csv: d.csv}, path: /p, labels: {auth: headers.Authorization}}]
        """, files: ["d.csv": "id\n" + (0..<300).map(String.init).joined(separator: "\n") + "\n"])
        let (emulator, options) = try fixture.emulator(for: manifest) {
            var auth = EmulatorAuth()
            auth.tokenUses = 200
            $0.auth = auth
        }
        defer { emulator.stop() }
        let secret = fixture.dir.path + "/secret"
        let first = try await issueToken(emulator)
        let second = try await issueToken(emulator)
        try mount(first, in: secret, version: 1)
        // Rotated once the first token is nearly used up, as a sidecar would, a little late.
        let rotation = Task.detached {
            while emulator.snapshot.requests < 200 { try? await Task.sleep(for: .milliseconds(5)) }
            try? await Task.sleep(for: .milliseconds(50))
            try mount(second, in: secret, version: 2)
        }
        let log = fixture.log
        let summary = try await Runner(manifest: manifest, options: options, environment: [:]) { log.record($0) }.run()
        try await rotation.value
        #expect(summary.stopReason == nil && summary.ok == 300 && summary.exitCode == .ok)
        let lines = try #require(fixture.read("r.csv")).split(separator: "\n").dropFirst()
        let used = Set(lines.map { $0.split(separator: ",").last.map(String.init) ?? "" })
        #expect(used == ["Bearer " + first, "Bearer " + second])
        #expect(log.notes.contains { $0.contains("the token in \(secret)/token was refused (HTTP 401) and the file has not changed since; asking again in") })
    }

    /// Two seconds in which the authentication backend refuses every token, the file unchanged:
    /// the token is tried again after a wait, sending pauses while it is still refused, and goes
    /// on once it is accepted; every row ends ok, long before circuit.max_pause.
    @Test(.timeLimit(.minutes(1))) func aWindowOf401sWithAnUnchangedFileIsPausedThrough() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        concurrency: 4
        retry: {attempts: 1}
        circuit: {max_pause: 60s}
        auth: {token_file: token.txt}
        output: {path: r.csv}
        requests: [{name: "r${row.id}", each: {csv: d.csv}, path: /p, labels: {p: path}}]
        """, files: ["d.csv": "id\n" + (0..<1_500).map(String.init).joined(separator: "\n") + "\n"])
        let (emulator, options) = try fixture.emulator(for: manifest) {
            var auth = EmulatorAuth()
            auth.refuseAfter = 200
            auth.refuseFor = .seconds(2)
            $0.auth = auth
            $0.faults.latency = .milliseconds(1)
        }
        defer { emulator.stop() }
        _ = fixture.dir.file("token.txt", try await issueToken(emulator) + "\n")
        let log = fixture.log
        let summary = try await Runner(manifest: manifest, options: options, environment: [:]) { log.record($0) }.run()
        #expect(summary.stopReason == nil && summary.ok == 1_500 && summary.exitCode == .ok, "\(summary.stopReason ?? "")")
        #expect(log.all.contains("warning: the access token is accepted again: sending goes on"))
    }

    /// A token file that cannot be read is waited for within circuit.max_pause (a mount being
    /// replaced), then the run stops saying why.
    @Test func anUnreadableTokenFileSaysWhy() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        circuit: {max_pause: 1s}
        auth: {token_file: secret/token}
        output: {path: r.csv}
        requests: [{name: a, path: /p}]
        """)
        let summary = try await fixture.run(manifest)
        #expect(summary.stopReason == "the token file \(fixture.dir.path)/secret/token cannot be read: No such file or directory, for 1s (circuit.max_pause)")
        #expect(summary.exitCode == .stopped && !fixture.dir.exists("r.csv.partial"))
    }
}
