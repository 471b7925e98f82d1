import Foundation
import PushCore

/// Builders shared by the job tests: a minimal valid job and edits to it.
enum JobFixtures {
    static let apnsToken = String(repeating: "ab12", count: 16)
    static let fcmToken = "cXk9:APA91b" + String(repeating: "Qx_7-", count: 24)
    static let p256dh = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    static let auth = "BTBZMqHH6r4Tts7J_aSIgg"

    static let minimal = """
    {"schemaVersion": 1, "jobId": "j1", "appId": "app_demo", "campaignId": "c1",
     "content": {"defaultLanguage": "en", "languages": {"en": {"title": "Hello", "body": "World"}}},
     "recipients": [{"userId": "u1", "subscriptionId": "s1", "platform": "ios", "token": "\(apnsToken)"}]}
    """

    static func parse(_ text: String) -> JSONValue {
        (try? JSONParser.parse(text)) ?? .null
    }

    /// `base` with the member at `path` replaced by the JSON `value` (nil removes it).
    /// Path components are object keys, or decimal indices inside arrays.
    static func edit(_ path: [String], _ value: String?, in base: String = minimal) -> [UInt8] {
        edited(parse(base), path[...], value.map(parse)).jsonBytes()
    }

    private static func edited(_ node: JSONValue, _ path: ArraySlice<String>, _ value: JSONValue?) -> JSONValue {
        guard let head = path.first else { return value ?? .null }
        switch node {
        case .array(var elements):
            guard let index = Int(head), elements.indices.contains(index) else { return node }
            if path.count == 1, value == nil { elements.remove(at: index) } else {
                elements[index] = edited(elements[index], path.dropFirst(), value)
            }
            return .array(elements)
        case .object(var object):
            if path.count == 1 {
                object[head] = value
            } else {
                object[head] = edited(object[head] ?? .object(JSONObject()), path.dropFirst(), value)
            }
            return .object(object)
        default:
            return node
        }
    }

    static func decode(_ text: String) throws -> FanOutJob { try JobDecoder.decode(Array(text.utf8)) }

    static let keyring: MsgIDKeyring = {
        // Two fixed 32-byte test keys; "k1" signs.
        (try? MsgIDKeyring(keys: [(keyID: "k1", key: Array(repeating: 0x11, count: 32)),
                                  (keyID: "k0", key: Array(repeating: 0x22, count: 32))]))
            ?? { fatalError("test keyring") }()
    }()

    static let now = Date(timeIntervalSince1970: 1_795_000_000) // 2026-11-18T…Z
}

import Testing
import PushEncoding

@Suite("Job fixtures")
struct JobFixturesTests {
    @Test("the minimal job and an edit of it decode")
    func minimalDecodes() throws {
        let job = try JobFixtures.decode(JobFixtures.minimal)
        #expect(job.jobID == "j1")
        let edited = try JobDecoder.decode(JobFixtures.edit(["variant"], "\"B\""))
        #expect(edited.variant == "B")
    }
}
