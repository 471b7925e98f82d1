import Dispatch
import Synchronization

/// Wakes one waiter (the consumer loop, waiting for in-flight room) from any thread.
/// `signal()` costs one atomic exchange when nobody waits, so completions may call it freely.
///
/// Thread safety: `wait` from one thread at a time; `signal` from any thread.
final class RoomSignal: Sendable {
    private let waiting = Atomic<Bool>(false)
    private let semaphore = DispatchSemaphore(value: 0)

    func signal() {
        if waiting.exchange(false, ordering: .acquiringAndReleasing) { semaphore.signal() }
    }

    /// Returns once `condition()` holds after a `signal()`, or after `timeout`, whichever comes
    /// first (the caller re-checks its condition either way).
    func wait(until condition: () -> Bool, timeout: Duration) {
        waiting.store(true, ordering: .releasing)
        if !condition() {
            let milliseconds = Int(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
            if semaphore.wait(timeout: .now() + .milliseconds(max(0, milliseconds))) == .success { return }
        }
        // Not woken: withdraw. If a signaller took the flag first, its signal is on its way (or
        // already counted): consume it so the next wait starts balanced.
        if !waiting.exchange(false, ordering: .acquiringAndReleasing) { semaphore.wait() }
    }
}
