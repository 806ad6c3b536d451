import Foundation

/// Writes to standard output and standard error without trapping on a closed pipe.
enum Console {
    static func out(_ text: String) {
        try? FileHandle.standardOutput.write(contentsOf: Data(text.utf8))
    }

    static func err(_ text: String) {
        try? FileHandle.standardError.write(contentsOf: Data(text.utf8))
    }
}
