import Foundation
import Synchronization

/// A flag set from a signal handler and read from async code.
final class SignalFlag: Sendable {
    let value = Atomic<Bool>(false)
}

/// Turns SIGINT and SIGTERM into a flag that async code can wait on.
final class SignalWaiter: @unchecked Sendable {
    // The sources are only written in init; they must stay alive to keep delivering.
    private let flag = SignalFlag()
    private var sources: [DispatchSourceSignal] = []

    init(onSignal: (@Sendable () -> Void)? = nil) {
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [flag] in
                flag.value.store(true, ordering: .releasing)
                onSignal?()
            }
            source.resume()
            sources.append(source)
        }
    }

    /// Whether a signal has arrived.
    var fired: Bool { flag.value.load(ordering: .acquiring) }

    /// Waits up to `duration`; true as soon as a signal has arrived.
    func wait(for duration: Duration) async -> Bool {
        let deadline = ContinuousClock.now + duration
        while ContinuousClock.now < deadline {
            if fired { return true }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return fired
    }
}
