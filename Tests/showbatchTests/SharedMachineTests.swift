import Foundation
import Testing

/// What a neighbour on a shared machine must not get from showbatch's own doing.
@Suite struct SharedMachineTests {
    /// Under `umask 000` the folders showbatch made for outputs, metrics and reports were
    /// `drwxrwxrwx`: anyone could list them and put files in them.
    @Test func foldersShowbatchCreatesArePrivateWhateverTheUmask() async throws {
        let work = Workspace([
            "m.yaml": """
            vault: tnt1
            emulator: {aliases: {tok_0: "4111111111111111"}}
            output: {path: new/deep/out/r.csv, rejects: new/deep/rejects/j.csv}
            requests: [{name: a, path: /p, payload: {c: tok_0}, labels: {c: json.c}}]
            """,
        ])
        defer { work.remove() }
        let run = try await showbatch(["-c", "umask 000; exec \"$0\" run m.yaml --emulate --quiet --metrics m/x/metrics.prom --report r/y/report.json", binary],
                                      in: work.path, shell: true)
        #expect(run.status == 0, "\(run.stderr)")
        for folder in ["new", "new/deep", "new/deep/out", "new/deep/rejects", "m", "m/x", "r", "r/y"] {
            var info = stat()
            #expect(stat(work.path + "/" + folder, &info) == 0, "\(folder)")
            #expect(info.st_mode & 0o7777 == 0o700, "\(folder) is \(String(info.st_mode & 0o7777, radix: 8))")
        }
    }
}
