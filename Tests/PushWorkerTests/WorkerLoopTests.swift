import PushKafka
import PushTestSupport
import Testing
@testable import PushWorker

/// The consumer loop's decisions without any service (docs/pipeline.md; docs/pipeline.md).
@Suite("WorkerLoop (the consumer loop's state machine)")
struct WorkerLoopTests {
    static let p0 = TopicPartition(topic: "push.jobs.v1", partition: 0)
    static let p1 = TopicPartition(topic: "push.jobs.v1", partition: 1)
    static let r0 = TopicPartition(topic: "push.retry.v1", partition: 0)

    static func settings(maxInFlight: Int = 1000) -> WorkerLoop.Settings {
        WorkerLoop.Settings(maxInFlight: maxInFlight, saturationPauseSeconds: 5, drainSeconds: 25)
    }

    static func reading(_ now: Double, inFlight: Int = 0, unclaimed: Int = 0, unfinished: Int = 0, redis: Bool = true,
                        stop: Bool = false, assignment: Set<TopicPartition> = [p0, p1, r0], unfinishedRecipients: Int = 0) -> WorkerLoop.Reading {
        WorkerLoop.Reading(now: now, inFlight: inFlight, unclaimed: unclaimed, unfinishedMessages: unfinished,
                           assignment: assignment, redisHealthy: redis, stopRequested: stop, unfinishedRecipients: unfinishedRecipients)
    }

    /// Actions as short words, for readable expectations.
    static func words(_ actions: [WorkerLoop.Action]) -> [String] {
        actions.map { action in
            switch action {
            case .process(let message): "process \(message.topic)[\(message.partition)]@\(message.offset)"
            case .claimAndDispatch(let room, let parkHeld): parkHeld ? "claim \(room) park" : "claim \(room)"
            case .deadLetter(let message, let reason): "dead-letter \(message.topic)[\(message.partition)]@\(message.offset) \(reason)"
            case .waitForAnswers(let timeout): "wait answers \(timeout)ms"
            case .pause(let partitions): "pause " + partitions.map(\.description).joined(separator: ",")
            case .resume(let partitions): "resume " + partitions.map(\.description).joined(separator: ",")
            case .poll(let max, let timeout): "poll \(max) \(timeout)ms"
            case .waitForRoom(let timeout): "wait \(timeout)ms"
            case .commit: "commit"
            case .reportLag: "lag"
            case .pingRedis: "ping"
            case .trimHeap: "trim"
            case .renewLeases: "renew"
            case .refreshControls: "controls"
            case .beginDrain(let deadline): "drain until \(Int(deadline))"
            case .finish: "finish"
            }
        }
    }

    @Test("an idle turn: claim with all the room, poll one message (job size unknown yet), commit, the periodic chores once")
    func idle() {
        var loop = WorkerLoop(settings: Self.settings())
        #expect(Self.words(loop.turn(Self.reading(100))) == ["claim 1000", "poll 1 50ms", "commit", "lag", "ping", "trim"])
        // 1 s later: no chore is due yet.
        #expect(Self.words(loop.turn(Self.reading(101))) == ["claim 1000", "poll 1 50ms", "commit"])
        // Chores come back at their intervals: ping and trim every 2 s, lag every 5 s, renewals every 10 s.
        #expect(Self.words(loop.turn(Self.reading(102))) == ["claim 1000", "poll 1 50ms", "commit", "ping", "trim"])
        #expect(Self.words(loop.turn(Self.reading(105))) == ["claim 1000", "poll 1 50ms", "commit", "lag", "ping", "trim"])
        #expect(Self.words(loop.turn(Self.reading(110))).contains("renew"))
    }

