import Foundation
import Synchronization

/// Posts tracking events to `pushworker events` as an SDK would (docs/events.md:
/// `POST <events-url>/v1/e/{d,o,c}/<msgId>`, no body): `delivered` for every accepted
/// notification with `--report-delivered`, `opened`/`clicked` for presses in the inbox.
///
/// Nothing waits for it: ``report(_:msgID:completion:)`` only appends to a bounded queue
/// (`capacity`, default 10,000; beyond, events are dropped and counted) and one thread posts
/// them in order over one keep-alive HTTP/1.1 connection. An event that fails (no answer, a
/// non-2xx status) is counted and not retried: the sandbox is a development tool.
package final class TrackingReporter: Sendable {
    package enum Event: String, Sendable {
        case delivered, opened, clicked

        /// The letter of the route (`/v1/e/<letter>/<msgId>`).
        var letter: String {
            switch self {
            case .delivered: "d"
            case .opened: "o"
            case .clicked: "c"
            }
        }
    }

    /// The HTTP status, or nil when the post failed before one arrived.
    package typealias Completion = @Sendable (_ status: Int?, _ error: String?) -> Void

    struct Counters: Sendable, Equatable {
        var posted = 0
        var failed = 0
        var dropped = 0
    }

    private struct Pending: Sendable {
        var event: Event
        var msgID: String
        var completion: Completion?
    }

    private struct State: Sendable {
        var queue: [Pending] = []
        var head = 0
        var counters = Counters()
        var isStopping = false
    }

    let url: PlainHTTPURL
    let capacity: Int
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)

    package init(url: PlainHTTPURL, capacity: Int = 10_000) {
        self.url = url
        self.capacity = capacity
    }

    /// Starts the posting thread.
    package func start() {
        let thread = Thread { [self] in run() }
        thread.name = "pushworker.sandbox.tracking"
        thread.start()
    }

    /// Stops after what is queued has been posted, waiting at most `timeout` seconds.
    package func stop(timeout: Double = 5) {
        state.withLock { $0.isStopping = true }
        wake.signal()
        _ = ended.wait(timeout: .now() + timeout)
    }

    /// Queues one event; false (and counted as dropped) when the queue is full.
    @discardableResult
    package func report(_ event: Event, msgID: String, completion: Completion? = nil) -> Bool {
        let queued = state.withLock { state -> Bool in
            guard !state.isStopping, state.queue.count - state.head < capacity else {
                state.counters.dropped += 1
                return false
            }
            state.queue.append(Pending(event: event, msgID: msgID, completion: completion))
            return true
        }
        if queued { wake.signal() } else { completion?(nil, "queue full") }
        return queued
    }

    var counters: Counters { state.withLock { $0.counters } }

    private func run() {
        let connection = PlainHTTPConnection(url: url)
        while true {
            wake.wait()
            while let next = take() {
                // The msgId is URL-safe base64 (docs/reference/msgid.md); anything else is escaped.
                let id = next.msgID.addingPercentEncoding(withAllowedCharacters: Self.pathCharacters) ?? ""
                var status: Int?
                var failure: String?
                do { status = try connection.post("/v1/e/\(next.event.letter)/\(id)") } catch { failure = error.description }
                let ok = status.map { (200..<300).contains($0) } ?? false
                state.withLock { state in if ok { state.counters.posted += 1 } else { state.counters.failed += 1 } }
                next.completion?(status, failure)
            }
            if state.withLock({ $0.isStopping && $0.head >= $0.queue.count }) { break }
        }
        ended.signal()
    }

    private func take() -> Pending? {
        state.withLock { state in
            guard state.head < state.queue.count else { return nil }
            let item = state.queue[state.head]
            state.head += 1
            if state.head > 1024 && state.head * 2 > state.queue.count {
                state.queue.removeFirst(state.head)
                state.head = 0
            }
            return item
        }
    }

    /// RFC 3986 unreserved characters (ASCII only).
    static let pathCharacters = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~")
}
