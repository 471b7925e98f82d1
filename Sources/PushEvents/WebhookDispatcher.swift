import Dispatch
import PushRuntime
import Foundation
import PushCore
import PushHTTP
import Synchronization

/// Posts tracking events to each app's webhook (`app.json` `webhook {url, secret}`),
/// asynchronously: ingestion only appends to a bounded in-memory queue (overflow is dropped
/// and counted, `pushworker_webhook_dropped_total`); a dispatcher thread batches per app every
/// `interval` (default 250 ms) or at `maximumBatch` events (default 100) and sends
/// `POST <url>` with a JSON array of events over ``HTTP2Client`` (HTTPS; h2 or HTTP/1.1).
///
/// Signing (docs/events.md): `X-Pushworker-Signature: sha256=<hex HMAC-SHA256(secret, body)>`,
/// `X-Pushworker-Timestamp: <unix seconds of this attempt>`, `X-Pushworker-Delivery: <batch id>`
/// (the same on every retry of a batch: receivers de-duplicate by it).
///
/// Retries: transport errors, 408, 429 and 5xx are retried with exponential backoff
/// (`baseDelay` × 2^(attempt−1), jittered ×[0.5, 1], capped at `maximumDelay`, at least
/// `Retry-After` when given) up to `maximumAttempts` (default 6); other statuses are final.
public final class WebhookDispatcher: Sendable {
    /// Tuning; the defaults suit production, tests shorten the delays.
    public struct Settings: Sendable {
        public var interval: Duration = .milliseconds(250)
        public var maximumBatch = 100
        /// Events held (queued or in delivery) at most; beyond, new events are dropped.
        public var capacity = 10_000
        public var maximumAttempts = 6
        public var baseDelay: Double = 0.5
        public var maximumDelay: Double = 30
        public var requestTimeout: Duration = .seconds(10)
        public init() {}
    }

    public typealias WebhookLookup = @Sendable (_ appID: String) -> AppCredentials.Webhook?

    private struct State {
        var queue: [(appID: String, event: [UInt8])] = []
        var held = 0
        var isStopping = false
    }

    private let client: HTTP2Client
    private let lookup: WebhookLookup
    private let metrics: Metrics
    private let logger: Logger
    private let settings: Settings
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let loopEnded = DispatchSemaphore(value: 0)
    private let sequence = Atomic<Int>(0)

    public init(client: HTTP2Client, lookup: @escaping WebhookLookup, metrics: Metrics, logger: Logger, settings: Settings = Settings()) {
        self.client = client; self.lookup = lookup; self.metrics = metrics; self.logger = logger; self.settings = settings
    }

    /// Starts the dispatcher thread.
    public func start() {
        let thread = Thread { [self] in loop() }
        thread.name = "pushworker.events.webhooks"
        thread.start()
    }

    /// Queues one event (its JSON object) for `appID`'s webhook. Never blocks.
    public func enqueue(appID: String, event: [UInt8]) {
        let capacity = settings.capacity, batch = settings.maximumBatch
        let (accepted, shouldWake) = state.withLock { state -> (Bool, Bool) in
            guard !state.isStopping, state.held < capacity else { return (false, false) }
            state.queue.append((appID, event))
            state.held += 1
            return (true, state.queue.count == batch)
        }
        if !accepted { metrics.increment("pushworker_webhook_dropped_total") }
        if shouldWake { wake.signal() }
    }

    /// Events queued or being delivered (tests, shutdown).
    public var held: Int { state.withLock { $0.held } }

    /// Stops taking events, sends what is queued and waits up to `timeout` for deliveries
    /// (retries included) to end; what remains is abandoned (counted as dropped).
    public func stop(timeout: Duration) {
        let alreadyStopping = state.withLock { state -> Bool in
            defer { state.isStopping = true }
            return state.isStopping
        }
        guard !alreadyStopping else { return }
        wake.signal()
        _ = loopEnded.wait(timeout: .now() + .seconds(2))
        let deadline = ContinuousClock.now + timeout
        while held > 0 && ContinuousClock.now < deadline { usleep(10_000) }
        let left = held
        if left > 0 { metrics.increment("pushworker_webhook_dropped_total", by: Double(left)) }
    }

    private func loop() {
        while true {
            _ = wake.wait(timeout: .now() + .milliseconds(Int(settings.interval.components.seconds * 1000
                + settings.interval.components.attoseconds / 1_000_000_000_000_000)))
            let (taken, stopping) = state.withLock { state -> ([(appID: String, event: [UInt8])], Bool) in
                let taken = state.queue
                state.queue = []
                return (taken, state.isStopping)
            }
            dispatch(taken)
            if stopping { break }
        }
        loopEnded.signal()
    }

