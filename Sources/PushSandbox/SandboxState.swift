import PushCore
import PushInbox
import Synchronization
#if canImport(Glibc)
import Glibc
import PushEncoding
#endif

/// Fault injection settings (docs/sandbox.md). Shares are probabilities in 0...1.
struct SandboxFaults: Sendable, Equatable {
    /// Share of tokens answered as unregistered. Decided per token (a hash), so a token stays dead.
    var unregisteredShare = 0.0
    /// Share of requests answered 429 with `Retry-After`.
    var throttleShare = 0.0
    /// `Retry-After` seconds sent with 429. Default: 1.
    var retryAfterSeconds = 1
    /// Share of requests answered 500/503.
    var errorShare = 0.0
    /// Delay added to every provider response, in milliseconds. Default: 0.
    var latencyMilliseconds = 0
    /// Each provider response waits a further uniform 0…this many ms (real providers' latency
    /// varies: a constant one lets a client's streams fall into lock-step bursts). Default: 0.
    var latencyJitterMilliseconds = 0
    /// APNs provider tokens whose `iat` is before this Unix time (s) are answered 403
    /// `ExpiredProviderToken`, as Apple does once a token is an hour old. Default: 0 (off).
    var expireProviderTokensIssuedBefore = 0.0
    /// The next FCM send answers 401 `UNAUTHENTICATED` and revokes the access token it carried
    /// (an access token Google stopped accepting). Consumed by one request. Default: false.
    var fcmUnauthenticatedOnce = false
    /// APNs requests on certificate connections are answered 403 with this reason
    /// (`BadCertificate` or `BadCertificateEnvironment`: a revoked certificate, one for the other
    /// environment). Default: nil (off).
    var refuseCertificates: String?
    /// Huawei sends answer these, one each, in order, before any other check but authentication
    /// (docs/providers.md "Huawei Push Kit"): a Huawei result code (8 digits: `81000001`, `80300008`, `80200003` …) or
    /// `502`/`503`. `80200001`/`80200003` also revoke the access token the request carried.
    /// Default: empty.
    var hmsAnswers: [String] = []
    /// Huawei sends with more tokens than this answer `80300010` (Huawei's limit: 1000).
    var hmsTokenLimit = 1000

    // Transport faults of message sends (``SandboxTransportFault``). Default: 0 (off).
    /// Share refused with `RST_STREAM` `REFUSED_STREAM`: not processed, not recorded.
    var refuseShare = 0.0
    /// Share answered with a `GOAWAY` whose last-stream-id is below the stream: not processed.
    var goawayShare = 0.0
    /// The next this many sends get that `GOAWAY` (one each, before `goawayShare` is drawn).
    var goawayCount = 0
    /// Share accepted (recorded) and answered `RST_STREAM` `INTERNAL_ERROR` instead of a response.
    var resetShare = 0.0
    /// Share accepted (recorded), then the connection is closed without an answer.
    var dropShare = 0.0
    /// Share accepted (recorded) and never answered.
    var hangShare = 0.0

    /// Whether any transport fault is set (the router draws none otherwise).
    var hasTransportFaults: Bool {
        refuseShare > 0 || goawayShare > 0 || goawayCount > 0 || resetShare > 0 || dropShare > 0 || hangShare > 0
    }

    /// At most this many queued Huawei answers.
    static let maximumHMSAnswers = 1000

    /// A queued Huawei answer: 8 digits, or `502`/`503`.
    static func isHMSAnswer(_ text: String) -> Bool {
        text == "502" || text == "503" || (text.utf8.count == 8 && text.utf8.allSatisfy { (0x30...0x39).contains($0) })
    }

    /// The settings as one JSON object (`GET /_sandbox/faults`).
    var json: String { JSONWriter.object { writeMembers(&$0) }.text }

