import Foundation
import PushTestSupport
import Testing
@testable import PushRedis

/// The failure paths of the hiredis owner: `connect` makes the context first, wraps it, then
/// checks it; a failed connect only throws, and `deinit` frees the context once.
@Suite("HiredisContext: failure paths")
struct HiredisContextTests {
    @Test("connecting to a closed loopback port or a missing unix socket throws a connection error", arguments: [
        RedisEndpoint.Address.tcp(host: "127.0.0.1", port: Int(freeLoopbackPort())),
        .unix(path: "/nonexistent/pushworker-redis.sock"),
    ])
    func refusedConnect(address: RedisEndpoint.Address) {
        for _ in 0..<50 {
            let error = #expect(throws: RedisError.self) { _ = try HiredisContext.connect(address, timeoutMs: 500) }
            #expect(error?.isConnectionError == true)
            #expect(error?.message.hasPrefix("cannot connect to \(address): ") == true)
        }
    }

    @Test("a context whose server went away throws on use, and is freed once when dropped")
    func lostServer() throws {
        let server = try RedisServer()
        var context: HiredisContext? = try HiredisContext.connect(.tcp(host: "127.0.0.1", port: Int(server.port)), timeoutMs: 1000)
        #expect(try context?.run([[.string("PING")]]) == [.status("PONG")])
        server.stop()
        #expect(throws: RedisError.self) { _ = try context?.run([[.string("PING")]]) }
        context = nil
    }
}
