import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A showbatch process whose stdout and stderr the test reads as it likes, and which the test may
/// signal at a moment the process itself shows. Signals are sent by threads of the test's own as
/// soon as that moment is seen, never by a task: a busy test run may hold a task up for seconds,
/// and by then the moment is gone.
final class Child: @unchecked Sendable {
    let process = Process()
    let stdout = Pipe()
    let stderr = Pipe()
    private let errText = Mutex("")
    private let sent = Atomic(false)
    /// Signalled once stderr is read to its end.
    private let errorsRead = DispatchSemaphore(value: 0)

    /// Starts showbatch in `directory`, with `environment` added to this process's.
    ///
    /// `signal`: when its stderr first holds `trigger`, the thread reading stderr sends `number`
    /// at once. `signalWhen`: a thread checks `condition` (given the process id: a file the run
    /// writes, its signal mask in /proc) every millisecond and sends `number` once it holds. One
    /// signal is sent at most. With either, a process still running `deadline` seconds after its
    /// start is killed (SIGKILL; `signalled` stays false if its moment never came): a test never
    /// waits out a wait that its signal was to end, whether the signal never came or did not end it.
    init(_ arguments: [String], in directory: String, environment: [String: String] = [:],
         signal: (trigger: String, number: Int32)? = nil,
         signalWhen: (condition: @Sendable (Int32) -> Bool, number: Int32)? = nil,
         deadline: TimeInterval = 300) throws {
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        var inherited = ProcessInfo.processInfo.environment
        inherited.removeValue(forKey: "JOB_COMPLETION_INDEX")
        inherited.merge(environment) { $1 }
        process.environment = inherited
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let pid = process.processIdentifier
        Thread { [self] in
            defer { errorsRead.signal() }
            while true {
                let chunk = stderr.fileHandleForReading.availableData
                if chunk.isEmpty { return }
                let text = errText.withLock { text -> String in
                    text += String(decoding: chunk, as: UTF8.self)
                    return text
                }
                if let signal, !signalled, text.contains(signal.trigger) { send(signal.number) }
            }
        }.start()
        guard signal != nil || signalWhen != nil else { return }
        let limit = Date().addingTimeInterval(deadline)
        Thread { [self] in
            while process.isRunning {
                if Date() >= limit {
                    kill(pid, SIGKILL)
                    return
                }
                if !signalled, let signalWhen, signalWhen.condition(pid) { send(signalWhen.number) }
                usleep(signalled ? 10_000 : 1_000)
            }
        }.start()
    }

    /// Whether the signal was sent (its moment was seen while the process ran).
    var signalled: Bool { sent.load(ordering: .sequentiallyConsistent) }

    private func send(_ number: Int32) {
        guard sent.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent).exchanged else { return }
        kill(process.processIdentifier, number)
    }

    /// What the process wrote to stderr so far (all of it once `finish` returned).
    var errors: String { errText.withLock { $0 } }

    /// Reads stdout to its end on a thread of its own, and stderr too, then waits for the exit.
    func finish() async -> (status: Int32, stdout: String) {
        let out = await withCheckedContinuation { (continuation: CheckedContinuation<Data, Never>) in
            Thread { [stdout, errorsRead] in
                let data = stdout.fileHandleForReading.readDataToEndOfFile()
                errorsRead.wait()
                continuation.resume(returning: data)
            }.start()
        }
        await exited(process)
        return (process.terminationStatus, String(decoding: out, as: UTF8.self))
    }
}
