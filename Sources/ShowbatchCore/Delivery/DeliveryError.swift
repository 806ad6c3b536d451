import ShowbatchBasics

/// What keeps a delivery, its check or its record from being used, put in words here only.
enum DeliveryError: RunProblem {
    /// No output of the manifest has `output.deliver` (`checking`: for `deliver --check`).
    case nothingToDeliver(manifest: String, checking: Bool)
    /// A delivery record cannot be read.
    case recordUnreadable(path: String, reason: String)
    /// A delivery record of another version of showbatch, or not one at all.
    case recordOfAnotherVersion(path: String)
    /// A delivery record with a field missing.
    case recordNotWhole(path: String)

    var description: String {
        switch self {
        case .nothingToDeliver(let manifest, let checking):
            return "no output of \(manifest) has output.deliver: there is nothing to \(checking ? "check" : "deliver")"
        case .recordUnreadable(let path, let reason): return "cannot read \(path), a record of a delivery: \(reason)"
        case .recordOfAnotherVersion(let path): return "\(path) is not a delivery record of this version of showbatch"
        case .recordNotWhole(let path): return "\(path) is not a whole delivery record"
        }
    }

    func redacted(_ redact: (String) -> String) -> DeliveryError {
        switch self {
        case .nothingToDeliver(let manifest, let checking): return .nothingToDeliver(manifest: redact(manifest), checking: checking)
        case .recordUnreadable(let path, let reason): return .recordUnreadable(path: redact(path), reason: redact(reason))
        case .recordOfAnotherVersion(let path): return .recordOfAnotherVersion(path: redact(path))
        case .recordNotWhole(let path): return .recordNotWhole(path: redact(path))
        }
    }
}
