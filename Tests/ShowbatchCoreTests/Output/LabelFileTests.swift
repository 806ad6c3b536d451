import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import ShowbatchEmulator
import TestSupport

// Binary labels: `decode: base64` + `file: TEMPLATE` write the decoded bytes to a file inside the
// output's folder, and the cell holds its path.

/// A small PDF-like document with bytes that are not text.
private let pdf: [UInt8] = Array("%PDF-1.4\n".utf8) + [0x00, 0xFF, 0xFE, 0x80, 0x0A, 0x1B] + Array("%%EOF\n".utf8)
/// A PNG signature and the start of a header.
private let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52]
private let pdfBase64 = Data(pdf).base64EncodedString()
private let pngBase64 = Data(png).base64EncodedString()
/// The value of `tok_bad`: a revealed text that is not base64 (a star at offset 6).
private let notBase64 = "SECRET*NOT-BASE64"

/// A data-driven request whose `scan` label goes to `scans/<id>.<ext>`.
private func binaryManifest(file: String = "scans/${row.id}.${row.ext}", output: String = "out/r.csv", extra: String = "",
                            emulator: String = "") -> String {
    """
    vault: tnt1
    concurrency: 4
    output: {path: \(output)}
    emulator: {aliases: {tok_pdf: "\(pdfBase64)", tok_png: "\(pngBase64)", tok_bad: "\(notBase64)", tok_big: "\(Data(repeating: 7, count: 65).base64EncodedString())"}\(emulator)}
    requests:
      - name: "doc-${row.id}"
        each: {csv: d.csv}
        path: /post
        payload: {scan: "${row.alias}", id: "${row.id}"}
        labels:
          id: {path: json.id, revealed: optional}
          scan: {path: json.scan, decode: base64, file: "\(file)", max_bytes: 64}\(extra)
    """
}

private func bytes(_ fixture: RunFixture, _ name: String) -> [UInt8]? {
    FileManager.default.contents(atPath: fixture.dir.path + "/" + name).map(Array.init)
}

/// Every file and folder under `folder`, sorted (hidden ones included).
private func listing(_ fixture: RunFixture, _ folder: String) -> [String] {
    ((try? FileManager.default.subpathsOfDirectory(atPath: fixture.dir.path + "/" + folder)) ?? []).sorted()
}

@Suite struct LabelFileRunTests {
    private static let data = "id,alias,ext\n1,tok_pdf,pdf\n2,tok_png,png\n3,tok_bad,pdf\n4,tok_big,bin\n5,tok.none,pdf\n"

    @Test(arguments: [false, true])
    func decodedBytesGoToFilesAndTheCellHoldsTheirPath(failFast: Bool) async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(binaryManifest(), files: ["d.csv": Self.data])
        var options = RunOptions()
        options.failFast = failFast
        let summary = try await fixture.run(manifest, options: options)
        #expect(summary.ok == 2 && summary.partial == 2 && summary.failed == 1)
        #expect(fixture.read("out/r.csv") == """
        request,status,http_status,attempts,error,id,scan
        doc-1,ok,200,1,,1,scans/1.pdf
        doc-2,ok,200,1,,2,scans/2.png
        doc-3,partial,200,1,1404 invalid_base64: label scan: the value at json.scan is not base64 (a character outside the base64 alphabet at offset 6),3,
        doc-4,partial,200,1,1405 value_too_large: label scan: the decoded value is over max_bytes (64 bytes),4,
        doc-5,failed,200,1,1408 not_revealed: label scan: not revealed: the value is one the request sent (an unknown alias comes back unchanged),5,

        """)
        #expect(bytes(fixture, "out/scans/1.pdf") == pdf)
        #expect(bytes(fixture, "out/scans/2.png") == png)
        // The failed row keeps the journal, for --retry-failed.
        #expect(listing(fixture, "out") == ["r.csv", "r.csv.journal", "scans", "scans/1.pdf", "scans/2.png"])
        #expect(fixture.mode("out/scans/1.pdf") == 0o600)
        #expect(fixture.mode("out/scans/2.png") == 0o600)
        #expect(fixture.mode("out/scans") == 0o700)
    }

    @Test func jsonOutputsHoldThePathAndTheLabelOfEachError() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(binaryManifest(output: "out/r.jsonl"), files: ["d.csv": "id,alias,ext\n1,tok_pdf,pdf\n3,tok_bad,pdf\n"])
        _ = try await fixture.run(manifest)
        #expect(fixture.read("out/r.jsonl") == """
        {"request":"doc-1","status":"ok","http_status":200,"attempts":1,"labels":{"id":"1","scan":"scans/1.pdf"},"errors":[]}
        {"request":"doc-3","status":"partial","http_status":200,"attempts":1,"labels":{"id":"3","scan":null},"errors":[{"code":1404,"kind":"invalid_base64","label":"scan","message":"label scan: the value at json.scan is not base64 (a character outside the base64 alphabet at offset 6)"}]}

