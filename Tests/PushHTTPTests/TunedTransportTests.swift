import Foundation
@testable import PushHTTP
import PushTestSupport
import Testing

private func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
}

/// What the tuned I/O loop changes on the wire: writes coalesced per loop turn (TCP_CORK lifted
/// before every wait), pre-parsed URLs (CURLU, the path replaced for a known origin), only the
/// headers a request asks for, an explicit proxy.
@Suite("Tuned transport against nghttpd", .serialized)
struct TunedTransportTests {
    @Test("cork never delays a request: lone requests on a corked connection complete promptly")
    func loneRequestsArePrompt() async throws {
        let server = try NghttpdServer()
        let client = try HTTP2Client(configuration: configuration(caFile: server.caFile))
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        _ = try await client.send(HTTPRequest(url: server.origin + "/hello.txt")).get() // connect + TLS
        var took: [Double] = []
        for index in 0..<21 {
            let request = index % 2 == 0 ? HTTPRequest(url: server.origin + "/hello.txt")
                : HTTPRequest(method: "POST", url: server.origin + "/echo", body: Array(repeating: 0x61, count: 3000))
            // Timed from submit to the completion on the I/O thread: the test task's own
            // resumption (a busy cooperative pool while other suites run) is not counted.
            let (status, elapsed) = await withCheckedContinuation { (continuation: CheckedContinuation<(Int, Double), Never>) in
                let started = ContinuousClock.now
                client.submit(request) { result in
                    let elapsed = milliseconds(started.duration(to: .now))
                    continuation.resume(returning: ((try? result.get())?.status ?? 0, elapsed))
                }
            }
            took.append(elapsed)
            #expect(status == 200)
        }
        // The connection is corked between turns and was uncorked before every wait...
        #expect(client.corkedConnections == 1)
        #expect(client.corkFlushes >= 21)
        // ...so no request waited for the kernel's 200 ms cork timer (a forgotten uncork would
        // make every one of them take at least that long).
        // (A machine busy with other suites may still delay the odd one.)
        let median = took.sorted()[took.count / 2]
        #expect(median < 100, "lone request times (ms): \(took)")
        #expect(took.filter { $0 >= 200 }.count <= 3, "lone request times (ms): \(took)")
    }

    @Test("without write coalescing nothing is corked and requests still go out")
    func coalescingOff() async throws {
        let server = try NghttpdServer()
        let client = try HTTP2Client(configuration: configuration(caFile: server.caFile) { $0.coalesceWrites = false })
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        for _ in 0..<3 { #expect(try await client.send(HTTPRequest(url: server.origin + "/hello.txt")).get().status == 200) }
        #expect(client.corkedConnections == 0)
    }

    @Test("pre-parsed URLs: each request reaches the server with its own path, whatever the previous one was")
    func curluPaths() async throws {
        let server = try NghttpdServer(verbose: true)
        let other = try NghttpdServer(verbose: true)
        let client = try HTTP2Client(configuration: configuration(caFile: server.caFile))
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        // (URL path as sent by the caller, :path the server must see)
        let steps: [(String, String)] = [
            ("/hello.txt", "/hello.txt"),                 // parsed whole (first request)
            ("/missing/abc:def@x", "/missing/abc:def@x"), // same origin: only the path replaced
            ("/a/../hello.txt", "/hello.txt"),            // dot segment: parsed whole, normalised as libcurl does
            ("/hello.txt?x=1&y=2", "/hello.txt?x=1&y=2"), // query: parsed whole
            ("/hello.txt", "/hello.txt"),                 // after a query: parsed whole, no query left over
            ("/%68ello.txt", "/%68ello.txt"),             // percent-escape: parsed whole, kept
            ("/3/device/0123abcd", "/3/device/0123abcd"),
            ("/hello.txt#fragment", "/hello.txt"),        // a fragment is never sent
            ("/x/./y", "/x/y"),
            ("/hello.txt", "/hello.txt"),
        ]
        for (path, _) in steps { _ = try await client.send(HTTPRequest(url: server.origin + path)).get() }
        #expect(client.handlesCreated == 1)
        let seen = server.receivedRequests().map { $0.path ?? "" }
        #expect(seen == steps.map(\.1))

        // Another origin on the same handle is parsed whole (the authority changes).
        let mixed = HTTP2ClientMixedOrigins(first: server, second: other)
        let mixedClient = try HTTP2Client(configuration: configuration(caFile: mixed.caFile))
        defer { mixedClient.shutdown(drainTimeout: .seconds(1)) }
        for origin in [server.origin, other.origin, other.origin, server.origin] {
            #expect(try await mixedClient.send(HTTPRequest(url: origin + "/hello.txt")).get().status == 200, "\(origin)")
        }
        #expect(mixedClient.handlesCreated == 1)
        #expect(other.receivedRequests().filter { $0.path == "/hello.txt" }.count == 2)
    }

    @Test("only the headers a request asks for: no default accept, no form content type; an explicit accept is sent")
    func leanHeaders() async throws {
        let server = try NghttpdServer(verbose: true)
        let client = try HTTP2Client(configuration: configuration(caFile: server.caFile))
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        _ = try await client.send(HTTPRequest(method: "POST", url: server.origin + "/echo", headers: [HTTPHeader(name: "apns-topic", value: "t")],
                                              body: Array("{}".utf8))).get()
        _ = try await client.send(HTTPRequest(url: server.origin + "/hello.txt", headers: [HTTPHeader(name: "Accept", value: "text/plain")])).get()
        _ = try await client.send(HTTPRequest(url: server.origin + "/hello.txt")).get()
        let received = server.receivedRequests()
        try #require(received.count == 3)
        let names = received[0].headers.map(\.name).filter { !$0.hasPrefix(":") }.sorted()
        #expect(names == ["apns-topic", "content-length"], "\(names)")
        #expect(received[1].values("accept") == ["text/plain"])
        #expect(received[2].value("accept") == nil)
    }
}

/// Two nghttpd servers with different certificates trusted by one client (one CA file holding both).
private struct HTTP2ClientMixedOrigins {
    let caFile: String
    init(first: NghttpdServer, second: NghttpdServer) {
        let path = first.folder.appendingPathComponent("both.pem").path
        let bytes = (FileManager.default.contents(atPath: first.caFile) ?? Data()) + (FileManager.default.contents(atPath: second.caFile) ?? Data())
        _ = FileManager.default.createFile(atPath: path, contents: bytes)
        caFile = path
    }
}

@Suite("Proxy settings", .serialized)
struct ProxyTests {
    @Test("with a proxy set, HTTPS goes through CONNECT to the origin (TLS end to end)")
    func throughProxy() async throws {
        let server = try NghttpdServer()
        let proxy = try ConnectProxy()
        let client = try HTTP2Client(configuration: configuration(caFile: server.caFile) { $0.proxy = proxy.url })
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        for _ in 0..<6 {
            let response = try await client.send(HTTPRequest(url: server.origin + "/hello.txt")).get()
            #expect(response.status == 200 && response.httpVersion == 2)
            #expect(String(decoding: response.body, as: UTF8.self) == NghttpdServer.helloBody)
        }
        // Every tunnel goes to the origin, and tunnels are reused. On a loaded machine libcurl
        // now and then opens a second one, so reuse is checked as "at most one tunnel for every
        // two requests".
        let connects = proxy.connects
        #expect(!connects.isEmpty && connects.allSatisfy { $0 == "127.0.0.1:\(server.port)" }, "\(connects)")
        #expect(connects.count <= 3, "tunnels reused: \(connects.count) for 6 requests")
    }

