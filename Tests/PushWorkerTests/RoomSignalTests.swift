import Dispatch
import Synchronization
import Testing
@testable import PushWorker

@Suite("RoomSignal (the consumer loop's wake-up)")
struct RoomSignalTests {
    @Test("a wait whose condition already holds returns at once; one with no signal waits its timeout")
    func conditionAndTimeout() {
        let signal = RoomSignal()
        let clock = ContinuousClock()
        var elapsed = clock.measure { signal.wait(until: { true }, timeout: .seconds(5)) }
        #expect(elapsed < .seconds(1))
        elapsed = clock.measure { signal.wait(until: { false }, timeout: .milliseconds(50)) }
        #expect(elapsed >= .milliseconds(45))
    }

    @Test("a signal nobody waits for is not banked: the next wait still times out")
    func signalWithoutWaiter() {
        let signal = RoomSignal()
        for _ in 0..<10 { signal.signal() }
        let elapsed = ContinuousClock().measure { signal.wait(until: { false }, timeout: .milliseconds(50)) }
        #expect(elapsed >= .milliseconds(45))
    }

    @Test("a signal from another thread wakes the waiter long before its timeout")
    func wakes() {
        let signal = RoomSignal()
        let ready = Atomic<Bool>(false)
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(30)) {
            ready.store(true, ordering: .releasing)
            signal.signal()
        }
        let elapsed = ContinuousClock().measure {
            while !ready.load(ordering: .acquiring) {
                signal.wait(until: { ready.load(ordering: .acquiring) }, timeout: .seconds(10))
            }
        }
        #expect(elapsed < .seconds(5))
    }

    @Test("signals racing with timeouts leave it balanced: 2,000 short waits under a storm of signals, then a clean timeout")
    func staysBalanced() async {
        let signal = RoomSignal()
        let stop = Atomic<Bool>(false)
        let storm = Task.detached {
            while !stop.load(ordering: .relaxed) { signal.signal() }
        }
        for _ in 0..<2_000 { signal.wait(until: { false }, timeout: .microseconds(100)) }
        stop.store(true, ordering: .relaxed)
        await storm.value
        // Nothing left over from the storm: a wait with no signal runs to its timeout.
        let elapsed = ContinuousClock().measure { signal.wait(until: { false }, timeout: .milliseconds(50)) }
        #expect(elapsed >= .milliseconds(45))
    }
}
