import Synchronization
import PushRuntime

/// Whether the fleet's state answers, as the pipeline last saw it: a failed call marks it away
/// (the worker stops claiming and `/readyz` answers 503); the next call or probe that succeeds
/// marks it back and runs the "back" action (writing again what Redis may have lost). A probe
/// that finds a new master (Sentinel) runs the "back" action too: the new master may not have
/// received the old one's last writes.
///
/// Thread safety: an atomic and a lock; any thread.
final class RedisHealth: Sendable {
    private let healthy = Atomic<Bool>(true)
    private let metrics: Metrics
    private let logger: Logger
    private let back = Mutex<(@Sendable () -> Void)?>(nil)
    /// What the last failure was, for `/readyz` (kept while away).
    private let problem = Mutex<String>("")

    init(metrics: Metrics, logger: Logger) {
        self.metrics = metrics
        self.logger = logger
    }

    var isHealthy: Bool { healthy.load(ordering: .relaxed) }

    /// Why Redis counts as away (the last failed call or probe), nil while it answers.
    var unhealthyDetail: String? {
        guard !isHealthy else { return nil }
        let text = problem.withLock { $0 }
        return text.isEmpty ? "unreachable" : text
    }

    /// What to do when Redis answers again after an outage (set once, at composition).
    func onBack(_ action: @escaping @Sendable () -> Void) { back.withLock { $0 = action } }

    /// A call failed: unready, no new claims until a call succeeds again.
    func failed(_ error: any Error, during step: String) {
        metrics.increment("pushworker_redis_errors_total")
        problem.withLock { $0 = "unreachable during \(step): \(error)" }
        if healthy.exchange(false, ordering: .relaxed) {
            logger.error("redis unreachable: no new claims until it is back", ["redis.error": "\(error)", "redis.step": step])
        }
    }

    /// A probe found it away; `detail` says why when the client knows (e.g. no master known).
    func probeFailed(detail: String? = nil) {
        problem.withLock { $0 = "unreachable: \(detail ?? "no answer to PING")" }
        if healthy.exchange(false, ordering: .relaxed) {
            metrics.increment("pushworker_redis_errors_total")
            logger.error("redis unreachable: no new claims until it is back", ["redis.check": "ping"])
        }
    }

    /// A call succeeded: when it was away, or when `newMaster` names the master it moved to, it
    /// may have lost its data.
    func answered(newMaster: String? = nil) {
        let wasAway = !healthy.exchange(true, ordering: .relaxed)
        if let newMaster {
            logger.warning("redis master changed: re-recording the unfinished jobs' sent markers and claims", ["redis.master": newMaster])
        } else if wasAway {
            logger.info("redis is back: re-recording the unfinished jobs' sent markers and claims")
        } else {
            return
        }
        back.withLock { $0 }?()
    }
}
