import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
import TestSupport

@Suite struct EndpointTests {
    @Test(arguments: ["live", "live-eu1", "live-ua-0505", "sandbox", "sandbox-ua5", "sandbox-ua-0505", "LIVE", "Sandbox"])
    func validEnvironments(environment: String) {
        #expect(Endpoint.isValidEnvironment(environment))
    }

    @Test(arguments: ["liv", "random-ua1", "random-ua-0505", "live-", "live.com", "live/eu", "sandox/us-5050",
                      "sanbox?web=google.com", "", " ", "live--eu", "livex"])
    func invalidEnvironments(environment: String) {
        #expect(!Endpoint.isValidEnvironment(environment))
    }

    @Test(arguments: ["ua-0505", "ua0505", "eu-1"])
    func validRegions(region: String) { #expect(Endpoint.isValidRegion(region)) }

    @Test(arguments: ["ua_0505", "ua:0505", "ua-0505/verygoodsecurity.com", "ua-0505?param=val", "eu-", "", "-eu"])
    func invalidRegions(region: String) { #expect(!Endpoint.isValidRegion(region)) }

    @Test(arguments: [
        ("testID", "sandbox", nil, nil, "https://testid.sandbox.verygoodproxy.com"),
        ("testID", "live", "ua-0505", nil, "https://testid.live-ua-0505.verygoodproxy.com"),
        ("testID", "live-eu-1", nil, nil, "https://testid.live-eu-1.verygoodproxy.com"),
        ("testID", "LIVE", "EU-1", nil, "https://testid.live-eu-1.verygoodproxy.com"),
        ("tnt", "sandbox", nil, "5f1e", "https://tnt-5f1e.sandbox.verygoodproxy.com"),
    ] as [(String, String, String?, String?, String)])
    func vaultURLs(vault: String, environment: String, region: String?, route: String?, expected: String) {
        #expect(Endpoint.vaultURL(vault: vault, environment: environment, dataRegion: region, routeID: route) == expected)
    }

    @Test(arguments: [("post", "https://h.io/post"), ("/post", "https://h.io/post"), ("//post", "https://h.io/post"),
                      ("/a/b?x=1&y=%20", "https://h.io/a/b?x=1&y=%20"), ("", "https://h.io/")])
    func requestURLs(path: String, expected: String) {
        #expect(Endpoint.requestURL(base: "https://h.io", path: path) == expected)
    }

    @Test(arguments: ["https://www.h.io/search?q=1", "h.io/", "https://h.io", "H.IO", "https://h.io#frag", " h.io "])
    func hostnamesNormalise(raw: String) throws {
        let host = try Endpoint.normalizeHostname(raw)
        #expect(host == "h.io" || host == "www.h.io")
    }

    /// A staging proxy on another port: `host:port`, where `:443` is https's own and dropped.
    @Test(arguments: [
        ("h.io:8443", "h.io:8443"), ("https://Staging.H.io:8443/reveal?x=1", "staging.h.io:8443"), ("h.io:1", "h.io:1"),
        ("h.io:65535", "h.io:65535"), ("https://h.io:443/x", "h.io"), ("h.io:443", "h.io"), ("h.io:08443", "h.io:8443"),
        ("127.0.0.1:9443", "127.0.0.1:9443"),
    ])
    func hostnamesWithAPort(raw: String, expected: String) throws {
        #expect(try Endpoint.normalizeHostname(raw) == expected)
        #expect(Endpoint.port(ofHostname: expected) == (expected.contains(":") ? Int(expected.split(separator: ":")[1]) : nil))
    }

    @Test(arguments: [("http://h.io", Endpoint.HostnameProblem.httpScheme), ("http://h.io:8443", .httpScheme), ("h.io:0", .port),
                      ("h.io:65536", .port), ("h.io:", .port), ("h.io:https", .port), ("h.io:-1", .port), ("h.io:+80", .port),
                      ("h.io:1234567", .port), ("h.io: 80", .port), ("h.io:8443:1", .invalid), (":8443", .empty),
                      ("", .empty), ("h..io", .invalid), ("h_io.com", .invalid), ("[::1]:8443", .invalid)])
    func badHostnames(raw: String, problem: Endpoint.HostnameProblem) {
        #expect(throws: problem) { try Endpoint.normalizeHostname(raw) }
    }

    @Test func hostnameCheckURL() {
        #expect(Endpoint.hostnameCheckURL(checkBase: nil, host: "h.io", vault: "tnt") == "https://js.verygoodvault.com/collect-configs/h.io__tnt.txt")
        #expect(Endpoint.hostnameCheckURL(checkBase: "http://127.0.0.1:9/", host: "h.io", vault: "tnt") == "http://127.0.0.1:9/collect-configs/h.io__tnt.txt")
    }
}

/// What the manifest's endpoint keys decode to: an empty region or hostname is none, as the SDKs
/// take it; the stricter rules that remain are positioned errors.
@Suite struct EndpointKeyTests {
    private func manifest(_ keys: String) -> String {
        "vault: tnt1\n\(keys)\nrequests: [{name: r, path: /p, labels: {n: n}}]\n"
    }

    @Test(arguments: [
        ("environment: live\ndata_region: ''", [String: String](), "https://tnt1.live.verygoodproxy.com", String?.none),
        ("environment: live\ndata_region: ${REGION:-}", [:], "https://tnt1.live.verygoodproxy.com", nil),
        ("environment: live\ndata_region: ${REGION:-}", ["REGION": "eu-1"], "https://tnt1.live-eu-1.verygoodproxy.com", nil),
        ("environment: live-eu-1\ndata_region: ${REGION:-}", [:], "https://tnt1.live-eu-1.verygoodproxy.com", nil),
        ("hostname: ''", [:], "https://tnt1.sandbox.verygoodproxy.com", nil),
        ("hostname: ${REVEAL_HOST:-}", [:], "https://tnt1.sandbox.verygoodproxy.com", nil),
        ("hostname: ${REVEAL_HOST:-}", ["REVEAL_HOST": "reveal.example.com"], "https://tnt1.sandbox.verygoodproxy.com", "reveal.example.com"),
        ("hostname: ''\nsatellite_port: 9098", [:], "http://localhost:9098", nil),
    ])
    func anEmptyRegionOrHostnameIsNone(keys: String, environment: [String: String], vaultURL: String, hostname: String?) throws {
        let decoded = try loadManifest(manifest(keys), environment: environment)
        #expect(decoded.vaultURL == vaultURL && decoded.hostname == hostname)
    }

    /// Stricter than the SDKs, which would form a host that cannot resolve.
    @Test(arguments: [
        ("environment: livelive", "m.yaml:2:14: error: environment \"livelive\" is not valid; expected sandbox, live or live-<region>"),
        ("environment: live--eu", "m.yaml:2:14: error: environment \"live--eu\" is not valid; expected sandbox, live or live-<region>"),
        ("environment: live\ndata_region: -eu", "m.yaml:3:14: error: data_region \"-eu\" is not valid; expected letters and digits in dash-separated parts, such as eu-1"),
        ("hostname: reveal .example.com", "m.yaml:2:11: error: hostname \"reveal .example.com\" is not a valid host name"),
        ("hostname: ' '", "m.yaml:2:11: error: hostname \" \" is not a valid host name"),
    ])
    func theStricterRulesArePositioned(keys: String, message: String) {
        #expect(manifestErrors(manifest(keys)).split(separator: "\n").first.map(String.init) == message)
    }
}
