import Foundation
import Testing

/// What a run prints and writes hides its secret values wherever they come back, and a failure to
/// create a file says the system's own cause. The secrets are made for the tests (`sbtest…`).
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

    /// An output folder the user cannot write: the journal's creation fails with EACCES, and the
    /// message says so (it said "No such file or directory", from a later call). As root, the
    /// run is made as `nobody`, whom the folder's mode keeps out.
    @Test func anUnwritableFolderSaysPermissionDenied() async throws {
        let work = Workspace(["m.yaml": "vault: tnt1\noutput: {path: out/r.csv}\nrequests: [{name: a, path: /post}]\n"])
        defer {
            chmod(work.path + "/out", 0o755)
            work.remove()
        }
        mkdir(work.path + "/out", 0o755)
        chmod(work.path, 0o755)
        chmod(work.path + "/m.yaml", 0o644)
        chmod(work.path + "/out", 0o555)
        let result = getuid() == 0
            ? try await showbatch(["-c", "exec setpriv --reuid=65534 --regid=65534 --clear-groups \"$0\" run m.yaml --emulate", binary],
                                  in: work.path, shell: true)
            : try await showbatch(["run", "m.yaml", "--emulate"], in: work.path)
        #expect(result.status == 3)
        #expect(result.stderr == "showbatch: error: cannot create out/r.csv.journal for out/r.csv: Permission denied (check the folder's owner and permissions)\n")
    }
}
