import Testing
@testable import ShowbatchBasics

@Suite struct JSONWriterTests {
    /// Commas go between siblings only, at every depth; strings are escaped; numbers stay as written.
    @Test func commasAndEscapes() {
        var out = Array("prefix ".utf8)
        JSONWriter.append(to: &out) { writer in
            writer.object { writer in
                writer.key("a")
                writer.array { writer in
                    writer.integer(1)
                    writer.object { _ in }
                    writer.array { writer in writer.null() }
                    writer.string("q\"\\\n\u{1}é")
                }
                writer.key("b")
                writer.number("1.50")
                writer.key("c")
                writer.string(pieces: { piece in piece("x,"); piece("\"y\"") })
                writer.key("d")
                writer.integer(nil)
            }
        }
        #expect(String(decoding: out, as: UTF8.self) == #"prefix {"a":[1,{},[null],"q\"\\\n\u0001é"],"b":1.50,"c":"x,\"y\"","d":null}"#)
    }

    /// A parsed value written back is the same compact text, whatever its nesting.
    @Test(arguments: [#"{"k":[true,false,null,{"x":"1"}],"n":-1.5e3}"#, "[]", "{}", #""s""#, "0"])
    func parsedValuesRoundTrip(text: String) throws {
        #expect(try JSONParser.parse(Array(text.utf8)).compactText == text)
    }
}
