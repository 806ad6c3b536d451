import Foundation
import Testing

/// Bytes of a small PDF, some of them not text.
private let scan: [UInt8] = Array("%PDF-1.7\n%".utf8) + [0xE2, 0xE3, 0xCF, 0xD3, 0x0A, 0x00, 0x7F] + Array("\n%%EOF\n".utf8)

private func manifest(file: String) -> String {
    """
    vault: tnt1
    output: {path: out/scans.csv}
    emulator:
      aliases: {tok_scan_1: "\(Data(scan).base64EncodedString())", tok_scan_2: "REVEALED-BUT-NOT-BASE64!"}
    requests:
      - name: "scan-${row.id}"
        each: {csv: rows.csv}
        path: /post
        payload: {document: "${row.alias}"}
        labels:
          document: {path: json.document, decode: base64, file: "\(file)", max_bytes: 1MiB}
    """
}

@Suite(.serialized) struct BinaryLabelEndToEndTests {
    @Test func aRunWritesTheDecodedBytesToFiles() async throws {
        let work = Workspace(["m.yaml": manifest(file: "pdf/${row.id}.pdf"), "rows.csv": "id,alias\n1,tok_scan_1\n2,tok_scan_2\n"])
        defer { work.remove() }
        let result = try await showbatch(["run", "m.yaml", "--emulate", "--progress", "never"], in: work.path)
        #expect(result.status == 1)
        #expect(work.read("out/scans.csv") == """
        request,status,http_status,attempts,error,document
        scan-1,ok,200,1,,pdf/1.pdf
        scan-2,partial,200,1,1404 invalid_base64: label document: the value at json.document is not base64 (a character outside the base64 alphabet at offset 23),

        """)
        let written = try #require(FileManager.default.contents(atPath: work.path + "/out/pdf/1.pdf"))
        #expect(Array(written) == scan)
        let attributes = try FileManager.default.attributesOfItem(atPath: work.path + "/out/pdf/1.pdf")
        #expect(attributes[.posixPermissions] as? Int == 0o600)
        #expect(try FileManager.default.contentsOfDirectory(atPath: work.path + "/out/pdf") == ["1.pdf"])
        #expect(!result.stderr.contains("REVEALED") && !result.stderr.contains("PDF"))
    }

    @Test func aFileOutsideTheOutputsFolderIsAManifestError() async throws {
        let work = Workspace(["m.yaml": manifest(file: "../${row.id}.pdf"), "rows.csv": "id,alias\n1,tok_scan_1\n"])
        defer { work.remove() }
        for command in [["validate", "m.yaml"], ["run", "m.yaml", "--emulate"]] {
            let result = try await showbatch(command, in: work.path)
            #expect(result.status == 2)
            #expect(result.stderr.hasPrefix(
                "m.yaml:11:61: error: label \"document\" file \"../${row.id}.pdf\" has a .. segment, which leaves the output's folder; label files stay inside it\n"
                + "        document: {path: json.document, decode: base64, file: \"../${row.id}.pdf\", max_bytes: 1MiB}\n"
                + "                                                              ^\n"))
        }
        #expect(!work.exists("out"))
    }
}
