import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
import TestSupport

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
