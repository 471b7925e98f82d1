import PushCore
import PushCrypto
import PushInbox
#if canImport(Glibc)
import Glibc
import PushEncoding
#endif

/// Settings fixed at start.
struct SandboxConfiguration: Sendable {
    /// `https://127.0.0.1:<port>`: the VAPID audience and the base of Web Push endpoints.
    var origin: String
    /// Skip provider authentication (raw load tests). Default: false.
    var isAuthDisabled = false
    /// Seed of the Web Push subscription keys (``SandboxSubscriptions``).
    var seed = SandboxSubscriptions.defaultSeed
}

/// Answers requests: routes to the APNs, FCM, Web Push emulators and the `/_sandbox/` control endpoints.
///
/// One router per event loop, used only on that loop's thread (it holds caches and a random
/// generator); shared state lives in ``SandboxState``.
final class SandboxRouter {
    let configuration: SandboxConfiguration
    let state: SandboxState
    let trust: SandboxTrust
    /// Unix time in seconds (injectable for tests).
    let clock: () -> Double
    var random: SplitMix64
    /// Verified APNs provider tokens: token → key.
    var apnsTokenCache: [String: (key: APNSTrustedKey, issuedAt: Double)] = [:]
    /// Verified VAPID headers: header → expiry.
    var vapidCache: [String: Double] = [:]
    /// Derived subscription keys by id.
    var subscriptionKeys: [String: (privateKey: P256PrivateKey, auth: [UInt8])] = [:]
    /// Fault sets and the outage, refreshed from ``SandboxState`` once per loop iteration.
    private(set) var snapshot: SandboxState.Snapshot
    /// The fault set of the request being handled (the one its path selects).
    private(set) var faults: SandboxFaults
    /// The path prefix of that set (nil: the default set): one-shot faults are consumed from it.
    private(set) var faultScope: String?
    /// Whether the request being handled was accepted (a 2xx recorded by ``finish(_:platform:request:msgID:bodyJSON:deliveries:)``).
    private var isAccepted = false
    static let cacheLimit = 4096

    init(configuration: SandboxConfiguration, state: SandboxState, trust: SandboxTrust,
         clock: @escaping () -> Double = SandboxRouter.systemClock, randomSeed: UInt64 = UInt64.random(in: 0...UInt64.max)) {
        self.configuration = configuration
        self.state = state
        self.trust = trust
        self.clock = clock
        random = SplitMix64(seed: randomSeed)
        snapshot = state.snapshot
        faults = snapshot.faults.base
    }

    static func systemClock() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    var latencyMilliseconds: Int { faults.latencyMilliseconds }

    /// The delay of the next provider answer: `latencyMs`, plus a uniform draw in
    /// 0…`latencyJitterMs` when that is set.
    func nextLatencyMilliseconds() -> Int {
        let jitter = faults.latencyJitterMilliseconds
        guard jitter > 0 else { return faults.latencyMilliseconds }
        return faults.latencyMilliseconds + Int(random.next() % UInt64(jitter + 1))
    }

    /// Refreshes cached settings and flushes the record file; called by the event loop after each batch of events.
    func loopIterationEnded() {
        refresh(state.snapshot)
        state.flushRecords()
    }

    /// Takes a new snapshot of the shared fault sets and outage.
    private func refresh(_ snapshot: SandboxState.Snapshot) {
        self.snapshot = snapshot
        faults = snapshot.faults.base
        faultScope = nil
    }

    /// The answer to `request`, or the transport fault that replaces it
    /// (``SandboxResponse/transportFault``): `refuse` and `goaway` are drawn before a message
    /// send is processed (it is neither processed nor recorded), `reset`, `drop` and `hang` after
    /// one was accepted (it is recorded).
    func handle(_ request: SandboxRequest) -> SandboxResponse {
        let path = request.pathWithoutQuery
        // Without scoped sets `faults` stays the default set (taken once per loop iteration).
        if !snapshot.faults.scoped.isEmpty { (faultScope, faults) = snapshot.faults.faults(for: path) }
        let isSend = faults.hasTransportFaults && Self.isMessageSend(path)
        if isSend, let fault = drawFaultBeforeProcessing() {
            return SandboxResponse(status: 0, transportFault: fault)
        }
        isAccepted = false
        var response = route(request, path: path)
        if isSend, isAccepted, let fault = drawFaultAfterAcceptance() { response.transportFault = fault }
        return response
    }

