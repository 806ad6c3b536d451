import Testing
@testable import ShowbatchCore

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

    @Test(arguments: [("http://h.io", Endpoint.HostnameProblem.httpScheme), ("h.io:8443", .port),
                      ("https://h.io:443/x", .port), ("", .empty), ("h..io", .invalid), ("h_io.com", .invalid)])
    func badHostnames(raw: String, problem: Endpoint.HostnameProblem) {
        #expect(throws: problem) { try Endpoint.normalizeHostname(raw) }
    }

    @Test func hostnameCheckURL() {
        #expect(Endpoint.hostnameCheckURL(checkBase: nil, host: "h.io", vault: "tnt") == "https://js.verygoodvault.com/collect-configs/h.io__tnt.txt")
        #expect(Endpoint.hostnameCheckURL(checkBase: "http://127.0.0.1:9/", host: "h.io", vault: "tnt") == "http://127.0.0.1:9/collect-configs/h.io__tnt.txt")
    }
}

@Suite struct LabelFormatTests {
    // The Show SDK vectors of SPEC 2.6.
    @Test(arguments: [
        ([Mask.Range(start: nil, end: 3)], "****-1111-1111-1111"),
        ([Mask.Range(start: 5, end: 8)], "4111-****-1111-1111"),
        ([Mask.Range(start: 0, end: 100)], "*******************"),
        ([], "*******************"),
        ([Mask.Range(start: -1, end: 3)], "4111-1111-1111-1111"),
        ([Mask.Range(start: 5, end: 3)], "4111-1111-1111-1111"),
        ([Mask.Range(start: 19, end: 30)], "4111-1111-1111-1111"),
        ([Mask.Range(start: 15, end: nil)], "4111-1111-1111-****"),
        ([Mask.Range(start: 0, end: 0), Mask.Range(start: 18, end: 18)], "*111-1111-1111-111*"),
    ])
    func maskRanges(ranges: [Mask.Range], expected: String) {
        #expect(Mask(ranges: ranges, symbol: "*").apply("4111-1111-1111-1111") == expected)
    }

    @Test func maskCountsCharactersNotBytes() {
        #expect(Mask(ranges: [Mask.Range(start: 0, end: 1)], symbol: "#").apply("🇺🇦é123") == "##123")
        #expect(Mask(ranges: [], symbol: nil).apply("4111") == "4111")
    }

    @Test func transformsReplaceEveryMatchInOrder() throws {
        let grouping = try RegexTransform(pattern: #"(\d{4})(\d{4})(\d{4})(\d{4})"#, template: "$1 $2 $3 $4")
        #expect(grouping.apply("4111111111111111") == "4111 1111 1111 1111")
        #expect(grouping.apply("🇺🇦4111111111111111") == "🇺🇦4111 1111 1111 1111")
        let digits = try RegexTransform(pattern: #"\d"#, template: "X")
        #expect(digits.apply("a1b2") == "aXbX")
        let binding = LabelBinding(name: "n", path: try ContentPath(parsing: "n"), transforms: [grouping],
                                   mask: Mask(ranges: [Mask.Range(start: 0, end: 13)], symbol: "•"))
        #expect(binding.format("4111111111111111") == "•••••••••••••• 1111")
    }

    @Test func invalidRegexIsRefused() {
        #expect(throws: TransformError.self) { try RegexTransform(pattern: "(", template: "") }
    }
}

@Suite struct ContentPathTests {
    static let response: JSONValue = try! JSONParser.parse(Array(#"{"card_data":{"card_number":"4111","exp":"01/30"},"cards":[{"number":"5555"}],"a.b":{"c":1},"n":1.50,"t":true,"o":{"x":[1,2]},"z":null}"#.utf8))

    @Test(arguments: [
        ("card_data.card_number", JSONValue.string("4111")),
        ("cards.0.number", .string("5555")),
        (#"a\.b.c"#, .number("1")),
        ("n", .number("1.50")),
        ("t", .bool(true)),
        ("z", .null),
    ])
    func lookups(path: String, expected: JSONValue) throws {
        #expect(try ContentPath(parsing: path).lookup(in: Self.response) == expected)
    }

    @Test(arguments: ["missing", "cards.1.number", "cards.x", "card_data.card_number.more", "cards.-1"])
    func missing(path: String) throws {
        #expect(try ContentPath(parsing: path).lookup(in: Self.response) == nil)
    }

    @Test(arguments: [("", "content path is empty"), ("a..b", "content path \"a..b\" has an empty segment"),
                      (".a", "content path \".a\" has an empty segment"), ("a.", "content path \"a.\" has an empty segment"),
                      (" a", "content path \" a\" has leading or trailing white space")])
    func invalid(path: String, message: String) {
        do {
            _ = try ContentPath(parsing: path)
            Issue.record("expected an error")
        } catch {
            #expect(error.message == message)
        }
    }
}
