import Foundation

/// A program a test runs that a Debian package brings (sshd, nginx, the Pushgateway, promtool…)
/// and that is not installed: the test fails at once, naming it and its package, instead of
/// deep inside with a start-up error.
package struct MissingTool: Error, CustomStringConvertible {
    package let path: String
    package let package: String

    package var description: String {
        "this test needs \(path), from Debian's \(package) package, which is not installed (make test installs it)"
    }
}

/// Throws `MissingTool` unless `path` is a program this process may run.
package func requireTool(_ path: String, package: String) throws {
    guard access(path, X_OK) == 0 else { throw MissingTool(path: path, package: package) }
}