    /// The members of ``json``, written into an object being built.
    func writeMembers(_ w: inout JSONWriter) {
        w.member("unregisteredShare", unregisteredShare); w.member("throttleShare", throttleShare)
        w.member("retryAfter", retryAfterSeconds); w.member("errorShare", errorShare); w.member("latencyMs", latencyMilliseconds)
        w.member("latencyJitterMs", latencyJitterMilliseconds)
        w.member("expireProviderTokensIssuedBefore", expireProviderTokensIssuedBefore)
        w.member("fcmUnauthenticatedOnce", fcmUnauthenticatedOnce)
        w.member("refuseCertificates", orNull: refuseCertificates)
        w.member("hmsAnswers", strings: hmsAnswers)
        w.member("hmsTokenLimit", hmsTokenLimit)
        w.member("refuseShare", refuseShare); w.member("goawayShare", goawayShare); w.member("goawayCount", goawayCount)
        w.member("resetShare", resetShare); w.member("dropShare", dropShare); w.member("hangShare", hangShare)
    }

    /// Applies the members present in a `POST /_sandbox/faults` body; nil if a value is invalid.
    func updated(with body: JSONValue) -> SandboxFaults? {
        guard let members = body.objectValue?.members else { return nil }
        return updated(members: members)
    }

    /// Applies these members (names as in ``json``); nil if one is unknown or its value invalid.
    func updated(members: [(key: String, value: JSONValue)]) -> SandboxFaults? {
        var faults = self
        for (key, value) in members {
            if key == "fcmUnauthenticatedOnce" {
                guard case .bool(let flag) = value else { return nil }
                faults.fcmUnauthenticatedOnce = flag
                continue
            }
            if key == "refuseCertificates" {
                switch value {
                case .null: faults.refuseCertificates = nil
                case .string(let reason) where reason == "BadCertificate" || reason == "BadCertificateEnvironment":
                    faults.refuseCertificates = reason
                default: return nil
                }
                continue
            }
            if key == "hmsAnswers" {
                guard let items = value.arrayValue, items.count <= Self.maximumHMSAnswers else { return nil }
                let answers = items.compactMap(\.stringValue)
                guard answers.count == items.count, answers.allSatisfy(Self.isHMSAnswer) else { return nil }
                faults.hmsAnswers = answers
                continue
            }
            guard let number = value.numberValue, number >= 0 else { return nil }
            switch key {
            case "unregisteredShare": guard number <= 1 else { return nil }; faults.unregisteredShare = number
            case "throttleShare": guard number <= 1 else { return nil }; faults.throttleShare = number
            case "errorShare": guard number <= 1 else { return nil }; faults.errorShare = number
            case "retryAfter": guard number <= 86400 else { return nil }; faults.retryAfterSeconds = Int(number)
            case "latencyMs": guard number <= 60000 else { return nil }; faults.latencyMilliseconds = Int(number)
            case "latencyJitterMs": guard number <= 60000 else { return nil }; faults.latencyJitterMilliseconds = Int(number)
            case "expireProviderTokensIssuedBefore": faults.expireProviderTokensIssuedBefore = number
            case "hmsTokenLimit": guard number >= 1, number <= 1000 else { return nil }; faults.hmsTokenLimit = Int(number)
            case "refuseShare": guard number <= 1 else { return nil }; faults.refuseShare = number
            case "goawayShare": guard number <= 1 else { return nil }; faults.goawayShare = number
            case "goawayCount": guard number <= 1_000_000, number == number.rounded() else { return nil }; faults.goawayCount = Int(number)
            case "resetShare": guard number <= 1 else { return nil }; faults.resetShare = number
            case "dropShare": guard number <= 1 else { return nil }; faults.dropShare = number
            case "hangShare": guard number <= 1 else { return nil }; faults.hangShare = number
            default: return nil
            }
        }
        return faults
    }

    /// What `POST /_sandbox/faults` answers with 400.
    static let usage = "expected a JSON object of unregisteredShare, throttleShare, errorShare (0...1), retryAfter (s), latencyMs, latencyJitterMs, expireProviderTokensIssuedBefore (unix s), fcmUnauthenticatedOnce (bool), refuseCertificates (BadCertificate, BadCertificateEnvironment or null), hmsAnswers (array of 8-digit Huawei codes, 502 or 503), hmsTokenLimit (1...1000), refuseShare, goawayShare, resetShare, dropShare, hangShare (0...1), goawayCount (whole number), and optionally pathPrefix (a path starting with /), clear (bool), outageSeconds (0...86400, not with pathPrefix)"
}

