import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// What the run's last net hides: secret values, as written and encoded, and nothing else. The
/// secrets here are made for the tests (`sbtest…`), so a failure may print them.
@Suite struct RedactionTests {
    /// A header value the user wrote out that is no credential (`X-Forwarded-For: 127.0.0.1`)
    /// leaves the URLs that hold the same text alone; a credential header's value is hidden.
    @Test func aHeaderValueThatIsNoSecretDoesNotScrambleURLs() throws {
        let manifest = try loadManifest("""
        vault: tnt1
        headers: {X-Forwarded-For: 127.0.0.1, X-Team: payments-export, X-Api-Key: sbtest-written-key}
        requests: [{name: a, path: /post}]
        """)
        let redactor = Redactor(manifest: manifest)
        #expect(redactor.redact("POST http://127.0.0.1:8080/post a (attempt 1) payments-export")
                == "POST http://127.0.0.1:8080/post a (attempt 1) payments-export")
        #expect(redactor.redact("echoed sbtest-written-key") == "echoed <redacted>")
    }

    /// A variable's value is a secret wherever it is used, header or payload, whatever the
    /// header's name; but a value as short as one letter never scrambles a log.
    @Test func aOneLetterValueNeverScramblesText() throws {
        let manifest = try loadManifest("""
        vault: tnt1
        headers: {Authorization: "Bearer ${SB_TOKEN}", X-Shard: "${SB_SHARD}"}
        requests: [{name: a, path: /post, payload: {kind: "${SB_KIND}"}}]
        """, environment: ["SB_TOKEN": "a", "SB_SHARD": "sbtest-shard-value", "SB_KIND": "sbtest-kind-value"])
        let redactor = Redactor(manifest: manifest)
        #expect(redactor.redact("a cat ran at a pace") == "a cat ran at a pace")
        #expect(redactor.redact("x sbtest-shard-value y sbtest-kind-value") == "x <redacted> y <redacted>")
    }

    /// A secret in a URL is found percent-encoded and form-encoded, and hidden whole.
    @Test(arguments: ["k3y%20sbtestSECRET%20val", "k3y+sbtestSECRET+val", "k3y%20sbtest%53ECRET%20val", "k3y sbtestSECRET val"])
    func encodedFormsOfASecretAreHiddenWhole(form: String) throws {
        let manifest = try loadManifest("""
        vault: tnt1
        headers: {X-Api-Key: "${SB_KEY}"}
        requests: [{name: a, path: /post}]
        """, environment: ["SB_KEY": "k3y sbtestSECRET val"])
        #expect(Redactor(manifest: manifest).redact("GET http://h/p?api_key=\(form)&x=1") == "GET http://h/p?api_key=<redacted>&x=1")
    }

    /// A name is never hidden, even when a payload value is written the same way.
    @Test func namesAreNeverHidden() throws {
        let manifest = try loadManifest("""
        vault: tnt1
        output: {path: out/card_number.csv}
        requests: [{name: card_number, path: /post, payload: {kind: card_number, other: out/card_number.csv}, labels: {card_number: json.c}}]
        """)
        let text = "label card_number not found in request card_number; wrote out/card_number.csv"
        #expect(Redactor(manifest: manifest).redact(text) == text)
    }

    /// `plan` (text and JSON) hides what `run --verbose` hides: a variable a header uses, in a
    /// path's query or as the custom hostname.
    @Test func planHidesASecretInAPathQueryAndTheHostname() throws {
        let manifest = try loadManifest("""
        vault: tnt1
        hostname: "${SB_HOST}"
        hostname_check: false
        headers: {X-Api-Key: "${SB_KEY}", X-Host: "${SB_HOST}"}
        requests: [{name: a, path: "/post?api_key=${SB_KEY}"}]
        """, environment: ["SB_KEY": "k3y sbtestPLANKEY val", "SB_HOST": "sbtest-secret-host.example"])
        let plan = Plan(manifest: manifest)
        for text in [plan.text, plan.json] {
            #expect(!text.contains("sbtestPLANKEY") && !text.contains("sbtest-secret-host"))
        }
        #expect(plan.text.hasPrefix("base_url: https://<redacted>\nPOST https://<redacted>/post?api_key=<redacted> a\n"))
    }
}