        """)
    }

    /// Data-row values cannot add folders or walk up; an empty one that would leave a name empty
    /// (or make `..` with the template's dots) is the row's error.
    @Test func dataRowValuesStayOneName() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(binaryManifest(file: "scans/${row.id}${row.ext}/doc.pdf"),
                                            files: ["d.csv": "id,alias,ext\n../../etc,tok_pdf,\n/abs,tok_pdf,\n,tok_pdf,\n,tok_pdf,..\n.,tok_pdf,.\n"])
        _ = try await fixture.run(manifest)
        #expect(fixture.read("out/r.csv") == """
        request,status,http_status,attempts,error,id,scan
        doc-../../etc,ok,200,1,,../../etc,scans/..%2F..%2Fetc/doc.pdf
        doc-/abs,ok,200,1,,/abs,scans/%2Fabs/doc.pdf
        doc-,partial,200,1,1406 file_refused: label scan: file scans//doc.pdf has an empty folder or file name (is a data-row value empty?),,
        doc-,ok,200,1,,,scans/%2E%2E/doc.pdf
        doc-.,ok,200,1,,.,scans/%2E%2E/doc.pdf

        """)
        #expect(listing(fixture, "out/scans") == ["%2E%2E", "%2E%2E/doc.pdf", "%2Fabs", "%2Fabs/doc.pdf", "..%2F..%2Fetc", "..%2F..%2Fetc/doc.pdf"])
    }

    /// A link on the way is refused, wherever it points: nothing is written through it.
    @Test func aSymlinkedFolderIsRefused() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        _ = fixture.dir.file("outside/keep.txt", "keep")
        try FileManager.default.createDirectory(atPath: fixture.dir.path + "/out", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: fixture.dir.path + "/out/scans", withDestinationPath: fixture.dir.path + "/outside")
        let manifest = try fixture.manifest(binaryManifest(), files: ["d.csv": "id,alias,ext\n1,tok_pdf,pdf\n"])
        let summary = try await fixture.run(manifest)
        #expect(summary.partial == 1)
        #expect(fixture.read("out/r.csv") == """
        request,status,http_status,attempts,error,id,scan
        doc-1,partial,200,1,1406 file_refused: label scan: file scans/1.pdf is refused: the folder scans is a symbolic link (label files are never written through one),1,

        """)
        #expect(listing(fixture, "outside") == ["keep.txt"])
    }

    /// Only a regular file is replaced: a link or a folder at the file's name is refused, and the
    /// link's target is untouched; a regular file there (an earlier run's) is replaced.
    @Test func onlyARegularFileIsReplaced() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        _ = fixture.dir.file("outside/target", "untouched")
        _ = fixture.dir.file("out/scans/3.pdf", "an earlier run's file")
        try FileManager.default.createDirectory(atPath: fixture.dir.path + "/out/scans/2.pdf", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: fixture.dir.path + "/out/scans/1.pdf", withDestinationPath: fixture.dir.path + "/outside/target")
        let manifest = try fixture.manifest(binaryManifest(), files: ["d.csv": "id,alias,ext\n1,tok_pdf,pdf\n2,tok_pdf,pdf\n3,tok_pdf,pdf\n"])
        _ = try await fixture.run(manifest)
        #expect(fixture.read("out/r.csv") == """
        request,status,http_status,attempts,error,id,scan
        doc-1,partial,200,1,1406 file_refused: label scan: file scans/1.pdf is refused: a symbolic link is there (label files are never written through one),1,
        doc-2,partial,200,1,1406 file_refused: label scan: file scans/2.pdf is refused: a folder is there,2,
        doc-3,ok,200,1,,3,scans/3.pdf

        """)
        #expect(fixture.read("outside/target") == "untouched")
        #expect(bytes(fixture, "out/scans/3.pdf") == pdf)
        #expect(listing(fixture, "out/scans") == ["1.pdf", "2.pdf", "3.pdf"])
    }

    /// A data row cannot name the manifest, a data file or a file of an output.
    @Test func inputsAndOutputFilesAreNeverReplaced() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(binaryManifest(file: "${row.id}", output: "r.csv"),
                                            files: ["d.csv": "id,alias,ext\nm.yaml,tok_pdf,\nd.csv,tok_pdf,\nr.csv.journal,tok_pdf,\nr.csv,tok_pdf,\nfine.pdf,tok_pdf,\n"])
        _ = try await fixture.run(manifest)
        let output = fixture.dir.path + "/r.csv"
        #expect(fixture.read("r.csv") == """
        request,status,http_status,attempts,error,id,scan
        doc-m.yaml,partial,200,1,1406 file_refused: label scan: file m.yaml would replace the manifest; label files never do,m.yaml,
        doc-d.csv,partial,200,1,1406 file_refused: label scan: file d.csv would replace the data file d.csv; label files never do,d.csv,
        doc-r.csv.journal,partial,200,1,1406 file_refused: label scan: file r.csv.journal would replace a file of the output \(output); label files never do,r.csv.journal,
        doc-r.csv,partial,200,1,1406 file_refused: label scan: file r.csv would replace a file of the output \(output); label files never do,r.csv,
        doc-fine.pdf,ok,200,1,,fine.pdf,fine.pdf

