import PushCore
/// One OAuth 2.0 access token of a token cache (FCM's JWT bearer grant, Huawei's client
/// credentials grant: docs/providers.md), as a pure state machine: the adapter holds it behind a
/// lock, feeds it the clock and the token endpoint's answers, and performs what it returns (fetch,
/// hand the token to the waiters).
///
/// Rules: a token is used until shortly before `expires_in` runs out (``refreshMargin(lifetime:)``);
/// the requests that arrive while a fetch is under way wait for that one fetch (Huawei throttles
/// more than 1000 token requests per 5 minutes); a token the provider refused as expired or
/// foreign (FCM 401, Huawei 80200001/80200003) is forgotten once, unless a newer one replaced it
/// already, so a burst of refusals costs one fetch (Huawei's Go demo refreshes and re-sends once).
public struct AccessTokenState<Waiter>: Sendable where Waiter: Sendable {
    public enum Phase: Sendable {
        case empty
        /// A token request is under way; these wait for its answer.
        case fetching([Waiter])
        /// Used until `refreshAt` (Unix seconds); Huawei accepts it until `expiresAt`.
        case ready(token: String, refreshAt: Double, expiresAt: Double)
    }

    /// What the caller must do for a request.
    public enum Step: Equatable, Sendable {
        /// Send with this token now.
        case use(String)
        /// A fetch is under way: the waiter is called with its result.
        case wait
        /// Start the token request; the waiter is called with its result.
        case fetch
    }

    public private(set) var phase: Phase = .empty

    public init() {}

    /// The lifetime taken when an answer gives none: 3600 s (Google's and Huawei's).
    public static var defaultLifetime: Double { 3600 }

    /// How long before expiry a token is replaced: 5 minutes, or half the lifetime of a shorter
    /// one. Seconds.
    public static func refreshMargin(lifetime: Double) -> Double { min(300, max(0, lifetime) / 2) }

    /// A send needs a token at `now` (Unix seconds).
    public mutating func request(now: Double, waiter: Waiter) -> Step {
        switch phase {
        case .ready(let token, let refreshAt, _) where now < refreshAt:
            return .use(token)
        case .fetching(var waiters):
            waiters.append(waiter)
            phase = .fetching(waiters)
            return .wait
        case .empty, .ready:
            phase = .fetching([waiter])
            return .fetch
        }
    }

    /// The token endpoint answered at `now`: `token` valid for `expiresIn` seconds (nil or not
    /// positive: ``defaultLifetime``), or nil for a failure (nothing is kept: the next request
    /// fetches again). Returns the waiters to hand the answer to, in arrival order.
    public mutating func fetched(token: String?, expiresIn: Double?, now: Double) -> [Waiter] {
        guard case .fetching(let waiters) = phase else { return [] }
        if let token {
            let lifetime = expiresIn.flatMap { $0 > 0 && $0.isFinite ? $0 : nil } ?? Self.defaultLifetime
            phase = .ready(token: token, refreshAt: now + lifetime - Self.refreshMargin(lifetime: lifetime), expiresAt: now + lifetime)
        } else {
            phase = .empty
        }
        return waiters
    }

    /// The provider refused `token` (FCM 401, Huawei 80200001/80200003): forget it unless it was replaced already.
    /// True when it was the current token.
    @discardableResult
    public mutating func invalidate(_ token: String) -> Bool {
        guard case .ready(let current, _, _) = phase, current == token else { return false }
        phase = .empty
        return true
    }
}
