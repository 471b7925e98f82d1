import CMicroHTTPD
import CPushHTTPD
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The libmicrohttpd glue (CPushHTTPD) on its own: address text from socket addresses, and
/// daemons started on real loopback ports.
@Suite("CPushHTTPD: daemon start and client addresses")
struct HTTPDGlueTests {
    static func format<Address>(_ address: inout Address, size: Int = 64) -> (Int32, String) {
        var buffer = [CChar](repeating: 0x7F, count: max(size, 1))
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pw_httpd_format_address($0, &buffer, size) }
        }
        return (result, String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    static func ipv4(_ text: String) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        _ = inet_pton(AF_INET, text, &address.sin_addr)
        return address
    }

    static func ipv6(_ text: String) -> sockaddr_in6 {
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        _ = inet_pton(AF_INET6, text, &address.sin6_addr)
        return address
    }

    @Test("IPv4 and IPv6 addresses are written in their numeric form", arguments: [
        ("127.0.0.1", false), ("192.0.2.255", false), ("0.0.0.0", false),
        ("::1", true), ("2001:db8::1", true), ("::ffff:192.0.2.1", true), ("fe80::1:2:3:4", true),
    ])
    func formats(text: String, isIPv6: Bool) {
        if isIPv6 {
            var address = Self.ipv6(text)
            #expect(Self.format(&address) == (0, text))
        } else {
            var address = Self.ipv4(text)
            #expect(Self.format(&address) == (0, text))
        }
    }

    @Test("a text needs its length + 1 bytes; one byte less is refused and leaves the buffer empty")
    func bufferSizes() {
        var address = Self.ipv6("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")
        #expect(Self.format(&address, size: 40) == (0, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"))
        #expect(Self.format(&address, size: 39) == (-1, ""))
        var v4 = Self.ipv4("255.255.255.255")
        #expect(Self.format(&v4, size: 15) == (-1, ""))
        #expect(Self.format(&v4, size: 16) == (0, "255.255.255.255"))
    }

    @Test("other families, a NULL address and an empty buffer are refused")
    func refuses() {
        var local = sockaddr_un()
        local.sun_family = sa_family_t(AF_UNIX)
        #expect(Self.format(&local) == (-1, ""))
        var buffer = [CChar](repeating: 0x7F, count: 8)
        let noAddress = pw_httpd_format_address(nil, &buffer, buffer.count)
        #expect(noAddress == -1)
        #expect(buffer[0] == 0)
        var v4 = Self.ipv4("127.0.0.1")
        let empty = withUnsafePointer(to: &v4) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pw_httpd_format_address($0, &buffer, 0) }
        }
        #expect(empty == -1)
        let noConnection = pw_httpd_client_address(nil, &buffer, buffer.count)
        #expect(noConnection == -1)
    }

    /// Starts a daemon. Not inside `#expect`/`#require`: those macros turn the String
    /// argument into a pointer that does not outlive their own evaluation.
    static func start(_ ipv4: String, port: UInt16, threads: UInt32 = 1, handler: MHD_AccessHandlerCallback? = recordingHandler,
                      context: UnsafeMutableRawPointer? = nil) -> OpaquePointer? {
        pw_httpd_start(ipv4, port, threads, handler, context)
    }

    @Test("a daemon on port 0 gets a port from the kernel and accepts connections there; one or a pool of threads", arguments: [1, 4] as [UInt32])
    func startsOnPortZero(threads: UInt32) throws {
        let daemon = try #require(Self.start("127.0.0.1", port: 0, threads: threads))
        defer { MHD_stop_daemon(daemon) }
        let port = pw_mhd_bound_port(daemon)
        #expect(port != 0)
        #expect(Self.exchange(port: port).hasPrefix("HTTP/1."))
    }

    @Test("a port in use, a non-IPv4 address and a missing handler give NULL, not a daemon")
    func refusesToStart() throws {
        let first = try #require(Self.start("127.0.0.1", port: 0))
        defer { MHD_stop_daemon(first) }
        let port = pw_mhd_bound_port(first)
        #expect(Self.start("127.0.0.1", port: port) == nil)
        #expect(Self.start("127.0.0.1", port: port, threads: 4) == nil)
        for bad in ["localhost", "::1", "127.0.0.256", ""] {
            #expect(Self.start(bad, port: 0) == nil)
        }
        #expect(Self.start("127.0.0.1", port: 0, handler: nil) == nil)
    }

    @Test("a suspendable daemon (streamed responses) starts, serves and refuses bad addresses like the others")
    func suspendable() throws {
        let daemon = try #require(Self.startSuspendable("127.0.0.1", port: 0))
        defer { MHD_stop_daemon(daemon) }
        #expect(Self.exchange(port: pw_mhd_bound_port(daemon)).hasPrefix("HTTP/1.1 204"))
        #expect(Self.startSuspendable("localhost", port: 0) == nil)
        #expect(Self.startSuspendable("127.0.0.1", port: pw_mhd_bound_port(daemon)) == nil)
    }

    static func startSuspendable(_ ipv4: String, port: UInt16) -> OpaquePointer? {
        pw_httpd_start_suspendable(ipv4, port, 1, recordingHandler, nil)
    }

    @Test("the handler reads the client's address of a real connection as 127.0.0.1")
    func clientAddress() throws {
        let seen = SeenAddresses()
        let context = Unmanaged.passUnretained(seen).toOpaque()
        let daemon = try #require(Self.start("127.0.0.1", port: 0, context: context))
        let response = Self.exchange(port: pw_mhd_bound_port(daemon))
        MHD_stop_daemon(daemon)  // joins the polling thread: `seen` is complete
        #expect(response.hasPrefix("HTTP/1.1 204"))
        #expect(seen.addresses.withLock { $0 } == ["127.0.0.1"])
    }

    /// Sends one HTTP/1.0 request over a plain loopback socket; returns what came back.
    static func exchange(port: UInt16) -> String {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return "" }
        defer { close(fd) }
        var address = ipv4("127.0.0.1")
        address.sin_port = port.bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return "" }
        let request = Array("GET /glue HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        guard write(fd, request, request.count) == request.count else { return "" }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(fd, &chunk, chunk.count)
            if count <= 0 { break }
            received += chunk[0..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }
}

/// Addresses the handler saw (context of `recordingHandler`).
final class SeenAddresses: Sendable {
    let addresses = Mutex<[String]>([])
}

/// Records the client address (when given a context) and answers 204 on the request's last call.
let recordingHandler: MHD_AccessHandlerCallback = { context, connection, _, _, _, _, uploadSize, requestContext in
    guard let connection, let requestContext else { return .NO }
    if requestContext.pointee == nil {
        requestContext.pointee = UnsafeMutableRawPointer(bitPattern: 1)
        return .YES
    }
    if let uploadSize, uploadSize.pointee > 0 {
        uploadSize.pointee = 0
        return .YES
    }
    if let context {
        var buffer = [CChar](repeating: 0, count: 64)
        let text = pw_httpd_client_address(connection, &buffer, buffer.count) == 0
            ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
        Unmanaged<SeenAddresses>.fromOpaque(context).takeUnretainedValue().addresses.withLock { $0.append(text) }
    }
    guard let response = MHD_create_response_from_buffer(0, nil, .RESPMEM_PERSISTENT) else { return .NO }
    defer { MHD_destroy_response(response) }
    return MHD_queue_response(connection, 204, response)
}