/// What the sandbox shares between its event loops: faults, counters, accepted messages, issued
/// OAuth access tokens. Every access goes through one `Mutex`; the critical sections are short.
final class SandboxState: Sendable {
    struct Counters {
        /// Accepted requests per platform; for `huawei`, accepted tokens (one request carries up to 1000).
        var accepted: [String: Int] = ["ios": 0, "android": 0, "web": 0, "huawei": 0]
        var responses: [Int: Int] = [:]
        var msgIDCounts: [String: Int] = [:]
        var duplicateMsgIDs = 0
        var tokenRequests = 0
        var requests = 0
        var records: [[UInt8]] = []
        var droppedRecords = 0
        var recordBuffer: [UInt8] = []
        /// Transport faults performed, by kind (``SandboxTransportFault``).
        var transportFaults: [SandboxTransportFault: Int] = [:]
        /// Connections closed by an outage (open ones at its start, new ones at accept), and
        /// provider streams refused during one on connections that carried only control requests.
        var outageClosedConnections = 0
        var outageRefusedStreams = 0
    }

    /// What an event loop reads once per turn (``SandboxState/snapshot``).
    struct Snapshot: Sendable {
        var faults: SandboxFaultTable
        /// The outage lasts until this monotonic time (ns); 0: none.
        var outageUntil: UInt64 = 0
        /// Counts the outages started: a loop that sees it change closes its provider connections.
        var outageGeneration = 0

        func isOutage(now: UInt64) -> Bool { now < outageUntil }
    }

    struct AccessToken {
        let project: String
        let expiresAt: Int
    }

    private struct Inner {
        var snapshot: Snapshot
        var counters = Counters()
        var accessTokens: [String: AccessToken] = [:]
        /// Wakes each event loop (so an idle one applies a new outage at once).
        var loopNudges: [@Sendable () -> Void] = []
    }

    private let inner: Mutex<Inner>
    /// Accepted messages kept for `GET /_sandbox/messages`; later ones are only counted. Default: 100,000.
    let maximumRecords: Int
    /// `--record FILE`, opened for appending, or -1.
    private let recordFD: Int32
    /// `--inbox`: every accepted message is also handed to the inbox (docs/sandbox.md "Inbox").
    let inbox: Inbox?
    /// `--events-url`: posts tracking events; with `reportsDelivered`, `delivered` for every accepted message.
    let tracking: TrackingReporter?
    let reportsDelivered: Bool

    init(faults: SandboxFaults, maximumRecords: Int = 100_000, recordFD: Int32 = -1,
         inbox: Inbox? = nil, tracking: TrackingReporter? = nil, reportsDelivered: Bool = false) {
        inner = Mutex(Inner(snapshot: Snapshot(faults: SandboxFaultTable(base: faults))))
        self.maximumRecords = maximumRecords
        self.recordFD = recordFD
        self.inbox = inbox
        self.tracking = tracking
        self.reportsDelivered = reportsDelivered
    }

    deinit { if recordFD >= 0 { close(recordFD) } }

    /// The default fault set (requests no scoped set matches).
    var faults: SandboxFaults {
        get { inner.withLock { $0.snapshot.faults.base } }
    }

    /// What the event loops read once per turn: every fault set and the outage.
    var snapshot: Snapshot { inner.withLock { $0.snapshot } }

    /// Replaces the default fault set.
    func setFaults(_ faults: SandboxFaults) { inner.withLock { $0.snapshot.faults.base = faults } }

    /// Applies a `POST /_sandbox/faults` body at monotonic time `now` (ns); nil (and no change)
    /// when a fault member is unknown or invalid. An outage closes the provider connections of
    /// every event loop (each is woken).
    func apply(_ update: SandboxFaultUpdate, now: UInt64) -> Snapshot? {
        let (snapshot, nudges): (Snapshot?, [@Sendable () -> Void]) = inner.withLock { state in
            var table = state.snapshot.faults
            let scope = update.pathPrefix
            var start = update.clear ? SandboxFaults() : table.faults(scope: scope)
            if !update.members.isEmpty || !update.clear || scope == nil {
                guard let updated = start.updated(members: update.members) else { return (nil, []) }
                start = updated
                table.set(start, scope: scope)
            } else {
                table.set(nil, scope: scope) // {"pathPrefix": …, "clear": true}: the scoped set is gone
            }
            state.snapshot.faults = table
            var nudges: [@Sendable () -> Void] = []
            if let seconds = update.outageSeconds {
                state.snapshot.outageUntil = seconds > 0 ? now + UInt64(seconds * 1e9) : 0
                if seconds > 0 {
                    state.snapshot.outageGeneration += 1
                    nudges = state.loopNudges
                }
            }
            return (state.snapshot, nudges)
        }
        for nudge in nudges { nudge() }
        return snapshot
    }