    private func dispatch(_ events: [(appID: String, event: [UInt8])]) {
        guard !events.isEmpty else { return }
        var byApp: [String: [[UInt8]]] = [:]
        for item in events { byApp[item.appID, default: []].append(item.event) }
        for (appID, appEvents) in byApp {
            guard let webhook = lookup(appID) else {
                release(appEvents.count)
                continue
            }
            var start = 0
            while start < appEvents.count {
                let chunk = Array(appEvents[start..<min(appEvents.count, start + settings.maximumBatch)])
                start += chunk.count
                let id = "\(UInt32(truncatingIfNeeded: ProcessInfo.processInfo.processIdentifier))-\(sequence.add(1, ordering: .relaxed).newValue)-\(UInt32.random(in: 0...UInt32.max))"
                deliver(Batch(id: id, appID: appID, webhook: webhook, body: Self.body(chunk), count: chunk.count), attempt: 1)
            }
        }
    }

    struct Batch: Sendable {
        var id: String
        var appID: String
        var webhook: AppCredentials.Webhook
        var body: [UInt8]
        var count: Int
    }

    /// `[e1,e2,…]`.
    static func body(_ events: [[UInt8]]) -> [UInt8] {
        var body: [UInt8] = [UInt8(ascii: "[")]
        body.reserveCapacity(events.reduce(2) { $0 + $1.count + 1 })
        for (index, event) in events.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body.append(contentsOf: event)
        }
        body.append(UInt8(ascii: "]"))
        return body
    }

    /// `sha256=<lower-case hex HMAC-SHA256(secret, body)>`.
    public static func signature(secret: [UInt8], body: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var hex: [UInt8] = []
        for byte in HMACSHA256(key: secret).authenticationCode(for: body) {
            hex.append(digits[Int(byte >> 4)]); hex.append(digits[Int(byte & 0x0F)])
        }
        return "sha256=" + String(decoding: hex, as: UTF8.self)
    }

    private func deliver(_ batch: Batch, attempt: Int) {
        let request = HTTPRequest(method: "POST", url: batch.webhook.url, headers: [
            HTTPHeader(name: "content-type", value: "application/json"),
            HTTPHeader(name: "user-agent", value: "pushworker-events/1"),
            HTTPHeader(name: "x-pushworker-delivery", value: batch.id),
            HTTPHeader(name: "x-pushworker-timestamp", value: String(Int(Date().timeIntervalSince1970))),
            HTTPHeader(name: "x-pushworker-signature", value: Self.signature(secret: batch.webhook.secret, body: batch.body)),
        ], body: batch.body, timeout: settings.requestTimeout)
        client.submit(request) { [self] result in
            let retryAfter: Double?
            let description: String
            switch result {
            case .success(let response) where (200..<300).contains(response.status):
                metrics.increment("pushworker_webhook_deliveries_total", [("outcome", "delivered")])
                metrics.increment("pushworker_webhook_events_total", by: Double(batch.count))
                release(batch.count)
                return
            case .success(let response) where response.status == 408 || response.status == 429 || response.status >= 500:
                retryAfter = response.header("retry-after").flatMap { Double($0) }
                description = "HTTP \(response.status)"
            case .success(let response):
                metrics.increment("pushworker_webhook_deliveries_total", [("outcome", "rejected")])
                logger.warning("webhook refused events", ["app.id": batch.appID, "http.status": "\(response.status)", "events": "\(batch.count)"])
                release(batch.count)
                return
            case .failure(let error):
                guard error.isRetryable else {
                    metrics.increment("pushworker_webhook_deliveries_total", [("outcome", "failed")])
                    logger.warning("webhook not deliverable", ["app.id": batch.appID, "error": "\(error)"])
                    release(batch.count)
                    return
                }
                retryAfter = nil
                description = "\(error)"
            }
            guard attempt < settings.maximumAttempts else {
                metrics.increment("pushworker_webhook_deliveries_total", [("outcome", "failed")])
                logger.warning("webhook failed; events dropped", ["app.id": batch.appID, "error": description,
                                                                  "attempts": "\(attempt)", "events": "\(batch.count)"])
                release(batch.count)
                return
            }
            metrics.increment("pushworker_webhook_deliveries_total", [("outcome", "retried")])
            let delay = Self.delay(attempt: attempt, base: settings.baseDelay, maximum: settings.maximumDelay, retryAfter: retryAfter)
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [self] in deliver(batch, attempt: attempt + 1) }
        }
    }

    /// Backoff before attempt `attempt + 1`: base × 2^(attempt−1) jittered into [½, 1] of that,
    /// capped at `maximum`, and at least `retryAfter` (itself capped at `maximum`).
    static func delay(attempt: Int, base: Double, maximum: Double, retryAfter: Double?, jitter: Double = Double.random(in: 0.5...1)) -> Double {
        let exponential = min(maximum, base * pow(2, Double(max(0, attempt - 1))))
        return max(exponential * jitter, min(maximum, retryAfter ?? 0))
    }

    private func release(_ count: Int) {
        state.withLock { $0.held -= count }
    }
}
