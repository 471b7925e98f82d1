import PushCore
import PushDelivery
import PushPipeline
import Synchronization

/// Each app × provider endpoint's live state in this worker: recipients in flight (capped by
/// `PUSHWORKER_MAX_IN_FLIGHT_PER_APP`), the provider backoff it must respect (this process's and
/// the fleet's, in monotonic seconds), and its circuit breaker. Endpoints get small integer ids
/// (a run looks its own up once per platform), so admission and accounting index arrays.
///
/// Thread safety: one Mutex; the claim stage reads it once per round, completions and records
/// update it.
final class EndpointTable: Sendable {
    struct Entry: Sendable {
        let appID: String
        let provider: String
        var inFlight = 0
        /// Monotonic seconds; 0: none.
        var backoffUntil = 0.0
        var breaker: CircuitBreaker
    }

    private struct State {
        var ids: [String: Int] = [:]
        var entries: [Entry] = []
    }
    private let state = Mutex(State())
    private let breakerTemplate: CircuitBreaker
    /// Endpoints whose breaker is not closed with zero failures: while none is, a success needs
    /// no lock (every answer of a healthy provider is one).
    private let breakersAttended = Atomic<Int>(0)
    /// Bumped whenever a slot frees or a hold or breaker changes: a claim round can tell that
    /// nothing it waits for has changed.
    private let changes = Atomic<UInt64>(0)

    var version: UInt64 { changes.load(ordering: .acquiring) }

    init(breaker: CircuitBreaker = CircuitBreaker()) {
        breakerTemplate = breaker
    }

    /// The id of `appID` × `provider`, made on first use.
    func id(appID: String, provider: String) -> Int {
        let name = appID + "|" + provider
        return state.withLock { state in
            if let id = state.ids[name] { return id }
            let id = state.entries.count
            state.ids[name] = id
            state.entries.append(Entry(appID: appID, provider: provider, breaker: breakerTemplate))
            return id
        }
    }

    /// The ids of one app's four providers, by ``ProviderMetrics/index(_:)``.
    func ids(appID: String) -> [Int] {
        Platform.allCases.sorted { ProviderMetrics.index($0) < ProviderMetrics.index($1) }
            .map { id(appID: appID, provider: Deliverer.providerLabel($0)) }
    }

    func appAndProvider(_ id: Int) -> (appID: String, provider: String) {
        state.withLock { state in
            guard state.entries.indices.contains(id) else { return ("", "") }
            return (state.entries[id].appID, state.entries[id].provider)
        }
    }

    /// Per endpoint: recipients in flight and what admission may do at `now`. A breaker whose
    /// open period ended turns half-open here.
    func admissionView(now: Double) -> (inFlight: [Int], gates: [Admission.Gate]) {
        state.withLock { state in
            var inFlight: [Int] = []
            var gates: [Admission.Gate] = []
            inFlight.reserveCapacity(state.entries.count)
            gates.reserveCapacity(state.entries.count)
            for index in state.entries.indices {
                inFlight.append(state.entries[index].inFlight)
                let backoff = state.entries[index].backoffUntil
                switch state.entries[index].breaker.admission(now: now) {
                case .held(let until): gates.append(.held(until: max(until, backoff)))
                case .probe: gates.append(backoff > now ? .held(until: backoff) : .probe)
                case .open: gates.append(backoff > now ? .held(until: backoff) : .open)
                }
            }
            return (inFlight, gates)
        }
    }

    /// Recipients recorded (`delta` < 0) or taken (`delta` > 0), by endpoint id.
    func addInFlight(_ counts: [Int]) {
        guard counts.contains(where: { $0 != 0 }) else { return }
        state.withLock { state in
            for (id, delta) in counts.enumerated() where delta != 0 && state.entries.indices.contains(id) {
                state.entries[id].inFlight = max(0, state.entries[id].inFlight + delta)
            }
        }
        changes.add(1, ordering: .releasing)
    }

    /// Recipients taken for sending (`delta` > 0) or recorded (`delta` < 0), per endpoint.
    func addInFlight(_ counts: [Int: Int]) {
        guard !counts.isEmpty else { return }
        state.withLock { state in
            for (id, delta) in counts where state.entries.indices.contains(id) {
                state.entries[id].inFlight = max(0, state.entries[id].inFlight + delta)
            }
        }
    }

    /// The probe of a half-open breaker was taken at `now`.
    func probeSent(_ id: Int, now: Double) {
        state.withLock { state in
            if state.entries.indices.contains(id) { state.entries[id].breaker.probeSent(now: now) }
        }
    }

    /// A backoff until `until` (monotonic seconds); true if it moved the endpoint's end later.
    @discardableResult
    func noteBackoff(_ id: Int, until: Double) -> Bool {
        state.withLock { state in
            guard state.entries.indices.contains(id), until > state.entries[id].backoffUntil else { return false }
            state.entries[id].backoffUntil = until
            changes.add(1, ordering: .releasing)
            return true
        }
    }

