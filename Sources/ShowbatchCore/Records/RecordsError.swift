import ShowbatchBasics

/// What keeps a run's records (the audit trail, the metrics push, a side file) from being
/// written, put in words here only.
enum RecordsError: RunProblem {
    /// The audit trail is not a private file of the running user's.
    case auditTrailNotPrivate(path: String)
    /// The audit trail is shorter than a ledger recorded it after its last entry.
    case auditTrailCut(path: String, size: Int, ledger: String, recorded: Int)
    /// The audit trail does not end with the entry a ledger recorded as its last.
    case auditTrailRewritten(path: String, ledger: String)
    /// The metrics could not be pushed to the Pushgateway at `address`.
    case pushFailed(address: String, reason: String)
    /// `--metrics` or `--report` names a file showbatch did not write.
    case foreignSideFile(flag: String, path: String)

    var description: String {
        switch self {
        case .auditTrailNotPrivate(let path):
            return "the audit trail \(path) is not a private file of this user's (mode 0600, one link): it is not written to"
        case .auditTrailCut(let path, let size, let ledger, let recorded):
            return "the audit trail \(path) has \(size) bytes, and \(ledger) recorded \(recorded) after its last entry: it was cut short, emptied or moved away; it is not written to (showbatch audit verify \(path) --manifest … says what it holds; move it aside and give audit.path a new file to start another)"
        case .auditTrailRewritten(let path, let ledger):
            return "the audit trail \(path) does not end, where \(ledger) recorded its last entry, with that entry: it was rewritten; it is not written to"
        case .pushFailed(let address, let reason):
            return "cannot push the metrics to \(address): \(reason)"
        case .foreignSideFile(let flag, let path):
            return "\(flag) \(path) holds a file that showbatch did not write (a data file? an output?); it is not replaced: give \(flag) a path of its own"
        }
    }

    func redacted(_ redact: (String) -> String) -> RecordsError {
        switch self {
        case .auditTrailNotPrivate(let path): return .auditTrailNotPrivate(path: redact(path))
        case .auditTrailCut(let path, let size, let ledger, let recorded):
            return .auditTrailCut(path: redact(path), size: size, ledger: redact(ledger), recorded: recorded)
        case .auditTrailRewritten(let path, let ledger): return .auditTrailRewritten(path: redact(path), ledger: redact(ledger))
        case .pushFailed(let address, let reason): return .pushFailed(address: redact(address), reason: redact(reason))
        case .foreignSideFile(let flag, let path): return .foreignSideFile(flag: flag, path: redact(path))
        }
    }
}
