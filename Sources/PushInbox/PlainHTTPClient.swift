#if canImport(Glibc)
import Glibc
#endif

/// `http://HOST:PORT[/base]`: where the sandbox posts tracking events (`--events-url`).
public struct PlainHTTPURL: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: UInt16
    /// The path prefix, without a trailing slash ("" for none).
    public var basePath: String

    public init?(_ text: String) {
        guard text.hasPrefix("http://") else { return nil }
        var rest = Substring(text.dropFirst("http://".count))
        var path = ""
        if let slash = rest.firstIndex(of: "/") {
            path = String(rest[slash...])
            rest = rest[..<slash]
        }
        while path.hasSuffix("/") { path.removeLast() }
        guard !path.contains("?"), !path.contains("#"), path.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
        var host = rest
        var port: UInt16 = 80
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            let after = host[host.index(after: close)...]
            if after.hasPrefix(":") { guard let value = UInt16(after.dropFirst()) else { return nil }; port = value } else if !after.isEmpty { return nil }
            host = host[host.index(after: host.startIndex)..<close]
        } else if let colon = host.lastIndex(of: ":") {
            guard let value = UInt16(host[host.index(after: colon)...]) else { return nil }
            port = value
            host = host[..<colon]
        }
        guard !host.isEmpty, port != 0, !host.contains("@"),
              host.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") }) else { return nil }
        self.host = String(host)
        self.port = port
        basePath = path
    }

    public var description: String {
        let shown = host.contains(":") ? "[\(host)]" : host
        return "http://\(shown):\(port)\(basePath)"
    }
}

