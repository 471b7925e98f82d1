import Foundation
import PushCore
import Testing
@testable import PushSandbox
import PushEncoding

/// The emulators without I/O: requests in, responses out (auth off unless a test sets up keys).
@Suite("Sandbox router")
struct SandboxRouterTests {
    static let token = String(repeating: "ab", count: 32)
    static let now = 1_800_000_000.0

    static func router(faults: SandboxFaults = SandboxFaults(), isAuthDisabled: Bool = true) -> (SandboxRouter, SandboxState) {
        let state = SandboxState(faults: faults)
        let configuration = SandboxConfiguration(origin: "https://127.0.0.1:8443", isAuthDisabled: isAuthDisabled)
        return (SandboxRouter(configuration: configuration, state: state, trust: SandboxTrust(), clock: { now }, randomSeed: 7), state)
    }

    static func apns(path: String = "/3/device/\(token)", method: String = "POST", headers: [(String, String)]? = nil,
                     body: String = #"{"aps":{"alert":"hi"},"custom":{"i":"m1"}}"#) -> SandboxRequest {
        var request = SandboxRequest()
        request.method = method
        request.path = path
        request.headers = (headers ?? [("apns-topic", "com.example.app"), ("apns-push-type", "alert")]).map { (name: $0.0, value: $0.1) }
        request.body = Array(body.utf8)
        request.bodyLength = request.body.count
        return request
    }

    static func reason(_ response: SandboxResponse) -> String? {
        JSONValue.parse(response.body)?["reason"]?.stringValue
    }

    @Test("a valid APNs request is accepted with 200, an apns-id and an empty body")
    func apnsSuccess() {
        let (router, state) = Self.router()
        let response = router.handle(Self.apns())
        #expect(response.status == 200)
        #expect(response.body.isEmpty)
        let apnsID = response.headers.first { $0.name == "apns-id" }?.value ?? ""
        #expect(SandboxRouter.isUUID(apnsID))
        #expect(state.acceptedCount(msgID: "m1") == 1)
    }

    @Test("the request's apns-id is echoed")
    func apnsIDEcho() {
        let (router, _) = Self.router()
        let id = "123E4567-E89B-12D3-A456-426614174000"
        let response = router.handle(Self.apns(headers: [("apns-topic", "t"), ("apns-id", id)]))
        #expect(response.headers.first { $0.name == "apns-id" }?.value == id)
    }

    /// A table row; the label keeps test output short.
    struct Case: CustomTestStringConvertible, Sendable {
        let request: SandboxRequest
        let status: Int
        let reason: String
        var testDescription: String { "\(status) \(reason)" }
    }

    @Test("APNs request errors carry Apple's status and reason", arguments: [
        Case(request: apns(headers: [("apns-push-type", "alert")]), status: 400, reason: "MissingTopic"),
        Case(request: apns(headers: [("apns-topic", "bad topic")]), status: 400, reason: "BadTopic"),
        Case(request: apns(path: "/3/device/xyz"), status: 400, reason: "BadDeviceToken"),
        Case(request: apns(path: "/3/device/" + String(repeating: "a", count: 62)), status: 400, reason: "BadDeviceToken"),
        Case(request: apns(path: "/3/device/" + String(repeating: "a", count: 65)), status: 400, reason: "BadDeviceToken"),
        Case(request: apns(path: "/3/device/"), status: 400, reason: "MissingDeviceToken"),
        Case(request: apns(headers: [("apns-topic", "t"), ("apns-push-type", "loud")]), status: 400, reason: "InvalidPushType"),
        Case(request: apns(headers: [("apns-topic", "t"), ("apns-priority", "7")]), status: 400, reason: "BadPriority"),
        Case(request: apns(headers: [("apns-topic", "t"), ("apns-expiration", "soon")]), status: 400, reason: "BadExpirationDate"),
        Case(request: apns(headers: [("apns-topic", "t"), ("apns-collapse-id", String(repeating: "c", count: 65))]), status: 400, reason: "BadCollapseId"),
        Case(request: apns(headers: [("apns-topic", "t"), ("apns-id", "not-a-uuid")]), status: 400, reason: "BadMessageId"),
        Case(request: apns(headers: [("apns-topic", "t"), ("apns-topic", "t")]), status: 400, reason: "DuplicateHeaders"),
        Case(request: apns(body: ""), status: 400, reason: "PayloadEmpty"),
        Case(request: apns(body: "{\"aps\":{},\"x\":\"" + String(repeating: "x", count: 4100) + "\"}"), status: 413, reason: "PayloadTooLarge"),
        Case(request: apns(body: "not json"), status: 400, reason: "BadPayload"),
        Case(request: apns(method: "GET"), status: 405, reason: "MethodNotAllowed"),
        Case(request: apns(path: "/3/devices/\(token)"), status: 404, reason: "BadPath"),
    ])
    func apnsErrors(row: Case) {
        let (router, state) = Self.router()
        let response = router.handle(row.request)
        #expect(response.status == row.status)
        #expect(Self.reason(response) == row.reason)
        #expect(state.acceptedCount(msgID: "m1") == 0)
    }

