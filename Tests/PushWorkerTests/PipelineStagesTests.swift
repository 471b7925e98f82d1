import Foundation
@testable import PushRuntime
import PushCore
import PushCrypto
import PushEncoding
import PushKafka
import PushPipeline
import PushProviders
import PushTestSupport
import Testing
@testable import PushWorker

/// The pipeline's stages composed over fakes of their ports — the fleet's state, the message
/// sink, the provider transport, the clock — driven turn by turn: no Kafka, no Redis, no sandbox.
final class PipelineHarness: @unchecked Sendable {
    // Thread safety: used from the test's thread; the stages' own threads touch only their
    // Sendable parts.
    let clock: ManualClock
    let state: FakeDeliveryState
    let sink = FakeSink()
    let transport: FakeTransport
    let registry: JobRegistry
    let slots: InFlightSlots
    let endpoints = EndpointTable()
    let queue = ClaimQueue()
    let health: RedisHealth
    let publisher: ResultPublisher
    let claims: ClaimStage
    let dispatcher: DispatchStage
    let intake: JobIntake
    let controls: CampaignControls
    let maxInFlight: Int
    private var offset: Int64 = 0

    static let keys = "k1:" + Base64URL.encode(Array(repeating: 7, count: 32))

    init(policy: UnansweredPolicy = .replace, maxInFlight: Int = 100, perApp: Int = 50, holdMaxSeconds: Double = 30, leaseMs: Int64 = 30_000,
         requestTimeoutSeconds: Double = 10, maxAttempts: Int = 5, queuesWrites: Bool = false, pauseRecheckSeconds: Double = 10,
         state sharedState: FakeDeliveryState? = nil, clock sharedClock: ManualClock? = nil, caps: FrequencyCaps = FrequencyCaps(),
         quietHours: [String: QuietHours] = [:], maxDeferSeconds: Double = 3540) throws {
        clock = sharedClock ?? ManualClock()
        state = sharedState ?? FakeDeliveryState(clock: clock)
        transport = FakeTransport(queuesWrites: queuesWrites)
        self.maxInFlight = maxInFlight
        let metrics = Metrics()
        let logger = Logger(level: .critical)
        let room = RoomSignal()
        registry = JobRegistry(room: room)
        slots = InFlightSlots(limit: maxInFlight, room: room)
        health = RedisHealth(metrics: metrics, logger: logger)
        controls = CampaignControls(state: state, metrics: metrics, logger: logger)
        publisher = ResultPublisher(sink: sink, state: state, topics: .init(results: "results", tokens: "tokens", retry: "retry", dlq: "dlq"),
                                    metrics: metrics, logger: logger, clock: clock, health: health, slots: slots, endpoints: endpoints,
                                    registry: registry, claimQueue: queue, queue: DispatchQueue(label: "test.finisher"), delay: .seconds(3600))
        claims = ClaimStage(settings: .init(leaseMs: leaseMs, unansweredLimit: policy.claimLimit,
                                            admission: Admission(maxInFlightPerEndpoint: perApp, holdMaxSeconds: holdMaxSeconds),
                                            pauseRecheckSeconds: pauseRecheckSeconds),
                            state: state, clock: clock, queue: queue, endpoints: endpoints, slots: slots, registry: registry,
                            outcomes: publisher, health: health, controls: controls, metrics: metrics, logger: logger)
        dispatcher = DispatchStage(settings: .init(leaseSeconds: Double(leaseMs) / 1000, requestTimeoutSeconds: requestTimeoutSeconds,
                                                   rule: AttemptRule(policy: policy, retryPolicy: RetryPolicy(maxAttempts: maxAttempts))),
                                   transport: transport, clock: clock, endpoints: endpoints, outcomes: publisher, state: state, health: health,
                                   metrics: metrics, logger: logger, background: DispatchQueue(label: "test.background"))
        let planner = JobPlanner(keyring: try MsgIDKeyring(parsing: Self.keys), webPushPolicy: WebPushPolicy(extraAllowedHosts: []))
        let apns = AppCredentials.APNS(teamID: "TEAM123456", keyID: "KEY1234567", key: try P256PrivateKey.generate(), topic: "com.example.app",
                                       endpoint: "https://apns.test")
        let credentials = ["app_a", "app_b"].reduce(into: [String: AppCredentials]()) { all, app in
            all[app] = AppCredentials(appID: app, apns: apns, fcm: nil, webPush: nil, additionalDataAtRoot: false, ratePerSecond: nil, problems: [])
        }
        let publisher = self.publisher
        intake = JobIntake(settings: .init(dedupMaxSeconds: 86_400, caps: caps, quietHours: quietHours, maxDeferSeconds: maxDeferSeconds), planner: planner, credentials: { credentials[$0] }, clock: clock,
                           registry: registry, queue: queue, endpoints: endpoints, outcomes: publisher,
                           deadLetter: { publisher.deadLetter($0, reason: $1) }, controls: controls, metrics: metrics, logger: logger)
    }

