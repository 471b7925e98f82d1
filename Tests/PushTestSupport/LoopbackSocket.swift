import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A raw TCP connection to a loopback port, for what curl will not do: half a request, a
/// declared body that never comes, many idle connections. Closed in `deinit`.
public final class LoopbackSocket: @unchecked Sendable {
    private let fd: Int32

    /// Connects to 127.0.0.1:`port`; nil if the connection is refused.
    public init?(port: UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { close(fd); return nil }
        self.fd = fd
    }

    deinit { close(fd) }

    /// Writes all of `text`; false if the peer is gone.
    @discardableResult
    public func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written <= 0 { return false }
            offset += written
        }
        return true
    }

    /// What the peer sends until it closes the connection or `timeout` seconds pass, and
    /// whether it closed (end of file or reset) within that time.
    public func readUntilClosed(timeout: Double) -> (text: String, closed: Bool, seconds: Double) {
        let start = Date()
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let left = timeout - Date().timeIntervalSince(start)
            guard left > 0 else { return (String(decoding: received, as: UTF8.self), false, Date().timeIntervalSince(start)) }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(max(1, left * 1000)))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                received += buffer[0..<count]
            } else if count < 0 && errno == EINTR {
                continue
            } else {
                return (String(decoding: received, as: UTF8.self), true, Date().timeIntervalSince(start))
            }
        }
    }

    /// What the peer sends within `timeout` seconds, stopping early once `until` is in it.
    public func read(until marker: String, timeout: Double) -> String {
        let start = Date()
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while Date().timeIntervalSince(start) < timeout {
            if String(decoding: received, as: UTF8.self).contains(marker) { break }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 100) > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            received += buffer[0..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }
}
