import Testing
import TestSupport

/// A test that needs a program a Debian package brings says which, and from what package, when
/// it is missing.
@Suite struct RequiredToolTests {
    @Test func aMissingProgramIsNamedWithItsPackage() {
        #expect(throws: MissingTool.self) { try requireTool("/usr/sbin/no-such-daemon", package: "no-such-package") }
        do {
            try requireTool("/usr/sbin/no-such-daemon", package: "no-such-package")
        } catch {
            #expect("\(error)" == "this test needs /usr/sbin/no-such-daemon, from Debian's no-such-package package, which is not installed (make test installs it)")
        }
        #expect(throws: Never.self) { try requireTool("/bin/sh", package: "dash") }
    }
}
