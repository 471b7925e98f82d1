import Foundation
import PushRuntime
import PushCore
import PushCrypto
import PushHTTP
import Synchronization
import PushEncoding
import PushProviders

/// Sends one ``ProviderRequest`` with the app's credentials over the shared HTTP/2 client and
/// classifies the answer. Adds the provider's authorization, encrypts Web Push bodies (a fresh
/// ECDH key and salt per message, RFC 8291), and retries once after an expired-auth answer
/// (the refresh counts as an attempt, docs/reference/cli.md).
public final class Deliverer: Sendable {
    /// One delivery, as far as this process took it.
    public struct Attempt: Sendable {
        public var outcome: ProviderOutcome
        public var httpStatus: Int?
        public var latencyMs: Double
        /// HTTP attempts made (2 after an auth refresh).
        public var attempts: Int
        /// What went wrong below HTTP, for people (libcurl's error text, the OAuth answer): no
        /// secret, never a label. `send` explains failures with it (``DeliveryDiagnosis``).
        public var detail: String? = nil
        /// Whether the request may have reached the provider: `answered` when it answered with a
        /// status; `unknown` when it was written and no answer came; `withheld` when the caller's
        /// `shouldWrite` said no; otherwise nothing reached it.
        public var certainty: AttemptCertainty = .notDelivered
        /// The transport failure, when no status came.
        public var transport: TransportFailure? = nil

        public init(outcome: ProviderOutcome, httpStatus: Int?, latencyMs: Double, attempts: Int, detail: String? = nil,
                    certainty: AttemptCertainty = .notDelivered, transport: TransportFailure? = nil) {
            self.outcome = outcome; self.httpStatus = httpStatus; self.latencyMs = latencyMs; self.attempts = attempts
            self.detail = detail; self.certainty = certainty; self.transport = transport
        }
    }

    /// Asked right before a request is handed to the connection (the worker's `ProviderTransport`).
    public typealias WriteCheck = @Sendable () -> Bool
    public static let alwaysWrite: WriteCheck = { true }

    public typealias Completion = @Sendable (Attempt) -> Void

    let http: HTTP2Client
    let metrics: Metrics
    let logger: Logger
    let requestTimeout: Duration
    private let apnsTokens: APNSTokenCache
    private let fcmTokens: FCMTokenCache
    /// Huawei Push Kit access tokens (docs/providers.md; `HMSDelivery.swift`).
    let hmsTokens: HMSTokenCache
    private let vapid: VAPIDCache
    /// CPU seconds of the calling thread spent in Web Push encryption, and the messages
    /// encrypted: `bench e2e` lists the encryption on its own line (issue 14).
    private let webPushEncryptionSeconds: CounterSeries
    private let webPushEncryptions: CounterSeries
    let clock: @Sendable () -> Double
    private let webPushGuard: WebPushAddressGuard?
    let gate: OriginGate?
    /// The provider request metrics, one per platform (``ProviderMetrics/index(_:)``).
    let providerMetrics: [ProviderMetrics]
    /// Apps whose APNs certificate was refused (docs/providers.md).
    let certificateCircuit: APNSCertificateCircuit
    /// The header blocks sent last (``SharedHeaderBlocks``).
    private let headerBlocks = Mutex(SharedHeaderBlocks())

