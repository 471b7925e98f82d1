import PushCore
import PushEncoding

/// `pushworker campaign status` for people (docs/reference/cli.md): the same facts as the API's
/// status JSON (``CampaignJSON/status(_:)``), one line each. Pure.
///
///     campaign spring_sale of app app_demo: paused
///       reason     too many complaints
///       updated    2026-05-01T10:00:00.000Z
///       counts     sent 1200 · invalid_token 3 · rejected 0 · failed 1 · expired 0 · duplicate 0 · cancelled 0 · capped 0
///       rate       42 sent in the last minute
///       throttle   6000 per minute
///       deadline   none
///       guardrail  pauses past 50% invalid_token + rejected once 200 results are in; not tripped
public enum CampaignText {
    public static func lines(_ status: CampaignStatus) -> [String] {
        let control = status.control
        var lines = ["campaign \(printable(status.campaignID)) of app \(status.appID): \(control.state.rawValue)"]
        if let reason = control.reason { lines.append("  reason     \(printable(reason))") }
        lines.append("  updated    " + (control.updatedAtMs.map { RFC3339Timestamp.format(unixMillis: $0) } ?? "never (no control)"))
        lines.append("  counts     " + CampaignJSON.counts(status.counts).map { "\(printable($0.0)) \($0.1)" }.joined(separator: " · "))
        lines.append("  rate       \(status.sendsPerMinute) sent in the last minute")
        lines.append("  throttle   " + (control.throttlePerMinute.map { "\($0) per minute" } ?? "none"))
        lines.append("  deadline   " + (control.sendByMs.map { RFC3339Timestamp.format(unixMillis: $0) } ?? "none"))
        let settings = status.guardSettings
        let percent = Int((settings.invalidShare * 100).rounded())
        var verdict = status.guardTripped ? "TRIPPED" : "not tripped"
        if control.guardReleased { verdict += " (released by an operator: the guardrail leaves it alone)" }
        lines.append("  guardrail  pauses past \(percent)% invalid_token + rejected once \(settings.minSends) results are in; \(verdict)")
        return lines
    }

    /// Control characters shown as `\u{…}` (a reason or campaign id comes from anyone with a token).
    static func printable(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            if scalar.value < 0x20 || scalar.value == 0x7F || (0x80..<0xA0).contains(scalar.value) {
                out += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