    @Test("jobs whose results are not acknowledged yet hold back polling at 3 × the in-flight bound, like a saturation")
    func unfinishedRecipients() {
        var loop = WorkerLoop(settings: Self.settings(maxInFlight: 100))
        #expect(loop.settings.maxUnfinishedRecipients == 300)
        // Below: nothing in flight, nothing queued, 299 recipients awaiting acknowledgement: poll.
        #expect(Self.words(loop.turn(Self.reading(10, unfinished: 3, unfinishedRecipients: 299))).prefix(3) == ["claim 100", "poll 1 50ms", "commit"])
        // At it: wait (woken by room, at most 20 ms), no poll, the claims and commits go on.
        // Held recipients are parked then (they must not keep other tenants' jobs out).
        #expect(Self.words(loop.turn(Self.reading(11, unfinished: 3, unfinishedRecipients: 300))).prefix(3) == ["claim 100 park", "wait 20ms", "commit"])
        #expect(loop.phase == .saturated(since: 11))
        // Lasting: every partition paused, polling goes on (rebalances); resumed once below.
        let long = Self.words(loop.turn(Self.reading(16, unfinished: 3, unfinishedRecipients: 400)))
        #expect(long.prefix(4) == ["claim 100 park", "pause push.jobs.v1[0],push.jobs.v1[1],push.retry.v1[0]", "poll 1 50ms", "commit"])
        #expect(loop.phase == .paused(since: 11))
        #expect(Self.words(loop.turn(Self.reading(17, unfinished: 1, unfinishedRecipients: 50))).prefix(3)
                == ["claim 100", "resume push.jobs.v1[0],push.jobs.v1[1],push.retry.v1[0]", "poll 1 50ms"])
        #expect(loop.phase == .running)
    }

    @Test("the heap is trimmed only while idle: nothing in flight, queued or unfinished")
    func trimOnlyWhenIdle() {
        var loop = WorkerLoop(settings: Self.settings())
        #expect(!Self.words(loop.turn(Self.reading(100, inFlight: 1))).contains("trim"))
        #expect(!Self.words(loop.turn(Self.reading(103, unclaimed: 5))).contains("trim"))
        #expect(!Self.words(loop.turn(Self.reading(106, unfinished: 1))).contains("trim"))
        #expect(Self.words(loop.turn(Self.reading(109))).contains("trim"))
        #expect(!Self.words(loop.turn(Self.reading(110))).contains("trim"), "then every 2 s")
        #expect(Self.words(loop.turn(Self.reading(111))).contains("trim"))
    }

    @Test("poll size follows the room and the last job's size, between 1 and 64")
    func pollSize() {
        var loop = WorkerLoop(settings: Self.settings(maxInFlight: 2000))
        loop.processed(recipients: 100)
        #expect(Self.words(loop.turn(Self.reading(1, inFlight: 500, unclaimed: 300))).contains("poll 12 50ms")) // (2000-800)/100
        loop.processed(recipients: 1)
        #expect(Self.words(loop.turn(Self.reading(2))).contains("poll 64 50ms"))
        loop.processed(recipients: 5000)
        #expect(Self.words(loop.turn(Self.reading(3))).contains("poll 1 50ms"))
    }

    @Test("a short saturation is waited out without polling or pausing; one that lasts pauses every partition and keeps polling; room resumes them")
    func saturation() {
        var loop = WorkerLoop(settings: Self.settings(maxInFlight: 100))
        #expect(Self.words(loop.turn(Self.reading(10, inFlight: 100))).prefix(3) == ["claim 0", "wait 20ms", "commit"])
        #expect(Self.words(loop.turn(Self.reading(14, inFlight: 120))).prefix(3) == ["claim 0", "wait 20ms", "commit"])
        let long = Self.words(loop.turn(Self.reading(15, inFlight: 100)))
        #expect(long.prefix(4) == ["claim 0", "pause push.jobs.v1[0],push.jobs.v1[1],push.retry.v1[0]", "poll 1 50ms", "commit"])
        #expect(!Self.words(loop.turn(Self.reading(16, inFlight: 100))).contains { $0.hasPrefix("pause") }) // already paused
        #expect(Self.words(loop.turn(Self.reading(17, inFlight: 10))).prefix(3) == ["claim 90", "resume push.jobs.v1[0],push.jobs.v1[1],push.retry.v1[0]", "poll 1 50ms"])
    }

    @Test("under latency slots free a few at a time: the loop claims a batch's worth of room at once, waiting for it rather than polling")
    func claimBatch() {
        var settings = Self.settings(maxInFlight: 200)
        settings.claimBatch = WorkerLoop.claimBatch(maxInFlight: 200)
        #expect(settings.claimBatch == 25)
        var loop = WorkerLoop(settings: settings)
        _ = loop.turn(Self.reading(1)) // the chores' first turn
        // 10 slots free, 50 recipients queued: no claim of 10, wait for room instead of a poll.
        #expect(Self.words(loop.turn(Self.reading(1.1, inFlight: 190, unclaimed: 50))) == ["claim 0", "wait 20ms", "commit"])
        // 25 free: claim them all.
        #expect(Self.words(loop.turn(Self.reading(1.2, inFlight: 175, unclaimed: 50))).first == "claim 25")
        // Nothing queued: nothing to wait for, poll for jobs as usual.
        #expect(Self.words(loop.turn(Self.reading(1.3, inFlight: 190, unclaimed: 0))).prefix(2) == ["claim 0", "poll 1 50ms"])
        // Nothing in flight: whatever room there is, is claimed (a bound smaller than the batch never stalls).
        #expect(Self.words(loop.turn(Self.reading(1.4, inFlight: 0, unclaimed: 3))).first == "claim 200")
        // Saturated: as before, wait.
        #expect(Self.words(loop.turn(Self.reading(1.5, inFlight: 200, unclaimed: 50))) == ["claim 0", "wait 20ms", "commit"])
        #expect(loop.phase == .saturated(since: 1.5))
    }

    @Test("the claim batch is an eighth of the in-flight bound, 1…256", arguments: [(1, 1), (8, 1), (15, 1), (16, 2), (50, 6), (200, 25), (256, 32), (2000, 250), (2048, 256), (5000, 256)])
    func claimBatchSize(maxInFlight: Int, batch: Int) {
        #expect(WorkerLoop.claimBatch(maxInFlight: maxInFlight) == batch)
    }

    @Test("recipients waiting for their claim count as load: a full claim queue stops polling")
    func unclaimedIsLoad() {
        var loop = WorkerLoop(settings: Self.settings(maxInFlight: 100))
        #expect(Self.words(loop.turn(Self.reading(1, inFlight: 0, unclaimed: 100))).prefix(2) == ["claim 100 park", "wait 20ms"])
    }

    @Test("a retry not yet due waits in memory without pausing its partition; a due one behind it is processed at once; when due it is processed")
    func delayedRetry() {
        var loop = WorkerLoop(settings: Self.settings())
        let held = FakeMessages.message(topic: "push.retry.v1", partition: 0, offset: 3)
        let due = FakeMessages.message(topic: "push.retry.v1", partition: 0, offset: 4)
        let job = FakeMessages.message(offset: 8)
        let now = 1000.0
        let first = Self.words(loop.turn(Self.reading(now), polled: [.init(message: held, notBefore: now + 30),
                                                                      .init(message: due, notBefore: now - 1),
                                                                      .init(message: job, notBefore: nil)]))
        #expect(first.prefix(3) == ["process push.retry.v1[0]@4", "process push.jobs.v1[0]@8", "claim 1000"])
        #expect(!first.contains { $0.hasPrefix("pause") })
        #expect(loop.paused.isEmpty)
        #expect(!Self.words(loop.turn(Self.reading(now + 29))).contains { $0.hasPrefix("process") })
        #expect(Self.words(loop.turn(Self.reading(now + 30))).prefix(2) == ["process push.retry.v1[0]@3", "claim 1000"])
    }

    @Test("a retry due further ahead than the maximum delay goes to the dead-letter topic (not_before_too_far)")
    func tooFarRetry() {
        var settings = Self.settings()
        settings.retryMaxDelaySeconds = 3600
        var loop = WorkerLoop(settings: settings)
        let far = FakeMessages.message(topic: "push.retry.v1", partition: 0, offset: 7)
        let edge = FakeMessages.message(topic: "push.retry.v1", partition: 0, offset: 8)
        let words = Self.words(loop.turn(Self.reading(100), polled: [.init(message: far, notBefore: 4_070_908_800), // 2099
                                                                    .init(message: edge, notBefore: 100 + 3600)]))
        #expect(words.first == "dead-letter push.retry.v1[0]@7 not_before_too_far")
        #expect(loop.delayed.map(\.message.offset) == [8])
        #expect(WorkerLoop.timing(notBefore: nil, now: 5, maxDelaySeconds: 10) == .due)
        #expect(WorkerLoop.timing(notBefore: 15, now: 5, maxDelaySeconds: 10) == .hold(until: 15))
        #expect(WorkerLoop.timing(notBefore: 15.001, now: 5, maxDelaySeconds: 10) == .tooFar)
    }

    @Test("held retries past the memory bound pause their partitions until they are taken")
    func heldRetryBound() {
        var settings = Self.settings()
        settings.maxHeldRetries = 2
        var loop = WorkerLoop(settings: settings)
        let messages = (0..<3).map { WorkerLoop.Polled(message: FakeMessages.message(topic: "push.retry.v1", partition: 0, offset: Int64($0)), notBefore: 50) }
        #expect(Self.words(loop.turn(Self.reading(10), polled: messages)).contains("pause push.retry.v1[0]"))
        #expect(Self.words(loop.turn(Self.reading(50))).contains("resume push.retry.v1[0]"))
    }

    @Test("Redis away: every partition paused, due retries kept; back: resumed and processed")
    func redisAway() {
        var loop = WorkerLoop(settings: Self.settings())
        let retry = FakeMessages.message(topic: "push.retry.v1", partition: 0, offset: 1)
        _ = loop.turn(Self.reading(1), polled: [.init(message: retry, notBefore: 5)])
        let away = Self.words(loop.turn(Self.reading(6, redis: false)))
        #expect(away.contains("pause push.jobs.v1[0],push.jobs.v1[1],push.retry.v1[0]"))
        #expect(!away.contains { $0.hasPrefix("process") })
        #expect(away.contains("poll 1 50ms")) // still serving rebalances
        #expect(loop.phase == .paused(since: 6))
        let back = Self.words(loop.turn(Self.reading(7)))
        #expect(back.first == "process push.retry.v1[0]@1")
        #expect(back.contains("resume push.jobs.v1[0],push.jobs.v1[1],push.retry.v1[0]"))
    }

    @Test("revoked partitions take their held messages with them")
    func revoked() {
        var loop = WorkerLoop(settings: Self.settings())
        _ = loop.turn(Self.reading(1), polled: [.init(message: FakeMessages.message(topic: "push.retry.v1", partition: 0, offset: 1), notBefore: 50)])
        #expect(loop.delayed.count == 1)
        loop.revoked([Self.r0])
        #expect(loop.delayed.isEmpty)
        #expect(loop.paused.isEmpty)
        #expect(!Self.words(loop.turn(Self.reading(60, assignment: [Self.p0]))).contains { $0.hasPrefix("process") })
    }

    @Test("SIGTERM: pause everything, no claim any more, wait for the answers in flight and commit; finish when none is in flight")
    func drain() {
        var loop = WorkerLoop(settings: Self.settings(maxInFlight: 100))
        let job = FakeMessages.message(offset: 9)
        let first = Self.words(loop.turn(Self.reading(100, inFlight: 40, unclaimed: 30, unfinished: 3, stop: true),
                                         polled: [.init(message: job, notBefore: nil)]))
        #expect(first == ["drain until 125", "pause push.jobs.v1[0],push.jobs.v1[1],push.retry.v1[0]", "wait answers 20ms", "commit"])
        #expect(loop.phase == .draining(deadline: 125))
        #expect(Self.words(loop.turn(Self.reading(101, inFlight: 10, unclaimed: 30, unfinished: 1, stop: true))) == ["wait answers 20ms", "commit"])
        // Nothing in flight: done, though recipients were never claimed (their jobs are redone elsewhere).
        #expect(Self.words(loop.turn(Self.reading(102, unclaimed: 30, unfinished: 1, stop: true))) == ["commit", "finish"])
        #expect(loop.phase == .finished)
        #expect(loop.turn(Self.reading(103, stop: true)).isEmpty)
    }

    @Test("SIGTERM with answers that do not come: finish at the drain deadline")
    func drainDeadline() {
        var loop = WorkerLoop(settings: Self.settings())
        _ = loop.turn(Self.reading(0, inFlight: 5, stop: true))
        #expect(!Self.words(loop.turn(Self.reading(24, inFlight: 5, stop: true))).contains("finish"))
        #expect(Self.words(loop.turn(Self.reading(25, inFlight: 5, stop: true))) == ["commit", "finish"])
    }
}

