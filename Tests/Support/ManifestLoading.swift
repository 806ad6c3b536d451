import Foundation
import ShowbatchManifest

/// A private temporary folder per test, removed by the caller.
package struct TempDir {
    package let path: String

    package init() {
        let base = FileManager.default.temporaryDirectory.path
        path = base + "/showbatch-test-" + UUID().uuidString
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    package func file(_ name: String, _ text: String) -> String {
        let full = path + "/" + name
        try! FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try! Data(text.utf8).write(to: URL(fileURLWithPath: full))
        return full
    }

    package func read(_ name: String) -> String? {
        FileManager.default.contents(atPath: path + "/" + name).map { String(decoding: $0, as: UTF8.self) }
    }

    package func exists(_ name: String) -> Bool { FileManager.default.fileExists(atPath: path + "/" + name) }

    package func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// For tests of the manifest model alone, which has no GnuPG: every recipient is refused with
/// this, so a test that needs keys checked shows it belongs with the engine's tests.
package let recipientsUnchecked: RecipientCheck = { files in
    files.indices.map { RecipientProblem(index: $0, message: "recipients are checked by the engine's GnuPG, not in this test target") }
}

/// Loads manifest text named `m.yaml` in `dir`.
package func loadManifest(_ text: String, in dir: TempDir? = nil, environment: [String: String] = [:],
                          use: ManifestUse = .reveal, recipients: @escaping RecipientCheck = recipientsUnchecked) throws(ManifestError) -> Manifest {
    let folder = dir ?? TempDir()
    defer { if dir == nil { folder.remove() } }
    let path = folder.file("m.yaml", text)
    return try ManifestLoader.load(path: path, environment: environment, use: use, recipients: recipients)
}

/// The rendered errors of manifest text, with the temp folder's path shortened to `m.yaml`.
package func manifestErrors(_ text: String, environment: [String: String] = [:], files: [String: String] = [:],
                            folders: [String] = [], use: ManifestUse = .reveal,
                            recipients: @escaping RecipientCheck = recipientsUnchecked) -> String {
    let dir = TempDir()
    defer { dir.remove() }
    for (name, content) in files { _ = dir.file(name, content) }
    for name in folders { try! FileManager.default.createDirectory(atPath: dir.path + "/" + name, withIntermediateDirectories: true) }
    do {
        _ = try loadManifest(text, in: dir, environment: environment, use: use, recipients: recipients)
        return ""
    } catch {
        return error.description.replacingOccurrences(of: dir.path + "/", with: "")
    }
}
