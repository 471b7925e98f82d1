import Synchronization

/// A request handed to the I/O thread (prepared and checked by the submitting thread).
struct HTTPSubmission: Sendable {
    let request: CurlPreparedRequest
    let completion: HTTPCompletion
}

/// The client's state shared between submitting threads and the I/O thread, kept under one
/// `Mutex`. Every transition returns what to do; the caller does it outside the lock.
struct HTTPClientState: Sendable {
    enum Phase: Sendable, Equatable {
        case running
        /// Finish what was submitted until `deadline`, then abort the rest with `.shutdown`.
        case draining(deadline: ContinuousClock.Instant)
        case stopped
    }

    enum SubmitAction: Equatable {
        /// Queued; call `curl_multi_wakeup`.
        case wakeUp
        /// Queued; a wake-up is already on its way.
        case queued
        /// Not queued: fail the request with `.shutdown`.
        case reject
    }

    private(set) var phase: Phase = .running
    private(set) var pending: [HTTPSubmission] = []
    /// Submitted and not yet completed (queued + running on the I/O thread).
    private(set) var inFlight = 0
    /// A wake-up was sent and the I/O thread has not taken the queue since.
    private var wakeUpSent = false

    mutating func submit(_ submission: HTTPSubmission) -> SubmitAction {
        guard phase == .running else { return .reject }
        pending.append(submission)
        inFlight += 1
        if wakeUpSent { return .queued }
        wakeUpSent = true
        return .wakeUp
    }

    /// Starts draining; returns whether the I/O thread must be woken.
    mutating func beginShutdown(deadline: ContinuousClock.Instant) -> Bool {
        switch phase {
        case .running:
            phase = .draining(deadline: deadline)
            return true
        case .draining(let current) where deadline < current:
            phase = .draining(deadline: deadline)
            return true
        case .draining, .stopped:
            return false
        }
    }

    /// I/O thread: takes the queue (swapping it with an empty array that keeps its capacity).
    mutating func takePending(into batch: inout [HTTPSubmission]) -> Phase {
        swap(&pending, &batch)
        wakeUpSent = false
        return phase
    }

    /// I/O thread: `count` requests got their outcome.
    mutating func completed(_ count: Int) {
        inFlight -= count
    }

    /// I/O thread: the loop ends; returns whatever is still queued (to fail with `.shutdown`).
    mutating func stop() -> [HTTPSubmission] {
        phase = .stopped
        let left = pending
        pending = []
        return left
    }
}

/// The `Mutex` around ``HTTPClientState``, shared by the client and its I/O loop.
final class HTTPClientShared: Sendable {
    let state = Mutex(HTTPClientState())
}