    /// A job of `count` iOS recipients of `app`, processed as a polled message.
    @discardableResult
    func job(app: String = "app_a", campaign: String = "cmp", count: Int, id: String? = nil, first: Int = 0, numbers: [Int]? = nil,
             extra: String = "", userIDs: Bool = true) -> JobRun? {
        let recipients = (numbers ?? Array(first..<(first + count))).map { n in
            let token = String(repeating: "a", count: 56) + String(format: "%08x", n)
            let user = userIDs ? #""userId":"u\#(n)","# : ""
            return #"{\#(user)"subscriptionId":"s\#(n)","platform":"ios","token":"\#(token)"}"#
        }.joined(separator: ",")
        let jobID = id ?? campaign + ":" + String(offset)
        let json = #"{"schemaVersion":1,"jobId":"\#(jobID)","appId":"\#(app)","campaignId":"\#(campaign)"\#(extra),"content":{"defaultLanguage":"en","languages":{"en":{"title":"Hi","body":"Sale"}}},"recipients":[\#(recipients)]}"#
        offset += 1
        let message = FakeMessages.message(offset: offset, value: json)
        if let source {
            source.enqueue(message)
            return poll(source)
        }
        registry.offsets.begin(message.topicPartition, offset: message.offset)
        intake.process(message)
        return registry.runs.first { $0.offset == offset }
    }

    /// When set, ``job(app:campaign:count:id:first:numbers:extra:)`` goes through this source.
    var source: FakeJobSource?

    /// Polls one message from `source` and processes it as the worker's loop does.
    func poll(_ source: FakeJobSource) -> JobRun? {
        guard case .success(let message)? = source.poll(timeout: .zero) else { return nil }
        registry.offsets.begin(message.topicPartition, offset: message.offset)
        intake.process(message)
        return registry.runs.first { $0.offset == message.offset }
    }

    /// Commits what the offsets allow, as the worker's loop does.
    func commit(to source: FakeJobSource) throws {
        let next = registry.offsets.committable()
        guard !next.isEmpty else { return }
        try source.commit(next)
        registry.offsets.markCommitted(next)
    }

    /// One loop turn's claim and dispatch.
    func round(parkHeld: Bool = false) {
        dispatcher.dispatch(claims.round(room: max(0, maxInFlight - slots.current), parkHeld: parkHeld))
    }

    /// Records and publishes what gathered; waits for the sink's acknowledgements.
    func flush() {
        publisher.queue.sync { publisher.flushNow() }
        sink.flush(timeout: .seconds(1))
        publisher.queue.sync {}
    }

    /// The results published so far, as JSON objects.
    var results: [[String: JSONValue]] {
        sink.produced("results").compactMap { message -> [String: JSONValue]? in
            guard case .object(let object)? = try? JSONParser.parse(message.value) else { return nil }
            return object.members.reduce(into: [String: JSONValue]()) { $0[$1.key] = $1.value }
        }
    }

    func statuses(_ key: String = "status") -> [String] { results.compactMap { $0[key]?.stringValue } }

    /// The msgIds of the requests written, in order.
    var writtenMsgIDs: [String] {
        transport.written.compactMap { written -> String? in
            guard case .object(let body)? = try? JSONParser.parse(written.request.body),
                  case .object(let custom)? = body["custom"], let id = custom["i"]?.stringValue else { return nil }
            return id
        }
    }
}

@Suite("Pipeline stages over fakes (no services)")
struct PipelineStagesTests {
    @Test("claim → dispatch → answer → record → publish: one result per recipient, sent markers, the offset released")
    func happyPath() throws {
        let h = try PipelineHarness()
        h.job(count: 3)
        h.round()
        #expect(h.transport.written.count == 3)
        #expect(h.slots.current == 3)
        h.transport.answer(FakeTransport.ok)
        h.flush()
        #expect(h.statuses() == ["sent", "sent", "sent"])
        #expect(h.slots.current == 0)
        #expect(h.registry.unfinishedMessages == 0)
        #expect(h.registry.offsets.committable().values.first == 2)
        #expect(h.results.allSatisfy { $0["certainty"] == nil })
    }

