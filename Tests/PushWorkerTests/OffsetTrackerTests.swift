import PushKafka
import Testing
@testable import PushWorker
@testable import PushDelivery

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
        let a = gate.lane("https://a"), b = gate.lane("https://b")
        for index in 0..<5 { gate.enter(a) { started.add("a\(index)") } }
        gate.enter(b) { started.add("b0") }
        #expect(started.items == ["a0", "a1", "b0"])
        gate.leave(a)
        #expect(started.items == ["a0", "a1", "b0", "a2"])
        gate.leave(gate.lane("https://a"))  // the same lane, looked up again
        gate.leave(a)
        #expect(started.items == ["a0", "a1", "b0", "a2", "a3", "a4"])
    }

    @Test("a start that completes at once (a shut-down client) does not recurse and loses no start")
    func synchronousCompletion() {
        let gate = OriginGate(limit: 1)
        let started = Log()
        let lane = gate.lane(forURL: "https://a/x")
        for index in 0..<1_000 {
            gate.enter(lane) {
                started.add("\(index)")
                gate.leave(lane)
            }
        }
        #expect(started.items.count == 1_000)
        #expect(started.items == (0..<1_000).map { "\($0)" })
    }

    @Test("origin of a URL: everything before the path", arguments: [
        ("https://api.push.apple.com/3/device/abc", "https://api.push.apple.com"),
        ("https://127.0.0.1:8443/wp/x", "https://127.0.0.1:8443"),
        ("https://host", "https://host"),
        ("https://h\u{e9}te.example/p", "https://h\u{e9}te.example"),
        ("no-slashes", "no-slashes"),
    ])
    func origin(url: String, expected: String) {
        #expect(OriginGate.origin(of: url) == expected)
    }

    @Test("a URL's lane is its origin's: the previous request's lane is reused only for the same origin", arguments: [
        ("https://a:1/x", "https://a:1/y", true),
        ("https://a:1/x", "https://a:1", true),
        ("https://a:1/x", "https://a:12/x", false),
        ("https://a:12/x", "https://a:1/x", false),
        ("https://a/x", "https://ab/x", false),
        ("https://a/x", "http://a/x", false),
        ("https://a", "https://a/x", true),
        ("a/b", "a/b/c", false),
    ])
    func laneForURL(first: String, second: String, same: Bool) {
        let gate = OriginGate(limit: 1)
        let lane1 = gate.lane(forURL: first)
        let lane2 = gate.lane(forURL: second)
        #expect((lane1 === lane2) == same)
        #expect(lane2.origin == OriginGate.origin(of: second))
        #expect(gate.lane(OriginGate.origin(of: second)) === lane2)
    }

    @Test("a client certificate's requests have a lane of their own, per certificate")
    func identityLanes() {
        let gate = OriginGate(limit: 1)
        let plain = gate.lane(forURL: "https://apns/3/device/a")
        let certA = gate.lane(forURL: "https://apns/3/device/b", identity: "A")
        let certB = gate.lane(forURL: "https://apns/3/device/c", identity: "B")
        #expect(plain !== certA && certA !== certB && plain !== certB)
        #expect(gate.lane(forURL: "https://apns/3/device/d", identity: "A") === certA)
        #expect(gate.lane(forURL: "https://apns/3/device/e") === plain)
        #expect(certA.origin == "https://apns#A")
    }

    final class Log: Sendable {
        private let state = Mutex<[String]>([])
        func add(_ item: String) { state.withLock { $0.append(item) } }
        var items: [String] { state.withLock { $0 } }
    }
}

import Synchronization
