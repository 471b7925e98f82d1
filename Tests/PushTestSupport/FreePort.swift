import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A free TCP port on 127.0.0.1, found by binding port 0 and closing.
public func freeLoopbackPort() -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    return UInt16(bigEndian: address.sin_port)
}

/// Whether something accepts TCP connections on 127.0.0.1:`port`.
public func isListening(port: UInt16) -> Bool {
    withLoopbackSocket(port: port) { fd, address, length in connect(fd, address, length) } == 0
}

/// Whether 127.0.0.1:`port` can be bound now (nothing listens there).
public func isFreeLoopbackPort(_ port: UInt16) -> Bool {
    withLoopbackSocket(port: port) { fd, address, length in bind(fd, address, length) } == 0
}

/// `call` (connect or bind) on a fresh TCP socket with 127.0.0.1:`port`; the socket is closed after.
private func withLoopbackSocket(port: UInt16, _ call: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
}

/// A non-blocking TCP listener on a free 127.0.0.1 port: tests accept its connections by hand
/// (``accept()``) or only count them (``acceptedConnections()``, for "this address was never
/// contacted"). Closed in `deinit`.
public final class LoopbackListener: @unchecked Sendable {
    public let port: UInt16
    private let fd: Int32

    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard fd >= 0, bound == 0, listen(fd, 16) == 0 else {
            if fd >= 0 { close(fd) }
            throw POSIXError(.EADDRINUSE)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.fd = fd
        self.port = UInt16(bigEndian: address.sin_port)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    deinit { close(fd) }

    /// The next waiting connection (the caller closes it), or -1 when none is waiting.
    public func accept() -> Int32 { Glibc.accept(fd, nil, nil) }

    /// Connections waiting or accepted so far (accepts and closes them all, without waiting).
    public func acceptedConnections() -> Int {
        var count = 0
        while true {
            let client = accept()
            guard client >= 0 else { return count }
            close(client)
            count += 1
        }
    }
}
