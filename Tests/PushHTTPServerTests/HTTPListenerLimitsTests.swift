import Foundation
import PushCore
import PushHTTPServer
import PushTestSupport
import Synchronization
import Testing

/// What one connection may cost (docs/security.md), over real sockets: body and
/// header caps, the idle timeout, the per-address connection cap, repeated header lines.
@Suite("HTTPListener: limits against hostile clients", .serialized)
struct HTTPListenerLimitsTests {
    final class Calls: Sendable {
        let count = Mutex(0)
        var value: Int { count.withLock { $0 } }
    }

    static func listener(_ calls: Calls, _ configure: (inout HTTPListener.Limits) -> Void = { _ in }) throws -> HTTPListener {
        var limits = HTTPListener.Limits()
        configure(&limits)
        return try HTTPListener(address: try #require(HostPort("127.0.0.1:0")), limits: limits, headerNames: ["X-Forwarded-For"]) { request in
            calls.count.withLock { $0 += 1 }
            return .init(status: 200, body: "xff=\(request.headers["x-forwarded-for"] ?? "-")")
        }
    }

    static func request(_ path: String = "/", headers: [String] = [], body: String? = nil) -> String {
        var lines = ["POST \(path) HTTP/1.1", "Host: 127.0.0.1"] + headers
        if let body { lines.append("Content-Length: \(body.utf8.count)") }
        return lines.joined(separator: "\r\n") + "\r\n\r\n" + (body ?? "")
    }

    @Test("a declared body over 4 KiB gets 413 before a byte of it is sent, and the connection closes; 4 KiB is read and answered")
    func declaredBodyTooLarge() throws {
        let calls = Calls()
        let listener = try Self.listener(calls)
        defer { listener.stop() }
        let socket = try #require(LoopbackSocket(port: listener.port))
        socket.send("POST /v1/e/o/x HTTP/1.1\r\nHost: a\r\nContent-Length: 8388608\r\n\r\n")
        let answer = socket.readUntilClosed(timeout: 10)
        #expect(answer.text.hasPrefix("HTTP/1.1 413"), "\(answer.text)")
        #expect(answer.closed)
        #expect(answer.seconds < 5)
        #expect(calls.value == 0, "the handler never sees it")

        // Exactly the limit: read, discarded, answered, and the connection stays open for the next request.
        let fits = try #require(LoopbackSocket(port: listener.port))
        fits.send(Self.request(body: String(repeating: "b", count: 4096)) + Self.request(body: "small"))
        let two = fits.read(until: "xff=-HTTP/1.1 200", timeout: 10)
        #expect(two.components(separatedBy: "HTTP/1.1 200").count - 1 == 2, "\(two)")
        #expect(calls.value == 2)
    }

    @Test("a chunked body that grows past 4 KiB is refused without reaching the handler")
    func chunkedBodyTooLarge() throws {
        let calls = Calls()
        let listener = try Self.listener(calls)
        defer { listener.stop() }
        let socket = try #require(LoopbackSocket(port: listener.port))
        socket.send("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n")
        let chunk = String(repeating: "c", count: 1024)
        for _ in 0..<8 { _ = socket.send("400\r\n\(chunk)\r\n") }
        _ = socket.send("0\r\n\r\n")
        let answer = socket.readUntilClosed(timeout: 10)
        #expect(answer.closed)
        #expect(answer.text.isEmpty || answer.text.hasPrefix("HTTP/1.1 413"), "\(answer.text)")
        #expect(calls.value == 0)
    }

