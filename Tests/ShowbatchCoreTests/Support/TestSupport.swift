import Foundation
import ShowbatchYAML
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore

/// A private temporary folder per test, removed by the caller.
struct TempDir {
    let path: String

    init() {
        let base = FileManager.default.temporaryDirectory.path
        path = base + "/showbatch-test-" + UUID().uuidString
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func file(_ name: String, _ text: String) -> String {
        let full = path + "/" + name
        try! FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try! Data(text.utf8).write(to: URL(fileURLWithPath: full))
        return full
    }

    func read(_ name: String) -> String? {
        FileManager.default.contents(atPath: path + "/" + name).map { String(decoding: $0, as: UTF8.self) }
    }

    func exists(_ name: String) -> Bool { FileManager.default.fileExists(atPath: path + "/" + name) }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// Loads manifest text named `m.yaml` in `dir`.
func loadManifest(_ text: String, in dir: TempDir? = nil, environment: [String: String] = [:],
                  use: ManifestUse = .reveal) throws(ManifestError) -> Manifest {
    let folder = dir ?? TempDir()
    defer { if dir == nil { folder.remove() } }
    let path = folder.file("m.yaml", text)
    return try ManifestLoader.load(path: path, environment: environment, use: use)
}

/// The rendered errors of manifest text, with the temp folder's path shortened to `m.yaml`.
func manifestErrors(_ text: String, environment: [String: String] = [:], files: [String: String] = [:],
                    folders: [String] = [], use: ManifestUse = .reveal) -> String {
    let dir = TempDir()
    defer { dir.remove() }
    for (name, content) in files { _ = dir.file(name, content) }
    for name in folders { try! FileManager.default.createDirectory(atPath: dir.path + "/" + name, withIntermediateDirectories: true) }
    do {
        _ = try loadManifest(text, in: dir, environment: environment, use: use)
        return ""
    } catch {
        return error.description.replacingOccurrences(of: dir.path + "/", with: "")
    }
}
