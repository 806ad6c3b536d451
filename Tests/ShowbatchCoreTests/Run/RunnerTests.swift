import Foundation
import Synchronization
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import ShowbatchEmulator
import TestSupport

private let cardManifest = """
vault: tnt1
concurrency: 4
output: {path: out/cards.csv}
emulator:
  aliases: {tok_card: "4111111111111111", tok_exp: "01/2030", tok_name: "Ada, \\"The\\" Countess"}
requests:
  - name: full
    path: /post
    payload: {card: {number: tok_card, exp: tok_exp}, name: tok_name, n: 1.50, flag: true}
    labels:
      number:
        path: json.card.number
        transform: [{regex: '(\\d{4})(\\d{4})(\\d{4})(\\d{4})', template: '$1 $2 $3 $4'}]
        mask: {ranges: [[0, 13]], symbol: "*"}
      exp: json.card.exp
      name: json.name
      n: json.n
      flag: json.flag
      card: json.card
  - name: partial
    path: /post
    payload: {card: {number: tok_card}}
    labels:
      number: json.card.number
      exp: json.card.exp
"""

@Suite(.serialized) struct RunnerTests {
    @Test func writesExactCSVInManifestOrder() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let summary = try await fixture.run(try fixture.manifest(cardManifest))
        #expect(summary.rows == 2 && summary.ok == 1 && summary.partial == 1 && summary.failed == 0)
        #expect(fixture.read("out/cards.csv") == """
        request,status,http_status,attempts,error,number,exp,name,n,flag,card
        full,ok,200,1,,************** 1111,01/2030,"Ada, ""The"" Countess",1.50,true,"{""number"":""4111111111111111"",""exp"":""01/2030""}"
        partial,partial,200,1,1403 field_not_found: label exp: no value at json.card.exp,4111111111111111,,,,,