    /// Registers a way to wake an event loop (``apply(_:now:)`` wakes them all for an outage).
    func addLoopNudge(_ nudge: @escaping @Sendable () -> Void) { inner.withLock { $0.loopNudges.append(nudge) } }

    /// Whether this FCM send must answer 401 (`fcmUnauthenticatedOnce` of the fault set of
    /// `scope`, nil: the default set); clears the switch.
    func takeFCMUnauthenticatedOnce(scope: String? = nil) -> Bool {
        inner.withLock { state in
            state.snapshot.faults.modify(scope: scope) { faults in
                guard faults.fcmUnauthenticatedOnce else { return false }
                faults.fcmUnauthenticatedOnce = false
                return true
            }
        }
    }

    /// The next queued Huawei answer (``SandboxFaults/hmsAnswers`` of the set of `scope`),
    /// removed from the queue.
    func takeHMSAnswer(scope: String? = nil) -> String? {
        inner.withLock { state in
            state.snapshot.faults.modify(scope: scope) { faults in
                guard !faults.hmsAnswers.isEmpty else { return nil }
                return faults.hmsAnswers.removeFirst()
            }
        }
    }

    /// Whether this send gets a `GOAWAY` from ``SandboxFaults/goawayCount`` of the set of
    /// `scope`; counts it down.
    func takeGoaway(scope: String?) -> Bool {
        inner.withLock { state in
            state.snapshot.faults.modify(scope: scope) { faults in
                guard faults.goawayCount > 0 else { return false }
                faults.goawayCount -= 1
                return true
            }
        }
    }

    /// Counts a transport fault an event loop performed.
    func count(_ fault: SandboxTransportFault) { inner.withLock { $0.counters.transportFaults[fault, default: 0] += 1 } }

    /// Counts connections an outage closed, and provider streams it refused.
    func countOutage(closedConnections: Int = 0, refusedStreams: Int = 0) {
        inner.withLock { state in
            state.counters.outageClosedConnections += closedConnections
            state.counters.outageRefusedStreams += refusedStreams
        }
    }

    /// `GET /_sandbox/faults`: the default set's members, `scoped` (one object per path prefix,
    /// longest first) and `outageSecondsLeft`.
    func faultsJSON(now: UInt64) -> String {
        let snapshot = self.snapshot
        return JSONWriter.object { w in
            snapshot.faults.base.writeMembers(&w)
            w.key("scoped")
            w.beginArray()
            for entry in snapshot.faults.scoped {
                w.beginObject()
                w.member("pathPrefix", entry.pathPrefix)
                entry.faults.writeMembers(&w)
                w.endObject()
            }
            w.endArray()
            let left = snapshot.outageUntil > now ? Double(snapshot.outageUntil - now) / 1e9 : 0
            w.member("outageSecondsLeft", (left * 1000).rounded(.up) / 1000)
        }.text
    }

    /// Forgets an issued access token: later requests carrying it are 401.
    func revokeAccessToken(_ token: String) { inner.withLock { _ = $0.accessTokens.removeValue(forKey: token) } }

