import Foundation
@testable import PushHTTP
import PushTestSupport
import Synchronization
import Testing

@Suite("HTTP2Client against nghttpd over TLS", .serialized)
struct HTTP2ClientTests {
    @Test("GET returns the file over HTTP/2 with lower-cased headers")
    func getRoundTrip() async throws {
        let server = try NghttpdServer()
        let client = try HTTP2Client(configuration: configuration(caFile: server.caFile))
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        let response = try await client.send(HTTPRequest(url: "\(server.origin)/hello.txt")).get()
        #expect(response.status == 200)
        #expect(response.httpVersion == 2)
        #expect(String(decoding: response.body, as: UTF8.self) == NghttpdServer.helloBody)
        #expect(response.header("Content-Length") == "\(NghttpdServer.helloBody.utf8.count)")
        #expect(response.header("server")?.hasPrefix("nghttpd") == true)
        #expect(response.headers.allSatisfy { $0.name == $0.name.lowercased() })
        #expect(response.connectionsOpened == 1)
        #expect(response.totalSeconds > 0)
        // Only the fields asked for (any case), in the order asked, from libcurl's store; one it lacks is absent.
        let subset = try await client.send(HTTPRequest(url: "\(server.origin)/hello.txt", responseHeaders: ["Server", "x-missing", "content-length"])).get()
        #expect(subset.headers.map(\.name) == ["server", "content-length"])
        #expect(subset.header("content-length") == response.header("content-length"))
        #expect(subset.header("date") == nil && response.header("date") != nil)
        let none = try await client.send(HTTPRequest(url: "\(server.origin)/hello.txt", responseHeaders: [])).get()
        #expect(none.status == 200 && none.headers.isEmpty)
    }

