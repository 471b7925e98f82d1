import PushCore
import Synchronization
#if canImport(Glibc)
import Glibc
import PushEncoding
#endif

/// Fault injection settings (DESIGN §11). Shares are probabilities in 0...1.
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
    /// (DESIGN §17): a Huawei result code (8 digits: `81000001`, `80300008`, `80200003` …) or
    /// `502`/`503`. `80200001`/`80200003` also revoke the access token the request carried.
    /// Default: empty.
    var hmsAnswers: [String] = []
    /// Huawei sends with more tokens than this answer `80300010` (Huawei's limit: 1000).
    var hmsTokenLimit = 1000

    /// At most this many queued Huawei answers.
    static let maximumHMSAnswers = 1000

    /// A queued Huawei answer: 8 digits, or `502`/`503`.
    static func isHMSAnswer(_ text: String) -> Bool {
        text == "502" || text == "503" || (text.utf8.count == 8 && text.utf8.allSatisfy { (0x30...0x39).contains($0) })
    }

    var json: String {
        JSONWriter.object { w in
            w.member("unregisteredShare", unregisteredShare); w.member("throttleShare", throttleShare)
            w.member("retryAfter", retryAfterSeconds); w.member("errorShare", errorShare); w.member("latencyMs", latencyMilliseconds)
            w.member("latencyJitterMs", latencyJitterMilliseconds)
            w.member("expireProviderTokensIssuedBefore", expireProviderTokensIssuedBefore)
            w.member("fcmUnauthenticatedOnce", fcmUnauthenticatedOnce)
            w.member("refuseCertificates", orNull: refuseCertificates)
            w.member("hmsAnswers", strings: hmsAnswers)
            w.member("hmsTokenLimit", hmsTokenLimit)
        }.text
    }

    /// Applies the members present in a `POST /_sandbox/faults` body; nil if a value is invalid.
    func updated(with body: JSONValue) -> SandboxFaults? {
        guard let members = body.objectValue?.members else { return nil }
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
            default: return nil
            }
        }
        return faults
    }
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
    }

    struct AccessToken {
        let project: String
        let expiresAt: Int
    }

    private struct Inner {
        var faults: SandboxFaults
        var counters = Counters()
        var accessTokens: [String: AccessToken] = [:]
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
        inner = Mutex(Inner(faults: faults))
        self.maximumRecords = maximumRecords
        self.recordFD = recordFD
        self.inbox = inbox
        self.tracking = tracking
        self.reportsDelivered = reportsDelivered
    }

    deinit { if recordFD >= 0 { close(recordFD) } }

    var faults: SandboxFaults {
        get { inner.withLock { $0.faults } }
    }

    func setFaults(_ faults: SandboxFaults) { inner.withLock { $0.faults = faults } }

    /// Whether this FCM send must answer 401 (`fcmUnauthenticatedOnce`); clears the switch.
    func takeFCMUnauthenticatedOnce() -> Bool {
        inner.withLock { state in
            guard state.faults.fcmUnauthenticatedOnce else { return false }
            state.faults.fcmUnauthenticatedOnce = false
            return true
        }
    }

    /// The next queued Huawei answer (``SandboxFaults/hmsAnswers``), removed from the queue.
    func takeHMSAnswer() -> String? {
        inner.withLock { state in
            guard !state.faults.hmsAnswers.isEmpty else { return nil }
            return state.faults.hmsAnswers.removeFirst()
        }
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
