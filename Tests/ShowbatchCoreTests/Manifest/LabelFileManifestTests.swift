import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

// Binary labels in the manifest: base64 decoding, file templates and their checks.

@Suite struct Base64Tests {
    @Test(arguments: [
        ("", []),
        ("QQ==", [0x41]),
        ("QQ", [0x41]),
        ("QUI=", [0x41, 0x42]),
        ("QUJD", [0x41, 0x42, 0x43]),
        ("QUJD\nREVG\r\n", [0x41, 0x42, 0x43, 0x44, 0x45, 0x46]),
        ("+/8=", [0xFB, 0xFF]),
        ("-_8", [0xFB, 0xFF]),
        ("AP8A", [0x00, 0xFF, 0x00]),
    ] as [(String, [UInt8])])
    func decodes(text: String, expected: [UInt8]) throws {
        #expect(try Base64.decode(text).get() == expected)
    }

    @Test(arguments: [
        ("QU*J", Base64.Failure.character(offset: 2)),
        ("QUJD\u{e9}", .character(offset: 4)),
        ("Q", .length),
        ("QUJDR", .length),
        ("QQ=", .length),
        ("QQ===", .length),
        ("QQ==QQ==", .afterPadding(offset: 4)),
    ])
    func refuses(text: String, failure: Base64.Failure) {
        #expect(throws: failure) { try Base64.decode(text).get() }
    }

    @Test func decodesWhatFoundationEncodes() throws {
        var generator = SeededGenerator(seed: 11)
        for length in 0..<200 {
            let data = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(try Base64.decode(Data(data).base64EncodedString()).get() == data)
            #expect(try Base64.decode(Data(data).base64EncodedString(options: .lineLength76Characters)).get() == data)
        }
    }

    @Test(arguments: [(3, true), (4, true), (2, false)])
    func stopsAtTheLimit(limit: Int, fits: Bool) {
        let result = Base64.decode("QUJD", limit: limit)
        if fits { #expect((try? result.get()) == [0x41, 0x42, 0x43]) } else { #expect(throws: Base64.Failure.tooLarge) { try result.get() } }
    }
}

@Suite struct FileTemplateTests {
    @Test(arguments: [
        ("1001", "1001"),
        ("a/b", "a%2Fb"),
        ("50%", "50%25"),
        ("..", "%2E%2E"),
        (".", "%2E"),
        ("..x", "..x"),
        ("line\nbreak", "line%0Abreak"),
        ("Zoë Ü", "Zoë Ü"),
    ])
    func aValueIsOnePartOfOneName(value: String, expected: String) {
        #expect(FileTemplate.nameSegment(value) == expected)
    }

    @Test(arguments: [
        ("scans/${row.id}.pdf", "../x", LabelFileTarget.path("scans/..%2Fx.pdf")),
        ("scans/${row.id}/page.pdf", "", .refused("file scans//page.pdf has an empty folder or file name (is a data-row value empty?)")),
        ("scans/${row.id}", "", .refused("file scans/ has an empty folder or file name (is a data-row value empty?)")),
        ("scans/${row.id}./x", ".", .path("scans/%2E./x")),
        ("scans/${row.id}../x", "", .refused("file scans/../x has a .. segment; label files stay inside the output's folder")),
        ("${request}/${index}.bin", "x", .path("doc%2F7/3.bin")),
        ("s/${row.id}", String(repeating: "n", count: 246), .refused("file s/\(String(repeating: "n", count: 246)) has a name over 245 bytes")),
    ])
    func expandedPathsAreChecked(template: String, value: String, expected: LabelFileTarget) throws {
        let file = FileTemplate(source: try Template(parsing: template))
        let row = DataRow(index: 3, line: 4, values: ["id": .string(value)])
        #expect(file.expand(row: row, request: "doc/7") == expected)
    }
}

@Suite struct LabelFileManifestTests {
    private static func manifest(_ label: String, each: Bool = false) -> String {
        "vault: tnt1\nrequests:\n  - name: a\n    path: /p\n" + (each ? "    each: {csv: d.csv}\n" : "") + "    labels:\n      s: \(label)\n"
    }

