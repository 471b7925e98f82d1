import Foundation
import PushCore
import PushEncoding
import PushTestSupport
import Testing
@testable import PushSandbox

/// Transport faults, path-scoped fault sets, the outage and the accept counter
/// (docs/sandbox.md "Transport faults", "Path-scoped faults"): decided by the router without
/// I/O, performed by the event loop on the wire (seen with the nghttp and curl CLIs).
@Suite("Sandbox transport faults and scoped fault sets")
struct SandboxTransportFaultsTests {
    static func router(_ faults: SandboxFaults = SandboxFaults()) -> (SandboxRouter, SandboxState) {
        SandboxRouterTests.router(faults: faults)
    }

    static func control(_ router: SandboxRouter, _ method: String, _ path: String, _ body: String = "") -> SandboxResponse {
        var request = SandboxRequest()
        request.method = method
        request.path = path
        request.body = Array(body.utf8)
        return router.handle(request)
    }

    static func faults(_ json: String) -> SandboxFaults {
        SandboxFaults().updated(with: JSONValue.parse(json) ?? .null) ?? SandboxFaults()
    }

    // MARK: decided by the router

    @Test("refuse and goaway are decided before processing: the send is neither processed nor recorded",
          arguments: [(#"{"refuseShare":1}"#, SandboxTransportFault.refuse), (#"{"goawayShare":1}"#, .goaway)])
    func beforeProcessing(json: String, fault: SandboxTransportFault) {
        let (router, state) = Self.router(Self.faults(json))
        let response = router.handle(SandboxRouterTests.apns())
        #expect(response.transportFault == fault)
        #expect(state.acceptedCount(msgID: "m1") == 0)
        #expect(JSONValue.parse(state.statsJSON())?["requests"]?.numberValue == 0)
    }

    @Test("reset, drop and hang come after the send was accepted: recorded once, like a 200",
          arguments: [(#"{"resetShare":1}"#, SandboxTransportFault.reset), (#"{"dropShare":1}"#, .drop), (#"{"hangShare":1}"#, .hang)])
    func afterAcceptance(json: String, fault: SandboxTransportFault) {
        let (router, state) = Self.router(Self.faults(json))
        let response = router.handle(SandboxRouterTests.apns())
        #expect(response.status == 200)
        #expect(response.transportFault == fault)
        #expect(state.acceptedCount(msgID: "m1") == 1)
        #expect(state.messagesText(platform: "ios").contains(#""msgId":"m1""#))
    }

    @Test("a send the emulator does not accept is answered as usual, whatever the transport faults")
    func notAccepted() {
        let (router, state) = Self.router(Self.faults(#"{"resetShare":1,"dropShare":1,"hangShare":1}"#))
        let response = router.handle(SandboxRouterTests.apns(path: "/3/device/dead" + String(repeating: "0", count: 60)))
        #expect(response.status == 410)
        #expect(response.transportFault == nil)
        #expect(state.acceptedCount(msgID: "m1") == 0)
    }

    @Test("transport faults spare token and control endpoints")
    func spared() {
        let (router, _) = Self.router(Self.faults(#"{"refuseShare":1,"goawayShare":1,"resetShare":1,"dropShare":1,"hangShare":1}"#))
        #expect(Self.control(router, "GET", "/_sandbox/stats").transportFault == nil)
        #expect(Self.control(router, "POST", "/token", "grant_type=x").transportFault == nil)
        #expect(Self.control(router, "POST", SandboxRouter.hmsTokenPath, "grant_type=x").transportFault == nil)
    }

    @Test("goawayCount applies to the next N sends, then sends are processed again")
    func goawayCount() {
        let (router, state) = Self.router(Self.faults(#"{"goawayCount":2}"#))
        #expect(router.handle(SandboxRouterTests.apns()).transportFault == .goaway)
        #expect(router.handle(SandboxRouterTests.apns()).transportFault == .goaway)
        let third = router.handle(SandboxRouterTests.apns())
        #expect(third.status == 200 && third.transportFault == nil)
        #expect(state.faults.goawayCount == 0)
        #expect(state.acceptedCount(msgID: "m1") == 1)
    }

    @Test("the new fault fields parse, keep the old ones, and refuse bad values", arguments: [
        (#"{"refuseShare":0.5,"goawayShare":0.25,"goawayCount":3,"resetShare":1,"dropShare":0,"hangShare":0.1,"throttleShare":0.2}"#, true),
        (#"{"resetShare":1.5}"#, false), (#"{"dropShare":-1}"#, false), (#"{"goawayCount":1.5}"#, false),
        (#"{"hangShare":"1"}"#, false), (#"{"outageSeconds":5}"#, false),
    ])
    func parsing(json: String, isValid: Bool) throws {
        let parsed = SandboxFaults().updated(with: JSONValue.parse(json) ?? .null)
        #expect((parsed != nil) == isValid)
        if let parsed {
            #expect(parsed.refuseShare == 0.5 && parsed.goawayShare == 0.25 && parsed.goawayCount == 3 && parsed.resetShare == 1
                    && parsed.dropShare == 0 && parsed.hangShare == 0.1 && parsed.throttleShare == 0.2)
            let shown = try #require(JSONValue.parse(parsed.json))
            for key in ["refuseShare", "goawayShare", "goawayCount", "resetShare", "dropShare", "hangShare", "throttleShare", "latencyMs"] {
                #expect(shown[key] != nil, "\(key)")
            }
        }
    }

    // MARK: path-scoped sets

    @Test("the longest matching prefix picks the set; other paths get the default set")
    func longestPrefix() {
        var table = SandboxFaultTable(base: Self.faults(#"{"errorShare":1}"#))
        table.set(Self.faults(#"{"throttleShare":1}"#), scope: "/v1/projects/")
        table.set(Self.faults(#"{"latencyMs":5}"#), scope: "/v1/projects/app-a-project")
        table.set(Self.faults(#"{"hangShare":1}"#), scope: "/wp/")
        #expect(table.scoped.map(\.pathPrefix) == ["/v1/projects/app-a-project", "/v1/projects/", "/wp/"])
        #expect(table.faults(for: "/v1/projects/app-a-project/messages:send").faults.latencyMilliseconds == 5)
        #expect(table.faults(for: "/v1/projects/app-b-project/messages:send").faults.throttleShare == 1)
        #expect(table.faults(for: "/wp/sub1").scope == "/wp/")
        let other = table.faults(for: "/3/device/ab")
        #expect(other.scope == nil && other.faults.errorShare == 1)
        table.set(nil, scope: "/v1/projects/")
        #expect(table.faults(for: "/v1/projects/app-b-project/messages:send").scope == nil)
    }

    @Test("one app's FCM project answers 429 with Retry-After: 3600 while another app's sends succeed")
    func scopedThrottle() throws {
        let (router, state) = Self.router()
        let set = Self.control(router, "POST", "/_sandbox/faults", #"{"pathPrefix":"/v1/projects/app-a-project","throttleShare":1,"retryAfter":3600}"#)
        #expect(set.status == 200)
        let message = #"{"message":{"token":"tok_1:abc","data":{"on.msgId":"m9"}}}"#
        let throttled = router.handle(SandboxRouterTests.fcm(message, project: "app-a-project"))
        #expect(throttled.status == 429)
        #expect(throttled.headers.first { $0.name == "retry-after" }?.value == "3600")
        let sent = router.handle(SandboxRouterTests.fcm(message, project: "app-b-project"))
        #expect(sent.status == 200)
        #expect(state.acceptedCount(msgID: "m9") == 1)
        // GET shows the default set at the top level (today's field names) and the scoped ones.
        let shown = try #require(JSONValue.parse(Self.control(router, "GET", "/_sandbox/faults").body))
        #expect(shown["throttleShare"]?.numberValue == 0)
        let scoped = try #require(shown["scoped"]?.arrayValue)
        #expect(scoped.count == 1)
        #expect(scoped.first?["pathPrefix"]?.stringValue == "/v1/projects/app-a-project")
        #expect(scoped.first?["retryAfter"]?.numberValue == 3600)
        // Removed with clear: the project's sends succeed again.
        #expect(Self.control(router, "POST", "/_sandbox/faults", #"{"pathPrefix":"/v1/projects/app-a-project","clear":true}"#).status == 200)
        #expect(router.handle(SandboxRouterTests.fcm(message, project: "app-a-project")).status == 200)
        #expect(state.snapshot.faults.scoped.isEmpty)
    }

    @Test("POST /_sandbox/faults refuses a bad pathPrefix, an outage scoped to a path, an unknown key — and changes nothing", arguments: [
        #"{"pathPrefix":"v1/projects","throttleShare":1}"#, #"{"pathPrefix":5}"#, #"{"pathPrefix":"/wp/","outageSeconds":5}"#,
        #"{"pathPrefix":"/wp/","throttleShare":1,"nonsense":1}"#, #"{"outageSeconds":-1}"#, #"{"clear":"yes"}"#,
    ])
    func refusedUpdates(json: String) {
        let (router, state) = Self.router()
        #expect(Self.control(router, "POST", "/_sandbox/faults", json).status == 400)
        #expect(state.snapshot.faults == SandboxFaultTable(base: SandboxFaults()))
        #expect(state.snapshot.outageUntil == 0)
    }

    @Test("one-shot faults are used up in the set that matched")
    func oneShotScoped() {
        let (router, state) = Self.router()
        let prefix = "/3/device/\(SandboxRouterTests.token)"
        #expect(Self.control(router, "POST", "/_sandbox/faults", #"{"pathPrefix":"\#(prefix)","goawayCount":1}"#).status == 200)
        #expect(router.handle(SandboxRouterTests.apns(path: "/3/device/" + String(repeating: "cd", count: 32))).transportFault == nil)
        #expect(router.handle(SandboxRouterTests.apns()).transportFault == .goaway)
        #expect(router.handle(SandboxRouterTests.apns()).transportFault == nil)
        #expect(state.snapshot.faults.scoped.first?.faults.goawayCount == 0)
    }

    @Test("an outage starts and ends by POST; GET shows the seconds left")
    func outageSwitch() throws {
        let (router, state) = Self.router()
        #expect(Self.control(router, "POST", "/_sandbox/faults", #"{"outageSeconds":30}"#).status == 200)
        #expect(state.snapshot.isOutage(now: EventLoop.now()))
        #expect(state.snapshot.outageGeneration == 1)
        let left = try #require(JSONValue.parse(Self.control(router, "GET", "/_sandbox/faults").body)?["outageSecondsLeft"]?.numberValue)
        #expect(left > 29 && left <= 30)
        #expect(Self.control(router, "POST", "/_sandbox/faults", #"{"outageSeconds":0}"#).status == 200)
        #expect(!state.snapshot.isOutage(now: EventLoop.now()))
    }

    @Test("GET /_sandbox/accepted counts one msgId's acceptances exactly")
    func acceptedEndpoint() throws {
        let (router, _) = Self.router()
        _ = router.handle(SandboxRouterTests.apns())
        _ = router.handle(SandboxRouterTests.apns())
        let reply = Self.control(router, "GET", "/_sandbox/accepted?msgId=m1")
        #expect(reply.status == 200)
        #expect(String(decoding: reply.body, as: UTF8.self) == #"{"msgId":"m1","accepted":2}"#)
        #expect(Self.control(router, "GET", "/_sandbox/accepted?msgId=other").body == Array(#"{"msgId":"other","accepted":0}"#.utf8))
        #expect(Self.control(router, "GET", "/_sandbox/accepted").status == 400)
    }

    // MARK: performed on the wire

    static let token = SandboxRouterTests.token
    static let body = #"{"aps":{"alert":"hi"},"custom":{"i":"w1"}}"#

    /// `nghttp -v` (the nghttp2 client, which never re-sends) of APNs sends to `tokens`, on one
    /// connection in that order; its frame log.
    static func nghttp(_ server: SandboxServer, tokens: [String], timeout: Int = 5) throws -> String {
        let folder = try TemporaryFolder.make(prefix: "nghttp")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("body.json")
        try Data(body.utf8).write(to: file)
        let run = try runCommand("/usr/bin/nghttp", ["-v", "-t", "\(timeout)", "-d", file.path, "-H", "apns-topic: com.example.app"]
                                 + tokens.map { "\(server.origin)/3/device/\($0)" }, timeout: Double(timeout + 10))
        return run.stdout + run.stderr
    }

    static func accepted(_ server: SandboxServer, _ msgID: String) throws -> Int {
        try server.curl("GET", "/_sandbox/accepted?msgId=\(msgID)").json["accepted"] as? Int ?? -1
    }

    static func transportFaults(_ server: SandboxServer) throws -> [String: Any] {
        try server.stats()["transportFaults"] as? [String: Any] ?? [:]
    }

    @Test("resetShare: RST_STREAM INTERNAL_ERROR on the wire, the message accepted once")
    func resetOnTheWire() throws {
        let server = try SandboxServer(arguments: ["--no-auth"])
        #expect(try server.curl("POST", "/_sandbox/faults", body: Data(#"{"resetShare":1}"#.utf8)).status == 200)
        let log = try Self.nghttp(server, tokens: [Self.token])
        #expect(log.contains("recv RST_STREAM frame") && log.contains("error_code=INTERNAL_ERROR(0x02)"), "\(log)")
        #expect(!log.contains(":status: 200"))
        #expect(try Self.accepted(server, "w1") == 1)
        #expect(try Self.transportFaults(server)["reset"] as? Int == 1)
    }

    @Test("refuseShare: RST_STREAM REFUSED_STREAM on the wire, nothing recorded")
    func refuseOnTheWire() throws {
        let server = try SandboxServer(arguments: ["--no-auth"])
        #expect(try server.curl("POST", "/_sandbox/faults", body: Data(#"{"refuseShare":1}"#.utf8)).status == 200)
        let log = try Self.nghttp(server, tokens: [Self.token])
        #expect(log.contains("recv RST_STREAM frame") && log.contains("error_code=REFUSED_STREAM(0x07)"), "\(log)")
        #expect(try Self.accepted(server, "w1") == 0)
        #expect(try server.stats()["requests"] as? Int == 0)
    }

    @Test("goaway: GOAWAY with the lower stream as last-stream-id; the lower stream answered, the higher one not recorded, then the connection closes")
    func goawayOnTheWire() throws {
        let server = try SandboxServer(arguments: ["--no-auth"])
        let lower = String(repeating: "cd", count: 32)
        #expect(try server.curl("POST", "/_sandbox/faults", body: Data(#"{"pathPrefix":"/3/device/\#(lower)","latencyMs":300}"#.utf8)).status == 200)
        #expect(try server.curl("POST", "/_sandbox/faults", body: Data(#"{"pathPrefix":"/3/device/\#(Self.token)","goawayCount":1}"#.utf8)).status == 200)
        // Both sends carry msgId w1: it is accepted once (the lower stream's).
        let log = try Self.nghttp(server, tokens: [lower, Self.token])
        let streams = log.split(separator: "\n").filter { $0.contains("send HEADERS frame") }.compactMap { line in
            line.split(separator: "stream_id=").last.flatMap { Int($0.prefix { $0.isNumber }) }
        }
        #expect(streams.count == 2, "\(log)")
        let (low, high) = (streams.first ?? 0, streams.last ?? 0)
        #expect(high > low)
        #expect(log.contains("recv GOAWAY frame") && log.contains("(last_stream_id=\(low), error_code=NO_ERROR(0x00)"), "\(log)")
        #expect(log.contains("recv (stream_id=\(low)) :status: 200"), "the stream below is answered: \(log)")
        #expect(!log.contains("recv (stream_id=\(high)) :status"))
        #expect(try Self.accepted(server, "w1") == 1)
        #expect(try Self.transportFaults(server)["goaway"] as? Int == 1)
    }

    @Test("dropShare: the connection closes without an answer, the message accepted once")
    func dropOnTheWire() throws {
        let server = try SandboxServer(arguments: ["--no-auth"])
        #expect(try server.curl("POST", "/_sandbox/faults", body: Data(#"{"dropShare":1}"#.utf8)).status == 200)
        let reply = try server.curl("POST", "/3/device/\(Self.token)", headers: ["apns-topic": "t"], body: Data(Self.body.utf8))
        #expect(reply.status == 0, "no answer: \(reply.curlError)")
        #expect(reply.curlError.contains("unexpected eof") || reply.curlError.contains("reset"), "\(reply.curlError)")
        #expect(try Self.accepted(server, "w1") == 1, "one transfer on a fresh connection: curl does not re-send it")
        #expect(try Self.transportFaults(server)["drop"] as? Int == 1)
    }

    @Test("hangShare: no answer until the client gives up, the message accepted once")
    func hangOnTheWire() throws {
        let server = try SandboxServer(arguments: ["--no-auth"])
        #expect(try server.curl("POST", "/_sandbox/faults", body: Data(#"{"hangShare":1}"#.utf8)).status == 200)
        let run = try runCommand("/usr/bin/curl", ["-sS", "--http2", "--cacert", server.certificatePath, "--max-time", "1", "-o", "/dev/null",
                                                   "-w", "%{http_code}", "-H", "apns-topic: t", "--data-binary", Self.body,
                                                   "\(server.origin)/3/device/\(Self.token)"], timeout: 20)
        #expect(run.status == 28, "curl's timeout: \(run.stderr)")
        #expect(try Self.accepted(server, "w1") == 1)
        #expect(try Self.transportFaults(server)["hang"] as? Int == 1)
    }

    @Test("outageSeconds: new connections fail their TLS handshake until the outage ends by itself")
    func outageOnTheWire() throws {
        let server = try SandboxServer(arguments: ["--no-auth"])
        #expect(try server.curl("POST", "/_sandbox/faults", body: Data(#"{"outageSeconds":3}"#.utf8)).status == 200)
        let refused = try server.curl("POST", "/3/device/\(Self.token)", headers: ["apns-topic": "t"], body: Data(Self.body.utf8))
        // During the outage every new connection fails, a curl run's for control too.
        #expect(refused.status == 0, "\(refused.curlError)")
        #expect(refused.curlError.contains("curl: (35)"), "CURLE_SSL_CONNECT_ERROR, the handshake failed: \(refused.curlError)")
        #expect(eventually(timeout: 15) { (try? server.curl("GET", "/_sandbox/health").status) == 200 }, "the outage ends by itself")
        #expect(try Self.accepted(server, "w1") == 0)
        #expect((try Self.transportFaults(server)["outageClosedConnections"] as? Int ?? 0) >= 1)
        #expect(try server.curl("POST", "/3/device/\(Self.token)", headers: ["apns-topic": "t"], body: Data(Self.body.utf8)).status == 200)
    }
}