/// A failed exchange with the events endpoint.
struct PlainHTTPError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A minimal blocking HTTP/1.1 client for body-less `POST`s to one origin (the tracking
/// endpoint speaks plain HTTP/1.1): one keep-alive connection, re-opened when the server closes
/// it, every step under a timeout (poll). Used by one thread at a time (``TrackingReporter``).
/// Never reads proxy settings from the environment: it connects to the host it is given.
final class PlainHTTPConnection {
    let url: PlainHTTPURL
    /// Connect, send and receive each wait at most this long. Milliseconds. Default: 5000.
    let timeoutMilliseconds: Int32
    private var fd: Int32 = -1
    private var buffer: [UInt8] = []

    init(url: PlainHTTPURL, timeoutMilliseconds: Int32 = 5000) {
        self.url = url
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    deinit { disconnect() }

    /// `POST <base><path>` with no body; returns the response status. A request on a kept-alive
    /// connection the server had closed is retried once on a new connection.
    func post(_ path: String) throws(PlainHTTPError) -> Int {
        let reused = fd >= 0
        do {
            return try exchange(path)
        } catch {
            disconnect()
            guard reused else { throw error }
            return try exchange(path)
        }
    }

    private func exchange(_ path: String) throws(PlainHTTPError) -> Int {
        if fd < 0 { try connect() }
        let host = url.host.contains(":") ? "[\(url.host)]" : url.host
        let request = "POST \(url.basePath)\(path) HTTP/1.1\r\nHost: \(host):\(url.port)\r\nUser-Agent: pushworker-sandbox\r\nContent-Length: 0\r\n\r\n"
        try send(Array(request.utf8))
        let (status, keepAlive) = try readResponse()
        if !keepAlive { disconnect() }
        return status
    }

    private func connect() throws(PlainHTTPError) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(url.host, String(url.port), &hints, &list) == 0, let first = list else {
            throw PlainHTTPError("cannot resolve \(url.host)")
        }
        defer { freeaddrinfo(list) }
        var entry: UnsafeMutablePointer<addrinfo>? = first
        var lastError = "connect to \(url.description) failed"
        while let current = entry {
            entry = current.pointee.ai_next
            let socketFD = socket(current.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard socketFD >= 0 else { continue }
            if Glibc.connect(socketFD, current.pointee.ai_addr, current.pointee.ai_addrlen) != 0 && errno != EINPROGRESS {
                lastError = "connect to \(url.description): errno \(errno)"
                close(socketFD)
                continue
            }
            guard wait(socketFD, events: Int16(POLLOUT)) else {
                lastError = "connect to \(url.description): timed out"
                close(socketFD)
                continue
            }
            var socketError: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(socketFD, SOL_SOCKET, SO_ERROR, &socketError, &length)
            guard socketError == 0 else {
                lastError = "connect to \(url.description): errno \(socketError)"
                close(socketFD)
                continue
            }
            var one: Int32 = 1
            setsockopt(socketFD, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            fd = socketFD
            buffer.removeAll()
            return
        }
        throw PlainHTTPError(lastError)
    }

    private func disconnect() {
        if fd >= 0 { close(fd) }
        fd = -1
        buffer.removeAll()
    }

    private func wait(_ socketFD: Int32, events: Int16) -> Bool {
        var entry = pollfd(fd: socketFD, events: events, revents: 0)
        while true {
            let ready = poll(&entry, 1, timeoutMilliseconds)
            if ready < 0 && errno == EINTR { continue }
            return ready > 0 && entry.revents & (events | Int16(POLLHUP) | Int16(POLLERR)) != 0
        }
    }

    private func send(_ bytes: [UInt8]) throws(PlainHTTPError) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress.map { $0 + offset }, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if written > 0 { offset += written; continue }
            if written < 0 && (errno == EAGAIN || errno == EINTR) {
                guard wait(fd, events: Int16(POLLOUT)) else { throw PlainHTTPError("send timed out") }
                continue
            }
            throw PlainHTTPError("send failed: errno \(errno)")
        }
    }

    private func fill() throws(PlainHTTPError) {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 { buffer.append(contentsOf: chunk[0..<count]); return }
            if count == 0 { throw PlainHTTPError("connection closed by the server") }
            if errno == EAGAIN || errno == EINTR {
                guard wait(fd, events: Int16(POLLIN)) else { throw PlainHTTPError("no answer within \(timeoutMilliseconds) ms") }
                continue
            }
            throw PlainHTTPError("recv failed: errno \(errno)")
        }
    }

    /// Reads one response (status line, headers, a `Content-Length` body) and says whether the
    /// connection may be reused.
    private func readResponse() throws(PlainHTTPError) -> (status: Int, keepAlive: Bool) {
        let terminator: [UInt8] = [13, 10, 13, 10]
        var headerEnd: Int?
        while headerEnd == nil {
            if buffer.count > 16 * 1024 { throw PlainHTTPError("response headers too large") }
            if buffer.count >= 4 {
                for index in 0...(buffer.count - 4) where buffer[index..<index + 4].elementsEqual(terminator) {
                    headerEnd = index
                    break
                }
            }
            if headerEnd == nil { try fill() }
        }
        guard let end = headerEnd else { throw PlainHTTPError("no response") }
        let head = String(decoding: buffer[0..<end], as: UTF8.self)
        let lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
        let statusParts = lines.first?.split(separator: " ") ?? []
        guard statusParts.count >= 2, statusParts[0].hasPrefix("HTTP/1."), let status = Int(statusParts[1]) else {
            throw PlainHTTPError("not an HTTP/1.1 response")
        }
        var contentLength = 0
        var keepAlive = statusParts[0] == "HTTP/1.1"
        var isChunked = false
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingSpaces.lowercased()
            if name == "content-length" { contentLength = Int(value) ?? 0 }
            if name == "connection" && value.contains("close") { keepAlive = false }
            if name == "transfer-encoding" && value.contains("chunked") { isChunked = true }
        }
        buffer.removeFirst(end + 4)
        guard !isChunked, contentLength <= 1 << 20 else {
            // Not worth parsing for a ping: read nothing more and drop the connection.
            return (status, false)
        }
        while buffer.count < contentLength { try fill() }
        buffer.removeFirst(contentLength)
        return (status, keepAlive)
    }
}

extension Substring {
    /// Without leading and trailing spaces (a header value).
    fileprivate var trimmingSpaces: Substring {
        var text = self
        while text.first == " " { text = text.dropFirst() }
        while text.last == " " { text = text.dropLast() }
        return text
    }
}