    @Test("headers past the connection's memory are answered 431 (or 414 for a long URL) and never reach the handler")
    func headersTooLarge() throws {
        let calls = Calls()
        let listener = try Self.listener(calls)
        defer { listener.stop() }
        let socket = try #require(LoopbackSocket(port: listener.port))
        socket.send(Self.request(headers: (0..<40).map { "X-Filler-\($0): " + String(repeating: "h", count: 500) }))
        let answer = socket.readUntilClosed(timeout: 10)
        #expect(answer.text.hasPrefix("HTTP/1.1 431"), "\(answer.text.prefix(200))")
        #expect(answer.closed)
        let long = try #require(LoopbackSocket(port: listener.port))
        long.send(Self.request("/" + String(repeating: "u", count: 20_000)))
        let url = long.readUntilClosed(timeout: 10)
        #expect(url.text.hasPrefix("HTTP/1.1 414") || url.text.hasPrefix("HTTP/1.1 431"), "\(url.text.prefix(200))")
        #expect(calls.value == 0)

        // Ordinary headers (a few hundred bytes, a long X-Forwarded-For chain) pass.
        let normal = try #require(LoopbackSocket(port: listener.port))
        let chain = (1...200).map { "198.51.100.\($0 % 250)" }.joined(separator: ", ")
        normal.send(Self.request(headers: ["User-Agent: sdk/1.0", "X-Forwarded-For: \(chain)"]))
        #expect(normal.read(until: "198.51.100.200", timeout: 10).hasPrefix("HTTP/1.1 200"))
    }

    @Test("a connection idle in the middle of a request is closed after the idle timeout (2 s here, 30 s by default)")
    func idleMidRequest() throws {
        #expect(HTTPListener.Limits().idleTimeoutSeconds == 30)
        let calls = Calls()
        let listener = try Self.listener(calls) { $0.idleTimeoutSeconds = 2 }
        defer { listener.stop() }
        let socket = try #require(LoopbackSocket(port: listener.port))
        socket.send("POST /v1/e/o/x HTTP/1.1\r\nHost: a\r\nX-Slow: ")
        let answer = socket.readUntilClosed(timeout: 15)
        #expect(answer.closed, "still open after \(answer.seconds) s")
        #expect(answer.seconds >= 1.5 && answer.seconds < 6, "closed after \(answer.seconds) s")
        #expect(calls.value == 0)

        // A declared body that never comes: the same.
        let body = try #require(LoopbackSocket(port: listener.port))
        body.send("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\nonly part")
        let waited = body.readUntilClosed(timeout: 15)
        #expect(waited.closed && waited.seconds < 6, "\(waited)")
        #expect(calls.value == 0)
    }

    @Test("one address holds at most connectionsPerAddress connections; others are closed at accept and the held ones still work")
    func perAddressCap() throws {
        let calls = Calls()
        let listener = try Self.listener(calls) { $0.connectionsPerAddress = 3 }
        defer { listener.stop() }
        var held = try (0..<3).map { _ in try #require(LoopbackSocket(port: listener.port)) }
        // The kernel completes the handshake; libmicrohttpd closes the fourth at once, unanswered.
        #expect(eventually(timeout: 5) {
            guard let extra = LoopbackSocket(port: listener.port) else { return true }
            extra.send(Self.request())
            let answer = extra.readUntilClosed(timeout: 3)
            return answer.closed && answer.text.isEmpty
        })
        held[0].send(Self.request())
        #expect(held[0].read(until: "xff=-", timeout: 10).hasPrefix("HTTP/1.1 200"))
        #expect(calls.value == 1)
        // A slot frees when a connection closes.
        held.removeLast()
        #expect(eventually(timeout: 5) {
            guard let next = LoopbackSocket(port: listener.port) else { return false }
            next.send(Self.request())
            return next.read(until: "xff=-", timeout: 2).hasPrefix("HTTP/1.1 200")
        })
        #expect(held.count == 2)
    }

    @Test("every line of a repeated header reaches the handler, joined with \", \" in order")
    func repeatedHeaderLines() throws {
        let calls = Calls()
        let listener = try Self.listener(calls)
        defer { listener.stop() }
        let socket = try #require(LoopbackSocket(port: listener.port))
        socket.send(Self.request(headers: ["X-Forwarded-For: 203.0.113.1", "Accept: */*", "x-forwarded-for: 198.51.100.2, 10.0.0.1",
                                           "X-FORWARDED-FOR: 127.0.0.1"]))
        let answer = socket.read(until: "127.0.0.1", timeout: 10)
        #expect(answer.hasSuffix("xff=203.0.113.1, 198.51.100.2, 10.0.0.1, 127.0.0.1"), "\(answer)")
        socket.send(Self.request(headers: ["X-Forwarded-For:"]))
        #expect(socket.read(until: "xff=", timeout: 10).contains("HTTP/1.1 200"))
    }
}