    /// - Parameters:
    ///   - maxInFlightPerOrigin: caps the requests handed to libcurl per origin (nil: no limit);
    ///     use connections × streams. The excess waits in a Swift queue here rather than in
    ///     libcurl's pending list, which every `curl_multi_remove_handle` walks
    ///     (docs/performance.md).
    ///   - webPushGuard: refuses Web Push endpoints that resolve to private/loopback addresses
    ///     (docs/providers.md); nil skips the address check (the planner still matches names).
    ///   - clock: Unix time in seconds, for provider token ages (injectable for tests).
    public init(http: HTTP2Client, metrics: Metrics, logger: Logger, requestTimeout: Duration,
                maxInFlightPerOrigin: Int? = nil, webPushGuard: WebPushAddressGuard? = nil,
                certificateHoldSeconds: Double = 300,
                clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.http = http
        gate = maxInFlightPerOrigin.map { OriginGate(limit: max(1, $0)) }
        self.metrics = metrics
        providerMetrics = ProviderMetrics.all(metrics)
        self.logger = logger
        self.requestTimeout = requestTimeout
        self.clock = clock
        self.webPushGuard = webPushGuard
        certificateCircuit = APNSCertificateCircuit(holdSeconds: certificateHoldSeconds)
        apnsTokens = APNSTokenCache(metrics: metrics)
        fcmTokens = FCMTokenCache(http: http, metrics: metrics, logger: logger, clock: clock)
        hmsTokens = HMSTokenCache(http: http, metrics: metrics, logger: logger, clock: clock)
        vapid = VAPIDCache(metrics: metrics)
        webPushEncryptionSeconds = metrics.counterSeries("pushworker_webpush_encryption_cpu_seconds_total")
        webPushEncryptions = metrics.counterSeries("pushworker_webpush_encryptions_total")
    }


    /// Delivers `request`; `completion` runs on the HTTP I/O thread and must be cheap.
    public func deliver(_ request: ProviderRequest, credentials: AppCredentials, completion: @escaping Completion) {
        deliver(SendItem(index: 0, request: request), credentials: credentials, attempt: 1, shouldWrite: Self.alwaysWrite,
                completion: completion)
    }

    /// The worker's path (its `ProviderTransport`): the completions that may send `item` again
    /// (after an expired token) keep the item, one reference, instead of a copy of its request.
    public func deliver(_ item: SendItem, credentials: AppCredentials, shouldWrite: @escaping WriteCheck, completion: @escaping Completion) {
        deliver(item, credentials: credentials, attempt: 1, shouldWrite: shouldWrite, completion: completion)
    }

