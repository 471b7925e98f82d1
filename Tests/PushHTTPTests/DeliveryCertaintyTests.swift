import Foundation
@testable import PushHTTP
import PushTestSupport
import Synchronization
import Testing

/// Every way an HTTP/2 request can fail, against the real sandbox (`pushworker-dev sandbox`, TLS,
/// HTTP/2, its transport faults): the client's verdict — not delivered or unanswered — and what
/// the sandbox accepted (how many copies a device would show). docs/http-client.md "When the
/// server does not answer", docs/sandbox.md "Transport faults".
@Suite("Delivery certainty against the sandbox", .serialized)
struct DeliveryCertaintyTests {
    static let token = String(repeating: "ab", count: 32)

    /// The sandbox (no provider auth: the requests are plain APNs sends) and a control client of
    /// its own: its connection carries only `/_sandbox/` requests, so an outage spares it.
    struct Harness {
        let sandbox: SandboxServer
        let control: HTTP2Client

        init() throws {
            sandbox = try SandboxServer(arguments: ["--no-auth"])
            control = try HTTP2Client(configuration: configuration(caFile: sandbox.certificatePath))
        }

        func client(_ adjust: (inout HTTPClientConfiguration) -> Void = { _ in }) throws -> HTTP2Client {
            try HTTP2Client(configuration: configuration(caFile: sandbox.certificatePath, adjust))
        }

        /// An APNs send whose msgId (`custom.i`) the sandbox counts; `token` picks the path.
        func send(_ msgID: String, token: String = DeliveryCertaintyTests.token, timeout: Duration = .seconds(10)) -> HTTPRequest {
            HTTPRequest(method: "POST", url: "\(sandbox.origin)/3/device/\(token)",
                        headers: [HTTPHeader(name: "apns-topic", value: "com.example.app"), HTTPHeader(name: "apns-push-type", value: "alert")],
                        body: Array(#"{"aps":{"alert":"hello"},"custom":{"i":"\#(msgID)"}}"#.utf8), timeout: timeout)
        }

        func setFaults(_ json: String) async throws {
            let reply = try await control.send(HTTPRequest(method: "POST", url: "\(sandbox.origin)/_sandbox/faults", body: Array(json.utf8))).get()
            #expect(reply.status == 200, "faults \(json): \(String(decoding: reply.body, as: UTF8.self))")
        }

        /// How many times the sandbox accepted `msgID` (`GET /_sandbox/accepted`).
        func accepted(_ msgID: String) async throws -> Int {
            let reply = try await control.send(HTTPRequest(url: "\(sandbox.origin)/_sandbox/accepted?msgId=\(msgID)")).get()
            let object = try JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any]
            return try #require(object?["accepted"] as? Int)
        }

        func stats() async throws -> [String: Any] {
            let reply = try await control.send(HTTPRequest(url: "\(sandbox.origin)/_sandbox/stats")).get()
            return try #require(try JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any])
        }

        /// `transportFaults.<name>` of the stats.
        func faultCount(_ name: String) async throws -> Int {
            let faults = try await stats()["transportFaults"] as? [String: Any]
            return try #require(faults?[name] as? Int)
        }

        func close() { control.shutdown(drainTimeout: .seconds(1)) }
    }