        """)
        #expect(fixture.mode("out/cards.csv") == 0o600)
        #expect(!fixture.dir.exists("out/cards.csv.partial"))
        #expect(!fixture.dir.exists("out/cards.csv.journal"))
    }

    @Test func writesExactJSONAndJSONLines() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(cardManifest)
        var options = RunOptions()
        options.output = fixture.dir.path + "/r.json"
        _ = try await fixture.run(manifest, options: options)
        let full = #"{"request":"full","status":"ok","http_status":200,"attempts":1,"labels":{"number":"************** 1111","exp":"01/2030","name":"Ada, \"The\" Countess","n":"1.50","flag":"true","card":"{\"number\":\"4111111111111111\",\"exp\":\"01/2030\"}"},"errors":[]}"#
        let partial = #"{"request":"partial","status":"partial","http_status":200,"attempts":1,"labels":{"number":"4111111111111111","exp":null},"errors":[{"code":1403,"kind":"field_not_found","label":"exp","message":"label exp: no value at json.card.exp"}]}"#
        #expect(fixture.read("r.json") == "[\n\(full),\n\(partial)\n]\n")
        options.output = fixture.dir.path + "/r.jsonl"
        _ = try await fixture.run(manifest, options: options)
        #expect(fixture.read("r.jsonl") == "\(full)\n\(partial)\n")
        #expect(fixture.mode("r.jsonl") == 0o600)
    }

    @Test func formulaEscaping() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        output: {path: f.csv, csv: {escape_formulas: true}}
        emulator: {aliases: {tok: "=HYPERLINK(1)", tok_w: "@x", tok_z: "-1"}}
        requests:
          - {name: "+r", path: /p, payload: {v: tok, w: tok_w, z: tok_z}, labels: {v: json.v, w: json.w, z: json.z}}
        """)
        _ = try await fixture.run(manifest)
        #expect(fixture.read("f.csv") == "request,status,http_status,attempts,error,v,w,z\n'+r,ok,200,1,,'=HYPERLINK(1),'@x,-1\n")
    }

    @Test func failuresAreRetriedPerPolicy() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        output: {path: r.csv}
        retry: {attempts: 3, backoff: 1ms, max_backoff: 2ms}
        circuit: {outage_after: 0}  # the retry policy alone: an endpoint that is down would pause the run
        emulator: {fail_rate: 1, fail_status: 503}
        requests: [{name: a, path: /p, labels: {x: json.x}}]
        """)
        let summary = try await fixture.run(manifest)
        #expect(summary.failed == 1 && summary.retries == 2)
        #expect(fixture.read("r.csv") == "request,status,http_status,attempts,error,x\na,failed,503,3,1500 http_status: HTTP 503,\n")
    }

    @Test func a500IsNotRetriedUnlessAsked() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let text = """
        vault: tnt1
        output: {path: r.csv}
        retry: {attempts: 4, backoff: 1ms%@}
        circuit: {outage_after: 0}
        emulator: {fail_rate: 1, fail_status: 500}
        requests: [{name: a, path: /p}]
        """
        _ = try await fixture.run(try fixture.manifest(text.replacingOccurrences(of: "%@", with: "")))
        #expect(fixture.read("r.csv") == "request,status,http_status,attempts,error\na,failed,500,1,1500 http_status: HTTP 500\n")
        _ = try await fixture.run(try fixture.manifest(text.replacingOccurrences(of: "%@", with: ", on: [500]")))
        #expect(fixture.read("r.csv") == "request,status,http_status,attempts,error\na,failed,500,4,1500 http_status: HTTP 500\n")
    }

    /// A 429 never fails a row or uses up its attempts: the run waits as the emulator's
    /// Retry-After says, then keeps to the rate it learned; every row ok after one attempt.
    @Test func throttlingSlowsTheRunAndFailsNoRow() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let requests = (0..<12).map { "  - {name: r\($0), path: /p}" }.joined(separator: "\n")
        let manifest = try fixture.manifest("vault: tnt1\nconcurrency: 4\noutput: {path: r.csv}\nretry: {attempts: 2, backoff: 1ms}\n"
                                            + "emulator: {throttle: 4/s}\nrequests:\n\(requests)\n")
        let summary = try await fixture.run(manifest)
        #expect(summary.ok == 12 && summary.exitCode == .ok && summary.retries == 0 && summary.resentAfter429 > 0)
        #expect(fixture.read("r.csv") == "request,status,http_status,attempts,error\n" + (0..<12).map { "r\($0),ok,200,1,\n" }.joined())
        #expect(fixture.log.all.contains { $0.hasPrefix("warning: the endpoint answers 429 (rate limited): sending waits for every row until the endpoint says its limit resets") })
    }

    /// With 429 left out of retry.on, a 429 is the row's failure, at once, as asked.
    @Test func a429OutsideRetryOnFailsTheRow() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        concurrency: 1
        output: {path: r.csv}
        retry: {attempts: 3, backoff: 1ms, on: [503, network]}
        emulator: {throttle: 1/m}
        requests: [{name: a, path: /p}, {name: b, path: /p}]
        """)
        _ = try await fixture.run(manifest)
        #expect(fixture.read("r.csv") == "request,status,http_status,attempts,error\na,ok,200,1,\nb,failed,429,1,1429 rate_limited: HTTP 429 after 1 attempt\n")
    }

    @Test func malformedDroppedAndSlowAnswers() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        // Only the slow case has a short timeout: on a loaded machine 200 ms can pass before a drop is seen.
        let base = "vault: tnt1\noutput: {path: r.csv}\nretry: {attempts: 2, backoff: 1ms}\nrequests: [{name: a, path: /p, labels: {x: json.x}}]\n"
        _ = try await fixture.run(try fixture.manifest(base + "emulator: {malformed_rate: 1}\n"))
        #expect(fixture.read("r.csv") == "request,status,http_status,attempts,error,x\na,failed,200,1,1402 response_invalid_json: response body is not valid JSON (unterminated string at byte 16),\n")
        _ = try await fixture.run(try fixture.manifest(base + "emulator: {drop_rate: 1}\n"))
        let dropped = fixture.read("r.csv") ?? ""
        #expect(dropped.hasPrefix("request,status,http_status,attempts,error,x\na,failed,,2,1501 network: "), "\(dropped)")
        _ = try await fixture.run(try fixture.manifest(base + "timeout: 200ms\nemulator: {latency: 2s}\n"))
        #expect(fixture.read("r.csv") == "request,status,http_status,attempts,error,x\na,failed,,2,1502 timeout: no answer within 200ms,\n")
    }

    @Test func rateLimitHoldsAcrossTheRun() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let requests = (0..<6).map { "  - {name: r\($0), path: /p}" }.joined(separator: "\n")
        let manifest = try fixture.manifest("vault: tnt1\nconcurrency: 6\nrate_limit: 10/s\noutput: {path: r.csv}\nrequests:\n\(requests)\n")
        let start = ContinuousClock.now
        let summary = try await fixture.run(manifest)
        #expect(summary.ok == 6)
        // Six starts at 10/s need at least five spacings of 100 ms.
        #expect(ContinuousClock.now - start >= .milliseconds(500))
    }

    @Test func rowsStayInOrderWhateverOrderAnswersArriveIn() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let requests = (0..<300).map { "  - {name: r\($0), path: /p, payload: {i: \"\($0)\"}, labels: {i: {path: json.i, revealed: optional}}}" }.joined(separator: "\n")
        let manifest = try fixture.manifest("vault: tnt1\nconcurrency: 16\noutput: {path: r.csv}\nemulator: {latency: 5ms±5ms, seed: 3}\nrequests:\n\(requests)\n")
        let summary = try await fixture.run(manifest)
        #expect(summary.ok == 300)
        let expected = "request,status,http_status,attempts,error,i\n" + (0..<300).map { "r\($0),ok,200,1,,\($0)\n" }.joined()
        #expect(fixture.read("r.csv") == expected)
    }

    /// A slow first request holds the window: exactly `window - 1` later requests are sent before
    /// it is answered (r0 is let go only once every other worker waits for room, so a run that
    /// sent more would have done so by then), the workers wait, and then every row is written
    /// in order. A run whose parked workers were never woken would hang here.
    @Test(.timeLimit(.minutes(1)))
    func aSlowRequestHoldsTheWindow() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let requests = (0..<200).map { "  - {name: r\($0), path: /p, payload: {i: \"\($0)\"}, labels: {i: {path: json.i, revealed: optional}}}" }.joined(separator: "\n")
        let manifest = try fixture.manifest("vault: tnt1\nconcurrency: 4\noutput: {path: r.csv}\nrequests:\n\(requests)\n")
        let (emulator, options) = try fixture.emulator(for: manifest)
        defer { emulator.stop() }
        let inner = CurlTransport(maxConnections: 4)
        let holding = HeadHoldingTransport(inner: inner)
        var runner = Runner(manifest: manifest, options: options, transport: holding, environment: [:])
        // The three workers other than r0's all waiting: nothing more can be sent until r0 is answered.
        runner.onPark = { parked in if parked == 3 { holding.release() } }
        let summary = try await runner.run()
        #expect(summary.ok == 200)
        // The window is max(4 × 4, 64) rows: r0 and the 63 after it.
        #expect(holding.sentWhileHeld.withLock { $0 } == 63)
        #expect(holding.inFlightAfter.load(ordering: .relaxed) >= 2)
        let expected = "request,status,http_status,attempts,error,i\n" + (0..<200).map { "r\($0),ok,200,1,,\($0)\n" }.joined()
        #expect(fixture.read("r.csv") == expected)
    }

    @Test func verboseEventsCarryNoSecrets() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        output: {path: r.csv}
        headers: {Authorization: "Bearer ${TOKEN}"}
        emulator: {aliases: {tok: "4111111111111111"}}
        requests: [{name: a, path: /p, payload: {c: tok, note: "payload-secret"}, labels: {c: json.c}}]
        """, environment: ["TOKEN": "sk_header_secret"])
        var options = RunOptions()
        options.verbose = true
        _ = try await fixture.run(manifest, options: options)
        let events = fixture.log.all.joined(separator: "\n")
        #expect(events.contains("attempt: POST http://127.0.0.1:"))
        for secret in ["sk_header_secret", "4111111111111111", "payload-secret", "tok"] {
            #expect(!events.contains(secret))
        }
    }

    @Test func noOutputAnywhereIsAUsageError() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        // The quoted line hides the header value, as validation errors do.
        let manifest = try fixture.manifest("vault: tnt1\nrequests:\n  - {name: a, path: /p, headers: {X-Token: s3cret}}\n")
        await #expect(throws: RunError.self) { try await fixture.run(manifest) }
        do {
            _ = try await fixture.run(manifest)
        } catch {
            let text = (error as? RunError)?.description.replacingOccurrences(of: manifest.file, with: "m.yaml")
            #expect(text == "m.yaml:3:5: error: request 1 has no output: give --output PATH, or add output: to the manifest or the request\n    - {name: a, path: /p, headers: {X-Token: <redacted>}}\n      ^")
        }
    }

    /// The line quoted is the one the manifest was read from: a file changed since (a deploy
    /// mid-run) would otherwise have the caret point into other text.
    @Test func aRunTimeManifestErrorQuotesTheTextThatWasRead() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("vault: tnt1\nrequests:\n  - {name: a, path: /p}\n")
        _ = fixture.dir.file("m.yaml", "# rewritten\n\n\nvault: tnt2\nrequests: []\n")
        do {
            _ = try await fixture.run(manifest)
            Issue.record("the run started")
        } catch {
            let text = (error as? RunError)?.description.replacingOccurrences(of: manifest.file, with: "m.yaml")
            #expect(text == "m.yaml:3:5: error: request 1 has no output: give --output PATH, or add output: to the manifest or the request\n    - {name: a, path: /p}\n      ^")
        }
    }

    @Test func hostnameCheckActivatesOrFallsBack() async throws {
        let emulator = try Emulator(configuration: { var c = EmulatorConfiguration(); c.cnames = ["reveal.example.com": "tnt1"]; return c }())
        emulator.start()
        defer { emulator.stop() }
        let environment = ["SHOWBATCH_HOSTNAME_CHECK_URL": emulator.baseURL]
        let activated = try loadManifest("vault: tnt1\nhostname: reveal.example.com\nrequests: [{name: a, path: /p}]\n")
        #expect(try await Runner(manifest: activated, options: RunOptions(), environment: environment).resolveBaseURL() == .url("https://reveal.example.com"))
        let other = try loadManifest("vault: tnt2\nhostname: reveal.example.com\nrequests: [{name: a, path: /p}]\n")
        let log = EventLog()
        let fallback = try await Runner(manifest: other, options: RunOptions(), environment: environment) { log.record($0) }.resolveBaseURL()
        #expect(fallback == .url("https://tnt2.sandbox.verygoodproxy.com"))
        #expect(log.all == ["warning: hostname reveal.example.com is not activated for vault tnt2 (the check answered HTTP 403); using https://tnt2.sandbox.verygoodproxy.com"])
        var strict = RunOptions()
        strict.strictHostname = true
        await #expect(throws: RunError.self) { try await Runner(manifest: other, options: strict, environment: environment).resolveBaseURL() }
        let unchecked = try loadManifest("vault: tnt2\nhostname: reveal.example.com\nhostname_check: false\nrequests: [{name: a, path: /p}]\n")
        #expect(try await Runner(manifest: unchecked, options: RunOptions(), environment: environment).resolveBaseURL() == .url("https://reveal.example.com"))
    }
}

/// Holds request r0 until the run has no other worker left to send with (each is waiting for
/// room in the window), to see how many requests the run sends while r0 is outstanding, and how
/// many run at once after. Runs its requests where the inner transport would (the curl loop's thread).
final class HeadHoldingTransport: Transport, Sendable {
    let inner: any Transport
    /// Requests other than r0 sent while r0 was outstanding.
    let sentWhileHeld = Mutex<Int>(0)
    let held = Atomic<Bool>(true)
    let inFlight = Atomic<Int>(0)
    /// The most requests in flight at once after r0 was let go: the waiting workers' doing.
    let inFlightAfter = Atomic<Int>(0)
    private let gate = Mutex<(open: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    init(inner: any Transport) {
        self.inner = inner
    }

    var executor: (any TaskExecutor)? { inner.executor }

    /// Lets r0 go.
    func release() {
        let waiter = gate.withLock { gate -> CheckedContinuation<Void, Never>? in
            gate.open = true
            defer { gate.waiter = nil }
            return gate.waiter
        }
        waiter?.resume()
    }

    func send(_ request: PreparedRequest, timeout: Duration) async -> TransportResult {
        guard request.name == "r0" else {
            if held.load(ordering: .acquiring) { sentWhileHeld.withLock { $0 += 1 } }
            let now = inFlight.add(1, ordering: .relaxed).newValue
            if !held.load(ordering: .acquiring) { inFlightAfter.max(now, ordering: .relaxed) }
            defer { inFlight.subtract(1, ordering: .relaxed) }
            return await inner.send(request, timeout: timeout)
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let open = gate.withLock { gate -> Bool in
                if !gate.open { gate.waiter = continuation }
                return gate.open
            }
            if open { continuation.resume() }
        }
        held.store(false, ordering: .releasing)
        return await inner.send(request, timeout: timeout)
    }
}