    private func deliver(_ item: SendItem, credentials: AppCredentials, attempt: Int, shouldWrite: @escaping WriteCheck,
                         completion: @escaping Completion) {
        let now = clock()
        let request = item.request
        switch request.platform {
        case .ios:
            if credentials.apns == nil, let certificate = credentials.apnsCertificate {
                return deliverWithCertificate(item, certificate: certificate, appID: credentials.appID, attempt: attempt,
                                              shouldWrite: shouldWrite, completion: completion)
            }
            guard let apns = credentials.apns else { return completion(Self.noCredentials(attempt)) }
            deliverWithToken(item, apns: apns, appID: credentials.appID, now: now, attempt: attempt, shouldWrite: shouldWrite,
                             completion: completion)
        case .android:
            guard let fcm = credentials.fcm else { return completion(Self.noCredentials(attempt)) }
            fcmTokens.withToken(fcm, now: now) { [self] token in
                switch token {
                case .failure(let error):
                    let outcome: ProviderOutcome = error.isRetryable
                        ? .retry(reason: "auth_unavailable", retryAfterSeconds: nil, scope: .provider)
                        : .rejected(reason: "auth_error")
                    completion(Attempt(outcome: outcome, httpStatus: nil, latencyMs: 0, attempts: attempt, detail: error.reason))
                case .success(let accessToken):
                    send(item.request, authorization: "Bearer " + accessToken, body: item.request.body, extraHeaders: [], attempt: attempt,
                         shouldWrite: shouldWrite) { [self] result in
                        if case .authExpired = result.outcome, attempt == 1 {
                            fcmTokens.invalidate(fcm, token: accessToken)
                            deliver(item, credentials: credentials, attempt: attempt + 1, shouldWrite: shouldWrite, completion: completion)
                        } else {
                            completion(Self.finalizeAuth(result))
                        }
                    }
                }
            }
        case .web:
            guard let web = credentials.webPush, let subscription = request.webPush else {
                return completion(Self.noCredentials(attempt))
            }
            guard let webPushGuard else {
                return sendWebPush(item.request, subscription: subscription, web: web, appID: credentials.appID, now: now, attempt: attempt,
                                   shouldWrite: shouldWrite, completion: completion)
            }
            // The same parser as the allow-list's (EndpointURL), so the guard checks the host that was allowed.
            guard let host = EndpointURL(subscription.endpoint)?.host else {
                return completion(Attempt(outcome: .rejected(reason: "bad_subscription"), httpStatus: nil, latencyMs: 0, attempts: attempt - 1))
            }
            // At connect time too (docs/security.md): the address libcurl actually connects to must be
            // public unless the host is listed explicitly, so a name that resolves differently
            // the second time (DNS rebinding) cannot reach a private address.
            let connectPolicy = webPushGuard.policy.isListedExplicitly(host: host) ? nil : Self.publicAddressesOnly
            webPushGuard.check(host: host) { [self] verdict in
                switch verdict {
                case .allowed:
                    sendWebPush(item.request, subscription: subscription, web: web, appID: credentials.appID, now: now, attempt: attempt,
                                connectPolicy: connectPolicy, shouldWrite: shouldWrite, completion: completion)
                case .refused(let address):
                    logger.warning("Web Push endpoint refused: private or loopback address", [
                        "webpush.host": host, "webpush.address": address,
                        "webpush.range": IPAddress(address)?.specialRange?.rawValue ?? "not an address"])
                    completion(Attempt(outcome: .rejected(reason: "endpoint_not_allowed"), httpStatus: nil, latencyMs: 0, attempts: attempt - 1))
                case .unresolvable:
                    completion(Attempt(outcome: .retry(reason: "dns_error", retryAfterSeconds: nil, scope: .recipient),
                                       httpStatus: nil, latencyMs: 0, attempts: attempt))
                }
            }
        case .huawei:
            // A batch of one: the worker and `send` batch Huawei recipients (`deliverHMSBatch`).
            guard let token = request.hmsToken else { return completion(Self.noCredentials(attempt)) }
            deliverHMSBatch(request, tokens: [token], credentials: credentials, shouldWrite: shouldWrite) { attempts in
                completion(attempts.first ?? Self.noCredentials(attempt))
            }
        }
    }

    /// APNs token auth: the provider JWT in `authorization`, refreshed once after an
    /// expired-token answer. Its completion keeps only what that retry needs (the request, the
    /// APNs key and the JWT), not the app's whole credentials.
    private func deliverWithToken(_ item: SendItem, apns: AppCredentials.APNS, appID: String, now: Double, attempt: Int,
                                  shouldWrite: @escaping WriteCheck, completion: @escaping Completion) {
        let token: APNSTokenCache.Token
        do { token = try apnsTokens.current(for: apns, now: now) } catch {
            logger.error("cannot sign the APNs provider token", ["app.id": appID, "error": "\(error)"])
            return completion(Attempt(outcome: .rejected(reason: "no_credentials"), httpStatus: nil, latencyMs: 0, attempts: attempt - 1))
        }
        let jwt = token.jwt
        send(item.request, authorization: token.authorization, body: item.request.body, extraHeaders: [], attempt: attempt,
             shouldWrite: shouldWrite) { [self] result in
            if case .authExpired = result.outcome, attempt == 1, apnsTokens.refresh(after: jwt, for: apns, now: clock()) {
                deliverWithToken(item, apns: apns, appID: appID, now: clock(), attempt: attempt + 1, shouldWrite: shouldWrite,
                                 completion: completion)
            } else {
                completion(Self.finalizeAuth(result))
            }
        }
    }

