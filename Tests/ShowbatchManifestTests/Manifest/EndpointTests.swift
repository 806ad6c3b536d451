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
