import Foundation
import PushCore
import PushHTTPServer
import PushTestSupport
import Synchronization
import Testing

/// Listeners that hand request bodies to the handler (`Limits.collectsBodies`, the HTTP API) and
/// raw paths (`Limits.rawPaths`), over real sockets.
@Suite("HTTPListener: collected bodies and raw paths", .serialized)
struct HTTPListenerBodyTests {
    final class Seen: Sendable {
        let requests = Mutex<[HTTPListener.Request]>([])
        var all: [HTTPListener.Request] { requests.withLock { $0 } }
    }

    static func listener(_ seen: Seen, maximum: Int = 64 << 10, raw: Bool = false) throws -> HTTPListener {
        var limits = HTTPListener.Limits()
        limits.collectsBodies = true
        limits.rawPaths = raw
        limits.maximumBodyBytes = maximum
        limits.bodyTooLarge = .init(status: 413, contentType: "application/json", body: #"{"error":"too large"}"#)
        return try HTTPListener(address: try #require(HostPort("127.0.0.1:0")), threads: 2, limits: limits) { request in
            seen.requests.withLock { $0.append(request) }
            return .init(status: 200, body: "path=\(request.path) body=\(request.body.count)|")
        }
    }

    static func request(_ path: String = "/", body: [UInt8]? = nil, chunked: Bool = false) -> [UInt8] {
        var head = "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        guard let body else { return Array((head + "\r\n").utf8) }
        if chunked {
            head += "Transfer-Encoding: chunked\r\n\r\n"
            var bytes = Array(head.utf8)
            var offset = 0
            while offset < body.count {
                let end = min(offset + 3000, body.count)
                bytes += Array("\(String(end - offset, radix: 16))\r\n".utf8) + body[offset..<end] + Array("\r\n".utf8)
                offset = end
            }
            return bytes + Array("0\r\n\r\n".utf8)
        }
        return Array((head + "Content-Length: \(body.count)\r\n\r\n").utf8) + body
    }

    @Test("bodies reach the handler byte for byte (binary, chunked, several per connection); the limit itself fits")
    func bodiesArrive() throws {
        let seen = Seen()
        let listener = try Self.listener(seen, maximum: 20_000)
        defer { listener.stop() }
        let binary = (0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let socket = try #require(LoopbackSocket(port: listener.port))
        #expect(socket.send(Self.request(body: binary) + Self.request(body: Array("small".utf8), chunked: true) + Self.request()))
        let text = socket.read(until: "body=0|", timeout: 10)
        #expect(text.components(separatedBy: "HTTP/1.1 200").count - 1 == 3, "\(text)")
        let requests = seen.all
        #expect(requests.map(\.body.count) == [20_000, 5, 0])
        #expect(requests.first?.body == binary)
        #expect(requests.dropFirst().first?.body == Array("small".utf8))
    }

    @Test("a body over the limit gets the listener's 413 answer and never reaches the handler: declared, chunked, or longer than declared")
    func bodyTooLarge() throws {
        let seen = Seen()
        let listener = try Self.listener(seen, maximum: 4096)
        defer { listener.stop() }
        let declared = try #require(LoopbackSocket(port: listener.port))
        declared.send("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 9000000\r\n\r\n")
        let first = declared.readUntilClosed(timeout: 10)
        #expect(first.text.hasPrefix("HTTP/1.1 413"), "\(first.text)")
        #expect(first.text.contains("Content-Type: application/json") && first.text.hasSuffix(#"{"error":"too large"}"#))
        #expect(first.closed)

        let chunked = try #require(LoopbackSocket(port: listener.port))
        chunked.send(Self.request(body: [UInt8](repeating: 0x61, count: 10_000), chunked: true))
        let second = chunked.readUntilClosed(timeout: 10)
        #expect(second.closed)
        #expect(second.text.isEmpty || second.text.hasPrefix("HTTP/1.1 413"), "\(second.text)")
        #expect(seen.all.isEmpty)

        // The connection that sent too much is gone; a new one is served.
        let next = try #require(LoopbackSocket(port: listener.port))
        next.send(Self.request(body: Array("ok".utf8)))
        #expect(next.read(until: "body=2|", timeout: 10).hasPrefix("HTTP/1.1 200"))
    }

    @Test("a client that leaves mid-body releases the request (the next ones are served; no crash)")
    func abandonedBodies() throws {
        let seen = Seen()
        let listener = try Self.listener(seen)
        defer { listener.stop() }
        for _ in 0..<20 {
            let socket = try #require(LoopbackSocket(port: listener.port))
            socket.send("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\n\r\n" + String(repeating: "x", count: 300))
        }
        let socket = try #require(LoopbackSocket(port: listener.port))
        socket.send(Self.request(body: Array("after".utf8)))
        #expect(socket.read(until: "body=5|", timeout: 10).hasPrefix("HTTP/1.1 200"))
        #expect(seen.all.map(\.body.count) == [5])
    }

    @Test("with rawPaths the path keeps its escapes (%2F stays in its segment); without, libmicrohttpd decodes it")
    func rawPaths() throws {
        let seen = Seen()
        let raw = try Self.listener(seen, raw: true)
        defer { raw.stop() }
        let socket = try #require(LoopbackSocket(port: raw.port))
        socket.send(Self.request("/v1/campaigns/app/spring%2F2026%20x?q=%41"))
        #expect(socket.read(until: "|", timeout: 10).contains("path=/v1/campaigns/app/spring%2F2026%20x "))
        #expect(seen.all.first?.query["q"] == "%41")

        let decodedSeen = Seen()
        let decoding = try Self.listener(decodedSeen, raw: false)
        defer { decoding.stop() }
        let other = try #require(LoopbackSocket(port: decoding.port))
        other.send(Self.request("/v1/campaigns/app/spring%2F2026"))
        #expect(other.read(until: "|", timeout: 10).contains("path=/v1/campaigns/app/spring/2026 "))
    }

    @Test("listeners that discard bodies keep doing so (the handler sees an empty body)")
    func discardingListener() throws {
        let seen = Seen()
        let listener = try HTTPListener(address: try #require(HostPort("127.0.0.1:0"))) { request in
            seen.requests.withLock { $0.append(request) }
            return .init(status: 200, body: "body=\(request.body.count)|")
        }
        defer { listener.stop() }
        let socket = try #require(LoopbackSocket(port: listener.port))
        socket.send(Self.request(body: Array("ignored".utf8)))
        #expect(socket.read(until: "|", timeout: 10).contains("body=0|"))
    }
}
