import Foundation
import Testing
import TestSupport
@testable import showbatch

/// The completion scripts and the man page, made from the flag tables.
@Suite struct CompletionsTests {
    /// Runs `/bin/bash` with `arguments`; its exit status and standard output.
    private func bash(_ arguments: [String], input: String? = nil) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }

    @Test func theBashScriptParsesAndCompletes() throws {
        let work = Workspace(["c.bash": Completions.bash])
        defer { work.remove() }
        #expect(try bash(["-n", work.path + "/c.bash"]).status == 0)
        // Completed as bash would: a command, then a flag of it.
        let script = "source \(work.path)/c.bash; COMP_WORDS=(showbatch me); COMP_CWORD=1; _showbatch; echo \"${COMPREPLY[*]}\"; COMP_WORDS=(showbatch run m.yaml --max); COMP_CWORD=3; _showbatch; echo \"${COMPREPLY[*]}\""
        #expect(try bash(["-c", script]).output == "merge\n--max-failed\n")
    }

    @Test func everyFlagIsInEveryScript() {
        for command in Command.allCases {
            for flag in command.flags {
                #expect(Completions.bash.contains(flag.long + " ") || Completions.bash.contains(flag.long + "\""), "bash: \(flag.long)")
                #expect(Completions.zsh.contains(flag.long + "[") || Completions.zsh.contains("," + flag.long + "}"), "zsh: \(flag.long)")
                #expect(Completions.fish.contains("-l \(flag.long.dropFirst(2))"), "fish: \(flag.long)")
            }
        }
        #expect(Completions.script("tcsh") == nil)
    }

    /// `docs/showbatch.1` is the page the tables make now (regenerate: copy
    /// `.build/showbatch.1.generated` over it).
    @Test func theManPageIsCurrent() throws {
        let generated = ManPage.page
        try generated.write(toFile: repository + "/.build/showbatch.1.generated", atomically: true, encoding: .utf8)
        let committed = try? String(contentsOfFile: repository + "/docs/showbatch.1", encoding: .utf8)
        #expect(committed == generated, "docs/showbatch.1 is not current: cp .build/showbatch.1.generated docs/showbatch.1")
        #expect(generated.contains(".SS run") && generated.contains("\\fB\\-o\\fR, \\fB\\-\\-output\\fR \\fIPATH\\fR"))
    }
}
