import Foundation
import ShowbatchBasics
import ShowbatchCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What a signal does to a command (`run`, `deliver`, `merge`) from its start to the end of the process.
///
/// The listener is set once, first, and never taken away. Before the work begins (the manifest
/// being read), a signal finishes the command: nothing was sent, 130, its records written and
/// pushed. While it works, a signal cancels the work (`cancel`; `deliver` and `merge` ask
/// `Signals.fired` instead). While the records are pushed, a signal gives the push up at once and
/// the process ends with the command's own code; one that came before the push and that the
/// command did not take as its interrupt gives it up at its start
/// (`RunRecords.signalsGiveUpThePush`). Once the command is done, a signal changes nothing.
/// `CommandEnding` decides each of these under one lock.
final class CommandSignals<Work: Sendable>: Sendable {
    private let state = Mutex(CommandEnding<Work>())
    private let printer: EventPrinter
    private let cancel: @Sendable (Work) -> Void

    init(printer: EventPrinter, cancel: @escaping @Sendable (Work) -> Void = { _ in }) {
        self.printer = printer
        self.cancel = cancel
    }

    /// Hears every signal from now to the end of the process. `interrupted` finishes the command
    /// when a signal comes before its work began: it writes and pushes the records of an
    /// interrupted command (calling `pushing` before its push), and returns the exit code.
    func listen(finishing interrupted: @escaping @Sendable () -> ExitCode) {
        Signals.listen { [self] in signalled(interrupted) }
    }

    /// The work, made by `make` and begun: a signal from now on cancels it. Nil when a signal
    /// that came first is finishing the command: its finisher ends the process, and the caller
    /// must not go on (`parked`).
    func begin(_ make: () -> Work) -> Work? {
        state.withLock { $0.start(make) }
    }

    /// The command ends by itself: true when it is the one to say so and write its records,
    /// false when a signal's finisher is (the caller must not go on). Called before the command
    /// prints its end, so that a signal after that line is never taken for one before anything
    /// was sent.
    func ending() -> Bool {
        state.withLock { $0.claimEnd() }
    }

    /// The records, whose code is `code`, are about to be pushed for work that ended with
    /// `workCode`: gives the push up now when a signal the work did not take as its interrupt
    /// came already.
    func pushing(_ code: ExitCode, workEndedWith workCode: ExitCode? = nil) {
        if state.withLock({ $0.pushStarts(code, runEndedWith: workCode ?? code, signals: Signals.received) }) {
            interruptedWhilePushing(code)
        }
    }

    /// The command is done (its records written and pushed, if it has any): a signal changes
    /// nothing from now on. One that gave the push up as it ended is ending the process: this
    /// waits for that exit.
    func done() {
        if !state.withLock({ $0.pushEnded() }) { parked() }
    }

    /// For a command that is not to go on (`begin` or `ending` said no): waits, holding its
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
        case .cancel(let work):
            cancel(work)
        case .nothing:
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

extension CommandSignals where Work == Void {
    /// The work begins (`begin(_:)`, for work that a signal does not cancel: it asks
    /// `Signals.fired`); false when a signal's finisher has the command's end.
    func begin() -> Bool { begin {} != nil }
}