    @Test("POST bodies arrive intact, concurrently, each echoed back")
    func postRoundTrip() async throws {
        let server = try NghttpdServer()
        let client = try HTTP2Client(configuration: configuration(caFile: server.caFile))
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        let results = await withTaskGroup(of: (Int, Result<HTTPResponse, HTTPTransportError>).self) { group in
            for i in 0..<40 {
                // Sizes from empty to 96 KiB: larger than one DATA frame and flow-control window steps.
                let body = (0..<(i * 2500)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) }
                group.addTask {
                    let request = HTTPRequest(method: "POST", url: "\(server.origin)/echo", headers: [HTTPHeader(name: "content-type", value: "application/octet-stream")], body: body)
                    return (i, await client.send(request))
                }
            }
            var all: [(Int, Result<HTTPResponse, HTTPTransportError>)] = []
            for await result in group { all.append(result) }
            return all
        }
        #expect(results.count == 40)
        for (i, result) in results {
            let expected = (0..<(i * 2500)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) }
            let response = try result.get()
            #expect(response.status == 200)
            #expect(response.httpVersion == 2)
            #expect(response.body == expected, "body \(i) differs")
        }
    }

    @Test("10,000 consecutive requests answered 404 never stall and share one connection")
    func manyConsecutive404s() throws {
        let server = try NghttpdServer()
        let client = try HTTP2Client(configuration: configuration(caFile: server.caFile))
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        // A stall is one request waiting for something that never comes: each request carries a
        // 5 s timeout (a stalled one fails with .timeout), and the slowest submit → completion,
        // timed by the client's own completion on its I/O thread, is bounded well below it. The
        // wait is a semaphore, not an await, so a busy cooperative pool in a loaded parallel run
        // cannot add its own delay; no bound on the total, which measures the machine.
        var slowest = Duration.zero
        var connections = 0
        var notFound = 0
        for i in 0..<10_000 {
            let done = DispatchSemaphore(value: 0)
            let outcome = Mutex<(Result<HTTPResponse, HTTPTransportError>, Duration)?>(nil)
            let start = ContinuousClock.now
            client.submit(HTTPRequest(url: "\(server.origin)/missing/\(i)", timeout: .seconds(5))) { result in
                outcome.withLock { $0 = (result, ContinuousClock.now - start) }
                done.signal()
            }
            done.wait()
            let (result, took) = try #require(outcome.withLock { $0 })
            let response = try result.get()
            // Request 0 also connects and handshakes (seconds under a loaded parallel run).
            if i > 0 { slowest = max(slowest, took) }
            connections += response.connectionsOpened
            if response.status == 404 && !response.body.isEmpty && response.httpVersion == 2 { notFound += 1 }
        }
        #expect(notFound == 10_000)
        #expect(connections == 1)
        #expect(slowest < .seconds(3), "slowest request took \(slowest)")
        #expect(client.inFlight == 0)
    }

    @Test("held wake-ups: a burst submitted between holdWakeUps and releaseWakeUps wakes the I/O thread once, and every request completes")
    func heldBurst() throws {
        let server = try NghttpdServer()
        let client = try HTTP2Client(configuration: configuration(caFile: server.caFile))
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        // Warm: the connection is open, the loop idle in its wait.
        let warm = DispatchSemaphore(value: 0)
        client.submit(HTTPRequest(url: "\(server.origin)/missing/warm", timeout: .seconds(5))) { _ in warm.signal() }
        warm.wait()
        let before = client.wakeUpsSent
        let group = DispatchGroup()
        let answered = Mutex(0)
        client.holdWakeUps()
        client.holdWakeUps() // nested: only the outer release wakes
        for i in 0..<50 {
            group.enter()
            client.submit(HTTPRequest(url: "\(server.origin)/missing/\(i)", timeout: .seconds(5))) { result in
                if case .success(let response) = result, response.status == 404 { answered.withLock { $0 += 1 } }
                group.leave()
            }
        }
        #expect(client.wakeUpsSent == before, "no wake-up while held")
        client.releaseWakeUps()
        #expect(client.wakeUpsSent == before, "the inner release does not wake")
        client.releaseWakeUps()
        #expect(group.wait(timeout: .now() + 10) == .success)
        #expect(answered.withLock { $0 } == 50)
        // The loop may also have taken part of the burst on a turn of its own (its idle wait is
        // capped at 1 s); the release then had nothing left to wake it for.
        #expect(client.wakeUpsSent - before <= 1)
        #expect(client.inFlight == 0)
    }

    @Test("200 concurrent requests are multiplexed on at most maxConnectionsPerHost connections", arguments: [1, 2])
    func multiplexing(maxConnections: Int) async throws {
        let server = try NghttpdServer() // at most 100 concurrent streams per connection
        let client = try HTTP2Client(configuration: configuration(caFile: server.caFile) { $0.maxConnectionsPerHost = maxConnections })
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        let responses = Mutex<[Result<HTTPResponse, HTTPTransportError>]>([])
        for _ in 0..<200 {
            client.submit(HTTPRequest(url: "\(server.origin)/hello.txt")) { result in
                responses.withLock { $0.append(result) }
            }
        }
        #expect(eventually(timeout: 20) { responses.withLock { $0.count } == 200 })
        let all = responses.withLock { $0 }.compactMap { try? $0.get() }
        #expect(all.count == 200)
        #expect(all.allSatisfy { $0.status == 200 && $0.httpVersion == 2 })
        let opened = all.reduce(0) { $0 + $1.connectionsOpened }
        #expect(opened >= 1 && opened <= maxConnections, "opened \(opened) connections")
        #expect(client.inFlight == 0)
    }

    @Test("a server that accepts but never answers ends in .timeout at the request timeout")
    func requestTimeout() async throws {
        let silent = try SilentListener()
        let client = try HTTP2Client(configuration: configuration(caFile: nil))
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        let start = ContinuousClock.now
        let result = await client.send(HTTPRequest(url: "https://127.0.0.1:\(silent.port)/", timeout: .milliseconds(300)))
        #expect(result.failure == .timeout)
        #expect(result.failure?.isRetryable == true)
        let seconds = elapsed(since: start)
        // The bound only tells "ended by the timeout" from "hung": a loaded 2-core CI machine
        // can take seconds to schedule the answer.
        #expect(seconds >= 0.25 && seconds < 30, "took \(seconds) s")
    }

    @Test("without the CA file the self-signed server fails TLS verification")
    func tlsVerification() async throws {
        let server = try NghttpdServer()
        let client = try HTTP2Client(configuration: configuration(caFile: nil))
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        let result = await client.send(HTTPRequest(url: "\(server.origin)/hello.txt"))
        guard case .tls = result.failure else {
            Issue.record("expected .tls, got \(result)")
            return
        }
        #expect(result.failure?.isRetryable == false)
    }

    @Test("the CA file adds trust: the bundle is the system bundle plus the file, and the test server verifies")
    func caFileAddsTrust() async throws {
        let server = try NghttpdServer()
        let system = "/etc/ssl/certs/ca-certificates.crt"
        let systemBytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: system)))
        let extraBytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: server.caFile)))
        let combined = try CABundleBuilder.combined(extraFile: server.caFile, systemBundlePath: system)
        #expect(combined.starts(with: systemBytes))
        #expect(combined.suffix(extraBytes.count).elementsEqual(extraBytes))

        let client = try HTTP2Client(configuration: configuration(caFile: server.caFile))
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        #expect(try await client.send(HTTPRequest(url: "\(server.origin)/hello.txt")).get().status == 200)
    }

    @Test("an unreadable or non-PEM CA file is refused at start")
    func badCAFile() throws {
        let folder = try TemporaryFolder.make(prefix: "http-ca")
        defer { try? FileManager.default.removeItem(at: folder) }
        let notPEM = folder.appendingPathComponent("not.pem")
        try Data("hello".utf8).write(to: notPEM)
        #expect(throws: HTTPClientError.self) { _ = try HTTP2Client(configuration: configuration(caFile: notPEM.path)) }
        #expect(throws: HTTPClientError.self) { _ = try HTTP2Client(configuration: configuration(caFile: "/nonexistent/ca.pem")) }
    }

    @Test("connection refused is .connect")
    func connectionRefused() async throws {
        let port = freeLoopbackPort()
        let client = try HTTP2Client(configuration: configuration(caFile: nil))
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        let result = await client.send(HTTPRequest(url: "https://127.0.0.1:\(port)/"))
        guard case .connect = result.failure else {
            Issue.record("expected .connect, got \(result)")
            return
        }
    }

    @Test("a response body over maxResponseBodyBytes fails as unanswered (the server answered, the answer is unusable)")
    func responseLimit() async throws {
        let server = try NghttpdServer()
        let client = try HTTP2Client(configuration: configuration(caFile: server.caFile) { $0.maxResponseBodyBytes = 1000 })
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        let big = await client.send(HTTPRequest(url: "\(server.origin)/big.bin"))
        guard case .unanswered(.other, let detail) = big.failure, detail.contains("larger than 1000 bytes") else {
            Issue.record("expected .unanswered(.other, …larger than 1000 bytes…), got \(big)")
            return
        }
        // The handle is reusable afterwards.
        let small = try await client.send(HTTPRequest(url: "\(server.origin)/hello.txt")).get()
        #expect(small.status == 200)
    }

    @Test("malformed requests fail as .invalidRequest without reaching the server", arguments: [
        HTTPRequest(url: "http://127.0.0.1:1/plain"),
        HTTPRequest(url: "ftp://127.0.0.1:1/file"),
        HTTPRequest(url: "https://127.0.0.1:1/a b"),
        HTTPRequest(url: "https://127.0.0.1:1/", headers: [HTTPHeader(name: "x-evil", value: "a\r\nx-injected: 1")]),
        HTTPRequest(url: "https://127.0.0.1:1/", headers: [HTTPHeader(name: "bad name", value: "v")]),
        HTTPRequest(method: "GE T", url: "https://127.0.0.1:1/"),
    ])
    func invalidRequests(request: HTTPRequest) async throws {
        let client = try HTTP2Client(configuration: configuration(caFile: nil))
        defer { client.shutdown(drainTimeout: .seconds(1)) }
        let result = await client.send(request)
        guard case .invalidRequest = result.failure else {
            Issue.record("expected .invalidRequest, got \(result)")
            return
        }
        #expect(result.failure?.isRetryable == false)
    }

    @Test("shutdown lets in-flight requests finish, then later submits fail at once")
    func shutdownDrains() async throws {
        let server = try NghttpdServer()
        let client = try HTTP2Client(configuration: configuration(caFile: server.caFile))
        let results = Mutex<[Result<HTTPResponse, HTTPTransportError>]>([])
        for i in 0..<100 {
            client.submit(HTTPRequest(url: "\(server.origin)/hello.txt?\(i)")) { result in
                results.withLock { $0.append(result) }
            }
        }
        client.shutdown(drainTimeout: .seconds(10))
        let all = results.withLock { $0 }
        #expect(all.count == 100)
        #expect(all.allSatisfy { (try? $0.get())?.status == 200 })
        #expect(client.inFlight == 0)

        let late = Mutex<Result<HTTPResponse, HTTPTransportError>?>(nil)
        client.submit(HTTPRequest(url: "\(server.origin)/hello.txt")) { result in late.withLock { $0 = result } }
        // Completed synchronously, before submit returned.
        #expect(late.withLock { $0 }?.failure == .shutdown)
        #expect(await client.send(HTTPRequest(url: "\(server.origin)/hello.txt")).failure == .shutdown)
        client.shutdown(drainTimeout: .seconds(1)) // idempotent
    }

    @Test("shutdown aborts what is still running at the drain timeout with .shutdown")
    func shutdownAbortsAfterDrainTimeout() throws {
        let silent = try SilentListener()
        let client = try HTTP2Client(configuration: configuration(caFile: nil) { $0.connectTimeout = .seconds(30) })
        let results = Mutex<[Result<HTTPResponse, HTTPTransportError>]>([])
        for _ in 0..<5 {
            client.submit(HTTPRequest(url: "https://127.0.0.1:\(silent.port)/", timeout: .seconds(30))) { result in
                results.withLock { $0.append(result) }
            }
        }
        let start = ContinuousClock.now
        client.shutdown(drainTimeout: .milliseconds(200))
        #expect(elapsed(since: start) < 3)
        let all = results.withLock { $0 }
        #expect(all.count == 5)
        #expect(all.allSatisfy { $0.failure == .shutdown })
        #expect(client.inFlight == 0)
    }

    @Test("a client refuses cleartext HTTP/2 on libcurl < 8.0")
    func refusesCleartextOnOldLibcurl() throws {
        var configuration = HTTPClientConfiguration()
        configuration.allowCleartextHTTP2 = true
        if LibcurlCheck.info().versionNumber < 0x080000 {
            #expect(throws: HTTPClientError.self) { _ = try HTTP2Client(configuration: configuration) }
        } else {
            let client = try HTTP2Client(configuration: configuration)
            client.shutdown(drainTimeout: .zero)
        }
    }

    @Test("invalid pool sizes are refused", arguments: [
        { (c: inout HTTPClientConfiguration) in c.maxConnectionsPerHost = 0 },
        { (c: inout HTTPClientConfiguration) in c.maxConcurrentStreams = 0 },
        { (c: inout HTTPClientConfiguration) in c.requestTimeout = .zero },
    ] as [@Sendable (inout HTTPClientConfiguration) -> Void])
    func invalidConfiguration(adjust: @Sendable (inout HTTPClientConfiguration) -> Void) {
        #expect(throws: HTTPClientError.self) { _ = try HTTP2Client(configuration: configuration(caFile: nil, adjust)) }
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