    @Test(arguments: [
        ("{path: json.s, decode: base64, file: ../x.pdf}",
         "m.yaml:6:47: error: label \"s\" file \"../x.pdf\" has a .. segment, which leaves the output's folder; label files stay inside it\n        s: {path: json.s, decode: base64, file: ../x.pdf}\n                                                ^"),
        ("{path: json.s, decode: base64, file: \"scans/../../x\"}",
         "m.yaml:6:47: error: label \"s\" file \"scans/../../x\" has a .. segment, which leaves the output's folder; label files stay inside it\n        s: {path: json.s, decode: base64, file: \"scans/../../x\"}\n                                                ^"),
        ("{path: json.s, decode: base64, file: /etc/x}",
         "m.yaml:6:47: error: label \"s\" file \"/etc/x\" is an absolute path; label files are written inside the output's folder, so give a path relative to it\n        s: {path: json.s, decode: base64, file: /etc/x}\n                                                ^"),
        ("{path: json.s, decode: base64, file: \"scans/\"}",
         "m.yaml:6:47: error: label \"s\" file \"scans/\" ends with /; it must end with a file name\n        s: {path: json.s, decode: base64, file: \"scans/\"}\n                                                ^"),
        ("{path: json.s, decode: base64, file: \"a%20b\"}",
         "m.yaml:6:47: error: label \"s\" file \"a%20b\" holds %, which marks the escapes of data-row values in file names; leave it out\n        s: {path: json.s, decode: base64, file: \"a%20b\"}\n                                                ^"),
        ("{path: json.s, decode: base64}",
         "m.yaml:6:33: error: label \"s\" decode needs file: TEMPLATE, the file its bytes are written to (a decoded value may not be text)\n        s: {path: json.s, decode: base64}\n                                  ^"),
        ("{path: json.s, file: x.bin}",
         "m.yaml:6:31: error: label \"s\" file needs decode: base64 (only decoded bytes are written to files)\n        s: {path: json.s, file: x.bin}\n                                ^"),
        ("{path: json.s, decode: hex, file: x.bin}",
         "m.yaml:6:33: error: label \"s\" decode \"hex\" is not supported; expected base64\n        s: {path: json.s, decode: hex, file: x.bin}\n                                  ^"),
        ("{path: json.s, decode: base64, file: x.bin, mask: true}",
         "m.yaml:6:60: error: label \"s\" is written to a file, so it cannot be masked (its cell is the file's path)\n        s: {path: json.s, decode: base64, file: x.bin, mask: true}\n                                                             ^"),
        ("{path: json.s, decode: base64, file: x.bin, max_bytes: 0}",
         "m.yaml:6:65: error: label \"s\" max_bytes must be a number of bytes from 1, such as 1048576 or 5MiB; found 0\n        s: {path: json.s, decode: base64, file: x.bin, max_bytes: 0}\n                                                                  ^"),
        ("{path: json.s, decode: base64, file: x.bin, max_bytes: 5MB}",
         "m.yaml:6:65: error: label \"s\" max_bytes must be a number of bytes from 1, such as 1048576 or 5MiB; found \"5MB\"\n        s: {path: json.s, decode: base64, file: x.bin, max_bytes: 5MB}\n                                                                  ^"),
        ("{path: json.s, decode: base64, file: \"x-${row.id}.bin\"}",
         "m.yaml:6:47: error: ${row.…} and ${index} in label \"s\" file need a request with \"each\"\n        s: {path: json.s, decode: base64, file: \"x-${row.id}.bin\"}\n                                                ^"),
        ("{path: json.s, decode: base64, file: \"x-${NOT_SET}.bin\"}",
         "m.yaml:6:47: error: environment variable NOT_SET is not set (used in label \"s\" file)\n        s: {path: json.s, decode: base64, file: \"x-${NOT_SET}.bin\"}\n                                                ^"),
    ])
    func staticProblemsArePositioned(label: String, expected: String) {
        #expect(manifestErrors(Self.manifest(label)) == expected)
    }

    @Test func referencedColumnsMustBeInTheHeader() {
        let text = Self.manifest("{path: json.s, decode: base64, file: \"x/${row.ident}.bin\"}", each: true)
        #expect(manifestErrors(text, files: ["d.csv": "id\n1\n"]) ==
            "m.yaml:7:47: error: column \"ident\" is not in the header of d.csv; it has id\n        s: {path: json.s, decode: base64, file: \"x/${row.ident}.bin\"}\n                                                ^")
    }

    @Test func theSettingsAreRead() throws {
        let dir = TempDir()
        defer { dir.remove() }
        _ = dir.file("d.csv", "id\n1\n")
        let manifest = try loadManifest(Self.manifest("{path: json.s, decode: base64, file: \"${request}/${ENV_DIR}/${row.id}-${index}.pdf\", max_bytes: 5MiB}", each: true),
                                        in: dir, environment: ["ENV_DIR": "scans", "request": "not-this"])
        let file = try #require(manifest.requests[0].labels[0].file)
        #expect(file.maxBytes == 5 << 20)
        #expect(file.template.source.parts == [.environment("request"), .literal("/scans/"), .row("id"), .literal("-"), .index, .literal(".pdf")])
        #expect(manifest.requests[0].rowColumns == ["id"])
    }

    /// A label file's settings are part of the journal's identity: another template writes other cells.
    @Test func theTemplateIsPartOfTheRowIdentity() throws {
        let one = try loadManifest(Self.manifest("{path: json.s, decode: base64, file: a.bin}"))
        let two = try loadManifest(Self.manifest("{path: json.s, decode: base64, file: b.bin}"))
        let three = try loadManifest(Self.manifest("{path: json.s, decode: base64, file: a.bin, max_bytes: 9}"))
        #expect(Set([one.rowIdentity, two.rowIdentity, three.rowIdentity]).count == 3)
    }
}
