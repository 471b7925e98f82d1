import Foundation
import PushCore
import PushDelivery
import PushEncoding
import PushProviders
import PushRedis
import PushTestSupport
import Testing
@testable import PushWorker

/// Campaign control in the pipeline (docs/campaigns.md), over the fakes: the state's controls
/// as `pushworker campaign` sets them, the transport answering by hand.
extension PipelineHarness {
    /// Claim rounds (the per-app cap admits a few per round) until nothing is queued.
    func drainQueue(rounds: Int = 50) {
        for _ in 0..<rounds where queue.count > 0 {
            round()
            flush()
        }
    }
}

@Suite("Campaign control in the pipeline (fakes, no services)")
struct CampaignControlPipelineTests {
    static let dead = Deliverer.Attempt(outcome: .invalidToken(reason: "Unregistered", invalidSinceMs: 1_000), httpStatus: 410, latencyMs: 1,
                                        attempts: 1, certainty: .answered)

    @Test("a paused campaign: nothing written, its recipients parked on the retry topic holding no slot; another campaign sends at once")
    func pausedIsParked() throws {
        let h = try PipelineHarness()
        h.state.setControl(app: "app_a", campaign: "sale", CampaignControl(state: .paused))
        h.job(campaign: "sale", count: 5)
        h.job(campaign: "otp", count: 2)
        h.round()
        h.flush()
        #expect(h.transport.written.count == 2)
        #expect(h.slots.current == 2)
        let retry = try #require(h.sink.produced("retry").first)
        let parked = try JobDecoder.decode(retry.value)
        #expect(parked.campaignID == "sale" && parked.recipients.count == 5)
        let due = try #require(parked.notBefore).timeIntervalSince1970
        #expect(abs(due - (h.clock.wallSeconds + 10)) < 1, "looked at again after PUSHWORKER_PAUSE_RECHECK_SECONDS")
        #expect(h.results.isEmpty)
        #expect(h.queue.count == 0)
    }

    @Test("pause after the claim, before the write: the waiting requests are withheld within the refresh, their claims given back, then parked")
    func pauseWithholdsClaimedUnwritten() throws {
        let h = try PipelineHarness(queuesWrites: true)
        let run = try #require(h.job(campaign: "sale", count: 3))
        h.round()
        #expect(h.transport.queuedCount == 3)
        h.state.setControl(app: "app_a", campaign: "sale", CampaignControl(state: .paused))
        h.controls.refresh(active: h.registry.runs.map(\.campaign), now: h.clock.monotonicSeconds)
        h.transport.writeQueued()
        h.flush()
        #expect(h.transport.written.isEmpty)
        #expect(h.transport.withheldCount == 3)
        #expect(h.state.holder(app: "app_a", campaign: "sale", msgID: run.plans[0].msgID ?? "") == nil)
        h.round()
        h.flush()
        #expect(h.transport.written.isEmpty)
        #expect(h.sink.produced("retry").count == 1)
        #expect(h.slots.current == 0)
        #expect(h.results.isEmpty)
    }

    @Test("cancel: written requests keep their answers, every unsent recipient gets one final result cancelled, later jobs too")
    func cancel() throws {
        let h = try PipelineHarness(maxInFlight: 100, perApp: 2)
        h.job(campaign: "sale", count: 6)
        h.round()
        #expect(h.transport.written.count == 2)
        h.state.setControl(app: "app_a", campaign: "sale", CampaignControl(state: .cancelled))
        h.controls.refresh(active: h.registry.runs.map(\.campaign), now: h.clock.monotonicSeconds)
        h.transport.answer(FakeTransport.ok)
        h.flush()
        h.job(campaign: "sale", count: 3, first: 100)
        h.drainQueue()
        #expect(h.transport.written.count == 2)
        #expect(h.statuses().sorted() == Array(repeating: "cancelled", count: 7) + ["sent", "sent"])
        #expect(Set(h.results.compactMap { $0["msgId"]?.stringValue }).count == 9, "one final result per recipient")
        #expect(h.state.counts(app: "app_a", campaign: "sale") == [.sent: 2, .cancelled: 7])
        #expect(h.registry.unfinishedMessages == 0)
    }

