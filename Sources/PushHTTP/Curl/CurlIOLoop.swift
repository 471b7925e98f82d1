import CCurl
import CPushCurl
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The multi loop on the client's dedicated I/O thread, on libcurl's socket API: takes
/// submissions, adds easy handles, runs libcurl's timer (`curl_multi_socket_action` with
/// `CURL_SOCKET_TIMEOUT`: it starts what was just added), calls completions, then pushes out the
/// turn's writes (the sockets are corked while libcurl writes, uncorked before the wait) and
/// sleeps in `epoll_wait` until a socket is ready, libcurl's timer is due or a submission wakes
/// it; each ready socket gets its `curl_multi_socket_action` (only that connection's transfers
/// run). The C side of the loop is `pw_curl_events` in the CPushCurl target.
///
/// A request submitted from a completion (on this thread) needs no wake-up: the loop notices
/// (`submittedOnLoopThread`) and starts it in the same turn, before it waits.
///
/// Request and connect timeouts are the loop's (``TransferDeadlines``), not libcurl's timers:
/// each turn takes what came due, removes those transfers and completes them with `.timeout`
/// (a connect deadline only if the transfer has not started sending), and the wait never
/// sleeps past the next deadline.
///
/// Thread safety: `run()` is called once, on the I/O thread, and is the only code touching
/// the mutable stored properties (`free`, `active`, `batch`, `done`, `submittedHere`,
/// `deadlines`, `due`, `nextTicket`), apart from `submittedOnLoopThread()`, which only the
/// I/O thread calls. `shared` is a Mutex; `multi` is used from other threads only through
/// `wakeup()`; `finished` is a Mutex; `handlesCreated` is atomic.
final class CurlIOLoop: @unchecked Sendable {
    let multi: CurlMulti
    let shared: HTTPClientShared
    let settings: TransferSettings
    /// Set when `run()` returned.
    let finished = Mutex(false)
    /// Easy handles created so far (each is reused until the free list is full).
    let handlesCreated = Atomic<Int>(0)
    /// Open connections that are corked between waits, and the uncork rounds so far (tests).
    let corkedConnections = Atomic<Int>(0)
    let corkFlushes = Atomic<Int>(0)

    private var free: [CurlTransfer] = []
    /// Transfers in the multi handle; each knows its index (`activeIndex`) for O(1) removal.
    private var active: [CurlTransfer] = []
    private var batch: [HTTPSubmission] = []
    private var done: [(HTTPCompletion?, Result<HTTPResponse, HTTPTransportError>)] = []
    private var submittedHere = false
    private var deadlines: TransferDeadlines<CurlTransfer>
    private var due: [(item: CurlTransfer, kind: TransferDeadlines<CurlTransfer>.Kind)] = []
    /// The next transfer's ticket (0 is "none").
    private var nextTicket: UInt64 = 1
    private let maxFreeHandles: Int
    /// Client certificates seen so far (each raises the connection limits once).
    private var clientIdentities: Set<String> = []

    init(multi: CurlMulti, shared: HTTPClientShared, settings: TransferSettings, maxFreeHandles: Int) {
        self.multi = multi
        self.shared = shared
        self.settings = settings
        self.maxFreeHandles = maxFreeHandles
        deadlines = TransferDeadlines(connectTimeoutMS: settings.connectTimeoutMS)
    }

    /// A completion running on this thread queued a request without waking the loop.
    func submittedOnLoopThread() { submittedHere = true }

    func run() {
        let events = multi.events
        while true {
            let phase = shared.state.withLock { $0.takePending(into: &batch) }
            if !batch.isEmpty {
                let nowMS = pw_curl_events_now_ms()
                for submission in batch { start(submission, nowMS: nowMS) }
                batch.removeAll(keepingCapacity: true)
            }
            pw_curl_events_run_timer(events)
            collectFinished()
            expireDue()
            deliver()
            if submittedHere {
                submittedHere = false
                if phase == .running { continue }
            }

            var waitMS: Int32 = 1000
            if case .draining(let deadline) = phase {
                let now = ContinuousClock.now
                if active.isEmpty || now >= deadline { break }
                waitMS = Int32(min(1000, (deadline - now).wholeMilliseconds))
            }
            if let untilDeadline = deadlines.millisecondsUntilNext(nowMS: pw_curl_events_now_ms(), isLive: Self.isLive) {
                waitMS = Int32(min(Int64(waitMS), untilDeadline))
            }
            _ = pw_curl_events_wait(events, waitMS)
            corkedConnections.store(Int(pw_curl_events_corked_count(events)), ordering: .relaxed)
            corkFlushes.store(Int(pw_curl_events_flush_count(events)), ordering: .relaxed)
            collectFinished()
            expireDue()
            deliver()
        }
        stopAll()
        finished.withLock { $0 = true }
    }