/// docs/lanes.md: a worker saturated by bulk work keeps polling the transactional topic.
@Suite("WorkerLoop lanes")
struct WorkerLoopLaneTests {
    static let b0 = TopicPartition(topic: "push.jobs.v1", partition: 0)
    static let t0 = TopicPartition(topic: "push.jobs.transactional.v1", partition: 0)
    static let r0 = TopicPartition(topic: "push.retry.v1", partition: 0)

    static func loop() -> WorkerLoop {
        var settings = WorkerLoop.Settings(maxInFlight: 100, saturationPauseSeconds: 5, drainSeconds: 25)
        settings.priorityTopics = ["push.jobs.transactional.v1"]
        return WorkerLoop(settings: settings)
    }

    static func reading(_ now: Double, unclaimed: Int, priority: Int = 0, redis: Bool = true) -> WorkerLoop.Reading {
        WorkerLoop.Reading(now: now, inFlight: 80, unclaimed: unclaimed, unfinishedMessages: 1, assignment: [b0, t0, r0],
                           redisHealthy: redis, stopRequested: false, unfinishedRecipients: unclaimed, priorityUnclaimed: priority)
    }

    @Test("saturated by bulk: the bulk and retry partitions are paused at once and the transactional one is polled")
    func saturatedPollsTransactional() {
        var loop = Self.loop()
        let words = WorkerLoopTests.words(loop.turn(Self.reading(10, unclaimed: 50_000)))
        #expect(words.prefix(4) == ["claim 20 park", "pause push.jobs.v1[0],push.retry.v1[0]", "poll 1 20ms", "commit"])
        // Long saturation: the transactional partition is still never paused.
        let later = WorkerLoopTests.words(loop.turn(Self.reading(20, unclaimed: 40_000)))
        #expect(later.prefix(3) == ["claim 20 park", "poll 1 20ms", "commit"])
        #expect(loop.paused == [Self.b0, Self.r0])
        // Below the bound again: everything resumed.
        let free = WorkerLoopTests.words(loop.turn(Self.reading(21, unclaimed: 0)))
        #expect(free.prefix(2) == ["claim 20", "resume push.jobs.v1[0],push.retry.v1[0]"])
        #expect(loop.paused.isEmpty)
    }

    @Test("transactional work filling the worker, or Redis away, stops the transactional polling too")
    func boundedByTransactionalLoad() {
        var loop = Self.loop()
        let full = WorkerLoopTests.words(loop.turn(Self.reading(10, unclaimed: 200, priority: 100)))
        #expect(full.prefix(3) == ["claim 20 park", "wait 20ms", "commit"])
        var away = Self.loop()
        let words = WorkerLoopTests.words(away.turn(Self.reading(10, unclaimed: 50_000, redis: false)))
        #expect(words.contains("pause push.jobs.transactional.v1[0],push.jobs.v1[0],push.retry.v1[0]"))
    }

    @Test("a worker without the transactional topic behaves as before: a short saturation is waited out")
    func withoutPriorityTopic() {
        var loop = WorkerLoop(settings: WorkerLoop.Settings(maxInFlight: 100, saturationPauseSeconds: 5, drainSeconds: 25))
        let words = WorkerLoopTests.words(loop.turn(Self.reading(10, unclaimed: 50_000)))
        #expect(words.prefix(3) == ["claim 20 park", "wait 20ms", "commit"])
    }
}
