import Foundation
import ShowbatchBasics
import ShowbatchManifest
import ShowbatchCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The write end of the pipe the signal handler writes to; set once, before the handler exists.
nonisolated(unsafe) private var signalPipe: Int32 = -1

/// The handler: writing one byte to a pipe is all a signal handler may safely do.
private func handleSignal(_ number: Int32) {
    var byte = UInt8(truncatingIfNeeded: number)
    _ = write(signalPipe, &byte, 1)
}

/// SIGINT, SIGTERM and SIGHUP, caught from the first moment of the process (`install` is the first thing
/// `main` does), so that a signal is never lost in a gap while a command starts, and never ends
/// the process by its default action.
///
/// A thread of its own reads the pipe and calls the listener of the moment; with none (a command
/// that has nothing to wind down), the process ends at once with 130, saying nothing was sent.
enum Signals {
    /// Who hears the next signal.
    private enum Hearer {
        /// No command winds anything down yet: a signal ends the process (nothing was sent).
        case nobody
        case listener(@Sendable () -> Void)
        /// A signal is ending the process: later ones change nothing, and no command starts.
        case ending
    }

    private static let hearer = Mutex(Hearer.nobody)
    private static let count = Atomic<Int>(0)
    /// Set by the one that ends the process: it alone exits.
    private static let ended = Atomic(false)

    /// Catches SIGINT, SIGTERM and SIGHUP from now on. Without the pipe a signal would end the process
    /// by its default action, with no cleanup: the process ends at once with 3 instead.
    static func install() {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else {
            let reason = String(cString: strerror(errno))
            let text = "showbatch: error: cannot set up the handling of SIGINT and SIGTERM (pipe: \(reason)); nothing was done\n"
            _ = text.withCString { write(2, $0, strlen($0)) }
            exit(ExitCode.runtime.rawValue)
        }
        signalPipe = fds[1]
        let reader = fds[0]
        for number in [SIGINT, SIGTERM, SIGHUP] {
            // A hang-up the parent chose to ignore (nohup) stays ignored; otherwise a closed
            // terminal or a cron shell's end winds the run down as SIGTERM does.
            var previous = sigaction()
            if number == SIGHUP, sigaction(number, nil, &previous) == 0,
               unsafeBitCast(previous.__sigaction_handler.sa_handler, to: Int.self) == 1 { continue }
            var action = sigaction()
            action.__sigaction_handler.sa_handler = handleSignal
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_RESTART
            sigaction(number, &action, nil)
        }
        let thread = Thread {
            // A signal's finisher writes the records and pushes them: it may block.
            Blocking.markCurrent()
            var byte: UInt8 = 0
            while true {
                let result = read(reader, &byte, 1)
                if result < 0 && errno == EINTR { continue }
                guard result == 1 else { return }
                count.add(1, ordering: .sequentiallyConsistent)
                let heard = hearer.withLock { hearer -> (@Sendable () -> Void)? in
                    switch hearer {
                    case .listener(let body): return body
                    case .ending: return nil
                    case .nobody:
                        hearer = .ending
                        return {
                            // No command is running anything that needs winding down (it is
                            // starting, or only reads files): nothing has been sent.
                            end(.interrupted, saying: "showbatch: interrupted before anything was sent\n")
                        }
                    }
                }
                heard?()
            }
        }
        thread.name = "showbatch-signals"
        thread.start()
    }

    /// Who hears the next signals, to the end of the process. When a signal that came before
    /// is ending the process already, the caller waits for that exit: its command never starts.
    static func listen(_ body: @escaping @Sendable () -> Void) {
        let ending = hearer.withLock { hearer -> Bool in
            if case .ending = hearer { return true }
            hearer = .listener(body)
            return false
        }
        if ending { while true { pause() } }
    }

    /// Ends the process at once with `code`, from a signal's side, saying `line` first.
    ///
    /// Called when nothing was sent yet, the push is given up, or a command is finished before
    /// its work began. Only the one that ends the process says its line (main may be exiting with
    /// its code). What is queued for standard error gets its few seconds, then `_exit`. Not
    /// `exit`, whose handlers (OpenSSL's cleanup among them) tear down what another thread is
    /// using at that moment (the push's curl starting, a manifest being read): the process died
    /// of SIGSEGV instead of ending with its code. Files are written and synced by then, and
    /// nothing is left in a buffer of the process (standard output is written unbuffered,
    /// standard error just drained).
    static func end(_ code: ExitCode, saying line: String? = nil) -> Never {
        claimExit()
        if let line { StandardError.shared.write(line) }
        StandardError.shared.finish(timeout: .seconds(5))
        _exit(code.rawValue)
    }

    /// Ends the process with `code` once its command has returned (its handlers run, as `exit`'s
    /// do), unless a signal is ending it already: then that exit is the one.
    static func exitProcess(_ code: ExitCode) -> Never {
        claimExit()
        StandardError.shared.finish(timeout: .seconds(5))
        exit(code.rawValue)
    }

    /// Lets only the first caller on; any other waits for that caller's exit.
    private static func claimExit() {
        guard ended.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent).exchanged else {
            while true { pause() }
        }
    }

    /// Whether a signal has arrived.
    static var fired: Bool { received > 0 }

    /// How many signals have arrived.
    static var received: Int { count.load(ordering: .sequentiallyConsistent) }

    /// Waits up to `duration`; true as soon as a signal has arrived.
    static func wait(for duration: Duration) async -> Bool {
        let deadline = ContinuousClock.now + duration
        while ContinuousClock.now < deadline {
            if fired { return true }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return fired
    }
}
