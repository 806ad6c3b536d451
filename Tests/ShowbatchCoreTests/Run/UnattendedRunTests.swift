import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import ShowbatchEmulator
import TestSupport

private func rows(_ count: Int) -> String {
    "id\n" + (0..<count).map(String.init).joined(separator: "\n") + "\n"
}

/// Runs `manifest` against an emulator set up by `configure`; returns the summary, the error if the
/// run threw, and the emulator's counts.
private func run(_ fixture: RunFixture, _ manifest: Manifest, options: RunOptions = RunOptions(),
                 configure: (inout EmulatorConfiguration) -> Void) async throws -> (RunSummary, Emulator.Counts) {
    try await fixture.runCounting(manifest, options: options, configure: configure)
}

@Suite(.serialized) struct UnattendedRunTests {
    /// Tokens that expire every 300 requests: each 401 renews the token once for everyone, the
    /// rows that got it are sent again without counting an attempt, and every row ends ok.
    @Test func tokensThatExpireAreRenewedAndEveryRowEndsOK() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        concurrency: 16
        retry: {attempts: 1}
        auth: {token_url: "http://127.0.0.1:1/oauth/token", client_id: showbatch, client_secret: "${CLIENT_SECRET}"}
        output: {path: r.csv}
        requests: [{name: "r${row.id}", each: {csv: d.csv}, path: /p, labels: {auth: headers.Authorization}}]
        """, files: ["d.csv": rows(5_000)], environment: ["CLIENT_SECRET": "s3cr3t-client"])
        let (summary, counts) = try await run(fixture, manifest) {
            var auth = EmulatorAuth()
            auth.clientID = "showbatch"
            auth.clientSecret = "s3cr3t-client"
            auth.tokenUses = 300
            $0.auth = auth
        }
        #expect(summary.rows == 5_000 && summary.ok == 5_000 && summary.failed == 0 && summary.retries == 0)
        #expect(summary.stopReason == nil)
        let output = try #require(fixture.read("r.csv"))
        #expect(output.split(separator: "\n").dropFirst().allSatisfy { $0.contains(",ok,200,1,,Bearer emu-token-") })
        // A token is renewed only once it ran out (its 300 requests used): at least 5,000 / 300
        // renewals, and no more than the requests made allow; each ran-out token costs at most the
        // 16 requests in flight again. Bounds that hold however slow the machine.
        let renewals = fixture.log.notes.filter { $0.contains("access token was renewed") }.count
        #expect(renewals >= 16, "\(renewals) renewals")
        #expect(renewals <= (counts.requests + 299) / 300, "\(renewals) renewals for \(counts.requests) requests")
        #expect(counts.requests <= 5_000 + 17 * (renewals + 1), "\(counts.requests) requests, token requests included")
    }

    /// A token endpoint that refuses the client stops the run before anything is sent or opened.
    @Test func aRefusingTokenEndpointStopsTheRunAtOnce() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        auth: {token_url: "http://127.0.0.1:1/oauth/token", client_id: showbatch, client_secret: wrong}
        output: {path: r.csv}
        requests: [{name: a, path: /p}]
        """)
        let (summary, counts) = try await run(fixture, manifest) {
            var auth = EmulatorAuth()
            auth.clientID = "showbatch"
            auth.clientSecret = "right"
            $0.auth = auth
        }
        #expect(summary.stopReason == "the token endpoint refused the client credentials: HTTP 401 (invalid_client)")
        #expect(summary.exitCode == .stopped)
        #expect(counts.requests == 1)
        #expect(!fixture.dir.exists("r.csv.partial") && !fixture.dir.exists("r.csv.journal"))
    }

    /// A server that answers 401 to everything (a dead static token) stops the run after
    /// circuit.failed_rows failed rows, which are not written: the journal is kept for --resume.
    @Test func aServerRefusingEverythingStopsTheRunEarly() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        concurrency: 8
        headers: {Authorization: "Bearer dead-token"}
        output: {path: r.csv}
        requests: [{name: "r${row.id}", each: {csv: d.csv}, path: /p}]
        """, files: ["d.csv": rows(2_000)])
        let (summary, counts) = try await run(fixture, manifest) {
            $0.faults.failRate = 1
            $0.faults.failStatus = 401
        }
        #expect(summary.stopReason == "25 rows in a row failed (the last: 1500 http_status: HTTP 401): the failure is not the rows' but the endpoint's or the credentials' (circuit.failed_rows)")
        #expect(summary.exitCode == .stopped)
        #expect(counts.requests <= 25 + 8 + 8, "\(counts.requests) requests")
        #expect(fixture.dir.exists("r.csv.journal") && fixture.dir.exists("r.csv.partial") && !fixture.dir.exists("r.csv"))
        #expect(fixture.read("r.csv.partial") == "request,status,http_status,attempts,error\n")
    }

    /// With auth, a 401 renews the token; refused again with freshly renewed tokens, sending
    /// pauses while one request probes with a new token, and past circuit.max_pause the run stops.
    @Test func freshTokensRefusedPastMaxPauseStopTheRun() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        concurrency: 4
        circuit: {max_pause: 1500ms}
        auth: {token_url: "http://127.0.0.1:1/oauth/token", client_id: a, client_secret: b}
        output: {path: r.csv}
        requests: [{name: "r${row.id}", each: {csv: d.csv}, path: /p}]
        """, files: ["d.csv": rows(500)])
        let (summary, counts) = try await run(fixture, manifest) {
            $0.auth = EmulatorAuth()
            $0.faults.failRate = 1
            $0.faults.failStatus = 401
        }
        #expect(summary.stopReason == "authentication failed (HTTP 401) with freshly renewed access tokens for 1.5s (circuit.max_pause)")
        #expect(summary.rows == 0)
        #expect(fixture.log.all.contains("warning: a freshly renewed access token was refused (HTTP 401): sending is paused; the token is renewed and one request probes, for up to 1.5s"))
        // The rows that met the refusal, then a probe (a token fetch and a request) now and then.
        #expect(counts.requests < 60, "\(counts.requests) requests")
    }

    /// Five seconds of 503s mid-run: sending pauses while one request probes, the attempts that
    /// failed as the breaker opened are made again, and no row fails.
    @Test(.timeLimit(.minutes(1))) func aFiveSecondOutageEndsWithNoFailedRow() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        concurrency: 8
        output: {path: r.csv}
        requests: [{name: "r${row.id}", each: {csv: d.csv}, path: /p, labels: {p: path}}]
        """, files: ["d.csv": rows(1_000)])
        let (summary, counts) = try await run(fixture, manifest) {
            $0.faults.outageAfter = 300
            $0.faults.outageFor = .seconds(5)
        }
        #expect(summary.ok == 1_000 && summary.failed == 0 && summary.stopReason == nil)
        // Before the pause opens at most the rows of its window (16) and those in flight (8) fail,
        // each at most its 3 attempts; then only the probes (a handful in 5 s) meet the outage.
        #expect(counts.failed > 0 && counts.failed <= (16 + 8) * 3 + 8, "\(counts.failed) answers in the outage")
        #expect(fixture.log.all.contains { $0.contains("the endpoint looks down") })
        #expect(fixture.log.all.contains { $0.contains("the endpoint answers again") })
        let lines = try #require(fixture.read("r.csv")).split(separator: "\n")
        #expect(lines.count == 1_001 && lines.dropFirst().allSatisfy { $0.contains(",ok,200,") })
    }

    /// An endpoint that stays down past circuit.max_pause stops the run, keeping what was written.
    @Test func anEndpointThatStaysDownStopsTheRun() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        concurrency: 4
        circuit: {max_pause: 1500ms}
        output: {path: r.csv}
        requests: [{name: "r${row.id}", each: {csv: d.csv}, path: /p}]
        """, files: ["d.csv": rows(100)])
        let (summary, _) = try await run(fixture, manifest) {
            $0.faults.outageAfter = 20
            $0.faults.outageFor = .seconds(60)
        }
        #expect(summary.stopReason == "the endpoint stayed unreachable for 1.5s (circuit.max_pause)")
        #expect(summary.failed == 0)
        #expect(fixture.dir.exists("r.csv.journal"))
    }

    /// A probe that gets no answer keeps the pause going (and so ends in max_pause), even when
    /// `retry.on` does not call a dropped connection transient: no worker may wait for ever.
    @Test(.timeLimit(.minutes(1))) func aProbeWithoutAnAnswerEndsThePauseInAStop() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        concurrency: 4
        retry: {attempts: 2, backoff: 50ms, on: [503]}
        circuit: {outage_after: 3, max_pause: 1500ms}
        output: {path: r.csv}
        requests: [{name: "r${row.id}", each: {csv: d.csv}, path: /p}]
        """, files: ["d.csv": rows(50)])
        let (summary, _) = try await run(fixture, manifest) {
            $0.faults.outageAfter = 0
            $0.faults.outageFor = .milliseconds(300)
            $0.faults.dropRate = 1
        }
        #expect(summary.stopReason == "the endpoint stayed unreachable for 1.5s (circuit.max_pause)")
        #expect(summary.exitCode == .stopped)
    }

    /// Tokens good for only a few requests, with many workers: a renewed token may be used up by
    /// others before a row sends it, which is not the credentials being refused.
    @Test(arguments: [4, 8]) func shortLivedTokensAmongManyWorkersEndOK(uses: Int) async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        concurrency: 8
        auth: {token_url: "http://127.0.0.1:1/oauth/token", client_id: showbatch, client_secret: "${CLIENT_SECRET}"}
        output: {path: r.csv}
        requests: [{name: "r${row.id}", each: {csv: d.csv}, path: /p}]
        """, files: ["d.csv": rows(200)], environment: ["CLIENT_SECRET": "s3cr3t-client"])
        let (summary, _) = try await run(fixture, manifest) {
            var auth = EmulatorAuth()
            auth.clientID = "showbatch"
            auth.clientSecret = "s3cr3t-client"
            auth.tokenUses = uses
            $0.auth = auth
        }
        if let reason = summary.stopReason { Issue.record("stopped: \(reason)") }
        #expect(summary.ok == 200)
    }
}
