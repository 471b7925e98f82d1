import Foundation
import PushCore
import PushDelivery
import PushEncoding
import PushProviders
import PushRedis
import PushTestSupport
import Testing
@testable import PushWorker

/// Frequency caps in the pipeline (docs/caps.md), over the fakes: the fake state models the cap
/// sets as the claim script keeps them.
@Suite("Frequency caps in the pipeline (fakes, no services)")
struct CapsPipelineTests {
    static let marketing = #","capCategory":"marketing""#
    static let twoPerDay = try! FrequencyCaps(parsing: "marketing=2/1d")
    static let rejected = Deliverer.Attempt(outcome: .rejected(reason: "BadDeviceToken"), httpStatus: 400, latencyMs: 1, attempts: 1,
                                            certainty: .answered)

    /// Claims, answers every written request with `attempt`, records; until nothing is queued.
    private func run(_ h: PipelineHarness, answering attempt: Deliverer.Attempt = FakeTransport.ok) {
        for _ in 0..<20 where h.queue.count > 0 || h.transport.pendingCount > 0 {
            h.round()
            h.transport.answer(attempt)
            h.flush()
        }
    }

    @Test("three campaigns to the same users under marketing=2/1d: two sent per user, the third capped with nothing written")
    func thirdCampaignCapped() throws {
        let h = try PipelineHarness(caps: Self.twoPerDay)
        for campaign in ["c1", "c2", "c3"] { h.job(campaign: campaign, count: 5, extra: Self.marketing) }
        run(h)
        let statuses = h.statuses()
        #expect(statuses.filter { $0 == "sent" }.count == 10)
        #expect(statuses.filter { $0 == "capped" }.count == 5)
        #expect(h.transport.written.count == 10)
        #expect(h.state.counts(app: "app_a", campaign: "c3")[.capped] == 5, "the campaign's status counts capped")
        #expect(h.claims.metrics.counter("pushworker_capped_total", [("category", "marketing")]) == 5)
        #expect(h.claims.metrics.counter("pushworker_claims_total", [("verdict", "capped")]) == 5)
        #expect(h.state.capSends(app: "app_a", user: "u0", category: "marketing").count == 2)
        let capped = try #require(h.results.first { $0["status"]?.stringValue == "capped" })
        #expect(capped["reason"] == .null || capped["reason"] == nil)
    }

    @Test("a send that fails gives its reservation back: rejected sends do not use the cap")
    func failedSendGivesBack() throws {
        let h = try PipelineHarness(caps: Self.twoPerDay)
        h.job(campaign: "c1", count: 3, extra: Self.marketing)
        run(h, answering: Self.rejected)
        #expect(h.statuses() == Array(repeating: "rejected", count: 3))
        #expect(h.state.capSends(app: "app_a", user: "u0", category: "marketing").isEmpty)
        h.job(campaign: "c2", count: 3, extra: Self.marketing)
        h.job(campaign: "c3", count: 3, extra: Self.marketing)
        run(h)
        #expect(h.statuses().filter { $0 == "sent" }.count == 6)
    }

    @Test("a round whose recipients were all capped takes no slot: the next round claims the rest at once")
    func allCappedRoundLooksAgain() throws {
        let h = try PipelineHarness(perApp: 10, caps: FrequencyCaps(rules: ["marketing": [CapRule(count: 1, windowMs: 86_400_000)]]))
        h.job(campaign: "c1", count: 10, extra: Self.marketing)
        run(h)
        h.job(campaign: "c2", count: 20, extra: Self.marketing)
        h.round()
        h.flush()
        #expect(h.statuses().filter { $0 == "capped" }.count == 10)
        h.round()
        #expect(h.transport.written.count == 20, "users 10…19 are claimed and written by the next round, with nothing else changed")
    }

    @Test("not counted: a job without capCategory, a category without caps, a recipient without userId")
    func notCounted() throws {
        let h = try PipelineHarness(caps: Self.twoPerDay)
        for campaign in ["c1", "c2"] { h.job(campaign: campaign, count: 2, extra: Self.marketing) }
        run(h)
        h.job(campaign: "otp", count: 2)
        h.job(campaign: "news", count: 2, extra: #","capCategory":"news""#)
        h.job(campaign: "c3", count: 2, extra: Self.marketing, userIDs: false)
        run(h)
        #expect(h.statuses().filter { $0 == "sent" }.count == 10)
        #expect(!h.statuses().contains("capped"))
        #expect(h.state.capSends(app: "app_a", user: "u0", category: "news").isEmpty)
    }

    @Test("a retry keeps its reservation: the recipient is not capped by its own earlier claim")
    func retryKeepsReservation() throws {
        let h = try PipelineHarness(caps: FrequencyCaps(rules: ["marketing": [CapRule(count: 1, windowMs: 86_400_000)]]))
        h.job(campaign: "c1", count: 1, extra: Self.marketing)
        h.round()
        h.transport.answer(FakeTransport.timedOut)
        h.flush()
        run(h)
        #expect(h.statuses() == ["sent"], "the resend after an unanswered attempt is claimed again under the same reservation")
        #expect(h.state.capSends(app: "app_a", user: "u0", category: "marketing").count == 1)
    }

    @Test("two workers sharing the state send three campaigns at once: no user over the cap")
    func twoWorkers() throws {
        let clock = ManualClock()
        let state = FakeDeliveryState(clock: clock)
        let a = try PipelineHarness(state: state, clock: clock, caps: Self.twoPerDay)
        let b = try PipelineHarness(state: state, clock: clock, caps: Self.twoPerDay)
        a.job(campaign: "c1", count: 20, extra: Self.marketing)
        b.job(campaign: "c2", count: 20, extra: Self.marketing)
        a.job(campaign: "c3", count: 10, extra: Self.marketing)
        b.job(campaign: "c3", count: 10, first: 10, extra: Self.marketing)
        for _ in 0..<20 {
            a.round(); b.round()
            a.transport.answer(FakeTransport.ok); b.transport.answer(FakeTransport.ok)
            a.flush(); b.flush()
        }
        let statuses = a.statuses() + b.statuses()
        #expect(statuses.filter { $0 == "sent" }.count == 40)
        #expect(statuses.filter { $0 == "capped" }.count == 20)
        for user in 0..<20 { #expect(state.capSends(app: "app_a", user: "u\(user)", category: "marketing").count == 2) }
    }
}
