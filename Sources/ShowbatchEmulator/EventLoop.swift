import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One poll(2) thread serving many connections: reads and parses requests as bytes arrive,
/// holds an answer back for its injected latency with a timer instead of a sleeping thread,
/// and writes without blocking (the rest when the socket has room again).
///
/// The first emulator gave each connection a thread of its own; profiled under load, nearly half
/// of its time went to switching between those threads, and it took CPU from the client it was
/// serving on a small machine.
final class EventLoop: @unchecked Sendable {
    /// What one connection is doing; touched by the loop thread only.
    private struct Connection {
        var http: HTTPConnection
        /// Bytes of answers not yet written, and how far writing has got.
        var outgoing: [UInt8] = []
        var written = 0
        /// Close once `outgoing` is written.
        var closing = false
        /// An answer held back for its latency; nothing more is read before it goes.
        var held: (due: ContinuousClock.Instant, response: HTTPResponse?, keepAlive: Bool)?
        /// The poll events the socket is watched for.
        var watched = Int16(POLLIN)
    }

    private let emulator: Emulator
    /// A pipe whose read end is always watched: writing a byte wakes the loop.
    private let wakeRead: Int32
    private let wakeWrite: Int32
    /// Connections accepted for this loop, not yet taken by its thread.
    private let arriving = Mutex<[Int32]>([])
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    // Loop thread only.
    private var connections: [Int32: Connection] = [:]
    /// Connections with an answer held back.
    private var heldCount = 0

    init(emulator: Emulator) {
        self.emulator = emulator
        var ends: [Int32] = [0, 0]
        pipe(&ends)
        wakeRead = ends[0]
        wakeWrite = ends[1]
        _ = fcntl(wakeRead, F_SETFL, fcntl(wakeRead, F_GETFL) | O_NONBLOCK)
        _ = fcntl(wakeWrite, F_SETFL, fcntl(wakeWrite, F_GETFL) | O_NONBLOCK)
        let thread = Thread { [self] in
            run()
            finished.signal()
        }
        thread.name = "showbatch-emulator-loop"
        thread.start()
    }

    /// Hands a new connection to the loop.
    func add(_ fd: Int32) {
        arriving.withLock { $0.append(fd) }
        signal()
    }

    /// Closes every connection and ends the thread; returns when it has.
    func stop() {
        stopping.store(true, ordering: .releasing)
        signal()
        finished.wait()
        close(wakeRead)
        close(wakeWrite)
    }

    private func signal() {
        var one: UInt8 = 1
        _ = write(wakeWrite, &one, 1)
    }

