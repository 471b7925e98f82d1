import PushCore
import Synchronization
import PushHTTPServer
import PushTestSupport
import Testing

/// The libmicrohttpd owner behind `HTTPListener`: the daemon is started first and wrapped at
/// once; stopping drops the owner, whose `deinit` stops MHD, once.
@Suite("HTTPListener: failure paths and stopping")
struct HTTPListenerTests {
    static let handler: HTTPListener.Handler = { _ in HTTPListener.Response(status: 204) }

    @Test("a port in use throws ListenerError and leaves the first listener serving")
    func portInUse() throws {
        let first = try HTTPListener(address: try #require(HostPort("127.0.0.1:0")), handler: Self.handler)
        defer { first.stop() }
        let taken = try #require(HostPort("127.0.0.1:\(first.port)"))
        for threads in [1, 4] as [UInt32] {
            let error = #expect(throws: HTTPListener.ListenerError.self) {
                _ = try HTTPListener(address: taken, threads: threads, handler: Self.handler)
            }
            #expect(error?.message == "cannot listen on 127.0.0.1:\(first.port)")
        }
        #expect(isListening(port: first.port))
    }

    @Test("a host that is not an IPv4 address throws ListenerError (no name lookup)", arguments: ["[::1]:0", "example.invalid:0", "127.0.0.256:0"])
    func notIPv4(text: String) throws {
        let address = try #require(HostPort(text))
        #expect(throws: HTTPListener.ListenerError.self) { _ = try HTTPListener(address: address, handler: Self.handler) }
    }

    @Test("stop is idempotent and closes the port; dropping a listener stops it too")
    func stopping() throws {
        let listener = try HTTPListener(address: try #require(HostPort("127.0.0.1:0")), threads: 2, handler: Self.handler)
        let port = listener.port
        #expect(isListening(port: port))
        listener.stop()
        listener.stop()
        #expect(!isListening(port: port))
        var dropped: HTTPListener? = try HTTPListener(address: try #require(HostPort("127.0.0.1:0")), handler: Self.handler)
        let droppedPort = try #require(dropped?.port)
        #expect(isListening(port: droppedPort))
        dropped = nil
        #expect(!isListening(port: droppedPort))
    }
}

/// Query arguments, chosen headers and streamed responses (the sandbox inbox's Server-Sent Events).
@Suite("HTTPListener: query arguments, headers, streamed responses", .serialized)
struct HTTPListenerStreamingTests {
    final class Streams: Sendable {
        let opened = Mutex<[HTTPResponseStream]>([])
        let closed = Mutex(0)
    }

    static func listener(_ streams: Streams, allowsStreaming: Bool = true) throws -> HTTPListener {
        try HTTPListener(address: try #require(HostPort("127.0.0.1:0")), allowsStreaming: allowsStreaming, headerNames: ["X-Probe"]) { request in
            if request.path == "/echo" {
                return .init(status: 200, body: "\(request.query["a"] ?? "-")|\(request.query["b"] ?? "-")|\(request.headers["x-probe"] ?? "-")|\(request.headers.count)")
            }
            let stream = HTTPResponseStream(maximumPendingBytes: 64)
            stream.setCloseHandler { streams.closed.withLock { $0 += 1 } }
            streams.opened.withLock { $0.append(stream) }
            return .streaming(stream, contentType: "text/event-stream")
        }
    }

    @Test("the handler sees percent-decoded query arguments (first value wins) and only the headers it named")
    func queryAndHeaders() throws {
        let listener = try Self.listener(Streams())
        defer { listener.stop() }
        let echo = try runCommand("/usr/bin/curl", ["-s", "-H", "X-Probe: yes", "-H", "X-Other: no",
                                                    "http://127.0.0.1:\(listener.port)/echo?a=x%20y&b=2&a=z"])
        #expect(echo.stdout == "x y|2|yes|1")
        #expect(try runCommand("/usr/bin/curl", ["-s", "http://127.0.0.1:\(listener.port)/echo"]).stdout == "-|-|-|0")
    }

    @Test("a streamed body is written from another thread, piece by piece, and ends when finished; a client too far behind is cut off")
    func streamsAndFinishes() throws {
        let streams = Streams()
        let listener = try Self.listener(streams)
        defer { listener.stop() }
        let client = try TestProcess("/usr/bin/curl", ["-sN", "--max-time", "20", "http://127.0.0.1:\(listener.port)/events"])
        #expect(eventually(timeout: 10) { streams.opened.withLock { $0.count } == 1 })
        let stream = try #require(streams.opened.withLock { $0.first })
        #expect(stream.write(Array("one\n".utf8)))
        #expect(eventually(timeout: 10) { client.stdout() == "one\n" }, "sent while the client waits")
        #expect(stream.write(Array("two\n".utf8)))
        stream.finish()
        #expect(!stream.write(Array("late\n".utf8)), "nothing after finish")
        #expect(client.wait(timeout: 10) == 0)
        #expect(client.stdout() == "one\ntwo\n")
        #expect(eventually(timeout: 5) { streams.closed.withLock { $0 } == 1 })
        // 64 bytes pending at most: a bigger write finishes the stream instead of growing.
        let slow = try TestProcess("/usr/bin/curl", ["-sN", "--max-time", "20", "http://127.0.0.1:\(listener.port)/events"])
        #expect(eventually(timeout: 10) { streams.opened.withLock { $0.count } == 2 })
        let second = try #require(streams.opened.withLock { $0.last })
        #expect(!second.write([UInt8](repeating: 0x41, count: 100)))
        #expect(second.isClosed)
        #expect(slow.wait(timeout: 10) != nil)
    }

    @Test("stop finishes the open streams (their clients see the end) and returns")
    func stopWithOpenStream() throws {
        let streams = Streams()
        let listener = try Self.listener(streams)
        let client = try TestProcess("/usr/bin/curl", ["-sN", "--max-time", "20", "http://127.0.0.1:\(listener.port)/events"])
        #expect(eventually(timeout: 10) { streams.opened.withLock { $0.count } == 1 })
        listener.stop()
        #expect(client.wait(timeout: 10) != nil, "the client's stream ended")
        #expect(streams.opened.withLock { $0.first?.isClosed } == true)
    }

    @Test("a streamed answer on a listener without allowsStreaming is a 500, not a hang")
    func streamingNotEnabled() throws {
        let streams = Streams()
        let listener = try Self.listener(streams, allowsStreaming: false)
        defer { listener.stop() }
        let answer = try runCommand("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10",
                                                      "http://127.0.0.1:\(listener.port)/events"])
        #expect(answer.stdout == "500")
    }
}