    @Test("the control's throttle wins over the job's: its campaign bucket is asked even when the job has none")
    func controlThrottle() throws {
        let h = try PipelineHarness()
        h.state.setControl(app: "app_a", campaign: "sale", CampaignControl(throttlePerMinute: 60))
        h.state.setTokens(2, bucket: RedisKeys.campaignBucket(appID: "app_a", campaignID: "sale"))
        h.job(campaign: "sale", count: 5)
        h.round()
        #expect(h.transport.written.count == 2)
        // One a second: the next two turns are within 2 s and wait in memory, holding no slot;
        // the third goes to the retry topic.
        #expect(h.queue.count == 2)
        #expect(h.slots.current == 2)
        h.transport.answer(FakeTransport.ok)
        h.flush()
        h.state.setTokens(10, bucket: RedisKeys.campaignBucket(appID: "app_a", campaignID: "sale"))
        h.clock.advance(1)
        h.drainQueue()
        #expect(h.transport.written.count == 4)
        h.transport.answer(FakeTransport.ok)
        h.flush()
        let parked = try JobDecoder.decode(try #require(h.sink.produced("retry").first).value)
        #expect(parked.recipients.count == 1)
    }

    @Test("sendBy: a job's deadline that passed ends its recipients expired/send_by_passed; a control's deadline wins over the job's")
    func deadline() throws {
        let h = try PipelineHarness()
        h.job(campaign: "late", count: 2, extra: #","sendBy":"2001-01-01T00:00:00Z""#)
        h.state.setControl(app: "app_a", campaign: "cut", CampaignControl(sendByMs: 1_000))
        h.job(campaign: "cut", count: 1, first: 10, extra: #","sendBy":"2999-01-01T00:00:00Z""#)
        h.state.setControl(app: "app_a", campaign: "later", CampaignControl(sendByMs: 32_503_680_000_000))
        h.job(campaign: "later", count: 1, first: 20, extra: #","sendBy":"2001-01-01T00:00:00Z""#)
        h.round()
        h.flush()
        #expect(h.transport.written.count == 1)
        #expect(h.statuses().filter { $0 == "expired" }.count == 3)
        #expect(Set(h.statuses("reason")) == ["send_by_passed"])
    }

    @Test("the guardrail: a campaign of dead tokens pauses itself at its minimum, the rest parked, never written")
    func guardrail() throws {
        let clock = ManualClock()
        let state = FakeDeliveryState(clock: clock, guardSettings: CampaignGuard(invalidShare: 0.5, minSends: 4))
        let h = try PipelineHarness(maxInFlight: 100, perApp: 4, state: state, clock: clock)
        h.job(campaign: "dead", count: 20)
        h.round()
        #expect(h.transport.written.count == 4)
        h.transport.answer(Self.dead)
        h.flush()
        #expect(state.control(app: "app_a", campaign: "dead").state == .paused)
        #expect(state.control(app: "app_a", campaign: "dead").reason?.hasPrefix("guardrail:") == true)
        h.drainQueue()
        #expect(h.transport.written.count == 4)
        #expect(h.statuses() == Array(repeating: "invalid_token", count: 4))
        #expect(h.sink.produced("retry").count == 1)
    }

    @Test("a control read more than a second ago is read again before it decides: a resume reaches recipients coming back from the retry topic")
    func staleControlIsReadAgain() throws {
        let h = try PipelineHarness()
        h.state.setControl(app: "app_a", campaign: "sale", CampaignControl(state: .paused))
        h.job(campaign: "sale", count: 1)
        h.round()
        h.flush()
        #expect(h.sink.produced("retry").count == 1)
        h.state.setControl(app: "app_a", campaign: "sale", .none)
        h.clock.advance(2)
        h.job(campaign: "sale", count: 1, first: 1)
        h.round()
        #expect(h.transport.written.count == 1)
    }

    @Test("a campaign's control is read before its first claim: a control set before the job arrived holds from the first round")
    func readBeforeFirstClaim() throws {
        let h = try PipelineHarness()
        h.state.setControl(app: "app_a", campaign: "sale", CampaignControl(state: .cancelled))
        h.job(campaign: "sale", count: 3)
        h.round()
        h.flush()
        #expect(h.transport.written.isEmpty)
        #expect(h.statuses() == ["cancelled", "cancelled", "cancelled"])
    }

    @Test("Redis unreachable for a campaign never read: nothing of it is claimed or written until the control is known")
    func unknownControlWaits() throws {
        let h = try PipelineHarness()
        h.state.isAvailable = false
        h.job(campaign: "sale", count: 2)
        h.round()
        #expect(h.transport.written.isEmpty)
        #expect(h.queue.count == 2)
        h.state.isAvailable = true
        h.clock.advance(2)
        h.round()
        #expect(h.transport.written.count == 2)
    }
}