    private func run() {
        var watched: [pollfd] = []
        while !stopping.load(ordering: .acquiring) {
            // poll(2) rather than epoll, which Swift's Glibc module does not expose; a run opens
            // at most a few hundred connections, so the scan per call stays small.
            watched.removeAll(keepingCapacity: true)
            watched.append(pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0))
            for (fd, connection) in connections where connection.watched != 0 {
                watched.append(pollfd(fd: fd, events: connection.watched, revents: 0))
            }
            let count = watched.withUnsafeMutableBufferPointer { poll($0.baseAddress, nfds_t($0.count), timeout()) }
            if count < 0 && errno != EINTR { break }
            if count > 0 {
                for entry in watched where entry.revents != 0 {
                    if entry.fd == wakeRead {
                        var drained = [UInt8](repeating: 0, count: 64)
                        while read(wakeRead, &drained, drained.count) > 0 {}
                        for new in arriving.withLock({ fds -> [Int32] in defer { fds.removeAll() }; return fds }) { open(new) }
                        continue
                    }
                    if entry.revents & Int16(POLLOUT) != 0 { flush(entry.fd) }
                    if entry.revents & Int16(POLLIN | POLLERR | POLLHUP | POLLNVAL) != 0 { serve(entry.fd) }
                }
            }
            releaseHeld()
        }
        for fd in Array(connections.keys) { drop(fd) }
        for fd in arriving.withLock({ $0 }) { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }
    }

    /// Milliseconds until the next held answer is due (-1: none).
    private func timeout() -> Int32 {
        guard heldCount > 0, let due = connections.values.compactMap({ $0.held?.due }).min() else { return -1 }
        let wait = (due - ContinuousClock.now).seconds
        return wait <= 0 ? 0 : Int32(min(60_000, (wait * 1000).rounded(.up)))
    }

    private func open(_ fd: Int32) {
        connections[fd] = Connection(http: HTTPConnection(fd: fd, maxHeaderBytes: emulator.configuration.maxHeaderBytes,
                                                          maxBodyBytes: emulator.configuration.maxBodyBytes))
        // Bytes may have arrived before the socket was watched: look now.
        serve(fd)
    }

    private func drop(_ fd: Int32) {
        guard let connection = connections.removeValue(forKey: fd) else { return }
        if connection.held != nil { heldCount -= 1 }
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }

    /// Reads and answers requests until one is incomplete, held back, or ends the connection.
    private func serve(_ fd: Int32) {
        // Connections are changed in place in the dictionary: a copy of one would copy its buffers.
        while connections[fd].map({ $0.held == nil && !$0.closing }) == true {
            guard let outcome = connections[fd]?.http.readRequest() else { return }
            switch outcome {
            case .incomplete:
                return
            case .closed:
                drop(fd)
                return
            case .reject(let status, let reason):
                answer(fd, HTTPResponse.json(status: status, ["error": reason], close: true), keepAlive: false)
            case .request(let request):
                let (delay, response) = emulator.respond(to: request)
                if delay > 0 {
                    connections[fd]?.held = (.now + .seconds(min(delay, 60)), response, request.keepAlive)
                    heldCount += 1
                    watch(fd)
                    return
                }
                answer(fd, response, keepAlive: request.keepAlive)
            }
        }
    }

    /// Queues an answer (nil drops the connection, the `drop` fault) and writes what fits.
    private func answer(_ fd: Int32, _ response: HTTPResponse?, keepAlive: Bool) {
        guard let response else {
            drop(fd)
            return
        }
        connections[fd]?.outgoing.append(contentsOf: response.bytes)
        if response.close || !keepAlive { connections[fd]?.closing = true }
        flush(fd)
    }

    /// Writes queued bytes; closes a finished closing connection.
    private func flush(_ fd: Int32) {
        guard let written = connections[fd].map({ $0.http.write($0.outgoing, from: $0.written) }) else { return }
        guard let written else {
            drop(fd)
            return
        }
        if written == connections[fd]!.outgoing.count {
            connections[fd]!.outgoing.removeAll(keepingCapacity: true)
            connections[fd]!.written = 0
            if connections[fd]!.closing {
                drop(fd)
                return
            }
        } else {
            connections[fd]!.written = written
        }
        watch(fd)
    }

    /// Watches a connection for what it can do now: read unless an answer is held or it is
    /// closing (a readable socket would otherwise wake the loop again and again), write while
    /// bytes are queued.
    private func watch(_ fd: Int32) {
        guard let connection = connections[fd] else { return }
        let events = (connection.held == nil && !connection.closing ? Int16(POLLIN) : 0)
            | (connection.outgoing.isEmpty ? 0 : Int16(POLLOUT))
        if events != connection.watched { connections[fd]!.watched = events }
    }

    /// Sends the held answers that are due, then reads on (pipelined requests may be waiting).
    private func releaseHeld() {
        guard heldCount > 0 else { return }
        let now = ContinuousClock.now
        let due = connections.compactMap { entry in entry.value.held.flatMap { $0.due <= now ? entry.key : nil } }
        for fd in due {
            guard let held = connections[fd]?.held else { continue }
            connections[fd]!.held = nil
            heldCount -= 1
            answer(fd, held.response, keepAlive: held.keepAlive)
            watch(fd)
            serve(fd)
        }
    }
}
