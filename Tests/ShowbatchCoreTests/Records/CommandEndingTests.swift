import Testing
@testable import ShowbatchBasics
@testable import ShowbatchCore

/// Who ends a command a signal may end too: its steps interleaved by a seeded scheduler, as the
/// command's task, the signal thread and a signal's finisher interleave under the lock.
@Suite struct CommandEndingTests {
    /// A run's handle: whether it was cancelled before it ended.
    final class FakeRun: @unchecked Sendable {
        var cancelled = false
        var ended = false
    }

    /// One party's place in its own steps.
    enum Step { case load, start, runEnds, claim, record, pushStarts, pushEnds, exit, parked, done }

    struct World {
        var ending = CommandEnding<FakeRun>()
        var random: SeededGenerator
        var main = Step.load
        var finisher: Step?
        var signalsLeft: Int
        var signals = 0
        var run: FakeRun?
        var runCode = ExitCode.ok
        let earlyError: Bool
        let push: Bool
        /// Work ending without claiming the end first, as `deliver` and `merge` do (`run` claims).
        let unclaimedEnd: Bool
        var exits: [(who: String, code: ExitCode)] = []
        var recorders = 0
        var signalsAtPushEnd: [(count: Int, runCode: ExitCode)] = []
        var startedAfterFinisher = false

        init(seed: UInt64) {
            random = SeededGenerator(seed: seed)
            earlyError = Self.pick(4, &random) == 0
            push = Self.pick(3, &random) != 0
            signalsLeft = Self.pick(4, &random)
            unclaimedEnd = Self.pick(2, &random) == 0
        }

        /// A seeded choice among `count`.
        static func pick(_ count: Int, _ random: inout SeededGenerator) -> Int {
            Int(random.next(upperBound: UInt64(count)))
        }

        /// The command's task: load, run, claim the end, record (push), exit.
        mutating func stepMain() {
            switch main {
            case .load:
                main = earlyError ? .claim : .start
                if earlyError { runCode = .usage }
            case .start:
                let made = ending.start { FakeRun() }
                if made == nil {
                    main = .parked
                } else {
                    if finisher != nil { startedAfterFinisher = true }
                    run = made
                    main = .runEnds
                }
            case .runEnds:
                run!.ended = true
                runCode = run!.cancelled ? .interrupted : [ExitCode.ok, .rowsFailed, .stopped][Self.pick(3, &random)]
                main = unclaimedEnd ? .record : .claim
            case .claim:
                main = ending.claimEnd() ? .record : .parked
            case .record:
                recorders += 1
                main = push ? .pushStarts : .pushEnds
            case .pushStarts:
                if ending.pushStarts(runCode, runEndedWith: runCode, signals: signals) {
                    exits.append(("main giving up", runCode))
                    main = .done
                } else {
                    main = .pushEnds
                }
            case .pushEnds:
                // Called with no push too: the command is done.
                if ending.pushEnded() {
                    if push { signalsAtPushEnd.append((signals, runCode)) }
                    main = .exit
                } else {
                    main = .parked
                }
            case .exit:
                exits.append(("main", runCode))
                main = .done
            case .parked, .done:
                break
            }
        }

        /// The signal thread: counts the signal, then does what the ending says, at once.
        mutating func stepSignal() {
            signalsLeft -= 1
            signals += 1
            switch ending.signal() {
            case .cancel(let run):
                if !run.ended { run.cancelled = true }
            case .finish:
                finisher = .record
            case .giveUpPush(let code):
                exits.append(("signal giving up", code))
            case .nothing:
                break
            }
        }

        /// A signal's finisher: records "interrupted" (pushing it too), then exits.
        mutating func stepFinisher() {
            switch finisher {
            case .record?:
                recorders += 1
                finisher = push ? .pushStarts : .pushEnds
            case .pushStarts?:
                finisher = ending.pushStarts(.interrupted, runEndedWith: .interrupted, signals: signals) ? .done : .pushEnds
                if finisher == .done { exits.append(("finisher giving up", .interrupted)) }
            case .pushEnds?:
                if ending.pushEnded() {
                    if push { signalsAtPushEnd.append((signals, .interrupted)) }
                    finisher = .exit
                } else {
                    finisher = .parked
                }
            case .exit?:
                exits.append(("finisher", .interrupted))
                finisher = .done
            default:
                break
            }
        }

        var finished: Bool {
            let mainIdle = main == .parked || main == .done
            let finisherIdle = finisher == nil || finisher == .parked || finisher == .done
            return mainIdle && finisherIdle && signalsLeft == 0
        }
    }

    @Test func oneEndsTheProcessWhateverTheOrder() {
        var seen: Set<String> = []
        for seed in UInt64(1)...20_000 {
            var world = World(seed: seed)
            var steps = 0
            while !world.finished && steps < 100 {
                steps += 1
                var parties: [Int] = []
                if world.main != .parked && world.main != .done { parties.append(0) }
                if world.signalsLeft > 0 { parties.append(1) }
                if let step = world.finisher, step != .parked, step != .done { parties.append(2) }
                switch parties[World.pick(parties.count, &world.random)] {
                case 0: world.stepMain()
                case 1: world.stepSignal()
                default: world.stepFinisher()
                }
            }
            if let broken = Self.brokenInvariant(world) {
                Issue.record("seed \(seed): \(broken); exits \(world.exits.map(\.who)), signals \(world.signals)")
                return
            }
            if let who = world.exits.first?.who { seen.insert(who) }
        }
        // Every way of ending was reached.
        #expect(seen == ["main", "main giving up", "signal giving up", "finisher", "finisher giving up"])
    }

    /// The first invariant `world` breaks, in words.
    static func brokenInvariant(_ world: World) -> String? {
        // Exactly one party ends the process: none twice, none waiting for an exit that never comes.
        if world.exits.count != 1 { return "\(world.exits.count) parties end the process" }
        if world.recorders != 1 { return "the records are written \(world.recorders) times" }
        // A signal's finisher has the end: nothing starts after it.
        if world.startedAfterFinisher { return "the run started after a signal's finisher" }
        // No push is waited out past a signal the run did not own.
        if let end = world.signalsAtPushEnd.first(where: { RunRecords.signalsGiveUpThePush($0.count, runEndedWith: $0.runCode) }) {
            return "a push was made to its end past \(end.count) signals"
        }
        // A signal before the run existed ends it as interrupted, unless the command's own
        // error had claimed the end first.
        if world.run == nil && !world.earlyError && world.signals > 0 && world.exits[0].code != .interrupted {
            return "a signal before the run ended it with \(world.exits[0].code)"
        }
        return nil
    }
}