    @Test("a request written and never answered is resent once, with the same request (same replace key); the accepted resend says so")
    func unansweredResentOnce() throws {
        let h = try PipelineHarness()
        let run = try #require(h.job(count: 1))
        h.round()
        let first = try #require(h.transport.written.first)
        h.transport.answer(FakeTransport.timedOut)
        h.flush()
        #expect(h.results.isEmpty)
        #expect(h.state.unansweredCount(msgID: run.plans[0].msgID ?? "") == 1)
        h.round()
        #expect(h.transport.written.count == 2)
        #expect(h.transport.written[1].request == first.request)
        h.transport.answer(FakeTransport.ok)
        h.flush()
        #expect(h.statuses() == ["sent"])
        #expect(h.results.first?["certainty"]?.stringValue == "unanswered_resent")
        #expect(h.results.first?["attempts"]?.numberValue.map { Int($0) } == 2)
    }

    @Test("the resend unanswered too ends failed/unanswered; never a third write")
    func unansweredTwice() throws {
        let h = try PipelineHarness()
        h.job(count: 1)
        h.round()
        h.transport.answer(FakeTransport.timedOut)
        h.flush()
        h.round()
        h.transport.answer(FakeTransport.timedOut)
        h.flush()
        h.round()
        #expect(h.transport.written.count == 2)
        #expect(h.statuses() == ["failed"])
        #expect(h.statuses("reason") == ["unanswered"])
    }

    @Test("under never, an unanswered request is final at once; a copy of the job elsewhere does not send it either")
    func neverPolicy() throws {
        let clock = ManualClock()
        let state = FakeDeliveryState(clock: clock)
        let h = try PipelineHarness(policy: .never, state: state, clock: clock)
        h.job(count: 1, id: "same")
        h.round()
        h.transport.answer(FakeTransport.timedOut)
        h.flush()
        #expect(h.statuses("reason") == ["unanswered"])
        let other = try PipelineHarness(policy: .never, state: state, clock: clock)
        other.job(count: 1, id: "same")
        other.round()
        other.flush()
        #expect(other.transport.written.isEmpty)
        #expect(other.statuses("reason") == ["unanswered"])
    }

    @Test("drain: nothing more is claimed, waiting writes are withheld and released, written ones keep their answers; the unanswered are left for the next processing")
    func drain() throws {
        let h = try PipelineHarness(queuesWrites: true)
        let run = try #require(h.job(count: 4))
        h.round()
        #expect(h.transport.queuedCount == 4)
        // All four are written; another job arrives; then SIGTERM.
        h.transport.writeQueued()
        #expect(h.transport.pendingCount == 4)
        h.job(count: 2, first: 10)
        h.dispatcher.beginDrain()
        // An answer arriving during the drain is recorded and published.
        h.transport.answer(FakeTransport.ok, count: 2)
        // The deadline: the last two are aborted unanswered.
        h.transport.shutdown(drainTimeout: .zero)
        h.flush()
        #expect(h.statuses() == ["sent", "sent"])
        #expect(h.state.unansweredCount(msgID: run.plans[2].msgID ?? "") == 1)
        #expect(h.state.holder(app: "app_a", campaign: "cmp", msgID: run.plans[2].msgID ?? "") == nil)
        #expect(h.slots.current == 0)
        // Neither job finished: both are redone by whoever owns their partition next.
        #expect(h.registry.unfinishedMessages == 2)
        #expect(h.queue.count == 2, "the second job's recipients were never claimed")
    }

    @Test("drain: writes still waiting for a connection are withheld at once and their claims given back")
    func drainWithholdsQueued() throws {
        let h = try PipelineHarness(queuesWrites: true)
        let run = try #require(h.job(count: 3))
        h.round()
        h.dispatcher.beginDrain()
        h.flush()
        #expect(h.transport.written.isEmpty)
        #expect(h.transport.withheldCount == 3)
        #expect(h.results.isEmpty)
        #expect(h.slots.current == 0)
        #expect(h.state.holder(app: "app_a", campaign: "cmp", msgID: run.plans[0].msgID ?? "") == nil)
        #expect(h.queue.count == 0)
    }

