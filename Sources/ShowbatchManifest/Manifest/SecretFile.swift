import Foundation
import ShowbatchBasics

/// A secret read from a file (`${file:PATH}`): a Kubernetes Secret's mount, a file only root and
/// the job's user can read. Read through links (a Secret's files are links to its current data),
/// one trailing line break removed (`echo` writes one); never quoted.
enum SecretFile {
    /// The most a secret file may hold: a token or a key, not a data file.
    static let limit = 64 << 10

    struct Problem: Error {
        let message: String
    }

    /// The content of `path` (relative to `directory`), or why it cannot be taken.
    static func read(_ path: String, directory: String) -> Result<String, Problem> {
        let full = path.hasPrefix("/") ? path : (directory.isEmpty || directory == "." ? path : directory + "/" + path)
        let bytes: [UInt8]
        do {
            bytes = try FileDescriptor.openInput(full).readAll(limit: limit)
        } catch {
            return .failure(Problem(message: "cannot read \(full): \(error.reason)"))
        }
        var text = bytes[...]
        if text.last == 0x0A { text = text.dropLast() }
        if text.last == 0x0D { text = text.dropLast() }
        guard !text.isEmpty else { return .failure(Problem(message: "\(full) is empty")) }
        guard let value = String(validating: text, as: UTF8.self) else { return .failure(Problem(message: "\(full) is not UTF-8 text")) }
        if value.contains(where: { $0 == "\n" || $0 == "\r" || $0 == "\r\n" }) {
            return .failure(Problem(message: "\(full) holds more than one line (a secret is one line; one trailing line break is allowed)"))
        }
        return .success(value)
    }
}
