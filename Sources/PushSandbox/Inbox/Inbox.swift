import Foundation
import PushCore
import PushHTTPServer
import Synchronization

/// The sandbox inbox's state (DESIGN §11 "Inbox"): accepted requests in, drawn messages out,
/// live to the pages that watch.
///
/// The HTTP/2 event loops only call ``accept(_:)``: one short lock to append the captured
/// request to a bounded queue (`pendingCapacity`; beyond, requests are counted and not shown),
/// and a semaphore signal. The inbox's own thread draws them (``InboxDrawing``), keeps the last
/// `capacity` (the oldest are forgotten first), and sends each one to every Server-Sent Events
/// subscriber. Every `heartbeat` it writes a comment to the subscribers, so a page that went
/// away is noticed and its stream released.
final class Inbox: Sendable {
    struct Settings: Sendable {
        /// Messages kept (newest); older ones are forgotten. Default: 1000.
        var capacity = 1000
        /// Requests waiting to be drawn at most. Default: 10,000.
        var pendingCapacity = 10_000
        /// Event-stream subscribers at most (one per open page). Default: 64.
        var maximumSubscribers = 64
        /// Seconds between keep-alive comments on the event streams. Default: 15.
        var heartbeat: Double = 15
        /// Verifies msgIds; nil shows them decoded but unverified.
        var keyring: MsgIDKeyring?
    }

    struct Counts: Sendable, Equatable {
        /// Accepted since start (or the last clear).
        var accepted = 0
        /// Forgotten to stay within `capacity`.
        var forgotten = 0
        /// Not drawn because the drawing queue was full.
        var skipped = 0
    }

    private struct State {
        var pending: [InboxRecord] = []
        /// Oldest first.
        var messages: [InboxMessage] = []
        var first = 0
        var nextID = 1
        var counts = Counts()
        var subscribers: [ObjectIdentifier: HTTPResponseStream] = [:]
        var isStopping = false
    }

    let settings: Settings
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)
    /// Unix time in milliseconds (injectable for tests).
    private let clock: @Sendable () -> Int64

    init(settings: Settings = Settings(), clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }) {
        self.settings = settings
        self.clock = clock
    }

    // MARK: intake (event loops)

    /// Queues an accepted request for drawing. Cheap: called on the HTTP/2 event loops.
    func accept(_ record: InboxRecord) {
        let now = clock()
        let queued = state.withLock { state -> Bool in
            guard state.pending.count < settings.pendingCapacity else {
                state.counts.skipped += 1
                return false
            }
            var record = record
            record.id = state.nextID
            record.receivedAtMilliseconds = now
            state.nextID += 1
            state.counts.accepted += 1
            state.pending.append(record)
            return true
        }
        if queued { wake.signal() }
    }

    // MARK: the inbox thread

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "pushworker.sandbox.inbox"
        thread.start()
    }

    /// Stops the thread and ends every event stream.
    func stop() {
        let streams = state.withLock { state -> [HTTPResponseStream] in
            state.isStopping = true
            return Array(state.subscribers.values)
        }
        for stream in streams { stream.finish() }
        wake.signal()
        _ = ended.wait(timeout: .now() + 5)
    }

    private func run() {
        var lastHeartbeat = Date()
        while true {
            _ = wake.wait(timeout: .now() + settings.heartbeat)
            let (batch, stopping) = state.withLock { state -> ([InboxRecord], Bool) in
                let batch = state.pending
                state.pending.removeAll(keepingCapacity: true)
                return (batch, state.isStopping)
            }
            if stopping { break }
            if !batch.isEmpty { store(batch.map { InboxDrawing.draw($0, keyring: settings.keyring) }) }
            if Date().timeIntervalSince(lastHeartbeat) >= settings.heartbeat {
                lastHeartbeat = Date()
                broadcast(Array(": keep-alive\n\n".utf8))
            }
        }
        ended.signal()
    }

    /// Keeps `drawn` (oldest first) and sends each to the subscribers.
    func store(_ drawn: [InboxMessage]) {
        var events: [UInt8] = []
        for message in drawn { events += Self.event("message", id: message.id, data: message.json()) }
        state.withLock { state in
            state.messages.append(contentsOf: drawn)
            let excess = state.messages.count - state.first - settings.capacity
            if excess > 0 {
                state.first += excess
                state.counts.forgotten += excess
            }
            if state.first > 1024 && state.first * 2 > state.messages.count {
                state.messages.removeFirst(state.first)
                state.first = 0
            }
        }
        broadcast(events)
    }

    // MARK: queries (the inbox's HTTP thread)

    /// Newest first, at most `limit`.
    func messages(_ filter: InboxFilter, limit: Int) -> [InboxMessage] {
        state.withLock { state in
            var found: [InboxMessage] = []
            var index = state.messages.count - 1
            while index >= state.first && found.count < limit {
                if state.messages[index].matches(filter) { found.append(state.messages[index]) }
                index -= 1
            }
            return found
        }
    }

    func message(id: Int) -> InboxMessage? {
        state.withLock { state in
            // Ids increase with the index; a binary search would do, the list is small.
            state.messages[state.first...].last { $0.id == id }
        }
    }

    /// The apps and campaigns among the kept messages (for the page's filter suggestions).
    func facets() -> (apps: [String], campaigns: [String]) {
        state.withLock { state in
            var apps = Set<String>(), campaigns = Set<String>()
            for message in state.messages[state.first...] {
                if let app = message.app { apps.insert(app) }
                if let campaign = message.campaign { campaigns.insert(campaign) }
            }
            return (apps.sorted(), campaigns.sorted())
        }
    }

    var counts: Counts { state.withLock { $0.counts } }
    var keptCount: Int { state.withLock { $0.messages.count - $0.first } }

    /// Forgets every message (`DELETE /api/messages`) and tells the pages.
    func clear() {
        state.withLock { state in
            state.messages.removeAll()
            state.first = 0
            state.counts = Counts()
        }
        broadcast(Self.event("cleared", data: Array("{}".utf8)))
    }

    // MARK: Server-Sent Events

    /// A new event stream, or nil when `maximumSubscribers` are already open.
    func subscribe() -> HTTPResponseStream? {
        let stream = HTTPResponseStream(maximumPendingBytes: 4 << 20)
        let identifier = ObjectIdentifier(stream)
        let added = state.withLock { state -> Bool in
            guard !state.isStopping, state.subscribers.count < settings.maximumSubscribers else { return false }
            state.subscribers[identifier] = stream
            return true
        }
        guard added else { return nil }
        stream.setCloseHandler { [weak self] in _ = self?.state.withLock { $0.subscribers.removeValue(forKey: identifier) } }
        // Sent at once, so the page's EventSource opens (and re-reads the list) immediately.
        stream.write(Array("retry: 2000\n: connected\n\n".utf8))
        return stream
    }

    var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// Writes `bytes` to every subscriber; one that is too far behind is cut off (its page reconnects and re-reads).
    func broadcast(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        let streams = state.withLock { Array($0.subscribers.values) }
        for stream in streams where !stream.write(bytes) {
            _ = state.withLock { $0.subscribers.removeValue(forKey: ObjectIdentifier(stream)) }
        }
    }

    /// One event: `id:` (optional), `event:`, one `data:` line (compact JSON has no newline).
    static func event(_ name: String, id: Int? = nil, data: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(data.count + 48)
        if let id { bytes += Array("id: \(id)\n".utf8) }
        bytes += Array("event: \(name)\ndata: ".utf8)
        bytes += data
        bytes += [10, 10]
        return bytes
    }
}
