import Foundation
import ShowbatchBasics
import ShowbatchCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What a signal does to `deliver` and `merge`, from the moment the command starts to the end of
/// the process, as it does to `run` (`RunSession`). The listener is set once, first, and never
/// taken away: with none, a signal ends the process with 130 and "interrupted before anything was
/// sent", which is false once the command has begun (files delivered), and races the command's
/// own exit.
///
/// Before the work begins (the manifest being read), a signal finishes the command: nothing was
/// sent, 130, its records written and pushed. While it works, a signal is counted, and the work
/// (which asks `Signals.fired`) winds down by itself. While its records are pushed, a signal gives
/// the push up at once and the process ends with the command's own code; one that came before the
/// push and that the command did not take as its interrupt gives it up at its start
/// (`RunRecords.signalsGiveUpThePush`). Once the command is done, a signal changes nothing.
final class CommandSignals: Sendable {
    enum Phase {
        /// Nothing has been sent or opened: a signal finishes the command.
        case starting
        /// The command works, or ends (its code decided, its records being written): a signal is
        /// counted, nothing more.
        case working
        /// Its records are pushed, the command's code this: a signal gives the push up.
        case pushing(ExitCode)
        /// A signal that came before the work began finishes the command, or the command is done:
        /// a signal changes nothing.
        case finished
    }

    private let phase = Mutex(Phase.starting)
    /// Set by the one who gives up the push and ends the process.
    private let givingUp = Atomic(false)
    private let printer: EventPrinter

    init(printer: EventPrinter) {
        self.printer = printer
    }

    /// Hears every signal from now to the end of the process. `interrupted` finishes the command
    /// when a signal comes before its work began: it writes and pushes the records of an
    /// interrupted command (calling `pushing` before its push), and returns the exit code.
    func listen(finishing interrupted: @escaping @Sendable () -> ExitCode) {
        Signals.listen { [self] in signalled(interrupted) }
    }

    /// The work begins: a signal from now on is the work's to hear (`Signals.fired`). False when a
    /// signal that came first is finishing the command: its finisher ends the process, and the
    /// caller must not go on (`parked`).
    func begin() -> Bool {
        phase.withLock { phase in
            guard case .starting = phase else { return false }
            phase = .working
            return true
        }
    }

    /// The command ends by itself (an error before its work began, or its work done): true when it
    /// is the one to write its records, false when a signal's finisher is (the caller must not go
    /// on). Called before the command prints its end, so that a signal after that line is never
    /// taken for one before anything was sent.
    func ending() -> Bool {
        phase.withLock { phase in
            switch phase {
            case .starting:
                phase = .working
                return true
            case .working: return true
            case .pushing, .finished: return false
            }
        }
    }

    /// The records are about to be pushed, the command's code `code`: gives the push up now when a
    /// signal the command did not take as its interrupt came already.
    func pushing(_ code: ExitCode) {
        let givenUp = phase.withLock { phase in
            phase = .pushing(code)
            return RunRecords.signalsGiveUpThePush(Signals.received, runEndedWith: code)
        }
        if givenUp { interruptedWhilePushing(code) }
    }

    /// The command is done (its records written and pushed, if it has any).
    func done() {
        phase.withLock { $0 = .finished }
    }

    /// For a command that is not to go on (`begin` or `ending` said false): waits, holding its
    /// thread, for the signal's finisher to end the process.
    func parked() -> Never {
        while true { pause() }
    }

    /// As `parked`, holding no thread of the task pool.
    func parked() async -> Never {
        while true { await withUnsafeContinuation { (_: UnsafeContinuation<Void, Never>) in } }
    }

    private func signalled(_ interrupted: @Sendable () -> ExitCode) {
        let before = phase.withLock { phase -> Phase in
            let before = phase
            if case .starting = phase { phase = .finished }
            return before
        }
        switch before {
        case .starting:
            if printer.format == .json {
                printer.error("interrupted before anything was sent")
            } else {
                Console.err("showbatch: interrupted before anything was sent\n")
            }
            Signals.end(interrupted())
        case .pushing(let code):
            interruptedWhilePushing(code)
        case .working, .finished:
            return
        }
    }

    /// The command is over, its files written: the push is given up, not waited for, and the
    /// command's own code stands.
    private func interruptedWhilePushing(_ code: ExitCode) -> Never {
        // The signal's thread and the recording thread may both come here: one says it and exits.
        guard givingUp.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent).exchanged else {
            parked()
        }
        printer.error("interrupted while pushing the metrics to the Pushgateway: they were not pushed")
        Signals.end(code)
    }
}
