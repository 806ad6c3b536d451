import Foundation
import Testing
@testable import ShowbatchBasics

@Suite struct JSONTests {
    @Test(arguments: [
        (#"{"a":[1,-2.5e3,true,false,null,"x\"\\\/\n\u00e9\ud83d\ude00"]}"#, #"{"a":[1,-2.5e3,true,false,null,"x\"\\/\né😀"]}"#),
        ("  {}  ", "{}"),
        (#"{"k":"\u0001"}"#, #"{"k":"\u0001"}"#),
    ])
    func roundTrips(input: String, compact: String) throws {
        #expect(try JSONParser.parse(Array(input.utf8)).compactText == compact)
    }

    @Test(arguments: ["", "{", "[1,]", "01", "1.", "\"\\x\"", "{\"a\" 1}", "nul", "[1] 2", "\"\u{01}\"", "\"\\ud800\""])
    func rejects(input: String) {
        #expect(throws: JSONParseError.self) { try JSONParser.parse(Array(input.utf8)) }
    }

    @Test func deepNestingIsAnErrorNotACrash() {
        let deep = String(repeating: "[", count: 100_000)
        #expect(throws: JSONParseError.self) { try JSONParser.parse(Array(deep.utf8)) }
    }
}