    /// APNs certificate auth (docs/providers.md): the TLS client certificate instead of an
    /// `authorization` header; a refused certificate stops the app (``APNSCertificateCircuit``).
    private func deliverWithCertificate(_ item: SendItem, certificate: AppCredentials.APNSCertificate, appID: String,
                                        attempt: Int, shouldWrite: @escaping WriteCheck, completion: @escaping Completion) {
        let fingerprint = certificate.identity.fingerprint
        if let reason = certificateCircuit.refusal(for: fingerprint, now: clock()) {
            metrics.increment("pushworker_apns_certificate_held_total")
            return completion(Attempt(outcome: .rejected(reason: reason), httpStatus: nil, latencyMs: 0, attempts: attempt - 1))
        }
        send(item.request, authorization: nil, body: item.request.body, extraHeaders: [], clientCertificate: certificate.clientCertificate,
             attempt: attempt, shouldWrite: shouldWrite) { [self] result in
            let refused = APNSResponseClassifier.isCertificateRefusal(result.outcome)
                || result.outcome == .rejected(reason: APNSCertificateCircuit.handshakeRefusalReason)
            if refused, let reason = result.outcome.reason {
                if certificateCircuit.trip(fingerprint, reason: reason, now: clock()) {
                    logger.error("APNs refused the app's TLS client certificate: its iOS recipients are rejected until the certificate is replaced",
                                 ["app.id": appID, "apns.reason": reason, "http.status": result.httpStatus.map { "\($0)" } ?? "tls",
                                  "certificate.subject": certificate.identity.subject,
                                  "certificate.fingerprint": String(fingerprint.prefix(16)),
                                  "certificate.not_after": RFC3339Timestamp.format(Date(timeIntervalSince1970: certificate.identity.notAfter)),
                                  "apns.environment": certificate.environment])
                }
            } else if case .sent = result.outcome {
                certificateCircuit.reset(fingerprint)
            }
            completion(result)
        }
    }

    /// The connect-time check of Web Push requests: only addresses outside every special range
    /// (``IPAddress/specialRange``, the classifier the guard uses). A refused address ends the
    /// transfer with `addressRefused` ⇒ `rejected`/`endpoint_not_allowed`, nothing sent.
    static let publicAddressesOnly = ConnectAddressPolicy { bytes in IPAddress(bytes: bytes).map { !$0.isPrivate } ?? false }

    private func sendWebPush(_ request: ProviderRequest, subscription: WebPushSubscription, web: AppCredentials.WebPush, appID: String,
                             now: Double, attempt: Int, connectPolicy: ConnectAddressPolicy? = nil, shouldWrite: @escaping WriteCheck,
                             completion: @escaping Completion) {
        do {
            let audience = try Self.origin(of: subscription.endpoint)
            let authorization = try vapid.authorization(appID: appID, audience: audience, web: web, now: now)
            let cpuBefore = ThreadCPUClock.seconds()
            let body = try WebPushEncryption.encrypt(plaintext: request.body, userAgentPublicKey: subscription.p256dh,
                                                     authSecret: subscription.auth)
            webPushEncryptionSeconds.increment(by: max(0, ThreadCPUClock.seconds() - cpuBefore))
            webPushEncryptions.increment()
            send(request, authorization: authorization, body: body,
                 extraHeaders: [HTTPHeader(name: "content-encoding", value: "aes128gcm")], clientCertificate: nil, connectPolicy: connectPolicy,
                 attempt: attempt, shouldWrite: shouldWrite) { result in
                completion(Self.finalizeAuth(result))
            }
        } catch {
            completion(Attempt(outcome: .rejected(reason: "bad_subscription"), httpStatus: nil, latencyMs: 0, attempts: attempt - 1))
        }
    }

