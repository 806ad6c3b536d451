import Foundation
import ShowbatchBasics
import Synchronization
import ShowbatchManifest
import ShowbatchCore

/// Writes to standard output and standard error without trapping on a closed pipe. Standard
/// error goes through `StandardError`, so that nothing that prints waits for its reader.
enum Console {
    /// The first write to standard output that failed, in words: the command's output is then
    /// not whole, and the process must not end with 0 or 1.
    private static let outFailure = Mutex<String?>(nil)

    static func out(_ text: String) {
        do {
            try FileHandle.standardOutput.write(contentsOf: Data(text.utf8))
        } catch {
            let code = posixCode(error)
            let reason = code == EPIPE ? "Broken pipe: whatever reads it has gone away" : code.flatMap { strerror($0).map { String(cString: $0) } } ?? "the write failed"
            outFailure.withLock { $0 = $0 ?? reason }
        }
    }

    /// Why standard output was not written whole, if it was not.
    static var outputFailure: String? { outFailure.withLock { $0 } }

    static func err(_ text: String) {
        StandardError.shared.write(text)
    }
}

/// Standard error, written by a thread of its own. Run events are printed from whatever thread
/// has them, the one that drives the transfers included: a reader of standard error that stalls
/// (a full pipe, a log shipper that is behind) must not hold requests in flight past their
/// timeout, nor keep an interrupted run from ending. Lines queue in order; past 4 MiB queued,
/// lines that can be spared (an attempt with --verbose, progress) are dropped and counted, and
/// past 64 MiB any line is. At exit the queue is given a few seconds to drain.
///
/// Not a `BatchQueue`: it is bounded in bytes and drops instead of waiting (a stalled reader
/// must not hold a run), and its end waits, with a deadline, for the write itself.
final class StandardError: @unchecked Sendable {
    static let shared = StandardError()

    private let condition = NSCondition()
    private var queue: [Data] = []
    private var queued = 0
    private var writing = false
    private var dropped = 0
    private var started = false

    private static let spareLimit = 4 << 20
    private static let hardLimit = 64 << 20

    /// Queues `text`; `spare`: it may be dropped when the reader is far behind.
    func write(_ text: String, spare: Bool = false) {
        let data = Data(text.utf8)
        condition.lock()
        defer { condition.unlock() }
        if queued + data.count > (spare ? Self.spareLimit : Self.hardLimit) {
            dropped += 1
            return
        }
        queue.append(data)
        queued += data.count
        if !started {
            started = true
            let thread = Thread { [self] in drain() }
            thread.name = "stderr"
            thread.start()
        }
        condition.signal()
    }

    /// Waits until everything queued is written, for at most `timeout`; says how many lines were
    /// dropped, if any. False when the reader did not take it all in time.
    @discardableResult
    func finish(timeout: Duration) -> Bool {
        condition.lock()
        let lost = dropped
        dropped = 0
        condition.unlock()
        if lost > 0 {
            write("showbatch: warning: \(lost) line\(lost == 1 ? " was" : "s were") not written to standard error: it was not read fast enough\n")
        }
        let deadline = Date().addingTimeInterval(timeout.seconds)
        condition.lock()
        defer { condition.unlock() }
        while !queue.isEmpty || writing {
            guard condition.wait(until: deadline) else { return false }
        }
        return true
    }

    private func drain() {
        while true {
            condition.lock()
            while queue.isEmpty { condition.wait() }
            let batch = queue
            queue = []
            queued = 0
            writing = true
            condition.unlock()
            var joined = Data()
            for data in batch { joined.append(data) }
            try? FileHandle.standardError.write(contentsOf: joined)
            condition.lock()
            writing = false
            condition.broadcast()
            condition.unlock()
        }
    }
}

/// The errno a failed write carries (FileHandle wraps it in a Cocoa error), if it carries one.
private func posixCode(_ error: any Error) -> Int32? {
    let error = error as NSError
    if error.domain == NSPOSIXErrorDomain { return Int32(error.code) }
    return (error.userInfo[NSUnderlyingErrorKey] as? NSError).flatMap { $0.domain == NSPOSIXErrorDomain ? Int32($0.code) : nil }
}
