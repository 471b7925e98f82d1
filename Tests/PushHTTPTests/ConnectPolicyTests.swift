import Foundation
import PushHTTP
import PushTestSupport
import Testing

/// The connect-time address check (docs/security.md "End users' subscriptions"): what decides is the
/// address libcurl actually connects to, seen in `CURLOPT_OPENSOCKETFUNCTION`. The resolver
/// double is libcurl's own `CURLOPT_RESOLVE`: the name resolves to a loopback address only, and
/// nothing but loopback is ever contacted.
@Suite("Connect-time address policy", .serialized)
struct ConnectPolicyTests {
    static func isLoopback(_ address: [UInt8]) -> Bool {
        address.count == 4 ? address[0] == 127 : address == [UInt8](repeating: 0, count: 15) + [1]
    }

    /// The sandbox's certificate names `localhost`; the double makes `localhost` resolve to
    /// 127.0.0.1 whatever /etc/hosts says.
    static func client(_ sandbox: SandboxServer) throws -> HTTP2Client {
        var configuration = HTTPClientConfiguration()
        configuration.caFile = sandbox.certificatePath
        configuration.resolveOverrides = ["localhost:\(sandbox.port):127.0.0.1"]
        return try HTTP2Client(configuration: configuration)
    }

    static func requests(_ sandbox: SandboxServer) throws -> Int {
        let reply = try sandbox.curl("GET", "/_sandbox/stats")
        let object = try JSONSerialization.jsonObject(with: reply.body) as? [String: Any]
        return object?["requests"] as? Int ?? -1
    }

    @Test("a name that resolves to a refused address is refused when the socket would open: nothing reaches the server")
    func refusedAtConnect() async throws {
        let sandbox = try SandboxServer()
        let client = try Self.client(sandbox)
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        let before = try Self.requests(sandbox)
        let refuseLoopback = ConnectAddressPolicy { !Self.isLoopback($0) }
        let result = await client.send(HTTPRequest(url: "https://localhost:\(sandbox.port)/_sandbox/health", connectPolicy: refuseLoopback))
        guard case .failure(.addressRefused(let message)) = result else {
            Issue.record("expected addressRefused, got \(result)")
            return
        }
        #expect(message.contains("127.0.0.1"))
        #expect(!(HTTPTransportError.addressRefused(message)).isRetryable)
        #expect(try Self.requests(sandbox) == before)
    }

    @Test("the same name with a policy that allows the address connects; a request without a policy is not checked")
    func allowedAtConnect() async throws {
        let sandbox = try SandboxServer()
        let client = try Self.client(sandbox)
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        let seen = AddressLog()
        let allow = ConnectAddressPolicy { address in seen.add(address); return Self.isLoopback(address) }
        let allowed = await client.send(HTTPRequest(url: "https://localhost:\(sandbox.port)/_sandbox/health", connectPolicy: allow))
        #expect((try? allowed.get().status) == 200)
        #expect(seen.items == [[127, 0, 0, 1]], "the policy saw the address libcurl connected to")
        let unchecked = await client.send(HTTPRequest(url: "https://localhost:\(sandbox.port)/_sandbox/health"))
        #expect((try? unchecked.get().status) == 200)
    }

    @Test("a refused request does not poison the connection pool: the next allowed one to the same origin goes through")
    func refusalThenAllowed() async throws {
        let sandbox = try SandboxServer()
        let client = try Self.client(sandbox)
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        let url = "https://localhost:\(sandbox.port)/_sandbox/health"
        let refused = await client.send(HTTPRequest(url: url, connectPolicy: ConnectAddressPolicy { _ in false }))
        guard case .failure(.addressRefused) = refused else { Issue.record("expected addressRefused, got \(refused)"); return }
        let allowed = await client.send(HTTPRequest(url: url, connectPolicy: ConnectAddressPolicy { _ in true }))
        #expect((try? allowed.get().status) == 200)
    }

    final class AddressLog: Sendable {
        private let state = Mutex<[[UInt8]]>([])
        func add(_ address: [UInt8]) { state.withLock { $0.append(address) } }
        var items: [[UInt8]] { state.withLock { $0 } }
    }
}

import Synchronization
