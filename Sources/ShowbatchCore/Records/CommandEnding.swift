import ShowbatchBasics

/// Who ends a command that a signal may end too: one of them ends the process, the others wait.
///
/// Decided in one place, kept under the command's lock: the command itself (its summary or its
/// error, then its records), the finisher of a signal that came before the run existed (it
/// records "interrupted"), or a signal during the metrics push (it gives the push up). `Run` is
/// the run's handle, cancelled by a signal while it runs.
package struct CommandEnding<Run: Sendable>: Sendable {
    package enum Phase: Sendable {
        /// Nothing sent or opened yet: a signal finishes the command at once.
        case starting
        case running(Run)
        /// The command, or a signal's finisher, is writing the records and deciding the exit
        /// code. Only the one that set this.
        case finishing
        /// The records are written and the metrics are being pushed, for this exit code.
        case pushing(ExitCode)
        /// A signal gave the push up and is ending the process.
        case exiting
    }

    /// What a signal does, said by `signal()`.
    package enum SignalAction: Sendable {
        /// The run winds down (`Run` is cancelled).
        case cancel(Run)
        /// Before the run existed: this signal's finisher records the interruption and ends the
        /// process (on a thread of its own, so that a second signal is heard meanwhile).
        case finish
        /// The push is given up: the process ends now with the run's own code (its files are
        /// written; a scheduler must not take it for an interrupted run and reveal it again).
        case giveUpPush(ExitCode)
        /// The command or a finisher is ending it already; the signal is counted, and the push
        /// rule (`RunRecords.signalsGiveUpThePush`) weighs it.
        case nothing
    }

    package private(set) var phase = Phase.starting

    package init() {}

    /// A signal has come.
    package mutating func signal() -> SignalAction {
        switch phase {
        case .starting:
            phase = .finishing
            return .finish
        case .running(let run):
            return .cancel(run)
        case .pushing(let code):
            phase = .exiting
            return .giveUpPush(code)
        case .finishing, .exiting:
            return .nothing
        }
    }

    /// The run, made by `make`, unless a signal's finisher has the command's end: then nil, and
    /// nothing starts (its audit entry, its keys, its requests).
    package mutating func start(_ make: () -> Run) -> Run? {
        guard case .starting = phase else { return nil }
        let run = make()
        phase = .running(run)
        return run
    }

    /// Whether the command ends itself (says why, writes its records); false when a signal's
    /// finisher has the end, whose exit the command then waits for, saying nothing.
    package mutating func claimEnd() -> Bool {
        switch phase {
        case .starting, .running:
            phase = .finishing
            return true
        case .finishing, .pushing, .exiting:
            return false
        }
    }

    /// The push of records whose exit code is `code` is about to start, for a run that ended
    /// with `runCode`, the process having heard `signals`: true when it is given up instead (the
    /// caller ends the process with `code`).
    package mutating func pushStarts(_ code: ExitCode, runEndedWith runCode: ExitCode, signals: Int) -> Bool {
        // Counted, not taken from the phase: a signal after the summary but before this found
        // the run done (its cancel a no-op) or the command finishing, and ended nothing.
        if RunRecords.signalsGiveUpThePush(signals, runEndedWith: runCode) {
            phase = .exiting
            return true
        }
        phase = .pushing(code)
        return false
    }

    /// The push is over: a signal from now on ends nothing. False when a signal gave the push up
    /// and is ending the process: the caller waits for that exit.
    package mutating func pushEnded() -> Bool {
        if case .exiting = phase { return false }
        phase = .finishing
        return true
    }
}
