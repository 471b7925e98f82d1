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
    /// Open ``holdWakeUps()`` calls: while any is open, a submission from another thread than
    /// the I/O thread does not wake it; the last ``releaseWakeUps()`` does, once.
    private(set) var holds = 0
    /// A wake-up was due while held.
    private var wakeUpHeld = false

    /// `holdable`: false for the I/O thread's own submissions (from a completion), which the
    /// loop starts in the same turn whatever the holds.
    mutating func submit(_ submission: HTTPSubmission, holdable: Bool = true) -> SubmitAction {
        guard phase == .running else { return .reject }
        pending.append(submission)
        inFlight += 1
        if wakeUpSent { return .queued }
        if holdable && holds > 0 {
            wakeUpHeld = true
            return .queued
        }
        wakeUpSent = true
        return .wakeUp
    }

    /// A submitting thread is about to queue a burst (a claim batch's sends): the I/O thread
    /// is woken once, by the matching ``releaseWakeUps()``, and takes the burst in one turn —
    /// its streams leave together instead of one loop turn (and one round of socket events)
    /// per few requests. Nests.
    mutating func holdWakeUps() { holds += 1 }

    /// Ends one ``holdWakeUps()``; true when the caller must wake the I/O thread (the last hold
    /// ended, a wake-up was held, and the queue is still waiting for it).
    mutating func releaseWakeUps() -> Bool {
        holds = max(0, holds - 1)
        guard holds == 0, wakeUpHeld else { return false }
        wakeUpHeld = false
        guard !pending.isEmpty, !wakeUpSent, phase == .running else { return false }
        wakeUpSent = true
        return true
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
        wakeUpHeld = false
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
