import Foundation
import PushCore
import Testing
@testable import PushInbox
@testable import PushSandbox
import PushEncoding

/// The FCM emulator's topic and condition targets (docs/providers.md "FCM topics and conditions") and the inbox's drawing of them.
@Suite("Sandbox FCM topics and conditions")
struct SandboxFCMAudienceTests {
    static func send(_ message: String, faults: SandboxFaults = SandboxFaults()) -> (SandboxResponse, SandboxState) {
        let (router, state) = SandboxRouterTests.router(faults: faults)
        return (router.handle(SandboxRouterTests.fcm(#"{"message":{"# + message + "}}")), state)
    }

    static func errorMessage(_ response: SandboxResponse) -> String? {
        JSONValue.parse(response.body)?["error"]?["message"]?.stringValue
    }

    @Test("a topic or a condition message is accepted with a message name", arguments: [
        #""topic":"news","data":{"on.msgId":"m1"}"#,
        #""topic":"Breaking-News_2026.v1~%41","data":{"on.msgId":"m1"}"#,
        #""condition":"'a' in topics && ('b' in topics || !('c' in topics))","data":{"on.msgId":"m1"}"#,
        #""topic":"news","token":null,"data":{"on.msgId":"m1"}"#,
    ])
    func accepted(message: String) {
        let (response, state) = Self.send(message)
        #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
        #expect(JSONValue.parse(response.body)?["name"]?.stringValue?.hasPrefix("projects/p1/messages/0:") == true)
        #expect(state.acceptedCount(msgID: "m1") == 1)
    }

    @Test("bad targets are 400 INVALID_ARGUMENT with FCM's message", arguments: [
        (#""topic":"news","token":"tok_1:abc""#, "Invalid value at 'message' (oneof field 'target' is already set. Cannot set 'topic')"),
        (#""topic":"news","condition":"'a' in topics""#, "Invalid value at 'message' (oneof field 'target' is already set. Cannot set 'condition')"),
        (#""topic":"""#, "Recipient of the message is not set."),
        (#""topic":5"#, "Recipient of the message is not set."),
        (#""topic":"/topics/news""#, "Invalid topic name: /topics/news"),
        (#""topic":"two words""#, "Invalid topic name: two words"),
        (#""condition":"'a' in topics & 'b' in topics""#,
         "Invalid condition expression provided: expected && (a single & is not an operator) at character 15 (found \"&\")"),
        (#""condition":"'a' in topics || 'b' in topics || 'c' in topics || 'd' in topics || 'e' in topics || 'f' in topics""#,
         "Invalid condition expression provided: names 6 topics; FCM allows at most 5"),
    ])
    func refused(message: String, expected: String) {
        let (response, state) = Self.send(message)
        #expect(response.status == 400)
        #expect(SandboxRouterTests.fcmStatus(response) == ("INVALID_ARGUMENT", "INVALID_ARGUMENT"))
        #expect(Self.errorMessage(response) == expected)
        #expect(state.acceptedCount(msgID: "m1") == 0)
    }

    @Test("topic data over 2048 bytes is 'Message is too big'; the same data to a token is accepted")
    func topicDataLimit() {
        let data = #""data":{"k":""# + String(repeating: "v", count: 2100) + #""}"#
        let (topic, _) = Self.send(#""topic":"news","# + data)
        #expect(topic.status == 400 && Self.errorMessage(topic) == "Message is too big")
        let (condition, _) = Self.send(#""condition":"'a' in topics","# + data)
        #expect(condition.status == 400 && Self.errorMessage(condition) == "Message is too big")
        let (token, _) = Self.send(#""token":"tok_1:abc","# + data)
        #expect(token.status == 200)
        let exact = #""data":{"k":""# + String(repeating: "v", count: 2047) + #""}"#
        #expect(Self.send(#""topic":"news","# + exact).0.status == 200)
    }

    @Test("a topic whose name looks like a dead token is still accepted: topics have no dead tokens")
    func noDeadTopics() {
        #expect(Self.send(#""topic":"dead_token_1""#).0.status == 200)
        #expect(Self.send(#""token":"dead_token_1""#).0.status == 404)
    }

    @Test("faults apply to topic sends too: throttled is 429 QUOTA_EXCEEDED")
    func throttled() {
        var faults = SandboxFaults()
        faults.throttleShare = 1
        let (response, _) = Self.send(#""topic":"news""#, faults: faults)
        #expect(response.status == 429)
        #expect(SandboxRouterTests.fcmStatus(response) == ("RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED"))
    }

    @Test("the inbox draws a topic or condition message with its audience and a note; the filter matches the audience", arguments: [
        (FCMAudience.topic("news"), "topic news", "topic message: every device subscribed to news shows it"),
        (.condition("'a' in topics || 'b' in topics"), "condition 'a' in topics || 'b' in topics",
         "condition message: every device whose topics satisfy 'a' in topics || 'b' in topics shows it"),
    ])
    func inbox(audience: FCMAudience, label: String, note: String) throws {
        let record = try InboxDrawingTests.record(InboxDrawingTests.content(platform: "android"), .fcmAudience(audience))
        let message = InboxDrawing.draw(record, keyring: InboxDrawingTests.keyring)
        #expect(message.problem == nil)
        #expect(message.token == nil)
        #expect(message.audience == label)
        let display = try #require(message.displays.first)
        #expect(display.title == "Merhaba <img src=x onerror=alert(1)>")
        #expect(display.notes.contains(note))
        #expect(message.matches(InboxFilter(token: audience.identity)))
        #expect(!message.matches(InboxFilter(token: "tok_")))
        let json = try #require(JSONValue.parse(message.json()))
        #expect(json["audience"]?.stringValue == label && json["token"] == .null)
    }
}
