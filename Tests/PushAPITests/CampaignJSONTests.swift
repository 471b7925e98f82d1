import Foundation
import PushAPI
import PushCore
import PushEncoding
import Testing

/// ``CampaignJSON``: every action body (valid and not) and the status document; ``CampaignText``.
@Suite("API campaign JSON and text")
struct CampaignJSONTests {
    static func action(_ verb: APIRoute.CampaignVerb, _ body: String) -> Result<CampaignAction, APIError> {
        CampaignJSON.action(verb, body: Array(body.utf8))
    }

    @Test("valid bodies", arguments: [
        (APIRoute.CampaignVerb.pause, "", CampaignAction.pause(reason: nil)), (.pause, " \n", .pause(reason: nil)),
        (.pause, "{}", .pause(reason: nil)), (.pause, #"{"reason": "complaints"}"#, .pause(reason: "complaints")),
        (.pause, #"{"reason": null}"#, .pause(reason: nil)), (.pause, #"{"reason": ""}"#, .pause(reason: nil)),
        (.cancel, #"{"reason": "wrong audience"}"#, .cancel(reason: "wrong audience")), (.cancel, "", .cancel(reason: nil)),
        (.resume, "", .resume), (.resume, "{}", .resume),
        (.throttle, #"{"perMinute": 600}"#, .throttle(perMinute: 600)), (.throttle, #"{"perMinute": null}"#, .throttle(perMinute: nil)),
        (.throttle, #"{"perMinute": 1}"#, .throttle(perMinute: 1)), (.throttle, #"{"perMinute": 2147483647}"#, .throttle(perMinute: 2147483647)),
        (.deadline, #"{"sendBy": "2026-05-01T18:00:00Z"}"#, .deadline(sendByMs: 1_777_658_400_000)),
        (.deadline, #"{"sendBy": "2026-05-01T20:00:00.5+02:00"}"#, .deadline(sendByMs: 1_777_658_400_500)),
        (.deadline, #"{"sendBy": null}"#, .deadline(sendByMs: nil)),
    ])
    func valid(verb: APIRoute.CampaignVerb, body: String, expected: CampaignAction) throws {
        #expect(try Self.action(verb, body).get() == expected)
    }

    @Test("invalid bodies: 400 invalid_json for what is not JSON (or a missing required body), else 422 naming the member", arguments: [
        (APIRoute.CampaignVerb.pause, "{", 400, nil), (.pause, "[]", 422, "$"), (.pause, "\"x\"", 422, "$"), (.pause, "null", 422, "$"),
        (.pause, #"{"reason": 5}"#, 422, "$.reason"), (.pause, #"{"reason": "x", "why": "y"}"#, 422, "$.why"),
        (.pause, #"{"reason": "\#(String(repeating: "r", count: 1025))"}"#, 422, "$.reason"),
        (.resume, #"{"reason": "x"}"#, 422, "$.reason"), (.resume, "1", 422, "$"), (.cancel, #"{"reason": ["x"]}"#, 422, "$.reason"),
        (.throttle, "", 400, nil), (.throttle, "{}", 422, "$.perMinute"), (.throttle, #"{"perMinute": 0}"#, 422, "$.perMinute"),
        (.throttle, #"{"perMinute": -5}"#, 422, "$.perMinute"), (.throttle, #"{"perMinute": 2147483648}"#, 422, "$.perMinute"),
        (.throttle, #"{"perMinute": 1.5}"#, 422, "$.perMinute"), (.throttle, #"{"perMinute": "600"}"#, 422, "$.perMinute"),
        (.throttle, #"{"perMinute": 1e400}"#, 400, nil), (.throttle, #"{"perMinute": 5, "x": 1}"#, 422, "$.x"),
        (.deadline, "  ", 400, nil), (.deadline, "{}", 422, "$.sendBy"), (.deadline, #"{"sendBy": "tomorrow"}"#, 422, "$.sendBy"),
        (.deadline, #"{"sendBy": 1777658400}"#, 422, "$.sendBy"), (.deadline, #"{"sendBy": "1969-12-31T23:59:59Z"}"#, 422, "$.sendBy"),
        (.deadline, #"{"sendBy": "2026-02-30T00:00:00Z"}"#, 422, "$.sendBy"), (.deadline, "{\"sendBy\": \"\u{0}\"}", 400, nil),
        (.pause, "{\"reason\": \"a\"} x", 400, nil), (.pause, #"{"reason": "a", "reason": "b"}"#, 400, nil),
    ] as [(APIRoute.CampaignVerb, String, Int, String?)])
    func invalid(verb: APIRoute.CampaignVerb, body: String, status: Int, field: String?) {
        guard case .failure(let error) = Self.action(verb, body) else { Issue.record("accepted \(body)"); return }
        #expect(error.status == status, "\(body): \(error.code) \(error.message)")
        #expect(error.code == (status == 400 ? "invalid_json" : "invalid_field"))
        #expect(error.field == field, "\(body)")
    }

    @Test("the status document: every member, nulls for what is not set, every status counted")
    func statusDocument() throws {
        let bare = CampaignStatus(appID: "app", campaignID: "c\"1", control: .none, counts: [:], sendsPerMinute: 0, guardSettings: CampaignGuard())
        let object = try #require(JSONParser.parse(CampaignJSON.status(bare)).objectValue)
        #expect(object.keys == ["appId", "campaignId", "state", "reason", "counts", "sendsPerMinute", "throttlePerMinute", "sendBy", "updatedAt", "guard"])
        #expect(object["campaignId"]?.stringValue == "c\"1")
        #expect(object["state"]?.stringValue == "active")
        #expect(object["reason"]?.isNull == true && object["throttlePerMinute"]?.isNull == true)
        #expect(object["sendBy"]?.isNull == true && object["updatedAt"]?.isNull == true)
        #expect(object["counts"]?.objectValue?.keys == DeliveryStatus.allCases.map(\.rawValue))
        let guardObject = try #require(object["guard"]?.objectValue)
        #expect(guardObject.keys == ["invalidShare", "minSends", "tripped", "released", "reason"])
        #expect(guardObject["invalidShare"]?.numberValue == 0.5 && guardObject["minSends"]?.numberValue == 200)
        #expect(guardObject["tripped"]?.boolValue == false && guardObject["reason"]?.isNull == true)

        let why = "guardrail: 150 of 200 results invalid_token or rejected (over 50%)"
        let tripped = CampaignStatus(appID: "app", campaignID: "c", control: CampaignControl(
            state: .paused, reason: why, throttlePerMinute: 600, sendByMs: 1_777_658_400_000, updatedAtMs: 1_777_650_000_123),
            counts: ["sent": 50, "invalid_token": 150, "zzz_future": 2], sendsPerMinute: 42, guardSettings: CampaignGuard(invalidShare: 0.25, minSends: 10))
        let full = try #require(JSONParser.parse(CampaignJSON.status(tripped)).objectValue)
        #expect(full["state"]?.stringValue == "paused" && full["reason"]?.stringValue == why)
        #expect(full["throttlePerMinute"]?.numberValue == 600 && full["sendsPerMinute"]?.numberValue == 42)
        #expect(full["sendBy"]?.stringValue == "2026-05-01T18:00:00.000Z")
        #expect(full["updatedAt"]?.stringValue == "2026-05-01T15:40:00.123Z")
        #expect(full["counts"]?.objectValue?["invalid_token"]?.numberValue == 150)
        #expect(full["counts"]?.objectValue?.keys.last == "zzz_future")
        #expect(full["guard"]?.objectValue?["tripped"]?.boolValue == true)
        #expect(full["guard"]?.objectValue?["reason"]?.stringValue == why)
        #expect(full["guard"]?.objectValue?["invalidShare"]?.numberValue == 0.25)

        // An operator's pause is not the guardrail's.
        var manual = tripped
        manual.control.reason = "complaints"
        #expect(try #require(JSONParser.parse(CampaignJSON.status(manual)).objectValue)["guard"]?.objectValue?["tripped"]?.boolValue == false)
    }

    @Test("the status for people: one line per fact; control characters of a reason or id are shown escaped")
    func text() {
        let status = CampaignStatus(appID: "app_demo", campaignID: "spring\n", control: CampaignControl(
            state: .paused, reason: "bad\u{1B}[31m", throttlePerMinute: 6000, updatedAtMs: 1_777_650_000_000, guardReleased: true),
            counts: ["sent": 1200, "invalid_token": 3], sendsPerMinute: 42, guardSettings: CampaignGuard())
        let lines = CampaignText.lines(status)
        #expect(lines[0] == "campaign spring\\u{a} of app app_demo: paused")
        #expect(lines.contains("  reason     bad\\u{1b}[31m"))
        #expect(lines.contains("  updated    2026-05-01T15:40:00.000Z"))
        #expect(lines.contains("  counts     sent 1200 · invalid_token 3 · rejected 0 · failed 0 · expired 0 · duplicate 0 · cancelled 0 · capped 0"))
        #expect(lines.contains("  rate       42 sent in the last minute"))
        #expect(lines.contains("  throttle   6000 per minute"))
        #expect(lines.contains("  deadline   none"))
        #expect(lines.last?.contains("pauses past 50% invalid_token + rejected once 200 results are in; not tripped (released by an operator") == true)
        let never = CampaignText.lines(CampaignStatus(appID: "a", campaignID: "c", control: .none, counts: [:], sendsPerMinute: 0,
                                                      guardSettings: CampaignGuard()))
        #expect(never.contains("  updated    never (no control)") && !never.contains { $0.hasPrefix("  reason") })
    }
}