    @Test("a host in noProxy is reached directly")
    func noProxyHost() async throws {
        let server = try NghttpdServer()
        let proxy = try ConnectProxy()
        let client = try HTTP2Client(configuration: configuration(caFile: server.caFile) {
            $0.proxy = proxy.url
            $0.noProxy = "example.com,127.0.0.1"
        })
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        #expect(try await client.send(HTTPRequest(url: server.origin + "/hello.txt")).get().status == 200)
        #expect(proxy.connects.isEmpty)
    }

    @Test("a proxy that refuses the tunnel fails the request as a connect error, not a hang")
    func refusedTunnel() async throws {
        let proxy = try ConnectProxy()
        let client = try HTTP2Client(configuration: configuration(caFile: nil) { $0.proxy = proxy.url })
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        // The test proxy only tunnels to 127.0.0.1; a name is answered 403 (nothing leaves the machine).
        let result = await client.send(HTTPRequest(url: "https://push.invalid/x", timeout: .seconds(10)))
        guard case .failure = result else {
            Issue.record("expected a failure, got \(result)")
            return
        }
        #expect(proxy.connects == ["push.invalid:443"])
    }

    @Test("proxy URLs: an http(s) or socks scheme, a host, a valid port", arguments: [
        ("http://127.0.0.1:3128", true), ("https://proxy.example.com", true), ("socks5h://user:pw@proxy:1080", true),
        ("SOCKS4a://p:1", true), ("socks5://[::1]:1080", true),
        ("proxy.example.com:3128", false), ("ftp://proxy:21", false), ("http://", false), ("http://:3128", false),
        ("http://proxy:0", false), ("http://proxy:99999", false), ("http://pro xy:1", false), ("http://proxy:1\n", false),
    ])
    func proxyValidation(proxy: String, valid: Bool) {
        let problem = HTTPClientConfiguration.proxyProblem(proxy)
        #expect((problem == nil) == valid, "\(proxy): \(problem ?? "accepted")")
        if let problem { #expect(!problem.contains("pw@"), "never echoes a password: \(problem)") }
    }

    @Test("an invalid proxy makes the client refuse to start; the user-info is redacted")
    func invalidProxyRefused() {
        #expect(throws: HTTPClientError.self) { _ = try HTTP2Client(configuration: configuration(caFile: nil) { $0.proxy = "localhost:3128" }) }
        #expect(HTTPClientConfiguration.redacted("http://user:secret@proxy:3128/") == "http://<redacted>@proxy:3128/")
        #expect(HTTPClientConfiguration.redacted("socks5h://proxy:1080") == "socks5h://proxy:1080")
    }
}

@Suite("CURLU path replacement")
struct CURLUPathTests {
    @Test("where the path starts", arguments: [
        ("https://a/x", 9), ("https://a:443/x?y", 13), ("http://a?q", 8), ("https://u:p@h/p", 13), ("https://a", -1),
        ("a/b", -1), ("https:/a/b", -1), ("", -1),
    ])
    func pathStart(url: String, expected: Int) {
        #expect(CurlTransfer.pathStart(url) ?? -1 == expected)
    }

    @Test("plain paths are replaced as they are; anything libcurl's parser would change is parsed whole", arguments: [
        ("/3/device/0123abcdef", true), ("/v1/projects/p-1/messages:send", true), ("/wpush/v2/gAAAAA_-x~", true), ("/a.b/c.", true),
        ("/.well-known/x", true), ("/", true),
        ("/a/../b", false), ("/a/./b", false), ("/a/..", false), ("/a/.", false), ("/a%20b", false), ("/a?b", false), ("/a#b", false),
        ("/a b", false), ("/ä", false), ("a", false), ("/a\\b", false),
    ])
    func plainPath(path: String, plain: Bool) {
        #expect(CurlTransfer.isPlainPath(path) == plain)
    }
}
