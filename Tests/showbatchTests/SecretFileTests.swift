import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `${file:PATH}`: a secret from a file, anywhere `${NAME}` is allowed, read through links as a
/// Kubernetes Secret mount is, one trailing line break removed, hidden as an environment value is.
@Suite struct SecretFileTests {
    private let manifest = """
    vault: tnt1
    headers: {Authorization: "Bearer ${file:secrets/token}"}
    output: {path: out/r.csv}
    emulator: {aliases: {tok_0: "4111111111111111"}}
    requests: [{name: r, path: /post, payload: {c: tok_0}, labels: {card: json.c, sent: headers.Authorization}}]
    """

    @Test func aSecretComesFromAFileThroughALink() async throws {
        let work = Workspace(["m.yaml": manifest, "secrets/..data/token": "s3cr3t-t0ken-value\n"])
        defer { work.remove() }
        // As a Secret's volume: the name is a link to the current data.
        symlink("..data/token", work.path + "/secrets/token")
        let run = try await showbatch(["run", "m.yaml", "--emulate", "--verbose"], in: work.path)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(work.read("out/r.csv") == "request,status,http_status,attempts,error,card,sent\nr,ok,200,1,,4111111111111111,Bearer s3cr3t-t0ken-value\n")
        #expect(!run.stderr.contains("s3cr3t-t0ken-value") && !run.stdout.contains("s3cr3t-t0ken-value"))
        let plan = try await showbatch(["plan", "m.yaml"], in: work.path)
        #expect(plan.stdout.contains("headers: Authorization: <secret>") && !plan.stdout.contains("s3cr3t"), "\(plan.stdout)")
    }

    /// A file that is missing, empty or more than one line is a positioned error naming the file,
    /// never its content; `validate --no-env` takes it as a placeholder.
    @Test(arguments: [
        (nil as String?, "cannot read secrets/token: No such file or directory"),
        ("\n", "secrets/token is empty"),
        ("one\ntwo\n", "secrets/token holds more than one line (a secret is one line; one trailing line break is allowed)"),
    ])
    func aFileThatCannotBeTakenIsAPositionedError(content: String?, reason: String) async throws {
        let work = Workspace(["m.yaml": manifest])
        defer { work.remove() }
        if let content { work.write("secrets/token", content) }
        let validate = try await showbatch(["validate", "m.yaml"], in: work.path)
        #expect(validate.status == 2)
        #expect(validate.stderr.hasPrefix("m.yaml:2:26: error: cannot take ${file:secrets/token} (used in headers.Authorization): \(reason)\n"), "\(validate.stderr)")
        #expect(!validate.stderr.contains("two"))
        let placeholder = try await showbatch(["validate", "--no-env", "m.yaml"], in: work.path)
        #expect(placeholder.status == 0, "\(placeholder.stderr)")
        #expect(placeholder.stdout.contains("unset, taken as placeholders: file:secrets/token"))
    }
}