    /// `authorization` nil: none (certificate auth); `clientCertificate`: the TLS identity to
    /// connect with (its own connections, so its own admission lane too); `connectPolicy`: the
    /// addresses libcurl may connect to (Web Push).
    private func send(_ request: ProviderRequest, authorization: String?, body: [UInt8], extraHeaders: [HTTPHeader],
                      clientCertificate: ClientCertificate? = nil, connectPolicy: ConnectAddressPolicy? = nil,
                      attempt: Int, shouldWrite: @escaping WriteCheck, completion: @escaping Completion) {
        let platform = request.platform
        // Checked and laid out for libcurl here, on the calling (consumer) thread, before the
        // gate: a request that waits in the gate is started on the I/O thread. The headers
        // (the job's, the provider token, the extra ones) once per job and token: only the
        // URL, the body and the recipient's own headers (its derived replace key, docs/payloads.md "Replace key":
        // the request's `headers`, beside the block) are the recipient's.
        let prepared: PreparedHTTPRequest
        do {
            let block = try headerBlocks.withLock { blocks throws(HTTPTransportError) in
                try blocks.block(platform: platform, headers: request.headers, authorization: authorization, extra: extraHeaders)
            }
            let httpRequest = HTTPRequest(method: request.method, url: request.url,
                                          headers: request.recipientHeaders.map { HTTPHeader(name: $0.key, value: $0.value) },
                                          sharedHeaders: block, body: body,
                                          timeout: requestTimeout, connectPolicy: connectPolicy, clientCertificate: clientCertificate,
                                          responseHeaders: ResponseClassifier.headerNames(platform: platform))
            prepared = try http.prepare(httpRequest)
        } catch {
            return answer(.failure(error), platform: platform, attempt: attempt, started: DispatchTime.now().uptimeNanoseconds,
                          hasClientCertificate: clientCertificate != nil, completion: completion)
        }
        guard let gate else {
            return submit(prepared, platform: platform, attempt: attempt, lane: nil, shouldWrite: shouldWrite, completion: completion)
        }
        let lane = gate.lane(forURL: request.url, identity: clientCertificate?.id)
        gate.enter(lane) { [self] in
            submit(prepared, platform: platform, attempt: attempt, lane: lane, shouldWrite: shouldWrite, completion: completion)
        }
    }

    /// The completion of a request the caller's `shouldWrite` withheld: nothing was written.
    static func withheld(_ attempt: Int) -> Attempt {
        Attempt(outcome: .retry(reason: "withheld", retryAfterSeconds: nil, scope: .recipient), httpStatus: nil, latencyMs: 0,
                attempts: attempt - 1, certainty: .withheld)
    }

    /// `lane`: the gate's lane the request holds a slot of, left as soon as the answer is in.
    /// One closure per request on the I/O thread, holding neither the request nor its bytes.
    private func submit(_ prepared: PreparedHTTPRequest, platform: Platform, attempt: Int, lane: OriginGate.Lane?,
                        shouldWrite: WriteCheck, completion: @escaping Completion) {
        guard shouldWrite() else {
            if let lane { gate?.leave(lane) }
            return completion(Self.withheld(attempt))
        }
        let started = DispatchTime.now().uptimeNanoseconds
        let hasClientCertificate = prepared.hasClientCertificate
        http.submit(prepared) { [self] result in
            if let lane { gate?.leave(lane) }
            answer(result, platform: platform, attempt: attempt, started: started, hasClientCertificate: hasClientCertificate,
                   completion: completion)
        }
    }

