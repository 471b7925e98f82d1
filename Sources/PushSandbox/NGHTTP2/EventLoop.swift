import CNGHTTP2
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A failure binding or running the server socket.
public struct SandboxSocketError: Error, Sendable, CustomStringConvertible {
    public let message: String
    init(_ message: String) { self.message = "\(message): \(String(cString: strerror(errno)))" }
    public var description: String { message }
}

/// A non-blocking listening socket on an IPv4 address.
enum Listener {
    /// Binds `host:port` (port 0 picks one) and listens; returns the descriptor and the bound port.
    static func open(host: String, port: UInt16, reusePort: Bool) throws(SandboxSocketError) -> (fd: Int32, port: UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SandboxSocketError("socket") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if reusePort { setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<Int32>.size)) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            close(fd)
            errno = EINVAL
            throw SandboxSocketError("bad listen address \(host)")
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { let error = SandboxSocketError("bind \(host):\(port)"); close(fd); throw error }
        guard listen(fd, 1024) == 0 else { let error = SandboxSocketError("listen"); close(fd); throw error }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, UInt16(bigEndian: address.sin_port))
    }
}

/// One epoll event loop on a dedicated thread: accepts TLS connections on its listener, drives
/// their HTTP/2 sessions, and answers requests through its ``SandboxRouter``.
///
/// Thread safety: created on the main thread, then used only by its own thread, except
/// ``stop()`` and ``nudge()``, which only set an atomic flag and write to an eventfd.
final class EventLoop: @unchecked Sendable {
    private let listenFD: Int32
    private let epollFD: Int32
    private let wakeFD: Int32
    private let tls: TLSServerContext
    let router: SandboxRouter
    private var connections: [Int32: HTTP2Connection] = [:]
    private var delayed: [DelayedResponse] = []
    private var delayedHead = 0
    /// Connections accepted so far (numbers them).
    private var accepted = 0
    /// Scratch buffer for SSL_read, reused by every connection of this loop.
    let readBuffer: UnsafeMutableBufferPointer<UInt8>
    private let isStopRequested = Atomic<Bool>(false)
    /// The outage generation this loop has applied (``SandboxState/Snapshot/outageGeneration``).
    private var outageGeneration = 0

    private struct DelayedResponse {
        let deadline: UInt64
        let connection: HTTP2Connection
        let streamID: Int32
        let response: SandboxResponse
    }

