/// The request and connect deadlines of the running transfers, kept by the I/O loop instead of
/// libcurl's per-transfer timers (`CURLOPT_TIMEOUT_MS`, `CURLOPT_CONNECTTIMEOUT_MS`). libcurl
/// keeps each transfer's nearest timer in a splay tree that every `Curl_expire` re-balances, so
/// with a few hundred streams open each request would pay, on the I/O thread, for two timers
/// it almost never needs (docs/performance.md "Where the time goes").
///
/// One first-in first-out queue per timeout value: transfers of one timeout start in order, so
/// their deadlines come due in order and adding, finding the next one and taking what is due
/// cost O(1). A finished transfer's entries are not searched for: each entry carries the
/// transfer's ticket, and an entry whose transfer no longer holds that ticket is dropped when it
/// reaches the front (`isLive`). A queue therefore holds the entries started since its oldest
/// unfinished transfer. Pure (the caller passes the clock and the liveness check): tested
/// without I/O.
struct TransferDeadlines<Item: AnyObject> {
    /// What comes due.
    enum Kind: Equatable {
        /// The request timeout: the transfer fails with `.timeout` whatever its state.
        case request
        /// The connect timeout: the transfer fails with `.timeout` if it has not yet started
        /// sending (its connection — TCP, TLS, a proxy tunnel — or a stream on one is not ready).
        case connect
    }

    struct Entry {
        let deadlineMS: Int64
        let ticket: UInt64
        let item: Item
    }

    private struct Queue {
        let timeoutMS: Int
        let kind: Kind
        var entries = FIFOQueue<Entry>()
    }

    /// At most this many distinct request timeouts get a queue; a request with yet another one
    /// is left to libcurl (``add(_:ticket:nowMS:timeoutMS:)`` returns false).
    static var maxRequestQueues: Int { 4 }

    /// The client's connect timeout (≤ 0: none).
    let connectTimeoutMS: Int
    private var connect: Queue
    private var requests: [Queue] = []

    init(connectTimeoutMS: Int) {
        self.connectTimeoutMS = connectTimeoutMS
        connect = Queue(timeoutMS: connectTimeoutMS, kind: .connect)
    }

    /// Entries held (tests: stale ones leave at the front).
    var count: Int { requests.reduce(connect.entries.count) { $0 + $1.entries.count } }

    /// Records a transfer started at `nowMS` (monotonic milliseconds) with the request timeout
    /// `timeoutMS` (≤ 0: none). False when the request timeout has no queue (more distinct
    /// timeouts than ``maxRequestQueues``): the caller then has libcurl enforce it; the connect
    /// deadline is recorded either way.
    mutating func add(_ item: Item, ticket: UInt64, nowMS: Int64, timeoutMS: Int) -> Bool {
        if connectTimeoutMS > 0 && (timeoutMS <= 0 || connectTimeoutMS < timeoutMS) {
            connect.entries.append(Entry(deadlineMS: nowMS + Int64(connectTimeoutMS), ticket: ticket, item: item))
        }
        guard timeoutMS > 0 else { return true }
        let entry = Entry(deadlineMS: nowMS + Int64(timeoutMS), ticket: ticket, item: item)
        for index in requests.indices where requests[index].timeoutMS == timeoutMS {
            requests[index].entries.append(entry)
            return true
        }
        guard requests.count < Self.maxRequestQueues else { return false }
        var queue = Queue(timeoutMS: timeoutMS, kind: .request)
        queue.entries.append(entry)
        requests.append(queue)
        return true
    }

    /// Takes every entry due at `nowMS` whose transfer is still live, in deadline order per
    /// queue, into `due`; drops the stale entries it meets at the fronts.
    mutating func takeDue(nowMS: Int64, isLive: (Item, UInt64) -> Bool, into due: inout [(item: Item, kind: Kind)]) {
        Self.take(&connect, nowMS: nowMS, isLive: isLive, into: &due)
        for index in requests.indices { Self.take(&requests[index], nowMS: nowMS, isLive: isLive, into: &due) }
    }

    /// Milliseconds from `nowMS` until the earliest live deadline (0: one is due; nil: none),
    /// after dropping the stale entries at the fronts.
    mutating func millisecondsUntilNext(nowMS: Int64, isLive: (Item, UInt64) -> Bool) -> Int64? {
        var next: Int64?
        for index in -1..<requests.count {
            let deadline = index < 0 ? Self.frontDeadline(&connect, isLive: isLive) : Self.frontDeadline(&requests[index], isLive: isLive)
            if let deadline, next.map({ deadline < $0 }) ?? true { next = deadline }
        }
        return next.map { max(0, $0 - nowMS) }
    }

    private static func take(_ queue: inout Queue, nowMS: Int64, isLive: (Item, UInt64) -> Bool, into due: inout [(item: Item, kind: Kind)]) {
        while let entry = queue.entries.first {
            let live = isLive(entry.item, entry.ticket)
            if live && entry.deadlineMS > nowMS { return }
            queue.entries.popFirst()
            if live { due.append((entry.item, queue.kind)) }
        }
    }

    private static func frontDeadline(_ queue: inout Queue, isLive: (Item, UInt64) -> Bool) -> Int64? {
        while let entry = queue.entries.first {
            if isLive(entry.item, entry.ticket) { return entry.deadlineMS }
            queue.entries.popFirst()
        }
        return nil
    }
}
