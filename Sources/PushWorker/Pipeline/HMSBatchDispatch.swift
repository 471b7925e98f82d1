import PushCore
import PushProviders

extension Worker {
    /// Sends Huawei recipients that were claimed together (one claim round trip, one pacing
    /// grant) as batches (DESIGN §17): those whose shared request bodies are byte-identical
    /// share one request of up to 1000 tokens. Each recipient's outcome is still recorded on
    /// its own (its claim, its sent marker or invalid token, its result), so de-duplication and
    /// the crash bound hold per recipient exactly as for one request per recipient.
    func submitHMSBatches(_ run: JobRun, _ items: [SendItem]) {
        guard let credentials = run.credentials, !items.isEmpty else { return }
        for group in HMSBatching.group(items.map(\.request.body)) {
            let members = group.map { items[$0] }
            let tokens = members.map { $0.request.hmsToken ?? "" }
            metrics.increment("pushworker_hms_batches_total")
            deliverer.deliverHMSBatch(members[0].request, tokens: tokens, credentials: credentials) { attempts in
                // One attempt per token, in order (`deliverHMSBatch`'s promise).
                for (member, attempt) in zip(members, attempts) {
                    run.complete(member.index, run.outcome(of: attempt, index: member.index), holdsSlot: true)
                }
            }
        }
    }
}

extension JobPlanner {
    /// The Huawei batches of a planned job, as the worker forms them when the recipients are
    /// claimed together (`render`, `send`): positions in `plans` of ready Huawei recipients,
    /// grouped by identical shared bodies, at most 1000 each, in job order.
    public static func hmsBatches(_ plans: [PlannedRecipient]) -> [[Int]] {
        var positions: [Int] = []
        var bodies: [[UInt8]] = []
        for (position, plan) in plans.enumerated() {
            guard case .ready(let request) = plan.state, request.platform == .huawei else { continue }
            positions.append(position)
            bodies.append(request.body)
        }
        return HMSBatching.group(bodies).map { $0.map { positions[$0] } }
    }
}
