import Foundation
import Testing
import TestSupport

/// `emulator.response`: the emulator answers in the route's own shape, so a manifest whose labels
/// read `data.…` is tried locally as it will run.
@Suite struct EmulatorResponseTests {
    @Test func theEmulatorAnswersInTheRoutesShape() async throws {
        let work = Workspace(["m.yaml": """
        vault: tnt1
        output: {path: out/r.csv, columns: [request, card, note, second, status]}
        emulator:
          aliases: {tok_a: "4111111111111111", tok_b: "5555555555554444"}
          response: {data: {card: "${body.card}", note: "card ${body.card} of ${body.who}", list: ["${body.cards.1}", 7, true]}}
        requests:
          - name: a
            path: /post
            payload: {card: tok_a, who: ada, cards: [tok_a, tok_b]}
            labels: {card: data.card, note: data.note, second: data.list.0}
        """])
        defer { work.remove() }
        let run = try await showbatch(["run", "m.yaml", "--emulate", "--quiet"], in: work.path)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(work.read("out/r.csv") == "request,card,note,second,status\na,4111111111111111,card 4111111111111111 of ada,5555555555554444,ok\n")
    }

    /// Without it, a label outside the echo's `json.` is not found, and the run says why.
    @Test func theEchoSaysWhyARoutesLabelIsNotFound() async throws {
        let work = Workspace(["m.yaml": """
        vault: tnt1
        output: {path: out/r.csv}
        emulator: {aliases: {tok_a: "4111111111111111"}}
        requests: [{name: a, path: /post, payload: {card: tok_a}, labels: {card: data.card}}]
        """])
        defer { work.remove() }
        let run = try await showbatch(["run", "m.yaml", "--emulate", "--quiet"], in: work.path)
        #expect(run.status == 1)
        #expect(run.stderr.hasSuffix("showbatch: warning: the emulator answers {\"json\": <the request's body, revealed>, …}: a label whose path is not under json. is not found; give emulator.response your route's answer, such as {data: {card: \"${body.card}\"}}\n"), "\(run.stderr)")
    }

    @Test func aResponseThatIsNoMappingIsRefused() {
        let errors = manifestErrors("vault: tnt1\nemulator: {response: [1]}\nrequests: [{name: a, path: /p}]\n")
        #expect(errors == "m.yaml:2:22: error: emulator.response must be a mapping: the JSON object the emulator answers, such as {data: {card: \"${body.card}\"}}\n  emulator: {response: [<redacted>]}\n                       ^")
    }
}
