import Foundation

/// The `.yaml` cases in `Tests/Fixtures/<name>`, as full paths, sorted. Found from this source
/// file's own place, not the current folder, so that a run from another folder finds them too
/// (the counts are checked by tests of their own: a case list that came back empty would
/// otherwise pass as a suite with no cases).
package func fixtureCases(_ name: String) -> [String] {
    let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures").appendingPathComponent(name).path
    return ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.hasSuffix(".yaml") }.sorted()
        .map { folder + "/" + $0 }
}
