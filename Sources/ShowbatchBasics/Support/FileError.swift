/// A file operation that failed: which, on what file, for what, and the system's errno. Its
/// words are made here only, so that every one reads the same way:
/// `cannot write the journal out/r.csv.journal: No space left on device (the disk is full)`.
package struct FileError: RunProblem, Equatable {
    /// Why the operation failed.
    package enum Cause: Sendable, Equatable {
        case errno(Int32)
        /// A reader's words, such as "it is not there" or a file's damage.
        case reason(String)
    }

    /// What was being done.
    package enum Operation: Sendable, Equatable {
        case read, write, create, open, lock, repair, sync
        /// Renaming the file to `to`.
        case rename(to: String)
        /// Making the file mode 0600.
        case makePrivate
        /// Syncing the folder of a file just written (it is not written until that is done).
        case syncFolder
    }

    /// What the file is to showbatch, named before its path where a person would not know it
    /// from the path alone.
    package enum Role: String, Sendable, Equatable {
        case auditTrail = "the audit trail"
        case journal = "the journal"
        case folder = "the folder"
        case labelFile = "the label file"
    }

    package var operation: Operation
    package var role: Role?
    package var path: String
    /// What the file serves, after its path ("for out/r.csv"), when that says more.
    package var purpose: String?
    /// Why, in the system's errno or in the words of the reader that failed.
    package var cause: Cause
    /// What is kept and how the run goes on, after the cause.
    package var next: String?

    package init(_ operation: Operation, _ path: String, purpose: String? = nil, errno: Int32, next: String? = nil) {
        self.init(operation, nil, path, purpose: purpose, cause: .errno(errno), next: next)
    }

    package init(_ operation: Operation, _ role: Role?, _ path: String, purpose: String? = nil, errno: Int32, next: String? = nil) {
        self.init(operation, role, path, purpose: purpose, cause: .errno(errno), next: next)
    }

    package init(_ operation: Operation, _ path: String, purpose: String? = nil, cause: Cause, next: String? = nil) {
        self.init(operation, nil, path, purpose: purpose, cause: cause, next: next)
    }

    package init(_ operation: Operation, _ role: Role?, _ path: String, purpose: String? = nil, cause: Cause, next: String? = nil) {
        self.operation = operation
        self.role = role
        self.path = path
        self.purpose = purpose
        self.cause = cause
        self.next = next
    }

    /// The system's errno, when that is the cause.
    package var errno: Int32? {
        if case .errno(let code) = cause { return code }
        return nil
    }

    package var description: String {
        let file = (role.map { $0.rawValue + " " } ?? "") + path + (purpose.map { " " + $0 } ?? "")
        let doing: String
        switch operation {
        case .read: doing = "cannot read \(file)"
        case .write: doing = "cannot write \(file)"
        case .create: doing = "cannot create \(file)"
        case .open: doing = "cannot open \(file)"
        case .lock: doing = "cannot lock \(file)"
        case .repair: doing = "cannot repair \(file)"
        case .sync: doing = "cannot sync \(file)"
        case .rename(let to): doing = "cannot rename \(file) to \(to)"
        case .makePrivate: doing = "cannot make \(file) private (mode 0600)"
        case .syncFolder: doing = "cannot write \(file): syncing its folder"
        }
        let why: String
        switch cause {
        case .errno(let code): why = describeErrno(code)
        case .reason(let words): why = words
        }
        return doing + ": " + why + (next.map { "; " + $0 } ?? "")
    }

    package func redacted(_ redact: (String) -> String) -> FileError {
        var copy = self
        copy.path = redact(path)
        copy.purpose = purpose.map(redact)
        copy.next = next.map(redact)
        if case .reason(let words) = cause { copy.cause = .reason(redact(words)) }
        if case .rename(let to) = operation { copy.operation = .rename(to: redact(to)) }
        return copy
    }
}