    /// Classifies the HTTP answer (or transport failure) of a request submitted at `started`
    /// (`DispatchTime` ns), records the provider metrics, and calls `completion`.
    private func answer(_ result: Result<HTTPResponse, HTTPTransportError>, platform: Platform, attempt: Int, started: UInt64,
                        hasClientCertificate: Bool, completion: Completion) {
        let latency = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        let providerMetrics = providerMetrics[ProviderMetrics.index(platform)]
        switch result {
        case .success(let response):
            providerMetrics.record(seconds: latency, status: response.status)
            let outcome = ResponseClassifier.classify(platform: platform, status: response.status,
                                                      header: { response.header($0) }, body: response.body,
                                                      nowUnix: Date().timeIntervalSince1970)
            completion(Attempt(outcome: outcome, httpStatus: response.status, latencyMs: latency * 1000, attempts: attempt,
                               certainty: .answered))
        case .failure(let error):
            if case .addressRefused(let detail) = error {
                logger.warning("Web Push endpoint refused at connect time: private address", ["webpush.detail": detail])
            }
            providerMetrics.record(seconds: latency, status: nil)
            // A handshake the server aborted over our client certificate is final, like a 403
            // BadCertificate, not a transient TLS failure.
            let transport = Self.transportFailure(error)
            let outcome = hasClientCertificate && APNSCertificateCircuit.isHandshakeRefusal(error)
                ? .rejected(reason: APNSCertificateCircuit.handshakeRefusalReason)
                : ResponseClassifier.classify(transport: transport)
            completion(Attempt(outcome: outcome, httpStatus: nil, latencyMs: latency * 1000, attempts: attempt, detail: error.detail,
                               certainty: Self.certainty(of: error), transport: transport))
        }
    }

    /// An auth answer that survived the one refresh is a credentials problem: loud, and final.
    static func finalizeAuth(_ attempt: Attempt) -> Attempt {
        guard case .authExpired(let reason) = attempt.outcome else { return attempt }
        var final = attempt
        final.outcome = .retry(reason: reason, retryAfterSeconds: nil, scope: .provider)
        return final
    }

    static func noCredentials(_ attempt: Int) -> Attempt {
        Attempt(outcome: .rejected(reason: "no_credentials"), httpStatus: nil, latencyMs: 0, attempts: attempt - 1)
    }

    /// The `provider` label of `platform` (``MetricLabels/provider(_:)``).
    package static func providerLabel(_ platform: Platform) -> String { MetricLabels.provider(platform) }

    package static func transportFailure(_ error: HTTPTransportError) -> TransportFailure {
        switch error {
        case .timeout: .timeout
        case .connect: .connect
        case .tls: .tls
        case .protocolError: .protocolError
        case .shutdown: .shutdown
        case .invalidRequest: .invalidRequest
        case .addressRefused: .addressRefused
        case .other: .other
        case .unanswered: .unanswered
        }
    }

    /// Whether a transport failure may have reached the provider (docs/http-client.md "When the
    /// server does not answer").
    static func certainty(of error: HTTPTransportError) -> AttemptCertainty {
        error.certainty == .unknown ? .unknown : .notDelivered
    }

    /// `https://host[:port]` of a push endpoint: the VAPID `aud` (RFC 8292 §2: the origin of the
    /// push resource, RFC 6454, host in lower case), read by the one endpoint parser the planner
    /// and the address guard use (``EndpointURL``, docs/security.md) rather than Foundation's
    /// `URLComponents` (a full RFC 3986 parse and its strings for every Web Push recipient, on the
    /// consumer thread); an endpoint it refuses has no audience (`bad_subscription`).
    static func origin(of endpoint: String) throws(CredentialsErrorBox) -> String {
        guard let url = EndpointURL(endpoint) else { throw CredentialsErrorBox() }
        return url.origin
    }

    struct CredentialsErrorBox: Error {}
}

/// What the worker's `ProviderTransport` port needs beside `deliver` and `deliverHMSBatch`
/// (the conformance is the worker's, in its `Ports.swift`).
extension Deliverer {
    public func holdWakeUps() { http.holdWakeUps() }
    public func releaseWakeUps() { http.releaseWakeUps() }
    public func withdrawQueued() { gate?.runWaitingNow() }
    public func shutdown(drainTimeout: Duration) { http.shutdown(drainTimeout: drainTimeout) }
}