    /// Counts one attempt's effect on the breaker: a failure (returns whether it is open after),
    /// a success, or neither. `changed` reports an open/closed transition (for the metric).
    func breaker(_ id: Int, failure: Bool, success: Bool, now: Double) -> (isOpen: Bool, changed: Bool) {
        if !failure && breakersAttended.load(ordering: .acquiring) == 0 { return (false, false) }
        return state.withLock { state in
            guard state.entries.indices.contains(id) else { return (false, false) }
            let wasAttended = state.entries[id].breaker.state != .closed(failures: 0)
            let wasOpen = state.entries[id].breaker.isOpen
            if failure { state.entries[id].breaker.failure(now: now) } else if success { state.entries[id].breaker.success() }
            let isOpen = state.entries[id].breaker.isOpen
            let isAttended = state.entries[id].breaker.state != .closed(failures: 0)
            if isAttended != wasAttended { breakersAttended.add(isAttended ? 1 : -1, ordering: .releasing) }
            if isOpen != wasOpen || !isOpen { changes.add(1, ordering: .releasing) }
            return (isOpen, isOpen != wasOpen)
        }
    }

    /// Whether `id`'s breaker is open (or half-open).
    func isBreakerOpen(_ id: Int) -> Bool {
        state.withLock { state in state.entries.indices.contains(id) && state.entries[id].breaker.isOpen }
    }

    /// Recipients in flight over every endpoint (tests).
    var totalInFlight: Int { state.withLock { $0.entries.reduce(0) { $0 + $1.inFlight } } }
}

/// Recipients of accepted jobs waiting for their claim: new ones, ones claimed elsewhere, ones
/// held by their endpoint, ones queued again (a resend, a withheld write).
///
/// Thread safety: a Mutex; the consumer thread takes, the result publisher puts back.
final class ClaimQueue: Sendable {
    private let queue = Mutex<[ClaimRequest]>([])
    /// Bumped whenever requests are added: a claim round can tell that nothing changed.
    private let changes = Atomic<UInt64>(0)
    /// Transactional requests in the queue (docs/lanes.md).
    private let transactional = Atomic<Int>(0)

    var version: UInt64 { changes.load(ordering: .acquiring) }

    /// Transactional requests queued (the loop keeps polling their topic below a bound).
    var transactionalCount: Int { transactional.load(ordering: .relaxed) }

    private func counted(_ requests: [ClaimRequest], _ sign: Int) {
        let count = requests.reduce(0) { $0 + ($1.run.transactional ? 1 : 0) }
        if count > 0 { transactional.add(sign * count, ordering: .relaxed) }
    }

    func append(_ requests: [ClaimRequest]) {
        guard !requests.isEmpty else { return }
        queue.withLock { $0.append(contentsOf: requests) }
        counted(requests, 1)
        changes.add(1, ordering: .releasing)
    }

    /// Takes out the requests `choose` picks (its choices are in queue order) and those it
    /// parks; the others stay, in order. In place: a kept request is moved, never copied.
    func select(_ choose: ([ClaimRequest]) -> [Admission.Choice]) -> (taken: [ClaimRequest], parked: [(request: ClaimRequest, until: Double)]) {
        let selected = queue.withLock { queue -> (taken: [ClaimRequest], parked: [(request: ClaimRequest, until: Double)]) in
            guard !queue.isEmpty else { return ([], []) }
            let choices = choose(queue)
            var taken: [ClaimRequest] = []
            var parked: [(request: ClaimRequest, until: Double)] = []
            var write = 0
            for read in queue.indices {
                switch choices[read] {
                case .keep:
                    if write != read { queue.swapAt(write, read) }
                    write += 1
                case .take:
                    taken.append(queue[read])
                case .park(let until):
                    parked.append((queue[read], until))
                }
            }
            queue.removeSubrange(write...)
            return (taken, parked)
        }
        counted(selected.taken, -1)
        counted(selected.parked.map(\.request), -1)
        return selected
    }

    /// Takes everything (the caller puts back what it keeps).
    func takeAll() -> [ClaimRequest] {
        let all = queue.withLock { queue in
            defer { queue.removeAll(keepingCapacity: true) }
            return queue
        }
        counted(all, -1)
        return all
    }

    /// Puts `kept` back before whatever was appended meanwhile.
    func restore(_ kept: [ClaimRequest]) {
        guard !kept.isEmpty else { return }
        queue.withLock { $0.insert(contentsOf: kept, at: 0) }
        counted(kept, 1)
        changes.add(1, ordering: .releasing)
    }

    var count: Int { queue.withLock { $0.count } }

    /// Whether any recipient is due by `now` (monotonic seconds).
    func hasDue(now: Double) -> Bool { queue.withLock { $0.contains { $0.due <= now } } }
}

/// A recipient waiting for its claim.
struct ClaimRequest: Sendable {
    let run: JobRun
    let index: Int
    /// Not before (monotonic seconds).
    var due: Double
    /// Times it found another processing's claim.
    var waits = 0
    /// Its app × provider endpoint (``EndpointTable``).
    let endpoint: Int
    /// The token bucket it waits for in memory, if it does (``ClaimStage`` counts them).
    var waitsForBucket: String? = nil
}
