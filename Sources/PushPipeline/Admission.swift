/// Which queued recipients a claim round takes (docs/reliability.md "Tenants never stall each
/// other"). A recipient is taken only when it is due, its app × provider endpoint is not held (a
/// provider backoff, an open breaker, a throttle) and below its in-flight cap, and the worker has
/// room. A held recipient keeps no in-flight slot: it stays in the queue, or — when the hold runs
/// longer than ``holdMaxSeconds``, or when held recipients would keep the worker from taking new
/// jobs — goes to the retry topic with the hold's end as its `notBefore`.
///
/// Pure: the caller passes the queue's facts and the clock (monotonic seconds); tested without
/// services (AdmissionTests).
public struct Admission: Sendable, Equatable {
    /// One queued recipient, as admission sees it.
    public struct Candidate: Sendable, Equatable {
        /// Not before (monotonic seconds).
        public var due: Double
        /// Its app × provider endpoint, an index into the per-endpoint arrays.
        public var endpoint: Int
        /// Transactional work (docs/lanes.md): taken before bulk work, not bounded by `bulkRoom`.
        public var transactional: Bool
        public init(due: Double, endpoint: Int, transactional: Bool = false) {
            self.due = due; self.endpoint = endpoint; self.transactional = transactional
        }
    }

    /// An endpoint's state this round.
    public enum Gate: Sendable, Equatable {
        /// Open, up to its cap.
        case open
        /// Half-open breaker: one recipient at most.
        case probe
        /// Nothing before `until` (monotonic seconds).
        case held(until: Double)
    }

    public enum Choice: Sendable, Equatable {
        /// Claim it now.
        case take
        /// Leave it queued (not due, capped, no room, or held briefly).
        case keep
        /// Hand it to the retry topic, due at `until` (monotonic seconds).
        case park(until: Double)
    }

    /// Recipients of one app × provider in flight at once (`PUSHWORKER_MAX_IN_FLIGHT_PER_APP`).
    public var maxInFlightPerEndpoint: Int
    /// The longest a held recipient waits in memory (`PUSHWORKER_HOLD_MAX_SECONDS`).
    public var holdMaxSeconds: Double

    /// The per-endpoint cap of bulk candidates: (1 − `PUSHWORKER_TRANSACTIONAL_RESERVE`) × the
    /// cap, at least 1, so transactional work of a busy app × provider still finds room.
    public var bulkMaxInFlightPerEndpoint: Int

    public init(maxInFlightPerEndpoint: Int, holdMaxSeconds: Double, transactionalReserve: Double = 0) {
        self.maxInFlightPerEndpoint = max(1, maxInFlightPerEndpoint)
        self.holdMaxSeconds = max(0, holdMaxSeconds)
        let share = 1 - min(max(transactionalReserve, 0), 1)
        self.bulkMaxInFlightPerEndpoint = max(1, Int((Double(self.maxInFlightPerEndpoint) * share).rounded(.down)))
    }

    /// One choice per candidate, in order. Transactional candidates are looked at first (in
    /// queue order), then bulk ones (docs/lanes.md).
    /// - Parameters:
    ///   - room: free in-flight slots of the worker.
    ///   - bulkRoom: of those, how many bulk candidates may take (the rest is kept for
    ///     transactional work, `PUSHWORKER_TRANSACTIONAL_RESERVE`).
    ///   - inFlight: recipients in flight per endpoint (index = ``Candidate/endpoint``).
    ///   - gates: per endpoint; an endpoint past the array's end is open.
    ///   - parkHeld: park every held recipient now (the worker is saturated by load and the held
    ///     ones must not keep it from taking other tenants' jobs).
    public func choose(_ candidates: [Candidate], room: Int, bulkRoom: Int = .max, now: Double, inFlight: [Int], gates: [Gate],
                       parkHeld: Bool = false) -> [Choice] {
        var choices = [Choice](repeating: .keep, count: candidates.count)
        var taken = 0, bulkTaken = 0
        var takenBy = [Int](repeating: 0, count: max(gates.count, inFlight.count) + 1)
        func decide(_ position: Int) {
            let candidate = candidates[position]
            let endpoint = candidate.endpoint
            let gate = endpoint < gates.count ? gates[endpoint] : .open
            if case .held(let until) = gate {
                let end = max(until, candidate.due)
                if parkHeld || end - now > holdMaxSeconds { choices[position] = .park(until: end) }
                return
            }
            guard candidate.due <= now, taken < room, candidate.transactional || bulkTaken < bulkRoom else { return }
            if endpoint >= takenBy.count { takenBy += Array(repeating: 0, count: endpoint + 1 - takenBy.count) }
            let already = takenBy[endpoint]
            let cap = candidate.transactional ? maxInFlightPerEndpoint : bulkMaxInFlightPerEndpoint
            let limit = gate == .probe ? 1 : cap - (endpoint < inFlight.count ? inFlight[endpoint] : 0)
            guard already < limit else { return }
            takenBy[endpoint] = already + 1
            taken += 1
            if !candidate.transactional { bulkTaken += 1 }
            choices[position] = .take
        }
        if candidates.contains(where: \.transactional) {
            for position in candidates.indices where candidates[position].transactional { decide(position) }
            for position in candidates.indices where !candidates[position].transactional { decide(position) }
        } else {
            for position in candidates.indices { decide(position) }
        }
        return choices
    }
}

/// Whether a claim still covers writing a request (docs/reliability.md "Leases on one clock").
///
/// The lease is judged by Redis's clock inside the claim script; locally only durations count:
/// `confirmedAt` is the worker's monotonic time when the round trip that took or renewed the
/// claim was sent (before Redis started the lease, so the local estimate ends first). A request
/// may be written only while the lease outlasts it by a whole request timeout; a lost claim
/// (renewal answered "claimed elsewhere") writes nothing.
public enum LeaseRule {
    public static func mayWrite(confirmedAt: Double, now: Double, leaseSeconds: Double, requestTimeoutSeconds: Double) -> Bool {
        now + requestTimeoutSeconds < confirmedAt + leaseSeconds
    }

    /// Whether a claim confirmed at `confirmedAt` is due for renewal (a third of the lease gone).
    public static func needsRenewal(confirmedAt: Double, now: Double, leaseSeconds: Double) -> Bool {
        now - confirmedAt >= leaseSeconds / 3
    }
}
