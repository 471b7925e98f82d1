import PushKafka
import Testing
@testable import PushWorker

@Suite("OffsetTracker (at-least-once commits)")
struct OffsetTrackerTests {
    let jobs = TopicPartition(topic: "push.jobs.v1", partition: 0)
    let retries = TopicPartition(topic: "push.retry.v1", partition: 3)

    @Test("the commit point never passes an unfinished message; finished out of order still commits in order")
    func outOfOrder() {
        let tracker = OffsetTracker()
        for offset in 10...14 { tracker.begin(jobs, offset: Int64(offset)) }
        #expect(tracker.committable() == [jobs: 10])
        tracker.finish(jobs, offset: 12)
        tracker.finish(jobs, offset: 13)
        #expect(tracker.committable() == [jobs: 10])
        tracker.markCommitted([jobs: 10])
        #expect(tracker.committable().isEmpty)          // nothing moved
        tracker.finish(jobs, offset: 10)
        #expect(tracker.committable() == [jobs: 11])
        tracker.finish(jobs, offset: 11)
        #expect(tracker.committable() == [jobs: 14])
        tracker.finish(jobs, offset: 14)
        #expect(tracker.committable() == [jobs: 15])
        #expect(tracker.pendingCount == 0)
    }

    @Test("partitions are independent; a revoked partition is forgotten and a late finish for it is ignored")
    func revoke() {
        let tracker = OffsetTracker()
        tracker.begin(jobs, offset: 0)
        tracker.begin(retries, offset: 7)
        tracker.finish(retries, offset: 7)
        #expect(tracker.committable() == [jobs: 0, retries: 8])
        tracker.revoke([jobs])
        tracker.finish(jobs, offset: 0)
        #expect(tracker.committable() == [retries: 8])
        #expect(tracker.pendingCount == 0)
    }

    @Test("a partition revoked and assigned again: a late finish of the old ownership does not release the redelivered message")
    func generations() {
        let tracker = OffsetTracker()
        let old = tracker.begin(jobs, offset: 7)
        tracker.revoke([jobs])
        let new = tracker.begin(jobs, offset: 7)      // redelivered to this member
        #expect(old != new)
        tracker.finish(jobs, offset: 7, generation: old) // the first processing ends late
        #expect(tracker.committable() == [jobs: 7])       // still held for the second one
        tracker.finish(jobs, offset: 7, generation: new)
        #expect(tracker.committable() == [jobs: 8])
        #expect(tracker.generation(of: retries) == nil)
    }

    @Test("markCommitted never moves the point backwards")
    func monotonic() {
        let tracker = OffsetTracker()
        tracker.begin(jobs, offset: 5)
        tracker.finish(jobs, offset: 5)
        tracker.markCommitted([jobs: 6])
        tracker.markCommitted([jobs: 3])
        #expect(tracker.committable().isEmpty)
    }
}

@Suite("OriginGate (per-origin admission)")
struct OriginGateTests {
    @Test("at most `limit` requests of an origin start; the rest start in order as earlier ones leave; origins are independent")
    func admission() {
        let gate = OriginGate(limit: 2)
        let started = Log()
        for index in 0..<5 { gate.enter("https://a") { started.add("a\(index)") } }
        gate.enter("https://b") { started.add("b0") }
        #expect(started.items == ["a0", "a1", "b0"])
        gate.leave("https://a")
        #expect(started.items == ["a0", "a1", "b0", "a2"])
        gate.leave("https://a")
        gate.leave("https://a")
        #expect(started.items == ["a0", "a1", "b0", "a2", "a3", "a4"])
    }

    @Test("a start that completes at once (a shut-down client) does not recurse and loses no start")
    func synchronousCompletion() {
        let gate = OriginGate(limit: 1)
        let started = Log()
        for index in 0..<1_000 {
            gate.enter("https://a") {
                started.add("\(index)")
                gate.leave("https://a")
            }
        }
        #expect(started.items.count == 1_000)
        #expect(started.items == (0..<1_000).map { "\($0)" })
    }

    @Test("origin of a URL: everything before the path", arguments: [
        ("https://api.push.apple.com/3/device/abc", "https://api.push.apple.com"),
        ("https://127.0.0.1:8443/wp/x", "https://127.0.0.1:8443"),
        ("https://host", "https://host"),
    ])
    func origin(url: String, expected: String) {
        #expect(OriginGate.origin(of: url) == expected)
    }

    final class Log: Sendable {
        private let state = Mutex<[String]>([])
        func add(_ item: String) { state.withLock { $0.append(item) } }
        var items: [String] { state.withLock { $0 } }
    }
}

import Synchronization