    /// Counts a provider response; for a 2xx, records the accepted message `line` under `msgID`.
    /// `deliveries` (Huawei: one request, many devices) are the delivered tokens: each counts as
    /// one accepted message, de-duplicated under `<msgID>/<token>`.
    func count(status: Int, platform: String, msgID: String?, line: [UInt8]?, deliveries: [String]? = nil) {
        inner.withLock { state in
            state.counters.requests += 1
            state.counters.responses[status, default: 0] += 1
            guard (200..<300).contains(status) else { return }
            state.counters.accepted[platform, default: 0] += deliveries?.count ?? 1
            let keys: [String] = if let deliveries { deliveries.map { "\(msgID ?? "")/\($0)" } } else { msgID.map { [$0] } ?? [] }
            for key in keys {
                let seen = state.counters.msgIDCounts[key, default: 0]
                if seen == 1 { state.counters.duplicateMsgIDs += 1 }
                state.counters.msgIDCounts[key] = seen + 1
            }
            guard let line else { return }
            if state.counters.records.count < maximumRecords {
                state.counters.records.append(line)
            } else {
                state.counters.droppedRecords += 1
            }
            if recordFD >= 0 {
                state.counters.recordBuffer.append(contentsOf: line)
                state.counters.recordBuffer.append(0x0A)
                if state.counters.recordBuffer.count >= 64 * 1024 { writeRecords(&state.counters.recordBuffer) }
            }
        }
    }

    /// Writes buffered `--record` lines to the file.
    func flushRecords() {
        guard recordFD >= 0 else { return }
        inner.withLock { state in
            if !state.counters.recordBuffer.isEmpty { writeRecords(&state.counters.recordBuffer) }
        }
    }

    private func writeRecords(_ buffer: inout [UInt8]) {
        buffer.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = write(recordFD, raw.baseAddress.map { $0 + offset }, raw.count - offset)
                if written <= 0 { break }
                offset += written
            }
        }
        buffer.removeAll(keepingCapacity: true)
    }

    func countTokenRequest() { inner.withLock { $0.counters.tokenRequests += 1 } }

    /// Clears counters and records (faults and issued access tokens stay).
    func reset() {
        inner.withLock { state in
            let buffer = state.counters.recordBuffer
            state.counters = Counters()
            state.counters.recordBuffer = buffer
        }
    }

    /// `GET /_sandbox/stats`.
    func statsJSON() -> String {
        inner.withLock { state in
            let counters = state.counters
            return JSONWriter.object { w in
                w.member("accepted") { a in
                    for platform in ["ios", "android", "web", "huawei"] { a.member(platform, counters.accepted[platform, default: 0]) }
                }
                w.member("responses") { r in
                    for status in counters.responses.keys.sorted() { r.member("\(status)", counters.responses[status, default: 0]) }
                }
                w.member("requests", counters.requests)
                w.member("distinctMsgIds", counters.msgIDCounts.count); w.member("duplicateMsgIds", counters.duplicateMsgIDs)
                w.member("tokenRequests", counters.tokenRequests); w.member("droppedRecords", counters.droppedRecords)
                w.member("transportFaults") { t in
                    for fault in SandboxTransportFault.allCases { t.member(fault.rawValue, counters.transportFaults[fault, default: 0]) }
                    t.member("outageClosedConnections", counters.outageClosedConnections)
                    t.member("outageRefusedStreams", counters.outageRefusedStreams)
                }
            }.text
        }
    }

    /// `GET /_sandbox/messages`: the accepted messages, one JSON line each, optionally of one platform.
    func messages(platform: String?) -> [UInt8] {
        let prefix = platform.map { Array("{\"platform\":\"\($0)\"".utf8) }
        return inner.withLock { state in
            var bytes: [UInt8] = []
            for line in state.counters.records where prefix.map({ line.starts(with: $0) }) ?? true {
                bytes.append(contentsOf: line)
                bytes.append(0x0A)
            }
            return bytes
        }
    }

    /// The same as text.
    func messagesText(platform: String?) -> String { String(decoding: messages(platform: platform), as: UTF8.self) }

    /// Whether accepted messages are still kept (in memory or in the record file).
    var isRecording: Bool { recordFD >= 0 || inner.withLock { $0.counters.records.count < maximumRecords } }

    /// How often `msgID` was accepted.
    func acceptedCount(msgID: String) -> Int { inner.withLock { $0.counters.msgIDCounts[msgID, default: 0] } }

    func issueAccessToken(_ token: String, project: String, expiresAt: Int) {
        inner.withLock { state in
            if state.accessTokens.count > 100_000 { state.accessTokens.removeAll() }
            state.accessTokens[token] = AccessToken(project: project, expiresAt: expiresAt)
        }
    }

    func accessToken(_ token: String) -> AccessToken? { inner.withLock { $0.accessTokens[token] } }
}