/// Per-origin admission: at most `limit` requests of one origin are with libcurl at once; the
/// rest wait here, first in, first out, and start as earlier ones complete.
///
/// Starting a request can complete it synchronously (a client that is shutting down fails it at
/// once, and that completion calls ``leave(_:)``), so requests are started by one "drainer" per
/// origin in a loop, never by recursion: whoever finds room while nobody drains becomes the
/// drainer; the role is claimed and given up inside the same critical sections that inspect the
/// queue, so no start is ever lost.
///
/// Each origin is a ``Lane`` with its own lock, looked up once per request (``lane(forURL:identity:)``:
/// the lane of the previous request is reused without building the origin string when the URL
/// has the same origin), so entering and leaving cost no dictionary look-up.
final class OriginGate: Sendable {
    typealias Start = @Sendable () -> Void

    /// One origin's admission state.
    final class Lane: Sendable {
        let origin: String
        /// `origin` is `scheme://authority` (two slashes): a URL with it as prefix, followed by
        /// `/` or nothing, has it as its origin (``OriginGate/origin(of:)``).
        fileprivate let isPrefixMatchable: Bool
        fileprivate let state = Mutex(LaneState())

        fileprivate init(origin: String, identity: String?) {
            self.origin = identity.map { origin + "#" + $0 } ?? origin
            isPrefixMatchable = identity == nil && origin.utf8.reduce(0) { $0 + ($1 == 0x2F ? 1 : 0) } == 2
        }
    }

    fileprivate struct LaneState {
        var active = 0
        var draining = false
        var waiting = FIFOQueue<Start>()

        var hasWaiting: Bool { !waiting.isEmpty }

        mutating func pop() -> Start? { waiting.popFirst() }

        /// Claims a slot and the next start if there is room and one waits.
        mutating func takeIfRoom(limit: Int) -> Start? {
            guard active < limit, hasWaiting else { return nil }
            active += 1
            return pop()
        }
    }

    private struct Registry {
        var lanes: [String: Lane] = [:]
        /// The lane found last for a URL without a client identity.
        var last: Lane?
    }

    let limit: Int
    private let registry = Mutex(Registry())

    init(limit: Int) { self.limit = limit }

    /// The lane of `url`'s origin; with a client certificate `identity`, a lane of its own
    /// (its requests get their own connections).
    func lane(forURL url: String, identity: String? = nil) -> Lane {
        registry.withLock { registry in
            if identity == nil, let last = registry.last, Self.hasOrigin(url, last) { return last }
            let lane = Self.lane(&registry, origin: Self.origin(of: url), identity: identity)
            if identity == nil { registry.last = lane }
            return lane
        }
    }

    /// The lane of `origin` (`scheme://authority`).
    func lane(_ origin: String) -> Lane {
        registry.withLock { Self.lane(&$0, origin: origin, identity: nil) }
    }

    private static func lane(_ registry: inout Registry, origin: String, identity: String?) -> Lane {
        let key = identity.map { origin + "#" + $0 } ?? origin
        if let lane = registry.lanes[key] { return lane }
        let lane = Lane(origin: origin, identity: identity)
        registry.lanes[key] = lane
        return lane
    }

    /// Runs every waiting start now, whatever the room (each is counted as admitted and leaves as
    /// usual): how a drain withholds the requests that wait here (their write checks say no).
    func runWaitingNow() {
        let lanes = registry.withLock { Array($0.lanes.values) }
        for lane in lanes {
            let waiting: [Start] = lane.state.withLock { state in
                var all: [Start] = []
                while let next = state.pop() { all.append(next); state.active += 1 }
                return all
            }
            for start in waiting { start() }
        }
    }

    /// Runs `start` when `lane` has room: now, on the caller's thread, or after a request ends.
    func enter(_ lane: Lane, _ start: @escaping Start) {
        let first: Start? = lane.state.withLock { state in
            state.waiting.append(start)
            return Self.claim(&state, limit: limit)
        }
        drain(lane, first)
    }