    @Test("a lease lost to another worker: the waiting request is not written; it waits for the other's outcome and ends duplicate")
    func leaseLost() throws {
        let h = try PipelineHarness(leaseMs: 30_000, queuesWrites: true)
        let run = try #require(h.job(count: 1))
        let msgID = try #require(run.plans[0].msgID)
        h.round()
        // The lease runs out on Redis's clock while the request waits for a connection; another
        // worker takes the claim.
        h.clock.advance(31)
        #expect(h.state.claimAs("other", app: "app_a", campaign: "cmp", msgID: msgID) == .claimed)
        h.claims.renewLeases()
        h.transport.writeQueued()
        h.flush()
        #expect(h.transport.written.isEmpty)
        #expect(h.queue.count == 1)
        h.state.recordSent("other", app: "app_a", campaign: "cmp", msgID: msgID)
        h.round()
        h.flush()
        #expect(h.transport.written.isEmpty)
        #expect(h.statuses() == ["duplicate"])
    }

    @Test("Redis unreachable for longer than the lease: the waiting request is not written")
    func leaseRunsOutLocally() throws {
        let h = try PipelineHarness(leaseMs: 30_000, requestTimeoutSeconds: 10, queuesWrites: true)
        h.job(count: 1)
        h.round()
        h.state.isAvailable = false
        h.clock.advance(21) // 21 s + a 10 s request would outlast the 30 s lease
        h.claims.renewLeases()
        h.transport.writeQueued()
        #expect(h.transport.written.isEmpty)
        #expect(h.transport.withheldCount == 1)
    }

    @Test("a worker whose clock runs 30 s ahead takes no live lease: leases are judged by the state's clock")
    func skewedClock() throws {
        let redisClock = ManualClock()
        let state = FakeDeliveryState(clock: redisClock)
        let normal = try PipelineHarness(state: state, clock: redisClock)
        let aheadClock = ManualClock(wall: redisClock.wallSeconds + 30, monotonic: 50)
        let ahead = try PipelineHarness(state: state, clock: aheadClock)
        normal.job(count: 5, id: "same")
        ahead.job(count: 5, id: "same")
        normal.round()
        ahead.round()
        #expect(normal.transport.written.count == 5)
        #expect(ahead.transport.written.isEmpty)
        normal.transport.answer(FakeTransport.ok)
        normal.flush()
        redisClock.advance(1); aheadClock.advance(1)
        ahead.round()
        ahead.flush()
        #expect(ahead.transport.written.isEmpty)
        #expect(ahead.statuses() == Array(repeating: "duplicate", count: 5))
    }

    @Test("a late answer, after the lease ran out, is still recorded and published as sent")
    func lateAnswer() throws {
        let h = try PipelineHarness(leaseMs: 30_000)
        let run = try #require(h.job(count: 1))
        h.round()
        h.clock.advance(120)
        h.transport.answer(FakeTransport.ok)
        h.flush()
        #expect(h.statuses() == ["sent"])
        #expect(h.state.isSent(app: "app_a", campaign: "cmp", msgID: run.plans[0].msgID ?? ""))
    }