    /// Paths whose accepted requests are recorded: APNs, FCM and Huawei sends, Web Push.
    static func isMessageSend(_ path: Substring) -> Bool {
        path.hasPrefix("/3/device") || path.hasPrefix("/v1/") || path.hasPrefix("/wp/")
    }

    private func drawFaultBeforeProcessing() -> SandboxTransportFault? {
        if faults.refuseShare > 0, random.nextUnit() < faults.refuseShare { return .refuse }
        if faults.goawayCount > 0, state.takeGoaway(scope: faultScope) { return .goaway }
        if faults.goawayShare > 0, random.nextUnit() < faults.goawayShare { return .goaway }
        return nil
    }

    private func drawFaultAfterAcceptance() -> SandboxTransportFault? {
        if faults.resetShare > 0, random.nextUnit() < faults.resetShare { return .reset }
        if faults.dropShare > 0, random.nextUnit() < faults.dropShare { return .drop }
        if faults.hangShare > 0, random.nextUnit() < faults.hangShare { return .hang }
        return nil
    }

    private func route(_ request: SandboxRequest, path: Substring) -> SandboxResponse {
        if path.hasPrefix("/3/device") { return handleAPNS(request) }
        if path.hasPrefix("/v1/projects/") { return handleFCMSend(request) }
        if path == "/token" { return handleFCMToken(request) }
        if path.hasPrefix("/v1/") && path.hasSuffix("/messages:send") { return handleHMSSend(request) }
        if path == Self.hmsTokenPath { return handleHMSToken(request) }
        if path.hasPrefix("/wp/") { return handleWebPush(request) }
        if path.hasPrefix("/_sandbox/") { return handleControl(request, path: path) }
        return .json(404, #"{"reason":"BadPath"}"#)
    }

    // MARK: control endpoints

    private func handleControl(_ request: SandboxRequest, path: Substring) -> SandboxResponse {
        switch (request.method, path) {
        case ("GET", "/_sandbox/stats"):
            return .json(200, state.statsJSON(), isProviderResponse: false)
        case ("GET", "/_sandbox/messages"):
            return SandboxResponse(status: 200, headers: [(name: "content-type", value: "application/x-ndjson")],
                                   body: state.messages(platform: request.queryParameter("platform")), isProviderResponse: false)
        case ("POST", "/_sandbox/reset"):
            state.reset()
            return .json(200, #"{"reset":true}"#, isProviderResponse: false)
        case ("GET", "/_sandbox/accepted"):
            guard let msgID = request.queryParameter("msgId"), !msgID.isEmpty else {
                return .json(400, #"{"error":"expected ?msgId=<msgId>"}"#, isProviderResponse: false)
            }
            return .json(200, JSONWriter.object { w in
                w.member("msgId", msgID)
                w.member("accepted", state.acceptedCount(msgID: msgID))
            }.text, isProviderResponse: false)
        case ("GET", "/_sandbox/faults"):
            return .json(200, state.faultsJSON(now: EventLoop.now()), isProviderResponse: false)
        case ("POST", "/_sandbox/faults"):
            guard let body = JSONValue.parse(request.body), let update = SandboxFaultUpdate.parse(body),
                  let updated = state.apply(update, now: EventLoop.now()) else {
                return .json(400, JSONWriter.object { $0.member("error", SandboxFaults.usage) }.text, isProviderResponse: false)
            }
            refresh(updated)
            return .json(200, state.faultsJSON(now: EventLoop.now()), isProviderResponse: false)
        case ("GET", "/_sandbox/health"):
            return .text(200, "ok\n")
        case ("GET", "/_sandbox/tls"):
            // The connection's TLS client identity (docs/providers.md "APNs certificate authentication"): which verified certificate,
            // for which app, on which connection of this event loop.
            let certificate = request.clientCertificate.flatMap { trust.apnsCertificates[$0] }
            return .json(200, JSONWriter.object { w in
                w.member("connection", request.connectionID)
                w.member("clientCertificate", orNull: request.clientCertificate)
                w.member("app", orNull: certificate?.appID)
            }.text, isProviderResponse: false)
        default:
            return .text(404, "unknown sandbox endpoint\n")
        }
    }

    // MARK: shared helpers

    /// The injected fault for a request that would otherwise succeed, if any.
    enum InjectedFault { case throttled, internalError, unavailable }

    func drawFault() -> InjectedFault? {
        if faults.throttleShare > 0, random.nextUnit() < faults.throttleShare { return .throttled }
        if faults.errorShare > 0, random.nextUnit() < faults.errorShare {
            return random.next() & 1 == 0 ? .internalError : .unavailable
        }
        return nil
    }

    /// Whether `token` is dead: it starts with `dead`, or falls in the `--unregistered-share` by its hash
    /// (stable: the same token always gets the same answer while the share is unchanged).
    func isUnregistered(_ token: Substring) -> Bool {
        if token.hasPrefix("dead") { return true }
        guard faults.unregisteredShare > 0 else { return false }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in token.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        // FNV-1a leaves the top bits nearly unchanged by the last bytes: finish with a SplitMix64 mix.
        hash = SplitMix64.mix(hash)
        return Double(hash >> 11) / Double(1 << 53) < faults.unregisteredShare
    }

    func retryAfterHeader() -> (name: String, value: String) { (name: "retry-after", value: String(faults.retryAfterSeconds)) }

    /// A random version 4 UUID, upper-case like APNs' apns-id.
    func makeUUID() -> String {
        let high = random.next(), low = random.next()
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<8 { bytes[index] = UInt8(truncatingIfNeeded: high >> (8 * UInt64(index))) }
        for index in 0..<8 { bytes[8 + index] = UInt8(truncatingIfNeeded: low >> (8 * UInt64(index))) }
        bytes[6] = bytes[6] & 0x0F | 0x40
        bytes[8] = bytes[8] & 0x3F | 0x80
        let hex = Array("0123456789ABCDEF".utf8)
        var text = [UInt8]()
        text.reserveCapacity(36)
        for (index, byte) in bytes.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
            text.append(hex[Int(byte >> 4)])
            text.append(hex[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The wall clock, Unix ms (a recorded message's `receivedAtMs`).
    static func wallMilliseconds() -> Int {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int(now.tv_sec) * 1000 + Int(now.tv_nsec) / 1_000_000
    }

    /// Counts a provider answer and, for a 2xx, records the message as one JSON line
    /// `{"platform","msgId","receivedAtMs","path","headers":{…},"body":…}` (the authorization header is left out).
    /// `deliveries`: the tokens a Huawei request delivered to (``SandboxState/count(status:platform:msgID:line:deliveries:)``).
    func finish(_ response: SandboxResponse, platform: String, request: SandboxRequest, msgID: String?, bodyJSON: [UInt8]?,
                deliveries: [String]? = nil) -> SandboxResponse {
        var line: [UInt8]?
        if (200..<300).contains(response.status), state.isRecording {
            line = JSONWriter.object(capacity: 256 + request.path.utf8.count + (bodyJSON?.count ?? 0)) { w in
                w.member("platform", platform)
                w.member("msgId", orNull: msgID)
                w.member("receivedAtMs", Self.wallMilliseconds())
                w.member("path", request.path)
                w.member("headers") { h in
                    for (index, header) in request.headers.enumerated() where header.name != "authorization" {
                        // Repeated headers: the first one wins, as for `SandboxRequest.header(_:)`.
                        if request.headers[..<index].contains(where: { $0.name == header.name }) { continue }
                        h.member(header.name, header.value)
                    }
                }
                // How the request authenticated: the authorization scheme (never the
                // credentials), and the TLS client certificate's fingerprint.
                w.member("authorization", orNull: request.header("authorization").map { String($0.prefix { $0 != " " }) })
                w.member("clientCertificate", orNull: request.clientCertificate)
                w.key("body")
                if let bodyJSON { w.raw(bodyJSON) } else { w.null() }
            }.bytes
        }
        state.count(status: response.status, platform: platform, msgID: msgID, line: line, deliveries: deliveries)
        if (200..<300).contains(response.status) {
            isAccepted = true
            if let inbox = state.inbox {
                inbox.accept {
                    let headers = request.headers.map { header in
                        header.name == "authorization" ? (name: header.name, value: InboxRecord.redactAuthorization(header.value)) : header
                    }
                    return InboxRecord(platform: platform, method: request.method, path: request.path, headers: headers,
                                       body: bodyJSON ?? Array("null".utf8), encryptedBytes: platform == "web" ? request.bodyLength : nil)
                }
            }
            if state.reportsDelivered, let msgID, let tracking = state.tracking { tracking.report(.delivered, msgID: msgID) }
        }
        return response
    }

    /// `bytes` as JSON text for a record: the bytes themselves when they are valid JSON, else a JSON string.
    static func recordBody(_ bytes: [UInt8], parsed: JSONValue?) -> [UInt8] {
        if parsed != nil { return bytes }
        return JSONWriter.quoted(String(decoding: bytes, as: UTF8.self))
    }
}