    /// A request of `lane` ended: its slot goes to the next waiting one, if any.
    func leave(_ lane: Lane) {
        let first: Start? = lane.state.withLock { state in
            state.active -= 1
            return Self.claim(&state, limit: limit)
        }
        drain(lane, first)
    }

    /// Becomes the drainer (returns the first start) unless someone else is draining.
    private static func claim(_ lane: inout LaneState, limit: Int) -> Start? {
        guard !lane.draining, let next = lane.takeIfRoom(limit: limit) else { return nil }
        lane.draining = true
        return next
    }

    private func drain(_ lane: Lane, _ first: Start?) {
        var next = first
        while let start = next {
            start()
            next = lane.state.withLock { state in
                if let more = state.takeIfRoom(limit: limit) { return more }
                state.draining = false
                return nil
            }
        }
    }

    /// Whether `url`'s origin is `lane`'s, without building it: `url` starts with the origin
    /// and ends there or goes on with `/`.
    static func hasOrigin(_ url: String, _ lane: Lane) -> Bool {
        guard lane.isPrefixMatchable else { return false }
        let origin = lane.origin.utf8.span, bytes = url.utf8.span
        let count = origin.count
        guard bytes.count >= count else { return false }
        for index in 0..<count where bytes[index] != origin[index] { return false }
        return bytes.count == count || bytes[count] == 0x2F
    }

    /// `scheme://authority` of `url` (everything before the path), without parsing the rest.
    static func origin(of url: String) -> String {
        let bytes = url.utf8.span
        var slashes = 0
        for index in bytes.indices where bytes[index] == 0x2F {
            slashes += 1
            if slashes == 3 { return String(decoding: url.utf8.prefix(index), as: UTF8.self) }
        }
        return url
    }
}

/// The ``HTTPHeaderBlock``s the `Deliverer` sent last, a few per platform: a job's requests
/// carry the same header array (its payload template's) and provider token, so the block is
/// found by identity (an array or string compared with itself is equal at once) and each
/// recipient's request copies and checks only its URL and body. Web Push tokens differ by
/// push service (the VAPID audience), hence a few entries, replaced in turn.
struct SharedHeaderBlocks {
    struct Entry {
        let headers: [KeyValue]
        let authorization: String?
        let extra: [HTTPHeader]
        let block: HTTPHeaderBlock
    }
    static let entriesPerPlatform = 4
    /// One list per platform, in ``ProviderMetrics/index(_:)`` order, and the entry each
    /// replaces next once full.
    private var entries: [[Entry]] = Array(repeating: [], count: Platform.allCases.count)
    private var next: [Int] = Array(repeating: 0, count: Platform.allCases.count)

    /// The block for these fields (`headers`, then `authorization`, then `extra`); a header
    /// that cannot be sent throws `.invalidRequest` and nothing is kept.
    mutating func block(platform: Platform, headers: [KeyValue], authorization: String?, extra: [HTTPHeader])
        throws(HTTPTransportError) -> HTTPHeaderBlock {
        let slot = ProviderMetrics.index(platform)
        for entry in entries[slot] where entry.headers == headers && entry.authorization == authorization && entry.extra == extra {
            return entry.block
        }
        var fields: [HTTPHeader] = []
        fields.reserveCapacity(headers.count + 1 + extra.count)
        for header in headers { fields.append(HTTPHeader(name: header.key, value: header.value)) }
        if let authorization { fields.append(HTTPHeader(name: "authorization", value: authorization)) }
        fields.append(contentsOf: extra)
        let block = try HTTPHeaderBlock(fields)
        let entry = Entry(headers: headers, authorization: authorization, extra: extra, block: block)
        if entries[slot].count < Self.entriesPerPlatform {
            entries[slot].append(entry)
        } else {
            entries[slot][next[slot]] = entry
            next[slot] = (next[slot] + 1) % Self.entriesPerPlatform
        }
        return block
    }
}
