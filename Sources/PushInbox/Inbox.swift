import Foundation
import PushCore
import PushHTTPServer
import Synchronization

/// The sandbox inbox's state (docs/sandbox.md "Inbox"): accepted requests in, drawn messages out,
/// live to the pages that watch.
///
/// The HTTP/2 event loops only call ``accept(_:)``: short locks (of the intake queue alone:
/// page requests never hold it) to append the captured request to a queue of at most
/// `capacity` (when it is full the request is only counted, not even copied: under load the
/// inbox shows the first `capacity` of each round), and a semaphore signal when the queue was
/// empty. The inbox's own thread takes what is queued at most every
/// `drawInterval`, draws it (``InboxDrawing``), keeps the last `capacity` and sends each one to
/// every Server-Sent Events subscriber; so under load it draws at most `capacity` messages per
/// interval (four intervals once the queue fills), whatever the request rate. Every `heartbeat` it writes a comment to the
/// subscribers, so a page that went away is noticed and its stream released.
package final class Inbox: Sendable {
    package struct Settings: Sendable {
        /// Messages kept (newest); older ones are forgotten. Default: 1000.
        package var capacity: Int
        /// Seconds between two drawing rounds while messages arrive (live updates come at most
        /// this late). Default: 0.25.
        package var drawInterval: Double
        /// Event-stream subscribers at most (one per open page). Default: 64.
        package var maximumSubscribers: Int
        /// Seconds between keep-alive comments on the event streams. Default: 15.
        package var heartbeat: Double
        /// Verifies msgIds; nil shows them decoded but unverified.
        package var keyring: MsgIDKeyring?

        package init(capacity: Int = 1000, drawInterval: Double = 0.25, maximumSubscribers: Int = 64, heartbeat: Double = 15,
                     keyring: MsgIDKeyring? = nil) {
            self.capacity = capacity
            self.drawInterval = drawInterval
            self.maximumSubscribers = maximumSubscribers
            self.heartbeat = heartbeat
            self.keyring = keyring
        }
    }

    struct Counts: Sendable, Equatable {
        /// Accepted since start (or the last clear).
        var accepted = 0
        /// Forgotten to stay within `capacity` (also before being drawn, under load).
        var forgotten = 0
        /// Deleted one by one (`DELETE /api/messages/N`).
        var deleted = 0
    }

    /// What the event loops touch.
    private struct Intake {
        var pending: [InboxRecord] = []
        var nextID = 1
        var accepted = 0
        var forgotten = 0
    }

    /// A drawn message and its JSON (made once, sent to the event streams and the lists).
    struct Stored: Sendable {
        var message: InboxMessage
        var json: [UInt8]
    }

    private struct State {
        /// Oldest first.
        var messages: [Stored] = []
        var first = 0
        var forgotten = 0
        var deleted = 0
        var subscribers: [ObjectIdentifier: HTTPResponseStream] = [:]
        var isStopping = false
    }

    let settings: Settings
    private let intake = Mutex(Intake())
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)
    /// Unix time in milliseconds (injectable for tests).
    private let clock: @Sendable () -> Int64

    package init(settings: Settings = Settings(), clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }) {
        self.settings = settings
        self.clock = clock
    }

    // MARK: intake (event loops)

    /// Queues an accepted request for drawing; `record` is only called when there is room.
    /// Cheap: called on the HTTP/2 event loops.
    package func accept(_ record: () -> InboxRecord) {
        let isFull = intake.withLock { intake -> Bool in
            guard intake.pending.count >= settings.capacity else { return false }
            intake.nextID += 1
            intake.accepted += 1
            intake.forgotten += 1
            return true
        }
        if isFull { return }
        var captured = record()
        captured.receivedAtMilliseconds = clock()
        let wasEmpty = intake.withLock { intake -> Bool in
            captured.id = intake.nextID
            intake.nextID += 1
            intake.accepted += 1
            let wasEmpty = intake.pending.isEmpty
            intake.pending.append(captured)
            return wasEmpty
        }
        if wasEmpty { wake.signal() }
    }

    func accept(_ record: InboxRecord) { accept { record } }

    // MARK: the inbox thread

    package func start() {
        let thread = Thread { [self] in run() }
        thread.name = "pushworker.sandbox.inbox"
        thread.start()
    }

    /// Stops the thread and ends every event stream.
    package func stop() {
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
            if state.withLock({ $0.isStopping }) { break }
            let batch = intake.withLock { intake -> [InboxRecord] in
                defer { intake.pending = [] }
                return intake.pending
            }
            if !batch.isEmpty {
                store(batch.map { InboxDrawing.draw($0, keyring: settings.keyring) })
                // Let the next messages gather (the first of them signals `wake`); when more came
                // than the inbox keeps (a load test), wait four times as long: fewer drawn for nothing.
                let pause = batch.count >= settings.capacity ? settings.drawInterval * 4 : settings.drawInterval
                usleep(UInt32(pause * 1_000_000))
            }
            if Date().timeIntervalSince(lastHeartbeat) >= settings.heartbeat {
                lastHeartbeat = Date()
                broadcast(Array(": keep-alive\n\n".utf8))
            }
        }
        ended.signal()
    }

    /// Keeps `drawn` (oldest first) and sends each to the subscribers.
    func store(_ drawn: [InboxMessage]) {
        let stored = drawn.map { Stored(message: $0, json: $0.json()) }
        var events: [UInt8] = []
        for item in stored { events += Self.event("message", id: item.message.id, data: item.json) }
        state.withLock { state in
            state.messages.append(contentsOf: stored)
            let excess = state.messages.count - state.first - settings.capacity
            if excess > 0 {
                state.first += excess
                state.forgotten += excess
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
    func stored(_ filter: InboxFilter, limit: Int) -> [Stored] {
        state.withLock { state in
            var found: [Stored] = []
            var index = state.messages.count - 1
            while index >= state.first && found.count < limit {
                if state.messages[index].message.matches(filter) { found.append(state.messages[index]) }
                index -= 1
            }
            return found
        }
    }

    /// Newest first, at most `limit`.
    func messages(_ filter: InboxFilter, limit: Int) -> [InboxMessage] { stored(filter, limit: limit).map(\.message) }

    func message(id: Int) -> InboxMessage? { storedMessage(id: id)?.message }

    /// Message `id` and its JSON, while it is kept (`GET /api/messages/N`, the permalink).
    func storedMessage(id: Int) -> Stored? {
        state.withLock { state in Self.index(of: id, in: state).map { state.messages[$0] } }
    }

    /// Where message `id` is in `state.messages`: ids increase with the index, so a binary search.
    private static func index(of id: Int, in state: State) -> Int? {
        var low = state.first, high = state.messages.count - 1
        while low <= high {
            let middle = (low + high) / 2
            let found = state.messages[middle].message.id
            if found == id { return middle }
            if found < id { low = middle + 1 } else { high = middle - 1 }
        }
        return nil
    }

    /// Forgets message `id` (`DELETE /api/messages/N`) and tells the pages (a `deleted` event);
    /// false when it is not kept (never was, already deleted, forgotten or cleared). Ids are not
    /// reused, so a permalink never shows another message.
    @discardableResult
    func delete(id: Int) -> Bool {
        let removed = state.withLock { state -> Bool in
            guard let index = Self.index(of: id, in: state) else { return false }
            state.messages.remove(at: index)
            state.deleted += 1
            return true
        }
        if removed { broadcast(Self.event("deleted", data: Array("{\"id\":\(id)}".utf8))) }
        return removed
    }

    /// The apps and campaigns among the kept messages (for the page's filter suggestions).
    func facets() -> (apps: [String], campaigns: [String]) {
        state.withLock { state in
            var apps = Set<String>(), campaigns = Set<String>()
            for item in state.messages[state.first...] {
                if let app = item.message.app { apps.insert(app) }
                if let campaign = item.message.campaign { campaigns.insert(campaign) }
            }
            return (apps.sorted(), campaigns.sorted())
        }
    }

    var counts: Counts {
        let (accepted, dropped) = intake.withLock { ($0.accepted, $0.forgotten) }
        let (forgotten, deleted) = state.withLock { ($0.forgotten, $0.deleted) }
        return Counts(accepted: accepted, forgotten: dropped + forgotten, deleted: deleted)
    }
    var keptCount: Int { state.withLock { $0.messages.count - $0.first } }

    /// Forgets every message (`DELETE /api/messages`) and tells the pages.
    func clear() {
        state.withLock { state in
            state.messages.removeAll()
            state.first = 0
            state.forgotten = 0
            state.deleted = 0
        }
        intake.withLock { intake in
            intake.accepted = intake.pending.count
            intake.forgotten = 0
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
