import Foundation
import Testing

/// What a run prints and writes hides its secret values wherever they come back. The secrets are
/// made for the tests (`sbtest…`).
@Suite struct RedactionEndToEndTests {
    /// A hostname from a variable a header uses too is hidden in the JSON `run_started`, in the
    /// attempt lines and in the row's error cell, where curl quotes the host it could not resolve.
    @Test func aHostnameThatIsASecretIsHiddenInLogsAndTheErrorCell() async throws {
        let work = Workspace(["m.yaml": """
        vault: tnt1
        hostname: "${SB_HOST}"
        hostname_check: false
        headers: {X-Host: "${SB_HOST}"}
        retry: {attempts: 1}
        circuit: {outage_after: 0, failed_rows: 0}
        output: {path: r.csv}
        requests: [{name: a, path: /post}]
        """])
        defer { work.remove() }
        let result = try await showbatch(["run", "m.yaml", "--log-format", "json", "--verbose"], in: work.path,
                                         environment: ["SB_HOST": "sbtest-secret-host.invalid"])
        #expect(result.status == 1)
        #expect(result.stderr.contains(#""base_url":"https://<redacted>""#))
        #expect(!result.stderr.contains("sbtest-secret-host"))
        let cells = try #require(work.read("r.csv"))
        #expect(cells == "request,status,http_status,attempts,error\na,failed,,1,1501 network: host not found (curl: Could not resolve host: <redacted>)\n")
    }
}
