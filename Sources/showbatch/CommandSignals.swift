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
    /// Who ends the command, decided as for `run`; the work itself is not cancelled, it asks
    /// `Signals.fired`.
    private let state = Mutex(CommandEnding<Void>())
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
        state.withLock { $0.start {} } != nil
    }

    /// The command ends by itself before its work began (an error): true when it is the one to
    /// say so and write its records, false when a signal's finisher is (the caller must not go
    /// on). Called before the command prints its end, so that a signal after that line is never
    /// taken for one before anything was sent.
    func ending() -> Bool {
        state.withLock { $0.claimEnd() }
    }

    /// The records are about to be pushed, the command's code `code`: gives the push up now when a
    /// signal the command did not take as its interrupt came already.
    func pushing(_ code: ExitCode) {
        if state.withLock({ $0.pushStarts(code, runEndedWith: code, signals: Signals.received) }) {
            interruptedWhilePushing(code)
        }
    }

    /// The command is done (its records written and pushed, if it has any): a signal changes
    /// nothing from now on. One that gave the push up as it ended is ending the process: this
    /// waits for that exit.
    func done() {
        if !state.withLock({ $0.pushEnded() }) { parked() }
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

    private func signalled(_ interrupted: @escaping @Sendable () -> ExitCode) {
        switch state.withLock({ $0.signal() }) {
        case .finish:
            // On a thread of its own: the records may wait on the network for seconds, and a
            // second signal must be heard meanwhile (it gives the push up).
            let finisher = Thread { [self] in
                Blocking.markCurrent()
                if printer.format == .json {
                    printer.error("interrupted before anything was sent")
                } else {
                    Console.err("showbatch: interrupted before anything was sent\n")
                }
                let code = interrupted()
                done()
                Signals.end(code)
            }
            finisher.name = "showbatch-finisher"
            finisher.start()
        case .giveUpPush(let code):
            interruptedWhilePushing(code)
        case .cancel, .nothing:
            return
        }
    }

    /// The command is over, its files written: the push is given up, not waited for, and the
    /// command's own code stands. Only the one the ending chose comes here.
    private func interruptedWhilePushing(_ code: ExitCode) -> Never {
        printer.error("interrupted while pushing the metrics to the Pushgateway: they were not pushed")
        Signals.end(code)
    }
}
