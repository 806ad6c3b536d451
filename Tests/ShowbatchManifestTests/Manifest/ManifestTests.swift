import Foundation
import Testing
import ShowbatchYAML
@testable import ShowbatchBasics
@testable import ShowbatchManifest
import TestSupport

private let minimal = "vault: tnt1\nrequests:\n  - {name: a, path: /post}\n"

@Suite struct ManifestTests {
    @Test func defaultsApply() throws {
        let manifest = try loadManifest(minimal)
        #expect(manifest.environment == "sandbox")
        #expect(manifest.concurrency == 8)
        #expect(manifest.timeout == .seconds(60))
        #expect(manifest.retry == RetryPolicy())
        #expect(manifest.hostnameCheck)
        #expect(manifest.requests.first?.method == .post)
        #expect(manifest.vaultURL == "https://tnt1.sandbox.verygoodproxy.com")
    }

    @Test func everyKeyDecodes() throws {
        let dir = TempDir()
        defer { dir.remove() }
        _ = dir.file("data/aliases.csv", "id,card_alias\n1,tok_a\n")
        let manifest = try loadManifest("""
        version: 1
        vault: tntaq8uft80
        environment: live
        data_region: eu-1
        route_id: 5f1e-aa
        hostname: https://Reveal.Example.com/x
        hostname_check: false
        headers:
          Authorization: "Bearer ${TOKEN}"
        concurrency: 16
        rate_limit: 50/s
        timeout: 500ms
        retry: {attempts: 5, backoff: 1s, max_backoff: 2m, on: [500, timeout]}
        output: {path: out/r.json, csv: {escape_formulas: true}}
        emulator: {aliases: {tok_a: "4111"}, latency: 5ms±1ms, fail_rate: 0.5, seed: 7}
        requests:
          - name: customer-42
            path: /post?x=1
            method: PUT
            headers: {X-Request-Id: 42}
            payload: {card: tok_a, n: 1.50, ok: true, list: [1, null]}
            labels:
              card:
                path: json.card
                transform: [{regex: '(\\d)', template: '$1'}]
                mask: {ranges: [[0, 2], [null, 1]], symbol: "#"}
              n: json.n
          - name: "row-${row.id}-${index}"
            each: {csv: data/aliases.csv}
            path: /post
            payload: {card_number: "${row.card_alias}"}
            output: {path: out/rows.jsonl}
        """, in: dir, environment: ["TOKEN": "t0k"])
        #expect(manifest.vaultURL == "https://tntaq8uft80-5f1e-aa.live-eu-1.verygoodproxy.com")
        #expect(manifest.hostname == "reveal.example.com")
        #expect(!manifest.hostnameCheck)
        #expect(manifest.headers.first?.value == Template(literal: "Bearer t0k"))
        #expect(manifest.rateLimit == Rate(count: 50, per: .seconds(1)))
        #expect(manifest.timeout == .milliseconds(500))
        #expect(manifest.retry.attempts == 5 && manifest.retry.statuses == [500] && manifest.retry.timeout && !manifest.retry.network)
        #expect(manifest.retry.backoff.cap == .seconds(120))
        #expect(manifest.output == OutputSpec(path: dir.path + "/out/r.json", format: nil, escapeFormulas: true))
        #expect(manifest.emulator?.aliases == .inline(["tok_a": "4111"]))
        #expect(manifest.emulator?.faults.latency == .milliseconds(5) && manifest.emulator?.faults.jitter == .milliseconds(1))
        let first = manifest.requests[0]
        #expect(first.method == .put)
        #expect(first.labels.map(\.name) == ["card", "n"])
        #expect(first.labels[0].mask == Mask(ranges: [Mask.Range(start: 0, end: 2), Mask.Range(start: nil, end: 1)], symbol: "#"))
        var payload: [UInt8] = []
        first.payload?.write(row: nil, to: &payload)
        #expect(try JSONParser.parse(payload) == .object([JSONMember("card", .string("tok_a")), JSONMember("n", .number("1.50")),
                                                            JSONMember("ok", .bool(true)), JSONMember("list", .array([.number("1"), .null]))]))
        #expect(manifest.requests[1].each?.kind == .csv)
        #expect(manifest.requests[1].output?.resolvedFormat == .jsonl)
    }

    // Each case: a manifest and the exact errors it gets.
    @Test(arguments: [
        ("vault: tnt1\nenvironment: sandox\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:2:14: error: environment \"sandox\" is not valid; expected sandbox, live or live-<region>\n  environment: sandox\n               ^"),
        ("vault: tnt1\nconcurency: 3\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:2:1: error: unknown key \"concurency\" in the manifest; did you mean \"concurrency\"?\n  concurency: <redacted>\n  ^"),
        ("vault: tnt1\nbogus: 3\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:2:1: error: unknown key \"bogus\" in the manifest; expected version, name, vault, environment, data_region, route_id, hostname, hostname_check, hostname_fallback, satellite_port, vault_api, headers, concurrency, rate_limit, max_failed, audit, metrics, resume_max_age, timeout, transport, connections, tls, auth, circuit, retry, output, emulator or requests\n  bogus: <redacted>\n  ^"),
        ("vault: tnt1\ntransport: urlsession\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:2:12: error: transport \"urlsession\" is no longer available; curl is the only transport (remove the key, or write curl)\n  transport: urlsession\n             ^"),
        ("vault: tnt1\ntransport: nio\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:2:12: error: transport \"nio\" is not valid; expected curl, the only transport\n  transport: nio\n             ^"),
        ("requests: [{name: a, path: /p}]\n",
         "m.yaml:1:1: error: missing required key \"vault\" in the manifest\n  requests: [{name: a, path: /p}]\n  ^"),
        ("vault: tnt-1\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:1:8: error: vault \"tnt-1\" is not valid; expected letters and digits only, such as tntaq8uft80\n  vault: tnt-1\n         ^"),
        ("vault: tnt1\nenvironment: live-eu-1\ndata_region: eu-1\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:3:14: error: data_region is given but environment \"live-eu-1\" already names a region; give one or the other\n  data_region: eu-1\n               ^"),
        ("vault: tnt1\ndata_region: ua_0505\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:2:14: error: data_region \"ua_0505\" is not valid; expected letters and digits in dash-separated parts, such as eu-1\n  data_region: ua_0505\n               ^"),
        ("vault: tnt1\nhostname: http://h.io\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:2:11: error: hostname \"http://h.io\" uses http; only https is supported\n  hostname: http://h.io\n            ^"),
        ("vault: tnt1\nhostname: h.io:0\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:2:11: error: hostname \"h.io:0\" has an invalid port; expected HOST or HOST:PORT with a port from 1 to 65535\n  hostname: h.io:0\n            ^"),
        ("vault: tnt1\nhostname: \"h.io:84x3\"\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:2:11: error: hostname \"h.io:84x3\" has an invalid port; expected HOST or HOST:PORT with a port from 1 to 65535\n  hostname: \"h.io:84x3\"\n            ^"),
        ("vault: tnt1\nhostname: h.io:8443\nsatellite_port: 9098\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:3:17: error: satellite_port works only with environment: sandbox and no data_region, route_id or hostname\n  satellite_port: 9098\n                  ^"),
        ("vault: tnt1\nenvironment: live\nsatellite_port: 9098\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:3:17: error: satellite_port works only with environment: sandbox and no data_region, route_id or hostname\n  satellite_port: 9098\n                  ^"),
        ("vault: tnt1\nsatellite_port: 70000\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:2:17: error: satellite_port must be from 1 to 65535; found 70000\n  satellite_port: 70000\n                  ^"),
        ("vault: tnt1\nconcurrency: many\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:2:14: error: concurrency must be an integer from 1 to 1024; found a string\n  concurrency: many\n               ^"),
        ("vault: tnt1\nconcurrency: 0\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:2:14: error: concurrency must be from 1 to 1024; found 0\n  concurrency: 0\n               ^"),
        ("vault: tnt1\nrate_limit: fast\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:2:13: error: rate_limit must be N/s or N/m, such as 50/s; found \"fast\"\n  rate_limit: fast\n              ^"),
        ("vault: tnt1\ntimeout: 10 minutes\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:2:10: error: timeout must be a positive duration such as 500ms, 30s or 2m; found \"10 minutes\"\n  timeout: 10 minutes\n           ^"),
        ("vault: tnt1\nversion: 2\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:2:10: error: version 2 is newer than this showbatch understands; expected 1\n  version: 2\n           ^"),
        ("vault: tnt1\nhostname_check: yes\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:2:17: error: hostname_check must be true or false; found a string\n  hostname_check: yes\n                  ^"),
        ("vault: tnt1\nretry: {on: [429, sometimes]}\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:2:19: error: retry.on holds HTTP statuses (100-599), network or timeout; found \"sometimes\"\n  retry: {on: [429, sometimes]}\n                    ^"),
        ("vault: tnt1\nheaders: {\"Bad Name\": x}\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:2:11: error: a header name is not valid (not shown); expected letters, digits and !#$%&'*+-.^_`|~ (is a \": \" missing?)\n  headers: {<redacted>: <redacted>}\n            ^"),
        ("vault: tnt1\nheaders:\n  Authorization: \"Bearer ${TOKEN}\"\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:3:18: error: environment variable TOKEN is not set (used in headers.Authorization)\n    Authorization: <redacted>\n                   ^"),
        ("vault: tnt1\nheaders:\n  X-A: \"two\\nlines\"\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:3:8: error: headers.X-A contains a line break, which a header value cannot hold\n    X-A: <redacted>\n         ^"),
        ("vault: tnt1\noutput: {path: out/x.txt}\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:2:16: error: cannot tell the format of \"out/x.txt\" from its extension; add format: csv, json or jsonl\n  output: {path: out/x.txt}\n                 ^"),
        ("vault: tnt1\noutput: {path: out/x.csv, format: xml}\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:2:35: error: output.format \"xml\" is not valid; expected csv, json or jsonl\n  output: {path: out/x.csv, format: xml}\n                                    ^"),
        ("vault: tnt1\nrequests: []\n",
         "m.yaml:2:11: error: requests is empty; list at least one request\n  requests: []\n            ^"),
        ("vault: tnt1\nrequests:\n  - path: /p\n",
         "m.yaml:3:5: error: missing required key \"name\" in request 1\n    - path: /p\n      ^"),
        ("vault: tnt1\nrequests:\n  - name: a\n",
         "m.yaml:3:5: error: missing required key \"path\" in request \"a\"\n    - name: a\n      ^"),
        ("vault: tnt1\nrequests:\n  - {name: a, path: /p, method: fetch}\n",
         "m.yaml:3:33: error: method \"fetch\" is not valid; expected get, post, put, patch or delete\n    - {name: a, path: /p, method: fetch}\n                                  ^"),
        ("vault: tnt1\nrequests:\n  - {name: a, path: /p, payload: [1]}\n",
         "m.yaml:3:34: error: request \"a\" payload must be a mapping (sent as a JSON object); found a list\n    - {name: a, path: /p, payload: [<redacted>]}\n                                   ^"),
        ("vault: tnt1\nrequests:\n  - {name: a, path: /p, method: get, payload: {x: 1}}\n",
         "m.yaml:3:47: error: request \"a\" uses method get, which cannot carry a payload; use post or remove the payload\n    - {name: a, path: /p, method: get, payload: {x: <redacted>}}\n                                                ^"),
        ("vault: tnt1\nrequests:\n  - {name: a, path: /p}\n  - {name: a, path: /q}\n",
         "m.yaml:4:12: error: request name \"a\" is used twice; first at line 3\n    - {name: a, path: /q}\n             ^"),
        ("vault: tnt1\nrequests:\n  - {name: a, path: /p, labels: {x: \"a..b\"}}\n",
         "m.yaml:3:37: error: content path \"a..b\" has an empty segment\n    - {name: a, path: /p, labels: {x: \"a..b\"}}\n                                      ^"),
        ("vault: tnt1\nrequests:\n  - {name: a, path: /p, labels: {status: json.s}}\n",
         "m.yaml:3:34: error: label \"status\" has the name of a result column; rename it (result columns are request, status, http_status, attempts or error)\n    - {name: a, path: /p, labels: {status: json.s}}\n                                   ^"),
        ("vault: tnt1\nrequests:\n  - name: a\n    path: /p\n    labels:\n      x: {path: json.x, transform: [{regex: '(', template: x}]}\n",
         "m.yaml:6:45: error: label \"x\": regex '(' does not compile\n        x: {path: json.x, transform: [{regex: '(', template: x}]}\n                                              ^"),
        ("vault: tnt1\nrequests:\n  - name: a\n    path: /p\n    labels:\n      x: {path: json.x, mask: {symbol: \"**\"}}\n",
         "m.yaml:6:40: error: label \"x\" mask symbol must be one character or \"\"; found \"**\"\n        x: {path: json.x, mask: {symbol: \"**\"}}\n                                         ^"),
        ("vault: tnt1\nrequests:\n  - name: a\n    path: /p\n    labels:\n      x: {path: json.x, mask: {ranges: [[0]]}}\n",
         "m.yaml:6:41: error: label \"x\" mask range must be [start, end] (integers or null); found a list\n        x: {path: json.x, mask: {ranges: [[0]]}}\n                                          ^"),
        ("vault: tnt1\nrequests:\n  - name: a\n    path: /p\n    labels:\n      x: {path: json.x, mask: {ranges: [[a, 1]]}}\n",
         "m.yaml:6:42: error: label \"x\" mask range bounds must be integers or null; found a string\n        x: {path: json.x, mask: {ranges: [[a, 1]]}}\n                                           ^"),
        ("vault: tnt1\nrequests:\n  - {name: \"n-${row.id}\", path: /p}\n",
         "m.yaml:3:12: error: ${row.id} in request 1 name needs a request with \"each\"\n    - {name: \"n-${row.id}\", path: /p}\n             ^"),
        ("vault: tnt1\nrequests:\n  - {name: \"n-${oops\", path: /p}\n",
         "m.yaml:3:12: error: request 1 name: \"${\" is not closed by \"}\" (write $${ for a literal ${)\n    - {name: \"n-${oops\", path: /p}\n             ^"),
        ("vault: tnt1\nrequests:\n  - {name: a, path: /p, payload: {card: \"${SECRET_CARD}\"}}\n",
         "m.yaml:3:41: error: environment variable SECRET_CARD is not set (used in request \"a\" payload.card)\n    - {name: a, path: /p, payload: {card: <redacted>}}\n                                          ^"),
        ("vault: tnt1\nrequests:\n  - {name: a, path: /p, each: {csv: nothere.csv}}\n",
         "m.yaml:3:37: error: data file \"nothere.csv\" cannot be read: No such file or directory\n    - {name: a, path: /p, each: {csv: nothere.csv}}\n                                      ^"),
        ("vault: tnt1\nrequests:\n  - {name: a, path: /p, each: {csv: a.csv, jsonl: b.jsonl}}\n",
         "m.yaml:3:31: error: request 1 each takes one of csv or jsonl, not both\n    - {name: a, path: /p, each: {csv: a.csv, jsonl: b.jsonl}}\n                                ^"),
        ("vault: tnt1\nemulator: {fail_rate: 2}\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:2:23: error: emulator.fail_rate must be a probability from 0 to 1, such as 0.05\n  emulator: {fail_rate: 2}\n                        ^"),
    ])
    func validationErrors(text: String, expected: String) {
        #expect(manifestErrors(text) == expected)
    }

    @Test func referencedColumnsMustBeInTheCSVHeader() {
        let text = "vault: tnt1\nrequests:\n  - name: \"r-${row.id}\"\n    each: {csv: d.csv}\n    path: /p\n    payload: {c: \"${row.card_alais}\"}\n"
        #expect(manifestErrors(text, files: ["d.csv": "id,card_alias\n1,tok\n"]) ==
            "m.yaml:6:14: error: column \"card_alais\" is not in the header of d.csv; did you mean \"card_alias\"?\n      payload: {c: <redacted>}\n               ^")
    }

    @Test func validateReportsEveryProblemInFileOrder() {
        let errors = manifestErrors("environment: liv\nconcurrency: 0\nrequests: 3\nbogus: 1\n")
        let headers = errors.split(separator: "\n").filter { $0.hasPrefix("m.yaml") }
        #expect(headers == [
            "m.yaml:1:1: error: missing required key \"vault\" in the manifest",
            "m.yaml:1:14: error: environment \"liv\" is not valid; expected sandbox, live or live-<region>",
            "m.yaml:2:14: error: concurrency must be from 1 to 1024; found 0",
            "m.yaml:3:11: error: requests must be a list of requests; found an integer",
            "m.yaml:4:1: error: unknown key \"bogus\" in the manifest; expected version, name, vault, environment, data_region, route_id, hostname, hostname_check, hostname_fallback, satellite_port, vault_api, headers, concurrency, rate_limit, max_failed, audit, metrics, resume_max_age, timeout, transport, connections, tls, auth, circuit, retry, output, emulator or requests",
        ])
    }

    @Test(arguments: [
        ("", "m.yaml: error: the file is empty; expected a YAML mapping"),
        ("- a\n- b\n", "m.yaml:1:1: error: the manifest must be a mapping; found a list\n  - <redacted>\n  ^"),
    ])
    func badDocuments(text: String, expected: String) {
        #expect(manifestErrors(text) == expected)
    }

    @Test func missingFileAndDirectory() {
        let dir = TempDir()
        defer { dir.remove() }
        let missing = #expect(throws: ManifestError.self) { try ManifestLoader.load(path: dir.path + "/none.yaml", recipients: recipientsUnchecked) }
        #expect(missing?.description == "\(dir.path)/none.yaml: error: no such file")
        let directory = #expect(throws: ManifestError.self) { try ManifestLoader.load(path: dir.path, recipients: recipientsUnchecked) }
        #expect(directory?.description == "\(dir.path): error: is a directory; expected a manifest file")
    }

    @Test func secretsNeverAppearInErrors() {
        let text = "vault: tnt1\nheaders: {Authorization: \"Bearer sk_live_SECRET\", X-Bad: \"${NOPE}sk_live_SECRET\"}\nrequests:\n  - {name: a, path: /p, method: get, payload: {card: \"4111111111111111\"}}\n"
        let errors = manifestErrors(text)
        #expect(!errors.isEmpty)
        #expect(!errors.contains("sk_live_SECRET"))
        #expect(!errors.contains("4111111111111111"))
    }

    @Test func templatesExpandRowsAndEscapes() throws {
        var template = try Template(parsing: "a-$${x}-${row.id}-${index}-${HOME}-$5")
        #expect(template.resolveEnvironment(["HOME": "h"]) == [])
        let row = DataRow(index: 3, line: 5, values: ["id": .number("7")])
        #expect(template.expand(row: row) == "a-${x}-7-3-h-$5")
        #expect(throws: TemplateSyntaxError.self) { try Template(parsing: "${a b}") }
    }

    @Test func wholeStringRowReferencesKeepTheirJSONType() throws {
        let payload = PayloadValue.object([("n", .string(try Template(parsing: "${row.n}"))), ("s", .string(try Template(parsing: "x${row.n}"))),
                                           ("q", .string(try Template(parsing: "\"${row.q}\"\t${index}"))), ("o", .string(try Template(parsing: "${row.o}"))),
                                           ("l", .array([.null, .bool(false), .number("-1.5e3"), .string(try Template(parsing: "${row.missing}"))]))])
        let row = DataRow(index: 7, line: 1, values: ["n": .number("42"), "q": .string("a\\b\u{1}é"),
                                                      "o": .object([JSONMember("k", .array([.bool(true)]))])])
        var out: [UInt8] = []
        payload.write(row: row, to: &out)
        #expect(String(decoding: out, as: UTF8.self)
            == #"{"n":42,"s":"x42","q":"\"a\\b\u0001é\"\t7","o":{"k":[true]},"l":[null,false,-1.5e3,""]}"#)
    }

    @Test(arguments: [("500ms", Duration.milliseconds(500)), ("30s", .seconds(30)), ("2m", .seconds(120)), ("1.5", .milliseconds(1500)), ("1h", .seconds(3600))])
    func durations(text: String, expected: Duration) {
        #expect(Units.duration(text) == expected)
    }

    @Test(arguments: ["0", "-1s", "abc", "", "5 s", "+3s", "1e3"])
    func badDurations(text: String) {
        #expect(Units.duration(text) == nil)
    }
}

