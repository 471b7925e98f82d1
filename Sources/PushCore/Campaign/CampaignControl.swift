/// Campaign control (docs/campaigns.md): the operator's levers on one campaign (`appId` +
/// `campaignId`), kept in Redis and read by every worker before each claim batch.

/// Where a campaign stands.
public enum CampaignState: String, Sendable, Hashable, CaseIterable {
    /// Sending (the default: a campaign nobody steered has no control at all).
    case active
    /// No new send anywhere; its queued work is parked and comes back when it is resumed.
    case paused
    /// No new send, ever: every recipient not sent gets the final status `cancelled`; jobs of the
    /// campaign arriving while the control lives are cancelled too.
    case cancelled
}

/// One campaign's control as stored: its state, why (the guardrail writes its reason here),
/// its fleet-wide throttle and deadline, and when it was last changed.
public struct CampaignControl: Sendable, Equatable {
    public var state: CampaignState
    /// Why it is paused or cancelled (an operator's note, or the guardrail's finding).
    public var reason: String?
    /// Sends per minute across the fleet; wins over the job's `throttlePerMinute`.
    public var throttlePerMinute: Int?
    /// Recipients not sent by then (Unix ms) are `expired`; wins over the job's `sendBy`.
    public var sendByMs: Int64?
    /// When the control last changed (Unix ms, Redis's clock); nil for a campaign never steered.
    public var updatedAtMs: Int64?
    /// True once an operator resumed a campaign the guardrail paused: the guardrail leaves it alone.
    public var guardReleased: Bool

    public init(state: CampaignState = .active, reason: String? = nil, throttlePerMinute: Int? = nil, sendByMs: Int64? = nil,
                updatedAtMs: Int64? = nil, guardReleased: Bool = false) {
        self.state = state; self.reason = reason; self.throttlePerMinute = throttlePerMinute; self.sendByMs = sendByMs
        self.updatedAtMs = updatedAtMs; self.guardReleased = guardReleased
    }

    /// A campaign nobody steered.
    public static let none = CampaignControl()

    /// The throttle that applies: the control's, else the job's.
    public func effectiveThrottle(job: Int?) -> Int? { throttlePerMinute ?? job }

    /// The deadline that applies (Unix ms): the control's, else the job's.
    public func effectiveSendBy(jobMs: Int64?) -> Int64? { sendByMs ?? jobMs }
}

/// An operator's action on a campaign (`pushworker campaign …`, the HTTP API).
public enum CampaignAction: Sendable, Equatable {
    case pause(reason: String?)
    case resume
    case cancel(reason: String?)
    /// Sends per minute across the fleet; nil removes the throttle.
    case throttle(perMinute: Int?)
    /// The deadline (Unix ms); nil removes it.
    case deadline(sendByMs: Int64?)

    /// The action's name in the CLI, the API and the store.
    public var name: String {
        switch self {
        case .pause: "pause"
        case .resume: "resume"
        case .cancel: "cancel"
        case .throttle: "throttle"
        case .deadline: "deadline"
        }
    }
}

/// Why an action was refused.
public enum CampaignActionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A cancelled campaign stays cancelled (until its control expires).
    case cancelled
    case invalid(String)

    public var description: String {
        switch self {
        case .cancelled: "the campaign is cancelled: a cancel is final while its control lives"
        case .invalid(let why): why
        }
    }
}

/// The guardrail's settings (`PUSHWORKER_GUARD_INVALID_SHARE`, `PUSHWORKER_GUARD_MIN_SENDS`).
public struct CampaignGuard: Sendable, Equatable {
    /// The share of `invalid_token` + `rejected` results above which a campaign pauses itself.
    public var invalidShare: Double
    /// Results counted before the share is judged.
    public var minSends: Int

    public init(invalidShare: Double = 0.5, minSends: Int = 200) {
        self.invalidShare = invalidShare
        self.minSends = minSends
    }

    /// The statuses that count as a send for the guardrail (a result the provider or the payload
    /// builder gave), and the bad ones among them.
    public static let counted: Set<DeliveryStatus> = [.sent, .failed, .invalidToken, .rejected]
    public static let bad: Set<DeliveryStatus> = [.invalidToken, .rejected]

    /// Whether counts trip the guardrail (pure: the Redis script applies the same rule).
    public func trips(counts: [DeliveryStatus: Int]) -> Bool {
        let total = Self.counted.reduce(0) { $0 + (counts[$1] ?? 0) }
        let bad = Self.bad.reduce(0) { $0 + (counts[$1] ?? 0) }
        guard total >= max(1, minSends) else { return false }
        return Double(bad) > invalidShare * Double(total)
    }
}

/// A campaign's status (`pushworker campaign status`, `GET /v1/campaigns/{app}/{campaign}`).
public struct CampaignStatus: Sendable, Equatable {
    public var appID: String
    public var campaignID: String
    public var control: CampaignControl
    /// Final results by status, fleet-wide (kept as long as the control lives).
    public var counts: [String: Int64]
    /// `sent` results in the last 60 seconds.
    public var sendsPerMinute: Int64
    public var guardSettings: CampaignGuard

    public init(appID: String, campaignID: String, control: CampaignControl, counts: [String: Int64], sendsPerMinute: Int64,
                guardSettings: CampaignGuard) {
        self.appID = appID; self.campaignID = campaignID; self.control = control; self.counts = counts
        self.sendsPerMinute = sendsPerMinute; self.guardSettings = guardSettings
    }

    /// Whether the guardrail paused it (and nobody resumed it since).
    public var guardTripped: Bool { control.state == .paused && (control.reason?.hasPrefix(CampaignStatus.guardReasonPrefix) ?? false) }

    /// The reason the guardrail writes starts with this.
    public static let guardReasonPrefix = "guardrail:"
}
