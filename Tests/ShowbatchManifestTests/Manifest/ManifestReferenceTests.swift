import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
import TestSupport
import ShowbatchYAML

@Suite struct ManifestReferenceTests {
    @Test(arguments: [
        ("", ["version", "name", "vault", "environment", "data_region", "route_id", "hostname", "hostname_check", "hostname_fallback",
              "satellite_port", "vault_api", "headers", "concurrency", "rate_limit", "max_failed", "audit", "metrics", "resume_max_age", "timeout", "transport", "connections", "tls", "auth", "circuit",
              "retry", "output", "emulator", "requests"]),
        ("requests", ["name", "path", "method", "headers", "payload", "reveal", "labels", "each", "output"]),
        ("retry", ["attempts", "backoff", "max_backoff", "on"]),
        ("output", ["path", "format", "columns", "rejects", "header", "trailer", "compress", "reject_partial", "encrypt", "deliver", "csv"]),
        ("output.csv", ["delimiter", "line_ending", "header", "quote", "escape_formulas"]),
        ("requests[].labels.<name>", ["path", "transform", "mask", "decode", "file", "max_bytes", "revealed", "expect"]),
        ("requests[].labels.<name>.expect", ["pattern", "luhn"]),
        ("requests[].labels.<name>.transform", ["regex", "template"]),
        ("requests[].each", ["csv", "jsonl"]),
        ("vault_api", ["version", "aliases_per_call", "storage"]),
    ])
    func keysComeFromTheReference(parent: String, keys: [String]) {
        #expect(ManifestReference.keys(under: parent) == keys)
    }

    /// Every default the reference (and so the README) states is the value the model starts
    /// with: a default changed in one place and not the other fails here.
    @Test func referenceDefaultsAreTheModelsInitialValues() throws {
        let manifest = try loadManifest("""
        vault: tnt1
        output: {path: r.csv}
        emulator: {}
        requests: [{name: a, path: /p, labels: {x: {path: json.x, mask: true}}}]
        """)
        let withRejects = try loadManifest("vault: tnt1\noutput: {path: r.csv, rejects: j.csv}\nrequests: [{name: a, path: /p}]\n")
        let request = try #require(manifest.requests.first)
        let mask = try #require(request.labels.first?.mask)
        let faults = try #require(manifest.emulator?.faults)
        let auth = AuthSpec(source: .tokenFile("t"))
        let credentials = AuthSpec.ClientCredentials(tokenURL: "https://a", clientID: "i", clientSecret: "s")
        func number(_ value: Double) -> String { value == value.rounded() ? String(Int(value)) : String(value) }
        let retryOn = manifest.retry.statuses.sorted().map(String.init) + (manifest.retry.network ? ["network"] : [])
            + (manifest.retry.timeout ? ["timeout"] : [])
        let model: [String: String] = [
            "version": String(manifest.version),
            "environment": manifest.environment,
            "hostname_check": String(manifest.hostnameCheck),
            "concurrency": String(manifest.concurrency),
            "timeout": Units.text(manifest.timeout),
            "transport": manifest.transport.rawValue,
            "retry.attempts": String(manifest.retry.attempts),
            "retry.backoff": Units.text(manifest.retry.backoff.base),
            "retry.max_backoff": Units.text(manifest.retry.backoff.cap),
            "retry.on": "[" + retryOn.joined(separator: ", ") + "]",
            "output.format": manifest.output?.format?.rawValue ?? "extension",
            "output.csv.escape_formulas": String(manifest.output?.escapeFormulas ?? true),
            "output.csv.delimiter": "`\(String(UnicodeScalar(manifest.output?.csv.delimiter ?? 0)))`",
            "output.csv.line_ending": manifest.output?.csv.crlf == false ? "lf" : "crlf",
            "output.csv.header": String(manifest.output?.csv.header ?? false),
            "output.csv.quote": manifest.output?.csv.quoteAll == false ? "minimal" : "all",
            "output.columns": manifest.output?.columns == nil ? "fixed + labels" : "given",
            "output.reject_partial": withRejects.output?.rejectPartial == true && manifest.output?.rejectPartial == false
                ? "true with rejects" : "not what the reference says",
            "output.compress": manifest.output?.compress == nil ? "extension" : "given",
            "emulator.aliases": manifest.emulator?.aliases == nil ? "sample aliases" : "given",
            "emulator.latency": faults.latency == .zero ? "0" : Units.text(faults.latency),
            "emulator.fail_rate": number(faults.failRate),
            "emulator.fail_status": String(faults.failStatus),
            "emulator.drop_rate": number(faults.dropRate),
            "emulator.malformed_rate": number(faults.malformedRate),
            "emulator.seed": String(faults.seed),
            "requests[].method": request.method.rawValue.lowercased(),
            "requests[].labels.<name>.mask.ranges": mask.ranges.isEmpty ? "everything" : "\(mask.ranges)",
            "requests[].labels.<name>.mask.symbol": mask.symbol.map(String.init) ?? "",
            "requests[].labels.<name>.expect.luhn": String(LabelExpectation().luhn),
            "requests[].labels.<name>.revealed": request.labels[0].mustReveal ? "`required`" : "`optional`",
            "hostname_fallback": String(manifest.hostnameFallback),
            "max_failed": manifest.maxFailed?.text ?? "0",
            "resume_max_age": "\(Int(manifest.resumeMaxAge.seconds / 3600))h",
            "circuit.failed_rows": String(manifest.circuit.failedRows),
            "circuit.outage_after": String(manifest.circuit.outageAfter),
            "circuit.max_pause": Units.text(manifest.circuit.maxPause),
            "auth.client_auth": credentials.inBody ? "body" : "basic",
            "auth.header": auth.header,
            "output.encrypt.armor": String(EncryptSpec(recipients: [], mark: Mark(line: 1, column: 1)).armor),
            "output.encrypt.warn_expiry": "\(EncryptSpec(recipients: [], mark: Mark(line: 1, column: 1)).warnExpiryDays)d",
            "vault_api.aliases_per_call": String(VaultAPISpec(version: 2).aliasesPerCall),
        ]
        let stated = ManifestReference.entries.filter { $0.defaultValue != "—" && $0.defaultValue != "required" }
        for entry in stated {
            #expect(model[entry.path] == entry.defaultValue, "\(entry.path)")
        }
        #expect(Set(model.keys) == Set(stated.map(\.path)))
    }

    @Test func readmeHoldsTheGeneratedReference() throws {
        let readme = try String(contentsOfFile: FileManager.default.currentDirectoryPath + "/docs/manifest.md", encoding: .utf8)
        let begin = "<!-- manifest-reference:begin (generated from ManifestReference.swift; a test checks it) -->\n"
        let end = "<!-- manifest-reference:end -->"
        let start = try #require(readme.range(of: begin), "docs/manifest.md lacks the reference begin marker")
        let stop = try #require(readme.range(of: end), "docs/manifest.md lacks the reference end marker")
        let table = String(readme[start.upperBound..<stop.lowerBound])
        if table != ManifestReference.markdown {
            // Leave the regenerated README next to the build for a person to copy over.
            let regenerated = String(readme[..<start.upperBound]) + ManifestReference.markdown + String(readme[stop.lowerBound...])
            try Data(regenerated.utf8).write(to: URL(fileURLWithPath: FileManager.default.currentDirectoryPath + "/.build/manifest.generated.md"))
            Issue.record("the manifest reference in docs/manifest.md is out of date; copy .build/manifest.generated.md over docs/manifest.md")
        }
    }
}