@Suite struct ManifestSafetyTests {
    /// A duration too large for the clocks (9.2e9 s and up once crashed the process) is a
    /// positioned error naming the range, wherever a duration is read.
    @Test func hugeDurationsArePositionedErrorsNotCrashes() {
        let text = "vault: tnt1\ntimeout: 10000000000s\nretry: {backoff: 9999999999, max_backoff: 25h}\nemulator: {latency: 99999999999h}\nrequests: [{name: a, path: /p}]\n"
        #expect(manifestErrors(text) == """
        m.yaml:2:10: error: timeout must be a duration from 1ms to 24h; found "10000000000s"
          timeout: 10000000000s
                   ^
        m.yaml:3:18: error: retry.backoff must be a duration from 1ms to 24h; found "9999999999"
          retry: {backoff: 9999999999, max_backoff: 25h}
                           ^
        m.yaml:3:43: error: retry.max_backoff must be a duration from 1ms to 24h; found "25h"
          retry: {backoff: 9999999999, max_backoff: 25h}
                                                    ^
        m.yaml:4:21: error: emulator.latency must be a duration with optional jitter, such as 50ms or 50ms±10ms, each at most 24h
          emulator: {latency: 99999999999h}
                              ^
        """)
    }

    @Test(arguments: [("99999999999", Units.DurationError.outOfRange), ("86401", .outOfRange), ("0.0001", .outOfRange),
                      ("1e30", .malformed), ("24h", nil), ("1ms", nil)])
    func durationsHaveARange(text: String, error: Units.DurationError?) {
        switch Units.parseDuration(text) {
        case .success: #expect(error == nil)
        case .failure(let found): #expect(found == error)
        }
    }

    /// A control character in a header value (NUL, ESC…) could cut or forge the header: refused,
    /// without the value; a tab is allowed.
    @Test func controlCharactersInHeaderValuesAreRefused() {
        let text = "vault: tnt1\nheaders: {X-A: \"a\\0b\", X-B: \"\\e[31m\", X-C: \"tab\\tok\"}\nrequests: [{name: a, path: /p}]\n"
        #expect(manifestErrors(text) == """
        m.yaml:2:16: error: headers.X-A contains a control character (byte 0x00), which a header value cannot hold
          headers: {X-A: <redacted>, X-B: <redacted>, X-C: <redacted>}
                         ^
        m.yaml:2:29: error: headers.X-B contains a control character (byte 0x1B), which a header value cannot hold
          headers: {X-A: <redacted>, X-B: <redacted>, X-C: <redacted>}
                                          ^
        """)
    }

    /// A CSV data file that names a column twice is refused before anything is sent, naming the
    /// file, the column and both positions.
    @Test func aCSVHeaderWithAColumnTwiceIsRefused() {
        let text = "vault: tnt1\nrequests: [{name: a, path: /p, each: {csv: dup.csv}}]\n"
        #expect(manifestErrors(text, files: ["dup.csv": "id,x,id\n1,2,3\n"]) == """
        m.yaml:2:38: error: data file dup.csv:1: has the column "id" twice in its header (columns 1 and 3); rename one
          requests: [{name: a, path: /p, each: {csv: dup.csv}}]
                                               ^
        """)
    }
}

@Suite struct EnvironmentInEveryValueTests {
    /// One manifest is promoted from sandbox to live by its pod's environment: every string value
    /// may use `${NAME}`, resolved when the manifest is read.
    @Test func everyStringValueMayComeFromTheEnvironment() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let manifest = try loadManifest("""
        vault: ${VGS_VAULT_ID}
        environment: ${VGS_ENVIRONMENT}
        data_region: ${VGS_REGION}
        hostname: ${VGS_HOSTNAME}
        timeout: ${TIMEOUT}
        rate_limit: ${RATE}
        output: {path: "${OUT_DIR}/r.csv"}
        requests: [{name: a, path: /p, labels: {c: "json.${FIELD}"}}]
        """, in: dir, environment: ["VGS_VAULT_ID": "tntlive1", "VGS_ENVIRONMENT": "live", "VGS_REGION": "eu-1", "VGS_HOSTNAME": "reveal.example.com",
                                    "TIMEOUT": "15s", "RATE": "20/s", "OUT_DIR": "exports", "FIELD": "card_number"])
        #expect(manifest.vaultURL == "https://tntlive1.live-eu-1.verygoodproxy.com")
        #expect(manifest.hostname == "reveal.example.com" && manifest.timeout == .seconds(15))
        #expect(manifest.rateLimit == Rate(count: 20, per: .seconds(1)))
        #expect(manifest.output?.path == dir.path + "/exports/r.csv")
        #expect(manifest.requests[0].labels[0].path.text == "json.card_number")
    }

    /// An unset variable is an error at its place; a data row reference where no row exists too;
    /// `$${` is a literal `${`.
    @Test func unsetVariablesAndRowReferencesArePositionedErrors() {
        #expect(manifestErrors("vault: ${VGS_VAULT_ID}\nenvironment: ${ENV}x\nroute_id: ${row.id}\nrequests: [{name: a, path: /p}]\n", environment: ["ENV": "live"]) == """
        m.yaml:1:8: error: environment variable VGS_VAULT_ID is not set (used in vault)
          vault: ${VGS_VAULT_ID}
                 ^
        m.yaml:2:14: error: environment "livex" is not valid; expected sandbox, live or live-<region>
          environment: ${ENV}x
                       ^
        m.yaml:3:11: error: route_id cannot use ${row.…} or ${index}; only request names, paths, headers and payloads can
          route_id: ${row.id}
                    ^
        """)
        #expect(manifestErrors("vault: tnt1\noutput: {path: \"a$${b}.csv\"}\nrequests: [{name: a, path: /p}]\n") == "")
    }
}