    /// A loop serving the listening socket `listenFD` (closed when ``run()`` returns).
    static func make(listenFD: Int32, tls: TLSServerContext, router: SandboxRouter) throws(SandboxSocketError) -> EventLoop {
        let epollFD = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epollFD >= 0 else { throw SandboxSocketError("epoll_create1") }
        let wakeFD = eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC))
        guard wakeFD >= 0 else {
            let error = SandboxSocketError("eventfd")
            close(epollFD)  // not owned by a loop yet
            throw error
        }
        return EventLoop(listenFD: listenFD, epollFD: epollFD, wakeFD: wakeFD, tls: tls, router: router)
    }

    /// Takes ownership of `epollFD` and `wakeFD` (closed in `deinit`).
    private init(listenFD: Int32, epollFD: Int32, wakeFD: Int32, tls: TLSServerContext, router: SandboxRouter) {
        self.listenFD = listenFD
        self.epollFD = epollFD
        self.wakeFD = wakeFD
        self.tls = tls
        self.router = router
        readBuffer = .allocate(capacity: 64 * 1024)
        add(listenFD, events: EPOLLIN.rawValue)
        add(wakeFD, events: EPOLLIN.rawValue)
        outageGeneration = router.snapshot.outageGeneration
    }

    deinit {
        readBuffer.deallocate()
        close(epollFD)
        close(wakeFD)
    }

    /// Asks the loop to finish; safe from any thread.
    func stop() {
        isStopRequested.store(true, ordering: .releasing)
        nudge()
    }

    /// Wakes the loop for one turn (it then reads the shared state again); safe from any thread.
    func nudge() {
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    /// Runs until ``stop()``; closes every connection and the listener on the way out.
    func run() {
        let capacity = 256
        var events = [epoll_event](repeating: epoll_event(), count: capacity)
        var running = true
        while running {
            let timeout = nextTimeout()
            let count = epoll_wait(epollFD, &events, Int32(capacity), timeout)
            if count < 0 && errno != EINTR { break }
            for index in 0..<max(0, Int(count)) {
                let fd = events[index].data.fd
                if fd == wakeFD {
                    var value: UInt64 = 0
                    _ = read(wakeFD, &value, 8)
                    if isStopRequested.load(ordering: .acquiring) { running = false }
                    continue
                }
                if fd == listenFD { acceptAll(); continue }
                guard let connection = connections[fd] else { continue }
                connection.handleEvent()
                if connection.isClosed { connections[fd] = nil }
            }
            fireDelayed()
            router.loopIterationEnded()
            applyOutage(current: nil)
        }
        for connection in connections.values { connection.close() }
        connections.removeAll()
        delayed.removeAll()
        close(listenFD)
    }

    private func add(_ fd: Int32, events: UInt32) {
        var event = epoll_event()
        event.events = events
        event.data.fd = fd
        _ = epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &event)
    }

    /// Turns EPOLLOUT interest on or off for `connection`.
    func watchWritable(_ connection: HTTP2Connection, _ isWanted: Bool) {
        guard !connection.isClosed, connection.isWatchingWritable != isWanted else { return }
        connection.isWatchingWritable = isWanted
        var event = epoll_event()
        event.events = EPOLLIN.rawValue | (isWanted ? EPOLLOUT.rawValue : 0)
        event.data.fd = connection.fd
        _ = epoll_ctl(epollFD, EPOLL_CTL_MOD, connection.fd, &event)
    }

    private func acceptAll() {
        while true {
            let fd = pw_ng_accept_nonblocking(listenFD)
            if fd < 0 { return }
            if router.snapshot.outageUntil != 0, router.snapshot.isOutage(now: Self.now()) {
                // An outage: the client's TLS handshake fails (nothing of a request is sent).
                close(fd)
                router.state.countOutage(closedConnections: 1)
                continue
            }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            accepted += 1
            guard let connection = HTTP2Connection.make(fd: fd, tls: tls, loop: self, number: accepted) else { close(fd); continue }
            connections[fd] = connection
            add(fd, events: EPOLLIN.rawValue)
        }
    }

    /// Called by a connection when a request is complete (inside one of its nghttp2 callbacks).
    func dispatch(_ request: SandboxRequest, connection: HTTP2Connection, streamID: Int32) {
        let isControl = request.path.hasPrefix("/_sandbox/")
        if !isControl {
            connection.carriesProviderTraffic = true
            if router.snapshot.outageUntil != 0, router.snapshot.isOutage(now: Self.now()) {
                // A connection that carried only control requests until now: refused, not
                // processed (RFC 9113 §8.7); the client's next connection fails its handshake.
                connection.resetStream(streamID, errorCode: NGHTTP2_REFUSED_STREAM)
                router.state.countOutage(refusedStreams: 1)
                return
            }
        }
        let response = router.handle(request)
        // A control request may have started an outage (`POST /_sandbox/faults`).
        if isControl { applyOutage(current: connection) }
        switch response.transportFault {
        case .refuse?:
            connection.resetStream(streamID, errorCode: NGHTTP2_REFUSED_STREAM)
            router.state.count(.refuse)
            return
        case .goaway?:
            if connection.goAway(refusing: streamID) {
                router.state.count(.goaway)
            } else {
                connection.resetStream(streamID, errorCode: NGHTTP2_REFUSED_STREAM)
                router.state.count(.refuse)
            }
            return
        case .hang?:
            router.state.count(.hang)
            return
        case .reset?, .drop?, nil:
            break
        }
        let latency = response.isProviderResponse ? router.nextLatencyMilliseconds() : 0
        if latency > 0 {
            let deadline = Self.now() + UInt64(latency) * 1_000_000
            delayed.append(DelayedResponse(deadline: deadline, connection: connection, streamID: streamID, response: response))
        } else {
            answer(streamID: streamID, on: connection, response, isInCallback: true)
        }
    }

    /// Sends `response`, or performs its `reset` or `drop` fault. Inside a callback of
    /// `connection` a drop only requests the close (its nghttp2 session is in use).
    private func answer(streamID: Int32, on connection: HTTP2Connection, _ response: SandboxResponse, isInCallback: Bool) {
        switch response.transportFault {
        case .reset?:
            connection.resetStream(streamID, errorCode: NGHTTP2_INTERNAL_ERROR)
            router.state.count(.reset)
        case .drop?:
            router.state.count(.drop)
            if isInCallback { connection.requestClose() } else { connection.close() }
        default:
            connection.respond(streamID: streamID, response)
        }
    }

    /// After a new outage began (``SandboxState/apply(_:now:)``): closes every connection that
    /// carried provider traffic — `current`, whose callback is running, once that returns.
    private func applyOutage(current: HTTP2Connection?) {
        let generation = router.snapshot.outageGeneration
        guard generation != outageGeneration else { return }
        outageGeneration = generation
        var closed = 0
        for connection in Array(connections.values) where connection.carriesProviderTraffic && !connection.isClosed {
            closed += 1
            if connection === current {
                connection.requestClose()
            } else {
                connection.close()
                connections[connection.fd] = nil
            }
        }
        if closed > 0 { router.state.countOutage(closedConnections: closed) }
    }

    private func nextTimeout() -> Int32 {
        guard delayedHead < delayed.count else { return -1 }
        let now = Self.now()
        var earliest = UInt64.max
        for index in delayedHead..<delayed.count { earliest = min(earliest, delayed[index].deadline) }
        if earliest <= now { return 0 }
        return Int32(min((earliest - now + 999_999) / 1_000_000, 60_000))
    }

    private func fireDelayed() {
        guard delayedHead < delayed.count else { return }
        let now = Self.now()
        var touched: [ObjectIdentifier: HTTP2Connection] = [:]
        var remaining: [DelayedResponse] = []
        for index in delayedHead..<delayed.count {
            let item = delayed[index]
            if item.deadline <= now {
                if !item.connection.isClosed {
                    answer(streamID: item.streamID, on: item.connection, item.response, isInCallback: false)
                    touched[ObjectIdentifier(item.connection)] = item.connection
                }
            } else {
                remaining.append(item)
            }
        }
        delayed = remaining
        delayedHead = 0
        for connection in touched.values {
            connection.flush()
            if connection.isClosed { connections[connection.fd] = nil }
        }
    }

    /// Monotonic time in nanoseconds.
    static func now() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }
}