    @Test("a 64-character collapse id and a 4096-byte payload are still accepted")
    func apnsLimits() {
        let (router, _) = Self.router()
        let filler = String(repeating: "x", count: 4096 - #"{"aps":{},"x":""}"#.utf8.count)
        let body = "{\"aps\":{},\"x\":\"\(filler)\"}"
        #expect(body.utf8.count == 4096)
        let response = router.handle(Self.apns(headers: [("apns-topic", "t"), ("apns-collapse-id", String(repeating: "c", count: 64))], body: body))
        #expect(response.status == 200)
    }

    @Test("APNs tokens starting with dead are 410 Unregistered with a millisecond timestamp")
    func apnsDead() {
        let (router, _) = Self.router()
        let response = router.handle(Self.apns(path: "/3/device/dead" + String(repeating: "0", count: 60)))
        #expect(response.status == 410)
        let body = JSONValue.parse(response.body)
        #expect(body?["reason"]?.stringValue == "Unregistered")
        #expect(body?["timestamp"]?.numberValue == Self.now * 1000)
    }

    @Test("without --no-auth, APNs requires a provider token")
    func apnsMissingProviderToken() {
        let (router, _) = Self.router(isAuthDisabled: false)
        #expect(Self.reason(router.handle(Self.apns())) == "MissingProviderToken")
        var request = Self.apns()
        request.headers.append((name: "authorization", value: "bearer not.a.jwt"))
        let response = router.handle(request)
        #expect(response.status == 403)
        #expect(Self.reason(response) == "InvalidProviderToken")
    }

    @Test("injected throttling answers 429 TooManyRequests with Retry-After")
    func throttled() {
        var faults = SandboxFaults()
        faults.throttleShare = 1
        faults.retryAfterSeconds = 7
        let (router, state) = Self.router(faults: faults)
        let response = router.handle(Self.apns())
        #expect(response.status == 429)
        #expect(Self.reason(response) == "TooManyRequests")
        #expect(response.headers.contains { $0.name == "retry-after" && $0.value == "7" })
        #expect(state.acceptedCount(msgID: "m1") == 0)
    }

    @Test("injected errors answer 500 InternalServerError or 503 ServiceUnavailable")
    func injectedErrors() {
        var faults = SandboxFaults()
        faults.errorShare = 1
        let (router, _) = Self.router(faults: faults)
        var seen: Set<String> = []
        for _ in 0..<40 {
            let response = router.handle(Self.apns())
            seen.insert("\(response.status) \(Self.reason(response) ?? "")")
        }
        #expect(seen == ["500 InternalServerError", "503 ServiceUnavailable"])
    }

    @Test("the unregistered share marks the same tokens dead every time")
    func unregisteredShareIsStable() {
        var faults = SandboxFaults()
        faults.unregisteredShare = 0.5
        let (router, _) = Self.router(faults: faults)
        var dead = 0
        for index in 0..<200 {
            let token = String(format: "%064x", index)
            let first = router.handle(Self.apns(path: "/3/device/\(token)")).status
            let second = router.handle(Self.apns(path: "/3/device/\(token)")).status
            #expect(first == second)
            if first == 410 { dead += 1 }
        }
        #expect((60...140).contains(dead))
    }

    static func fcm(_ body: String, project: String = "p1") -> SandboxRequest {
        var request = SandboxRequest()
        request.method = "POST"
        request.path = "/v1/projects/\(project)/messages:send"
        request.headers = [(name: "content-type", value: "application/json")]
        request.body = Array(body.utf8)
        request.bodyLength = request.body.count
        return request
    }

    static func fcmStatus(_ response: SandboxResponse) -> (String?, String?) {
        let error = JSONValue.parse(response.body)?["error"]
        var errorCode: String?
        if case .array(let details)? = error?["details"] { errorCode = details.first?["errorCode"]?.stringValue }
        return (error?["status"]?.stringValue, errorCode)
    }

    @Test("an FCM send is accepted with the message name and the msgId from data on.msgId")
    func fcmSuccess() {
        let (router, state) = Self.router()
        let response = router.handle(Self.fcm(#"{"message":{"token":"tok_1:abc","data":{"on.msgId":"m7","k":"v"},"android":{"priority":"HIGH","ttl":"3600s"}}}"#))
        #expect(response.status == 200)
        #expect(JSONValue.parse(response.body)?["name"]?.stringValue?.hasPrefix("projects/p1/messages/0:") == true)
        #expect(state.acceptedCount(msgID: "m7") == 1)
    }

    @Test("FCM errors use Google's status and FcmError code", arguments: [
        (#"{"message":{"token":"t","data":{"n":1}}}"#, 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
        (#"{"message":{"token":"t","data":{"from":"x"}}}"#, 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
        (#"{"message":{"data":{}}}"#, 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
        (#"{"message":{"token":"t","android":{"ttl":"1h"}}}"#, 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
        (#"{"message":{"token":"t","android":{"priority":"urgent"}}}"#, 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
        ("nope", 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
        (#"{"message":{"token":"dead_token_1","data":{}}}"#, 404, "NOT_FOUND", "UNREGISTERED"),
    ])
    func fcmErrors(body: String, status: Int, googleStatus: String, errorCode: String) {
        let (router, _) = Self.router()
        let response = router.handle(Self.fcm(body))
        #expect(response.status == status)
        let (actualStatus, actualCode) = Self.fcmStatus(response)
        #expect(actualStatus == googleStatus)
        #expect(actualCode == errorCode)
    }

    @Test("an FCM message over 4096 bytes is 'Message is too big'")
    func fcmTooBig() {
        let (router, _) = Self.router()
        let big = String(repeating: "v", count: 4100)
        let response = router.handle(Self.fcm("{\"message\":{\"token\":\"t\",\"data\":{\"k\":\"\(big)\"}}}"))
        #expect(response.status == 400)
        #expect(JSONValue.parse(response.body)?["error"]?["message"]?.stringValue == "Message is too big")
    }

    @Test("FCM throttling is 429 RESOURCE_EXHAUSTED / QUOTA_EXCEEDED with Retry-After")
    func fcmThrottled() {
        var faults = SandboxFaults()
        faults.throttleShare = 1
        let (router, _) = Self.router(faults: faults)
        let response = router.handle(Self.fcm(#"{"message":{"token":"t"}}"#))
        #expect(response.status == 429)
        #expect(Self.fcmStatus(response) == ("RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED"))
        #expect(response.headers.contains { $0.name == "retry-after" })
    }

    @Test("an FCM send without an access token is 401 UNAUTHENTICATED")
    func fcmUnauthenticated() {
        let (router, _) = Self.router(isAuthDisabled: false)
        let response = router.handle(Self.fcm(#"{"message":{"token":"t"}}"#))
        #expect(response.status == 401)
        #expect(Self.fcmStatus(response).0 == "UNAUTHENTICATED")
    }

    static func webPush(id: String = "sub1", headers: [(String, String)] = [("ttl", "60")], body: [UInt8] = []) -> SandboxRequest {
        var request = SandboxRequest()
        request.method = "POST"
        request.path = "/wp/\(id)"
        request.headers = headers.map { (name: $0.0, value: $0.1) }
        request.body = body
        request.bodyLength = body.count
        return request
    }

    @Test("Web Push requires TTL (RFC 8030 §5.2), answers 410 for dead ids, 201 with a location otherwise")
    func webPushBasics() {
        let (router, _) = Self.router()
        #expect(router.handle(Self.webPush(headers: [])).status == 400)
        #expect(router.handle(Self.webPush(headers: [("ttl", "soon")])).status == 400)
        #expect(router.handle(Self.webPush(id: "dead1")).status == 410)
        #expect(router.handle(Self.webPush(headers: [("ttl", "0"), ("urgency", "loud")])).status == 400)
        #expect(router.handle(Self.webPush(headers: [("ttl", "0"), ("topic", String(repeating: "t", count: 33))])).status == 400)
        #expect(router.handle(Self.webPush(id: "bad$id")).status == 404)
        #expect(router.handle(Self.webPush(body: [1, 2, 3])).status == 400) // no Content-Encoding
        let response = router.handle(Self.webPush())
        #expect(response.status == 201)
        #expect(response.headers.contains { $0.name == "location" && $0.value.hasPrefix("https://127.0.0.1:8443/m/") })
    }

    @Test("Web Push without VAPID authorization is 401, a malformed one too")
    func webPushUnauthorized() {
        let (router, _) = Self.router(isAuthDisabled: false)
        #expect(router.handle(Self.webPush()).status == 401)
        #expect(router.handle(Self.webPush(headers: [("ttl", "60"), ("authorization", "WebPush abc")])).status == 401)
    }

    @Test("stats count accepted messages per platform, responses per status, and duplicate msgIds; reset clears them")
    func stats() throws {
        let (router, state) = Self.router()
        _ = router.handle(Self.apns())
        _ = router.handle(Self.apns())
        _ = router.handle(Self.apns(body: "nope"))
        _ = router.handle(Self.fcm(#"{"message":{"token":"t","data":{"on.msgId":"f1"}}}"#))
        let stats = try #require(JSONValue.parse(state.statsJSON()))
        #expect(stats["accepted"]?["ios"]?.numberValue == 2)
        #expect(stats["accepted"]?["android"]?.numberValue == 1)
        #expect(stats["responses"]?["200"]?.numberValue == 3)
        #expect(stats["responses"]?["400"]?.numberValue == 1)
        #expect(stats["distinctMsgIds"]?.numberValue == 2)
        #expect(stats["duplicateMsgIds"]?.numberValue == 1)
        let lines = state.messagesText(platform: "ios").split(separator: "\n")
        #expect(lines.count == 2)
        let first = try #require(JSONValue.parse(String(lines[0])))
        #expect(first["msgId"]?.stringValue == "m1")
        #expect(first["body"]?["custom"]?["i"]?.stringValue == "m1")
        #expect(first["headers"]?["apns-topic"]?.stringValue == "com.example.app")
        _ = router.handle({ var request = SandboxRequest(); request.method = "POST"; request.path = "/_sandbox/reset"; return request }())
        #expect(JSONValue.parse(state.statsJSON())?["requests"]?.numberValue == 0)
    }

    @Test("POST /_sandbox/faults changes faults at runtime; invalid values are refused")
    func runtimeFaults() {
        let (router, state) = Self.router()
        var request = SandboxRequest()
        request.method = "POST"
        request.path = "/_sandbox/faults"
        request.body = Array(#"{"throttleShare":1,"retryAfter":3}"#.utf8)
        #expect(router.handle(request).status == 200)
        #expect(state.faults.throttleShare == 1)
        #expect(state.faults.retryAfterSeconds == 3)
        #expect(router.handle(Self.apns()).status == 429)
        request.body = Array(#"{"throttleShare":2}"#.utf8)
        #expect(router.handle(request).status == 400)
        request.body = Array(#"{"throttleShare":0}"#.utf8)
        #expect(router.handle(request).status == 200)
        #expect(router.handle(Self.apns()).status == 200)
    }
}

@Suite("Sandbox JSON reader")
struct SandboxJSONTests {
    @Test("valid JSON texts parse", arguments: [
        #"{"a":[1,2.5,-3e2,true,false,null],"b":{"c":"d"}}"#, #"  "x"  "#, "0", #"{"e":"\u00e9\ud83d\ude00\n"}"#, "[]", "{}",
    ])
    func valid(text: String) {
        #expect(JSONValue.parse(text) != nil)
    }

    @Test("invalid JSON texts are refused", arguments: [
        "", "{", #"{"a"}"#, #"{"a":1,}"#, "[1,]", "01", "1.", "tru", #""\x""#, #""\ud800""#, "{} x", "\"a\u{01}\"",
        String(repeating: "[", count: 100_000),
    ])
    func invalid(text: String) {
        #expect(JSONValue.parse(text) == nil)
    }

    @Test("escapes decode to the right characters")
    func escapes() {
        #expect(JSONValue.parse(#""a\"b\\c\/\u00e9\ud83d\ude00""#)?.stringValue == "a\"b\\c/é😀")
        #expect(JSONValue.parse(#"{"k":"v","k2":{"n":2}}"#)?["k2"]?["n"]?.numberValue == 2)
    }

    @Test("quoting escapes control characters and quotes, and round-trips")
    func quote() {
        let text = "a\"b\\c\n\u{01}é"
        #expect(JSONValue.parse(JSONWriter.quotedString(text))?.stringValue == text)
    }

    @Test("form bodies decode + and percent escapes")
    func form() {
        let form = SandboxRouter.parseForm(Array("grant_type=urn%3Aietf%3Aparams&assertion=a.b.c&x=1+2".utf8))
        #expect(form["grant_type"] == "urn:ietf:params")
        #expect(form["assertion"] == "a.b.c")
        #expect(form["x"] == "1 2")
    }
}
