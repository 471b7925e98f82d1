import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A tiny HTTP `CONNECT` proxy on a free 127.0.0.1 port (tests of the proxy settings): each
/// client connection sends `CONNECT 127.0.0.1:PORT HTTP/1.1`, gets `200 Connection Established`
/// and is then relayed byte for byte to that port (TLS stays end to end). Only 127.0.0.1
/// targets are accepted (anything else gets 403: tests never leave the machine). Records every
/// CONNECT target. Stopped when dropped (the listener is closed; relays end with their peers).
public final class ConnectProxy: Sendable {
    public let port: UInt16
    public var url: String { "http://127.0.0.1:\(port)" }
    private let state: ConnectProxyState

    /// The `host:port` of every CONNECT received so far, in order.
    public var connects: [String] { state.targets.withLock { $0 } }

    /// From now on, every chunk the origin sends through an open tunnel reaches the client
    /// `milliseconds` later (0: at once): a slow answer on an established connection.
    public func delayAnswers(milliseconds: Int) { state.answerDelayMS.store(milliseconds, ordering: .relaxed) }

    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError("socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0, listen(fd, 64) == 0 else {
            close(fd)
            throw TestSupportError("bind/listen failed")
        }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        port = UInt16(bigEndian: address.sin_port)
        let state = ConnectProxyState(listener: fd)
        self.state = state
        // The threads hold the state, not the proxy: dropping the proxy stops them.
        let thread = Thread { state.acceptLoop() }
        thread.name = "connect-proxy"
        thread.start()
    }

    deinit {
        state.stopped.store(true, ordering: .relaxed)
        shutdown(state.listener, Int32(SHUT_RDWR))
        close(state.listener)
    }
}

final class ConnectProxyState: Sendable {
    let listener: Int32
    let targets = Mutex<[String]>([])
    let stopped = Atomic<Bool>(false)
    let answerDelayMS = Atomic<Int>(0)

    init(listener: Int32) { self.listener = listener }

    func acceptLoop() {
        while !stopped.load(ordering: .relaxed) {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            let thread = Thread { [self] in serve(client) }
            thread.name = "connect-proxy-relay"
            thread.start()
        }
    }

    private func serve(_ client: Int32) {
        defer { close(client) }
        // The request head, byte by byte (small), up to the empty line.
        var head: [UInt8] = []
        var byte: UInt8 = 0
        while head.count < 8192 {
            guard read(client, &byte, 1) == 1 else { return }
            head.append(byte)
            if head.count >= 4 && head.suffix(4).elementsEqual([13, 10, 13, 10]) { break }
        }
        let line = String(decoding: head.prefix { $0 != 13 }, as: UTF8.self)
        let words = line.split(separator: " ")
        guard words.count == 3, words[0] == "CONNECT" else { return reply(client, "HTTP/1.1 405 Method Not Allowed\r\n\r\n") }
        let target = String(words[1])
        targets.withLock { $0.append(target) }
        guard target.hasPrefix("127.0.0.1:"), let port = UInt16(target.dropFirst("127.0.0.1:".count)) else {
            return reply(client, "HTTP/1.1 403 Forbidden\r\n\r\n")
        }
        let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard upstream >= 0 else { return reply(client, "HTTP/1.1 502 Bad Gateway\r\n\r\n") }
        defer { close(upstream) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return reply(client, "HTTP/1.1 502 Bad Gateway\r\n\r\n") }
        reply(client, "HTTP/1.1 200 Connection Established\r\n\r\n")
        relay(client, upstream)
    }

    private func reply(_ fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    /// Copies both ways until either side closes (or the proxy is dropped).
    private func relay(_ a: Int32, _ b: Int32) {
        var fds = [pollfd(fd: a, events: Int16(POLLIN), revents: 0), pollfd(fd: b, events: Int16(POLLIN), revents: 0)]
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while !stopped.load(ordering: .relaxed) {
            let ready = poll(&fds, 2, 200)
            if ready < 0 && errno != EINTR { return }
            for (index, entry) in fds.enumerated() where entry.revents != 0 {
                let from = entry.fd, to = index == 0 ? b : a
                let count = buffer.withUnsafeMutableBytes { read(from, $0.baseAddress, $0.count) }
                if count <= 0 { return }
                let delay = answerDelayMS.load(ordering: .relaxed)
                if from == b && delay > 0 { usleep(useconds_t(delay * 1000)) }
                var offset = 0
                while offset < count {
                    let written = buffer.withUnsafeBytes { bytes -> Int in
                        guard let base = bytes.baseAddress else { return -1 }
                        return write(to, base + offset, count - offset)
                    }
                    if written <= 0 { return }
                    offset += written
                }
            }
        }
    }
}