    /// Polls `condition` every 20 ms for up to 10 s; whether it came to hold.
    static func waitUntil(_ condition: () async throws -> Bool) async rethrows -> Bool {
        for _ in 0..<500 {
            if try await condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return try await condition()
    }

    /// Where a submitted request's result lands.
    final class Outcome: Sendable {
        private let value = Mutex<Result<HTTPResponse, HTTPTransportError>?>(nil)
        func set(_ result: Result<HTTPResponse, HTTPTransportError>) { value.withLock { $0 = result } }
        var result: Result<HTTPResponse, HTTPTransportError>? { value.withLock { $0 } }
    }

    /// Submits `request`; its result lands in the outcome returned.
    static func submit(_ client: HTTP2Client, _ request: HTTPRequest) -> Outcome {
        let outcome = Outcome()
        client.submit(request) { outcome.set($0) }
        return outcome
    }

    static func expectUnanswered(_ result: Result<HTTPResponse, HTTPTransportError>?, _ cause: HTTPUnansweredCause,
                                 sourceLocation: SourceLocation = #_sourceLocation) {
        guard case .failure(let error) = result, case .unanswered(let got, _) = error, got == cause else {
            Issue.record("expected .unanswered(.\(cause), _), got \(String(describing: result))", sourceLocation: sourceLocation)
            return
        }
        #expect(error.certainty == .unknown, sourceLocation: sourceLocation)
    }

    @Test("an accepted request never answered (hangShare, or latency past the timeout) is unanswered(.timeout): accepted once",
          arguments: [#"{"hangShare":1}"#, #"{"latencyMs":3000}"#])
    func timeoutAfterSending(faults: String) async throws {
        let harness = try Harness()
        defer { harness.close() }
        let client = try harness.client()
        defer { client.shutdown(drainTimeout: .zero) }
        try await harness.setFaults(faults)
        let result = await client.send(harness.send("hang-1", timeout: .milliseconds(600)))
        Self.expectUnanswered(result, .timeout)
        #expect(try await harness.accepted("hang-1") == 1)
    }

    @Test("nothing listening is .connect, not delivered")
    func nothingListening() async throws {
        let client = try HTTP2Client(configuration: configuration(caFile: nil))
        defer { client.shutdown(drainTimeout: .zero) }
        let result = await client.send(HTTPRequest(method: "POST", url: "https://127.0.0.1:\(freeLoopbackPort())/3/device/\(Self.token)", body: [1]))
        guard case .failure(let error) = result, case .connect = error else {
            Issue.record("expected .connect, got \(result)")
            return
        }
        #expect(error.certainty == .notDelivered)
    }

    @Test("a TLS handshake that never finishes is .timeout at the connect timeout, not delivered")
    func connectTimeout() async throws {
        let silent = try SilentListener()
        let client = try HTTP2Client(configuration: configuration(caFile: nil) { $0.connectTimeout = .milliseconds(300) })
        defer { client.shutdown(drainTimeout: .zero) }
        let result = await client.send(HTTPRequest(method: "POST", url: "https://127.0.0.1:\(silent.port)/3/device/\(Self.token)", body: [1], timeout: .seconds(10)))
        #expect(result.failure == .timeout)
        #expect(result.failure?.certainty == .notDelivered)
    }

    @Test("a certificate the client does not trust is .tls, not delivered: the sandbox saw no request")
    func tlsRefused() async throws {
        let harness = try Harness()
        defer { harness.close() }
        let untrusting = try HTTP2Client(configuration: configuration(caFile: nil))
        defer { untrusting.shutdown(drainTimeout: .zero) }
        let result = await untrusting.send(harness.send("tls-1"))
        guard case .failure(let error) = result, case .tls = error else {
            Issue.record("expected .tls, got \(result)")
            return
        }
        #expect(error.certainty == .notDelivered)
        #expect(try await harness.accepted("tls-1") == 0)
        #expect(try await harness.stats()["requests"] as? Int == 0)
    }

    @Test("RST_STREAM INTERNAL_ERROR after the request (resetShare) is unanswered(.streamReset): accepted once")
    func streamReset() async throws {
        let harness = try Harness()
        defer { harness.close() }
        let client = try harness.client()
        defer { client.shutdown(drainTimeout: .zero) }
        try await harness.setFaults(#"{"resetShare":1}"#)
        let result = await client.send(harness.send("reset-1"))
        Self.expectUnanswered(result, .streamReset)
        #expect(try await harness.accepted("reset-1") == 1)
        #expect(try await harness.faultCount("reset") == 1)
    }

    @Test("a connection closed after the request was accepted (dropShare) is unanswered(.connectionLost); libcurl does not send it again on a fresh connection",
          arguments: [true, false])
    func connectionDropped(reused: Bool) async throws {
        let harness = try Harness()
        defer { harness.close() }
        let client = try harness.client()
        defer { client.shutdown(drainTimeout: .zero) }
        if reused {
            // The send below then goes on a reused connection: libcurl 8.14.1 alone would send
            // it again on a fresh one (Curl_retry_request), and the sandbox would accept it twice.
            #expect(try await client.send(harness.send("warm")).get().status == 200)
        }
        try await harness.setFaults(#"{"dropShare":1}"#)
        let result = await client.send(harness.send("drop-1"))
        Self.expectUnanswered(result, .connectionLost)
        #expect(try await harness.accepted("drop-1") == 1, "sent once: not re-sent")
        #expect(try await harness.faultCount("drop") == 1)
        // The client goes on with a new connection.
        try await harness.setFaults(#"{"dropShare":0}"#)
        let after = try await client.send(harness.send("drop-2")).get()
        #expect(after.status == 200 && after.connectionsOpened == 1)
    }

    @Test("libcurl alone (the curl CLI, 8.14.1) sends a request again when its reused connection closes unanswered: the sandbox accepts it twice")
    func libcurlAloneResends() async throws {
        let harness = try Harness()
        defer { harness.close() }
        try await harness.setFaults(#"{"dropShare":1}"#)
        let body = #"{"aps":{"alert":"hello"},"custom":{"i":"cli-1"}}"#
        // One curl run, two transfers: the first (a control request) opens the connection, the
        // second reuses it and is dropped after the sandbox accepted it.
        let run = try runCommand("/usr/bin/curl", [
            "-sS", "--http2", "--cacert", harness.sandbox.certificatePath, "-o", "/dev/null", "\(harness.sandbox.origin)/_sandbox/health",
            "--next", "-sS", "--http2", "--cacert", harness.sandbox.certificatePath, "-o", "/dev/null",
            "-H", "apns-topic: com.example.app", "--data-binary", body, "\(harness.sandbox.origin)/3/device/\(Self.token)",
        ], timeout: 30)
        #expect(run.status != 0, "the second transfer fails in the end: \(run.stderr)")
        #expect(try await harness.accepted("cli-1") == 2, "libcurl re-sent the request on a fresh connection")
    }

    @Test("RST_STREAM REFUSED_STREAM on every attempt (refuseShare) ends not delivered after the gate's re-sends: accepted 0")
    func refusedStream() async throws {
        let harness = try Harness()
        defer { harness.close() }
        let client = try harness.client()
        defer { client.shutdown(drainTimeout: .zero) }
        try await harness.setFaults(#"{"refuseShare":1}"#)
        let result = await client.send(harness.send("refuse-1"))
        guard case .failure(let error) = result, case .protocolError(let text) = error else {
            Issue.record("expected .protocolError, got \(result)")
            return
        }
        #expect(text.contains("refused the stream on \(CurlResendGate.maxRefusedResends + 1) attempts"), "\(text)")
        #expect(error.certainty == .notDelivered)
        #expect(try await harness.accepted("refuse-1") == 0)
        #expect(try await harness.faultCount("refuse") == CurlResendGate.maxRefusedResends + 1)
    }

    @Test("GOAWAY below the stream: the lower stream is answered, the refused one is sent again transparently on a fresh connection and accepted once")
    func goawayBelowTheStream() async throws {
        let harness = try Harness()
        defer { harness.close() }
        let client = try harness.client()
        defer { client.shutdown(drainTimeout: .zero) }
        let lowToken = String(repeating: "cd", count: 32)
        // The lower stream waits 800 ms for its answer; the higher one triggers the GOAWAY.
        try await harness.setFaults(#"{"pathPrefix":"/3/device/\#(lowToken)","latencyMs":800}"#)
        try await harness.setFaults(#"{"pathPrefix":"/3/device/\#(Self.token)","goawayCount":1}"#)
        let low = Self.submit(client, harness.send("low-1", token: lowToken))
        // The lower stream was received (processed, answer pending) before the higher one goes.
        #expect(try await Self.waitUntil { (try await harness.stats()["requests"] as? Int ?? 0) >= 1 })
        let high = try await client.send(harness.send("high-1")).get()
        #expect(high.status == 200)
        #expect(high.connectionsOpened == 1, "sent again on a new connection")
        #expect(await Self.waitUntil { low.result != nil })
        #expect((try? low.result?.get())?.status == 200, "the stream below the GOAWAY's last-stream-id is answered")
        #expect(try await harness.accepted("low-1") == 1)
        #expect(try await harness.accepted("high-1") == 1)
        #expect(try await harness.faultCount("goaway") == 1)
    }

    @Test("GOAWAY below the stream on every attempt (goawayShare) ends not delivered: accepted 0")
    func goawayEveryTime() async throws {
        let harness = try Harness()
        defer { harness.close() }
        let client = try harness.client()
        defer { client.shutdown(drainTimeout: .zero) }
        try await harness.setFaults(#"{"goawayShare":1}"#)
        let result = await client.send(harness.send("goaway-all"))
        guard case .failure(let error) = result, case .protocolError = error else {
            Issue.record("expected .protocolError, got \(result)")
            return
        }
        #expect(error.certainty == .notDelivered)
        #expect(try await harness.accepted("goaway-all") == 0)
        #expect(try await harness.faultCount("goaway") == CurlResendGate.maxRefusedResends + 1)
    }

    /// A client with one connection and one stream: the first request (hung) is on the wire,
    /// the second waits for the stream (in the client's queue or inside libcurl: not sent either way).
    static func hungAndQueued(_ harness: Harness) async throws -> (hung: Outcome, queued: Outcome, client: HTTP2Client) {
        let client = try harness.client {
            $0.maxConnectionsPerHost = 1
            $0.maxConcurrentStreams = 1
        }
        #expect(try await client.send(harness.send("warm")).get().status == 200)
        try await harness.setFaults(#"{"hangShare":1}"#)
        let hung = submit(client, harness.send("hung-1", timeout: .seconds(30)))
        #expect(try await waitUntil { try await harness.accepted("hung-1") == 1 })
        let queued = submit(client, harness.send("queued-1", timeout: .seconds(30)))
        return (hung, queued, client)
    }

    @Test("shutdown(drainTimeout:) while a written request is unanswered ends it unanswered(.shutdown): accepted once")
    func shutdownWhileUnanswered() async throws {
        let harness = try Harness()
        defer { harness.close() }
        let (hung, _, client) = try await Self.hungAndQueued(harness)
        client.shutdown(drainTimeout: .milliseconds(300))
        Self.expectUnanswered(hung.result, .shutdown)
        #expect(try await harness.accepted("hung-1") == 1)
    }

    @Test("shutdown(drainTimeout:) before a queued request started sending ends it .shutdown, not delivered: accepted 0")
    func shutdownBeforeSending() async throws {
        let harness = try Harness()
        defer { harness.close() }
        let (_, queued, client) = try await Self.hungAndQueued(harness)
        client.shutdown(drainTimeout: .milliseconds(300))
        #expect(queued.result?.failure == .shutdown)
        #expect(try await harness.accepted("queued-1") == 0)
    }

    @Test("an outage closes the provider connection; new connections fail their handshake (.tls, not delivered); the control connection keeps working")
    func outage() async throws {
        let harness = try Harness()
        defer { harness.close() }
        let client = try harness.client()
        defer { client.shutdown(drainTimeout: .zero) }
        #expect(try await client.send(harness.send("warm")).get().status == 200)
        try await harness.setFaults(#"{"outageSeconds":30}"#)
        let result = await client.send(harness.send("outage-1"))
        guard case .failure(let error) = result, case .tls = error else {
            Issue.record("expected .tls, got \(result)")
            return
        }
        #expect(error.certainty == .notDelivered)
        // Read during the outage, on the control connection.
        #expect(try await harness.accepted("outage-1") == 0)
        let faults = try #require(try await harness.stats()["transportFaults"] as? [String: Any])
        #expect((faults["outageClosedConnections"] as? Int ?? 0) >= 2, "the warm connection and the refused handshake: \(faults)")
        try await harness.setFaults(#"{"outageSeconds":0}"#)
        #expect(try await client.send(harness.send("outage-2")).get().status == 200)
    }

    @Test("a request in flight when an outage begins is unanswered(.connectionLost): accepted once")
    func outageInFlight() async throws {
        let harness = try Harness()
        defer { harness.close() }
        let client = try harness.client()
        defer { client.shutdown(drainTimeout: .zero) }
        try await harness.setFaults(#"{"latencyMs":5000}"#)
        let pending = Self.submit(client, harness.send("inflight-1"))
        #expect(try await Self.waitUntil { try await harness.accepted("inflight-1") == 1 })
        try await harness.setFaults(#"{"outageSeconds":30}"#)
        #expect(await Self.waitUntil { pending.result != nil })
        Self.expectUnanswered(pending.result, .connectionLost)
        #expect(try await harness.accepted("inflight-1") == 1)
    }
}
