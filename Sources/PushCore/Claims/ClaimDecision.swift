/// What the fleet's claim script answered for one recipient (docs/reference/redis.md). The raw
/// values are the script's reply codes.
public enum ClaimReply: Int, Sendable, Equatable, CaseIterable {
    /// Nobody had it: it is now claimed by this processing, with a lease.
    case claimed = 0
    /// Its msgId is recorded as sent: do not send.
    case alreadySent = 1
    /// Another live processing holds an unexpired claim: wait for its outcome.
    case claimedElsewhere = 2
    /// This processing already held the claim (a renewal): the lease was extended.
    case alreadyOurs = 3
    /// Attempts whose outcome is unknown (written, never answered) reached the limit: never sent
    /// again; not claimed.
    case unansweredFinal = 4
    /// Claimed by this processing; an earlier attempt's outcome is unknown, so this send is the
    /// one resend allowed (with the same replace key).
    case claimedResend = 5
    /// Its campaign is paused (docs/campaigns.md): not claimed, nothing changed; park it.
    case paused = 6
    /// Its campaign is cancelled: not claimed, nothing changed; final result `cancelled`.
    case cancelled = 7
    /// Its user reached a frequency cap of its category (docs/caps.md): not claimed, nothing
    /// counted; final result `capped`.
    case capped = 8
}

/// What to do with one recipient after a claim round trip.
public enum ClaimVerdict: Sendable, Equatable {
    /// Claimed: send it (the claim is ours until its outcome is recorded or the lease ends).
    case send
    /// Already sent by some processing: result `duplicate`, nothing sent.
    case duplicate
    /// Claimed by another live processing: not sent now, not lost; ask again later (it ends
    /// `duplicate` if the other one sends, or is claimed here if it gives up or dies).
    case wait
    /// The token is known dead (and not re-registered since): result `invalid_token`, nothing
    /// sent; the claim this round took must be released.
    case knownInvalid(invalidSinceMs: Int64)
    /// Claimed for the one resend after an attempt whose outcome is unknown: send it; its result,
    /// if accepted, says `"certainty": "unanswered_resent"`.
    case resend
    /// Attempts whose outcome is unknown used up what the policy allows: result `failed`, reason
    /// `unanswered`, nothing sent (and nothing claimed).
    case unanswered
    /// Its campaign is paused: not sent, not claimed; parked until the campaign may send again.
    case paused
    /// Its campaign is cancelled: result `cancelled`, nothing sent (and nothing claimed).
    case cancelled
    /// Its user reached a frequency cap: result `capped`, nothing sent (and nothing claimed).
    case capped
}

/// The pure rule behind one recipient's verdict (table-tested: ClaimDecisionTests).
public enum ClaimDecision {
    /// - Parameters:
    ///   - reply: the claim script's answer.
    ///   - invalidSinceMs: when the token was recorded dead (Unix ms), if it was.
    ///   - tokenUpdatedAtMs: when the subscription last (re-)registered the token, if known. A
    ///     token re-registered after it was declared dead is valid again (APNs' 410 timestamp
    ///     rule, docs/reference/records.md).
    public static func verdict(_ reply: ClaimReply, invalidSinceMs: Int64?, tokenUpdatedAtMs: Int64?) -> ClaimVerdict {
        switch reply {
        case .alreadySent: return .duplicate
        case .claimedElsewhere: return .wait
        case .unansweredFinal: return .unanswered
        case .paused: return .paused
        case .cancelled: return .cancelled
        case .capped: return .capped
        case .claimed, .alreadyOurs, .claimedResend:
            if let invalidSinceMs, tokenUpdatedAtMs.map({ invalidSinceMs >= $0 }) ?? true {
                return .knownInvalid(invalidSinceMs: invalidSinceMs)
            }
            return reply == .claimedResend ? .resend : .send
        }
    }
}

/// How long the de-duplication state of a job is kept (docs/reference/redis.md): only as long as the
/// job could still be sent. `expiresAt` bounds it when given; otherwise `ttlSeconds`; never more
/// than `maximumSeconds` (`PUSHWORKER_DEDUP_MAX_SECONDS`), never less than `minimumSeconds`
/// (a redelivery of an unfinished job, or a copy enqueued a little later, must still find it).
public enum DedupRetention {
    /// Default floor: one hour.
    public static let defaultMinimumSeconds = 3600

    /// Milliseconds to keep a sent marker of a job seen at `nowMs`.
    public static func milliseconds(expiresAtMs: Int64?, ttlSeconds: Int?, nowMs: Int64,
                                    maximumSeconds: Int, minimumSeconds: Int = defaultMinimumSeconds) -> Int64 {
        let maximum = Int64(max(1, maximumSeconds)) * 1000
        let minimum = min(maximum, Int64(max(0, minimumSeconds)) * 1000)
        var horizon = maximum
        if let expiresAtMs { horizon = expiresAtMs - nowMs }
        else if let ttlSeconds { horizon = Int64(max(0, ttlSeconds)) * 1000 }
        return min(maximum, max(minimum, horizon))
    }
}