    private func start(_ submission: HTTPSubmission, nowMS: Int64) {
        let transfer: CurlTransfer
        if let reused = free.popLast() {
            transfer = reused
        } else {
            do {
                transfer = try CurlTransfer.make(settings: settings, multi: multi)
            } catch {
                done.append((submission.completion, .failure(error)))
                return
            }
            handlesCreated.add(1, ordering: .relaxed)
        }
        transfer.ticket = nextTicket
        nextTicket += 1
        let timeoutMS = submission.request.timeoutMS
        let keptHere = deadlines.add(transfer, ticket: transfer.ticket, nowMS: nowMS, timeoutMS: timeoutMS)
        if let error = transfer.configure(submission.request, completion: submission.completion, libcurlTimeoutMS: keptHere ? 0 : timeoutMS) {
            // Not recycled: a half-configured handle must not carry options into another request.
            transfer.ticket = 0
            done.append((submission.completion, .failure(error)))
            return
        }
        if let identity = submission.request.clientCertificate?.id, clientIdentities.insert(identity).inserted {
            multi.raiseLimits(identities: clientIdentities.count, perHost: settings.maxConnectionsPerHost, total: settings.maxTotalConnections)
        }
        let code = curl_multi_add_handle(multi.handle, transfer.handle)
        guard code == CURLM_OK else {
            transfer.ticket = 0
            let completion = transfer.abandon()
            let message = String(cString: curl_multi_strerror(code))
            done.append((completion, .failure(.other(code: Int(code.rawValue), message: "curl_multi_add_handle: \(message)"))))
            recycle(transfer)
            return
        }
        transfer.activeIndex = active.count
        active.append(transfer)
    }

    private func collectFinished() {
        var left: Int32 = 0
        while let message = curl_multi_info_read(multi.handle, &left) {
            // The message is invalid after curl_multi_remove_handle: read it first.
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            let code = message.pointee.data.result
            _ = curl_multi_remove_handle(multi.handle, easy)
            var privateData: UnsafeMutableRawPointer?
            guard pw_curl_easy_getinfo_ptr(easy, CURLINFO_PRIVATE, &privateData) == CURLE_OK, let privateData else { continue }
            // Unretained: `active` holds the reference, checked before it is trusted.
            let transfer = Unmanaged<CurlTransfer>.fromOpaque(privateData).takeUnretainedValue()
            guard removeActive(transfer) else { continue }
            transfer.ticket = 0
            done.append(transfer.finish(code))
            recycle(transfer)
        }
    }

    /// An entry of ``TransferDeadlines`` counts while its transfer still runs under its ticket.
    private static func isLive(_ transfer: CurlTransfer, _ ticket: UInt64) -> Bool { transfer.ticket == ticket }

    /// Ends the transfers whose request deadline passed, and those whose connect deadline
    /// passed before they started sending (as libcurl's own timers would: removing the handle
    /// resets an HTTP/2 stream, or drops a connection still being set up): `.timeout` when
    /// nothing of the request may have reached the server, else `.unanswered(.timeout, _)`.
    private func expireDue() {
        deadlines.takeDue(nowMS: pw_curl_events_now_ms(), isLive: Self.isLive, into: &due)
        guard !due.isEmpty else { return }
        for (transfer, kind) in due {
            if kind == .connect && transfer.hasStartedSending { continue }
            _ = curl_multi_remove_handle(multi.handle, transfer.handle)
            guard removeActive(transfer) else { continue }
            transfer.ticket = 0
            done.append(transfer.timedOut())
            recycle(transfer)
        }
        due.removeAll(keepingCapacity: true)
    }

    /// Removes `transfer` from `active` (swapping the last one into its place); false if it
    /// was not there.
    private func removeActive(_ transfer: CurlTransfer) -> Bool {
        let index = transfer.activeIndex
        guard index >= 0, index < active.count, active[index] === transfer else { return false }
        let last = active.removeLast()
        if last !== transfer {
            active[index] = last
            last.activeIndex = index
        }
        transfer.activeIndex = -1
        return true
    }

    /// Calls the completions gathered this round, after one lock to update `inFlight`.
    private func deliver() {
        guard !done.isEmpty else { return }
        let count = done.count
        shared.state.withLock { $0.completed(count) }
        for (completion, result) in done { completion?(result) }
        done.removeAll(keepingCapacity: true)
    }

    private func recycle(_ transfer: CurlTransfer) {
        if free.count < maxFreeHandles { free.append(transfer) }
    }

    private func stopAll() {
        let leftovers = shared.state.withLock { $0.stop() }
        for submission in leftovers { done.append((submission.completion, .failure(.shutdown))) }
        for transfer in active {
            _ = curl_multi_remove_handle(multi.handle, transfer.handle)
            done.append(transfer.shutDown())
        }
        active.removeAll()
        deliver()
        free.removeAll()
    }
}
