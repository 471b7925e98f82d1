import PushCore
import PushEncoding

/// Fault injection settings (DESIGN §11, docs/sandbox.md "Faults"). Shares are probabilities in 0...1.
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

/// A fault set that applies to the requests whose `:path` starts with `pathPrefix`.
struct SandboxScopedFaults: Sendable, Equatable {
    var pathPrefix: String
    var faults: SandboxFaults
}

/// Every fault set: the default one and those scoped to a path prefix (longest prefix first).
/// A request gets the set of the longest prefix its path starts with, else the default.
struct SandboxFaultTable: Sendable, Equatable {
    var base: SandboxFaults
    /// Longest prefix first (kept so by ``setScoped(_:)``).
    private(set) var scoped: [SandboxScopedFaults] = []

    init(base: SandboxFaults) { self.base = base }

    /// The set for `path` and its prefix (nil: the default set).
    func faults(for path: Substring) -> (scope: String?, faults: SandboxFaults) {
        for entry in scoped where path.hasPrefix(entry.pathPrefix) { return (entry.pathPrefix, entry.faults) }
        return (nil, base)
    }

    /// The set of `scope` (nil: the default one).
    func faults(scope: String?) -> SandboxFaults {
        guard let scope else { return base }
        return scoped.first { $0.pathPrefix == scope }?.faults ?? SandboxFaults()
    }

    /// Replaces (or adds) the set of `scope`; nil `faults` removes a scoped set (the default set
    /// cannot be removed: it becomes `SandboxFaults()`).
    mutating func set(_ faults: SandboxFaults?, scope: String?) {
        guard let scope else {
            base = faults ?? SandboxFaults()
            return
        }
        scoped.removeAll { $0.pathPrefix == scope }
        if let faults { setScoped(SandboxScopedFaults(pathPrefix: scope, faults: faults)) }
    }

    private mutating func setScoped(_ entry: SandboxScopedFaults) {
        let index = scoped.firstIndex { $0.pathPrefix.utf8.count < entry.pathPrefix.utf8.count } ?? scoped.count
        scoped.insert(entry, at: index)
    }

    /// Changes the set of `scope` in place (a consumed one-shot fault).
    mutating func modify<T>(scope: String?, _ change: (inout SandboxFaults) -> T) -> T {
        guard let scope else { return change(&base) }
        guard let index = scoped.firstIndex(where: { $0.pathPrefix == scope }) else {
            var scratch = SandboxFaults()
            return change(&scratch)
        }
        return change(&scoped[index].faults)
    }
}

/// A `POST /_sandbox/faults` body: which set it changes, and how.
struct SandboxFaultUpdate: Sendable {
    /// The set changed: the requests whose path starts with this (nil: the default set).
    var pathPrefix: String?
    /// Start from no faults (a scoped set with nothing else given is removed).
    var clear = false
    /// Start an outage of this many seconds from now (0 ends one); default set only.
    var outageSeconds: Double?
    /// The fault members to apply.
    var members: [(key: String, value: JSONValue)] = []

    /// Nil when the body is not an object or `pathPrefix`, `clear` or `outageSeconds` is invalid.
    static func parse(_ body: JSONValue) -> SandboxFaultUpdate? {
        guard let members = body.objectValue?.members else { return nil }
        var update = SandboxFaultUpdate()
        for (key, value) in members {
            switch key {
            case "pathPrefix":
                guard let prefix = value.stringValue, prefix.hasPrefix("/") else { return nil }
                update.pathPrefix = prefix
            case "clear":
                guard case .bool(let flag) = value else { return nil }
                update.clear = flag
            case "outageSeconds":
                guard let seconds = value.numberValue, seconds >= 0, seconds <= 86400 else { return nil }
                update.outageSeconds = seconds
            default:
                update.members.append((key: key, value: value))
            }
        }
        if update.pathPrefix != nil && update.outageSeconds != nil { return nil }
        return update
    }
}

/// What the event loop does instead of answering a message send (docs/sandbox.md "Transport faults").
enum SandboxTransportFault: String, Sendable, CaseIterable {
    /// `RST_STREAM` `REFUSED_STREAM` (RFC 9113 §8.7): not processed, not recorded.
    case refuse
    /// `GOAWAY` with a last-stream-id below the stream (RFC 9113 §6.8): not processed, not recorded.
    case goaway
    /// Accepted and recorded, then `RST_STREAM` `INTERNAL_ERROR` instead of the response.
    case reset
    /// Accepted and recorded, then the connection is closed without an answer.
    case drop
    /// Accepted and recorded, never answered.
    case hang

    /// Decided before the request is processed.
    var isBeforeProcessing: Bool { self == .refuse || self == .goaway }
}