        """)
        #expect(bytes(fixture, "fine.pdf") == pdf)
        #expect(fixture.read("d.csv")?.hasPrefix("id,alias,ext\n") == true)
    }

    @Test func standardOutputIsRefused() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(binaryManifest(), files: ["d.csv": Self.data])
        var options = RunOptions()
        options.output = "-"
        let error = await #expect(throws: RunError.self) { try await fixture.run(manifest, options: options) }
        #expect(error?.description == "label \"scan\" is written to files (file:), which need an output file's folder; standard output (--output -) has none: give an output path")
        #expect(error?.exitCode == .usage)
    }

    /// A run interrupted at any point and resumed leaves exactly one file per row, each with its
    /// row's bytes, and no temporary file: a row written again replaces its own file, and a
    /// temporary file left by a run killed mid-write is replaced by the row's next writing.
    @Test(arguments: [7, 120])
    func aResumedRunLeavesOneFilePerRow(interruptAfter: Int) async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let count = 200
        let data = "id,alias,ext\n" + (0..<count).map { "\($0),\($0 % 2 == 0 ? "tok_pdf" : "tok_png"),bin" }.joined(separator: "\n") + "\n"
        let manifest = try fixture.manifest(binaryManifest(file: "scans/${row.id}.${row.ext}"), files: ["d.csv": data])
        _ = try await fixture.run(manifest)
        let baseline = try #require(fixture.read("out/r.csv"))
        try FileManager.default.removeItem(atPath: fixture.dir.path + "/out")

        let (emulator, interrupted, baseOptions) = try await fixture.interruptedRun(manifest, after: interruptAfter)
        defer { emulator.stop() }
        #expect(interrupted.interrupted)
        #expect(fixture.dir.exists("out/r.csv.partial"))
        // What a run killed while writing the last row's file would have left.
        _ = fixture.dir.file("out/scans/.\(count - 1).bin.%partial", "torn")
        var options = baseOptions
        options.resume = true
        let resumed = try await Runner(manifest: manifest, options: options, environment: [:]).run()
        #expect(!resumed.interrupted && resumed.rows == count)
        #expect(fixture.read("out/r.csv") == baseline)
        #expect(listing(fixture, "out") == ["r.csv", "scans"] + (0..<count).map { "scans/\($0).bin" }.sorted())
        for index in 0..<count {
            #expect(bytes(fixture, "out/scans/\(index).bin") == (index % 2 == 0 ? pdf : png))
        }
    }

    /// --retry-failed writes the files of the rows it sends again, and leaves the others as they are.
    @Test func retryFailedWritesTheFilesOfTheRowsSentAgain() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let count = 40
        let data = "id,alias,ext\n" + (0..<count).map { "\($0),tok_pdf,pdf" }.joined(separator: "\n") + "\n"
        let failing = binaryManifest(emulator: ", fail_rate: 0.5, seed: 5").replacingOccurrences(of: "concurrency: 4", with: "concurrency: 1\nretry: {attempts: 1}")
        let clean = try fixture.manifest(failing.replacingOccurrences(of: "fail_rate: 0.5", with: "fail_rate: 0"), files: ["d.csv": data])
        _ = try await fixture.run(clean)
        let expected = try #require(fixture.read("out/r.csv"))
        try FileManager.default.removeItem(atPath: fixture.dir.path + "/out")

        let first = try await fixture.run(try fixture.manifest(failing))
        #expect(first.failed > 0 && first.ok > 0)
        #expect(listing(fixture, "out/scans").count == first.ok)
        var options = RunOptions()
        options.retryFailed = true
        let summary = try await fixture.run(clean, options: options)
        #expect(summary.ok == count && summary.replayed == count - first.failed)
        #expect(fixture.read("out/r.csv") == expected)
        #expect(listing(fixture, "out") == ["r.csv", "scans"] + (0..<count).map { "scans/\($0).pdf" }.sorted())
        for index in 0..<count { #expect(bytes(fixture, "out/scans/\(index).pdf") == pdf) }
    }

    /// The decoded bytes and the revealed text are in no event, error or message.
    @Test func revealedValuesAreNeverPrinted() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest(binaryManifest(), files: ["d.csv": Self.data])
        var options = RunOptions()
        options.verbose = true
        _ = try await fixture.run(manifest, options: options)
        let printed = (fixture.log.all + fixture.log.notes).joined(separator: "\n") + (fixture.read("out/r.csv") ?? "")
        #expect(!printed.contains("SECRET"))
        #expect(!printed.contains("PDF-1.4"))
        #expect(!printed.contains(pdfBase64))
    }
}
