import PushCore
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
