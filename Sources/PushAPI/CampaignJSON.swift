import Foundation
import PushCore
import PushEncoding

/// The campaign endpoints' JSON (docs/reference/api.md "Campaigns"): request bodies to
/// ``CampaignAction``s, and a ``CampaignStatus`` to its answer (also `pushworker campaign status
/// --json`). Pure.
public enum CampaignJSON {
    /// Longest `reason`, in UTF-8 bytes.
    public static let maximumReasonBytes = 1024

    /// The action a request body asks for. `pause`/`cancel`: no body, or `{"reason": text|null}`;
    /// `resume`: no body, or `{}`; `throttle`: `{"perMinute": 1…2147483647 | null}`; `deadline`:
    /// `{"sendBy": RFC 3339 | null}` (null removes the throttle or the deadline). Unknown members
    /// are refused (422 `invalid_field`), as is a missing required one; a body that is not JSON
    /// is 400 `invalid_json`.
    public static func action(_ verb: APIRoute.CampaignVerb, body: [UInt8]) -> Result<CampaignAction, APIError> {
        let object: JSONObject?
        switch parseObject(body, required: verb == .throttle || verb == .deadline) {
        case .success(let value): object = value
        case .failure(let error): return .failure(error)
        }
        let allowed: [String]
        switch verb {
        case .pause, .cancel: allowed = ["reason"]
        case .resume: allowed = []
        case .throttle: allowed = ["perMinute"]
        case .deadline: allowed = ["sendBy"]
        }
        if let unknown = object?.keys.first(where: { !allowed.contains($0) }) {
            let expected = allowed.isEmpty ? "no member" : allowed.joined(separator: ", ")
            return .failure(.invalidField("$.\(unknown)", "unknown member (expected \(expected))"))
        }
        switch verb {
        case .pause, .cancel:
            return reason(object).map { verb == .pause ? CampaignAction.pause(reason: $0) : .cancel(reason: $0) }
        case .resume:
            return .success(.resume)
        case .throttle:
            return perMinute(object).map { CampaignAction.throttle(perMinute: $0) }
        case .deadline:
            return sendBy(object).map { CampaignAction.deadline(sendByMs: $0) }
        }
    }

    /// The body as an object; nil for an empty body when none is required.
    static func parseObject(_ body: [UInt8], required: Bool) -> Result<JSONObject?, APIError> {
        if body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            return required ? .failure(.invalidJSON("a JSON object body is required")) : .success(nil)
        }
        let value: JSONValue
        do { value = try JSONParser.parse(body, maxDepth: 8) } catch { return .failure(.invalidJSON(error.description)) }
        guard case .object(let object) = value else {
            return .failure(.invalidField("$", "expected an object, got \(value.typeName)"))
        }
        return .success(object)
    }

    static func reason(_ object: JSONObject?) -> Result<String?, APIError> {
        switch object?["reason"] {
        case nil, .null?: return .success(nil)
        case .string(let text)?:
            guard text.utf8.count <= maximumReasonBytes else {
                return .failure(.invalidField("$.reason", "longer than \(maximumReasonBytes) bytes"))
            }
            return .success(text.isEmpty ? nil : text)
        case let other?: return .failure(.invalidField("$.reason", "expected a string or null, got \(other.typeName)"))
        }
    }

    static func perMinute(_ object: JSONObject?) -> Result<Int?, APIError> {
        switch object?["perMinute"] {
        case nil: return .failure(.invalidField("$.perMinute", "required (a whole number of sends per minute, or null to remove the throttle)"))
        case .null?: return .success(nil)
        case .number(let number)?:
            guard let value = number.intValue, value >= 1, value <= Int(Int32.max) else {
                return .failure(.invalidField("$.perMinute", "must be a whole number from 1 to \(Int32.max), got \(number.literal)"))
            }
            return .success(value)
        case let other?: return .failure(.invalidField("$.perMinute", "expected a whole number or null, got \(other.typeName)"))
        }
    }

    static func sendBy(_ object: JSONObject?) -> Result<Int64?, APIError> {
        switch object?["sendBy"] {
        case nil: return .failure(.invalidField("$.sendBy", "required (an RFC 3339 date-time, or null to remove the deadline)"))
        case .null?: return .success(nil)
        case .string(let text)?:
            guard let date = RFC3339Timestamp.parse(text) else {
                return .failure(.invalidField("$.sendBy", "not an RFC 3339 date-time (e.g. 2026-05-01T18:00:00Z)"))
            }
            let ms = RFC3339Timestamp.unixMillis(date)
            guard ms > 0 else { return .failure(.invalidField("$.sendBy", "must be after 1970-01-01T00:00:00Z")) }
            return .success(ms)
        case let other?: return .failure(.invalidField("$.sendBy", "expected an RFC 3339 string or null, got \(other.typeName)"))
        }
    }

    /// The status document:
    /// `{"appId","campaignId","state","reason","counts":{status:n},"sendsPerMinute","throttlePerMinute",
    /// "sendBy","updatedAt","guard":{"invalidShare","minSends","tripped","released","reason"}}`.
    /// `counts` holds every delivery status (0 when none), then any other name Redis holds;
    /// absent values are `null`; dates are RFC 3339 UTC with milliseconds.
    public static func status(_ status: CampaignStatus) -> [UInt8] {
        let control = status.control
        return JSONWriter.object(capacity: 512) { w in
            w.member("appId", status.appID)
            w.member("campaignId", status.campaignID)
            w.member("state", control.state.rawValue)
            w.member("reason", orNull: control.reason)
            w.member("counts", object: { c in
                for (name, count) in counts(status.counts) { c.member(name, Int(clamping: count)) }
            })
            w.member("sendsPerMinute", Int(clamping: status.sendsPerMinute))
            w.key("throttlePerMinute")
            w.int(orNull: control.throttlePerMinute)
            w.key("sendBy")
            if let ms = control.sendByMs { w.timestamp(unixMillis: ms) } else { w.null() }
            w.key("updatedAt")
            if let ms = control.updatedAtMs { w.timestamp(unixMillis: ms) } else { w.null() }
            w.member("guard", object: { g in
                g.member("invalidShare", status.guardSettings.invalidShare)
                g.member("minSends", status.guardSettings.minSends)
                g.member("tripped", status.guardTripped)
                g.member("released", control.guardReleased)
                g.member("reason", orNull: status.guardTripped ? control.reason : nil)
            })
        }.bytes + [0x0A]
    }

    /// Every ``DeliveryStatus`` in declaration order (0 when absent), then other names sorted.
    public static func counts(_ counts: [String: Int64]) -> [(String, Int64)] {
        let known = DeliveryStatus.allCases.map(\.rawValue)
        return known.map { ($0, counts[$0] ?? 0) } + counts.keys.filter { !known.contains($0) }.sorted().map { ($0, counts[$0] ?? 0) }
    }
}