    @Test("a job whose expiresAt has passed: every recipient expired with reason expires_at_passed, nothing written")
    func expiredJobSaysWhy() throws {
        let h = try PipelineHarness()
        h.job(count: 2, extra: #","expiresAt":"2020-01-01T00:00:00Z""#)
        h.round()
        h.flush()
        #expect(h.transport.written.isEmpty)
        #expect(h.statuses() == ["expired", "expired"])
        #expect(h.statuses("reason") == ["expires_at_passed", "expires_at_passed"])
        #expect(h.registry.unfinishedMessages == 0)
    }

    @Test("held past the job's expiresAt (429 with Retry-After 3600, expiresAt in 60 s): expired with reason expired_while_held, not parked")
    func heldPastExpiryExpires() throws {
        let h = try PipelineHarness(maxInFlight: 100, perApp: 1)
        // The harness's wall clock is 1_800_000_000 (2027-01-15T08:00:00Z): the job lives one more minute.
        h.job(count: 3, extra: #","expiresAt":"2027-01-15T08:01:00Z""#)
        h.round()
        #expect(h.transport.written.count == 1)
        h.transport.answer(FakeTransport.quotaExceeded(retryAfter: 3600))
        h.flush()
        h.round()
        h.flush()
        let reasons = zip(h.statuses(), h.statuses("reason")).filter { $0.0 == "expired" }.map(\.1)
        #expect(reasons.count == 2, "\(h.statuses()) \(h.statuses("reason"))")
        #expect(reasons.allSatisfy { $0 == "expired_while_held" })
        // Only the recipient the provider answered goes to the retry topic (due within the job's
        // minute); the held ones, due in an hour, are not parked there.
        #expect(h.sink.produced("retry").count == 1)
    }

    @Test("one app at 429 with Retry-After 3600: its waiting recipients go to the retry topic, holding no slot; another app's job is sent at once")
    func tenantsDoNotStall() throws {
        let h = try PipelineHarness(maxInFlight: 100, perApp: 50)
        h.job(app: "app_a", campaign: "sale", count: 150)
        h.round()
        #expect(h.transport.written.count == 50) // the per-app cap
        h.transport.answer(FakeTransport.quotaExceeded(retryAfter: 3600), count: 1)
        h.transport.answer(FakeTransport.quotaExceeded(retryAfter: 3600))
        h.flush()
        h.job(app: "app_b", campaign: "otp", count: 10)
        h.round()
        h.flush()
        // app_b's ten were written; app_a's hundred waiting were parked, none written.
        #expect(h.transport.written.count == 60)
        #expect(h.transport.written.suffix(10).allSatisfy { $0.request.url.contains("/3/device/") })
        #expect(h.queue.count == 10 - 10)
        let retries = h.sink.produced("retry")
        #expect(!retries.isEmpty)
        #expect(h.slots.current == 10)
        h.transport.answer(FakeTransport.ok)
        h.flush()
        #expect(h.statuses().filter { $0 == "sent" }.count == 10)
    }

    @Test("five connect failures open the endpoint's breaker: its recipients wait without spending attempts; the probe's success lets them through")
    func breaker() throws {
        let h = try PipelineHarness(maxInFlight: 100, perApp: 5)
        h.job(count: 20)
        h.round()
        #expect(h.transport.written.count == 5)
        h.transport.answer(FakeTransport.connectFailed)
        h.flush()
        #expect(h.endpoints.isBreakerOpen(h.endpoints.id(appID: "app_a", provider: "apns")))
        // The first failures spent an attempt (the retry topic); nothing is written while open.
        h.round()
        #expect(h.transport.written.count == 5)
        // Open for 1 s: then one probe.
        h.clock.advance(1)
        h.round()
        #expect(h.transport.written.count == 6)
        h.transport.answer(FakeTransport.ok)
        h.flush()
        h.round()
        #expect(h.transport.written.count == 11)
        h.transport.answer(FakeTransport.ok)
        h.flush()
        #expect(h.results.allSatisfy { $0["attempts"]?.numberValue.map { Int($0) } == 1 })
        #expect(!h.statuses().contains("failed"))
    }

    @Test("the per-app cap leaves room for other apps")
    func perAppCap() throws {
        let h = try PipelineHarness(maxInFlight: 10, perApp: 4)
        h.job(app: "app_a", count: 8)
        h.job(app: "app_b", count: 3, first: 100)
        h.round()
        #expect(h.transport.written.count == 7)
        #expect(h.endpoints.admissionView(now: h.clock.monotonicSeconds).inFlight.reduce(0, +) == 7)
    }

    @Test("a job listing one subscription twice sends it once: the second listing ends duplicate, nothing stalls")
    func repeatedSubscriptionInOneJob() throws {
        let h = try PipelineHarness(maxInFlight: 10, perApp: 4)
        h.job(count: 12, numbers: (0..<6).flatMap { [$0, $0] })
        for _ in 0..<6 {
            h.round()
            h.transport.answer(FakeTransport.ok)
            h.flush()
        }
        #expect(Set(h.writtenMsgIDs).count == 6)
        #expect(h.writtenMsgIDs.count == 6)
        #expect(h.statuses().filter { $0 == "sent" }.count == 6)
        #expect(h.statuses().filter { $0 == "duplicate" }.count == 6)
        #expect(h.registry.unfinishedMessages == 0)
    }

    @Test("through the job source: a message's offset is committed once every recipient's result is out, not before")
    func commitsThroughTheJobSource() throws {
        let h = try PipelineHarness()
        let source = FakeJobSource()
        let partition = FakeMessages.message(offset: 0).topicPartition
        source.rebalance(.assigned([partition]))
        #expect(source.hasJoinedGroup)
        h.source = source
        #expect(h.job(count: 3) != nil)
        h.round()
        try h.commit(to: source)
        // The unfinished message is where the group resumes: nothing past it is committed.
        #expect(source.committed == [partition: 1])
        h.transport.answer(FakeTransport.ok)
        h.flush()
        try h.commit(to: source)
        #expect(h.statuses() == ["sent", "sent", "sent"])
        #expect(source.committed == [partition: 2])
        #expect(source.poll(timeout: .zero) == nil)
    }
}
