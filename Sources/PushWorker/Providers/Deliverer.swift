import Foundation
import PushCore
import PushCrypto
import PushHTTP
import Synchronization
import PushEncoding
import PushProviders

/// Sends one ``ProviderRequest`` with the app's credentials over the shared HTTP/2 client and
/// classifies the answer. Adds the provider's authorization, encrypts Web Push bodies (a fresh
/// ECDH key and salt per message, RFC 8291), and retries once after an expired-auth answer
/// (the refresh counts as an attempt, DESIGN §15 `send`).
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
    }

    public typealias Completion = @Sendable (Attempt) -> Void

    let http: HTTP2Client
    let metrics: Metrics
    let logger: Logger
    let requestTimeout: Duration
    private let apnsTokens: APNSTokenCache
    private let fcmTokens: FCMTokenCache
    /// Huawei Push Kit access tokens (DESIGN §17; `HMSDelivery.swift`).
    let hmsTokens: HMSTokenCache
    private let vapid: VAPIDCache
    let clock: @Sendable () -> Double
    private let webPushGuard: WebPushAddressGuard?
    let gate: OriginGate?
    /// Apps whose APNs certificate was refused (DESIGN §18).
    let certificateCircuit: APNSCertificateCircuit

    /// - Parameters:
    ///   - maxInFlightPerOrigin: caps the requests handed to libcurl per origin (nil: no limit);
    ///     use connections × streams. The excess waits in a Swift queue here rather than in
    ///     libcurl's pending list, which every `curl_multi_remove_handle` walks
    ///     (docs/performance.md).
    ///   - webPushGuard: refuses Web Push endpoints that resolve to private/loopback addresses
    ///     (DESIGN §7); nil skips the address check (the planner still matches names).
    ///   - clock: Unix time in seconds, for provider token ages (injectable for tests).
    public init(http: HTTP2Client, metrics: Metrics, logger: Logger, requestTimeout: Duration,
                maxInFlightPerOrigin: Int? = nil, webPushGuard: WebPushAddressGuard? = nil,
                certificateHoldSeconds: Double = 300,
                clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.http = http
        gate = maxInFlightPerOrigin.map { OriginGate(limit: max(1, $0)) }
        self.metrics = metrics
        self.logger = logger
        self.requestTimeout = requestTimeout
        self.clock = clock
        self.webPushGuard = webPushGuard
        certificateCircuit = APNSCertificateCircuit(holdSeconds: certificateHoldSeconds)
        apnsTokens = APNSTokenCache(metrics: metrics)
        fcmTokens = FCMTokenCache(http: http, metrics: metrics, logger: logger)
        hmsTokens = HMSTokenCache(http: http, metrics: metrics, logger: logger, clock: clock)
        vapid = VAPIDCache(metrics: metrics)
    }

    /// Delivers `request`; `completion` runs on the HTTP I/O thread and must be cheap.
    public func deliver(_ request: ProviderRequest, credentials: AppCredentials, completion: @escaping Completion) {
        deliver(request, credentials: credentials, attempt: 1, completion: completion)
    }

    private func deliver(_ request: ProviderRequest, credentials: AppCredentials, attempt: Int, completion: @escaping Completion) {
        let now = clock()
        switch request.platform {
        case .ios:
            if credentials.apns == nil, let certificate = credentials.apnsCertificate {
                return deliverWithCertificate(request, certificate: certificate, appID: credentials.appID, attempt: attempt,
                                              completion: completion)
            }
            guard let apns = credentials.apns else { return completion(Self.noCredentials(attempt)) }
            let jwt: String
            do { jwt = try apnsTokens.token(for: apns, now: now) } catch {
                logger.error("cannot sign the APNs provider token", ["app.id": credentials.appID, "error": "\(error)"])
                return completion(Attempt(outcome: .rejected(reason: "no_credentials"), httpStatus: nil, latencyMs: 0, attempts: attempt - 1))
            }
            send(request, authorization: "bearer " + jwt, body: request.body, extraHeaders: [], attempt: attempt) { [self] result in
                if case .authExpired = result.outcome, attempt == 1, apnsTokens.refresh(after: jwt, for: apns, now: clock()) {
                    deliver(request, credentials: credentials, attempt: attempt + 1, completion: completion)
                } else {
                    completion(Self.finalizeAuth(result))
                }
            }
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
                    send(request, authorization: "Bearer " + accessToken, body: request.body, extraHeaders: [], attempt: attempt) { [self] result in
                        if case .authExpired = result.outcome, attempt == 1 {
                            fcmTokens.invalidate(fcm, token: accessToken)
                            deliver(request, credentials: credentials, attempt: attempt + 1, completion: completion)
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
                return sendWebPush(request, subscription: subscription, web: web, appID: credentials.appID, now: now, attempt: attempt,
                                   completion: completion)
            }
            // The same parser as the allow-list's (EndpointURL), so the guard checks the host that was allowed.
            guard let host = EndpointURL(subscription.endpoint)?.host else {
                return completion(Attempt(outcome: .rejected(reason: "bad_subscription"), httpStatus: nil, latencyMs: 0, attempts: attempt - 1))
            }
            // At connect time too (DESIGN §15): the address libcurl actually connects to must be
            // public unless the host is listed explicitly, so a name that resolves differently
            // the second time (DNS rebinding) cannot reach a private address.
            let connectPolicy = webPushGuard.policy.isListedExplicitly(host: host) ? nil : Self.publicAddressesOnly
            webPushGuard.check(host: host) { [self] verdict in
                switch verdict {
                case .allowed:
                    sendWebPush(request, subscription: subscription, web: web, appID: credentials.appID, now: now, attempt: attempt,
                                connectPolicy: connectPolicy, completion: completion)
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
            deliverHMSBatch(request, tokens: [token], credentials: credentials) { attempts in
                completion(attempts.first ?? Self.noCredentials(attempt))
            }
        }
    }

    /// APNs certificate auth (DESIGN §18): the TLS client certificate instead of an
    /// `authorization` header; a refused certificate stops the app (``APNSCertificateCircuit``).
    private func deliverWithCertificate(_ request: ProviderRequest, certificate: AppCredentials.APNSCertificate, appID: String,
                                        attempt: Int, completion: @escaping Completion) {
        let fingerprint = certificate.identity.fingerprint
        if let reason = certificateCircuit.refusal(for: fingerprint, now: clock()) {
            metrics.increment("pushworker_apns_certificate_held_total")
            return completion(Attempt(outcome: .rejected(reason: reason), httpStatus: nil, latencyMs: 0, attempts: attempt - 1))
        }
        send(request, authorization: nil, body: request.body, extraHeaders: [], clientCertificate: certificate.clientCertificate,
             attempt: attempt) { [self] result in
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
                             now: Double, attempt: Int, connectPolicy: ConnectAddressPolicy? = nil, completion: @escaping Completion) {
        do {
            let audience = try Self.origin(of: subscription.endpoint)
            let authorization = try vapid.authorization(appID: appID, audience: audience, web: web, now: now)
            let body = try WebPushEncryption.encrypt(plaintext: request.body, userAgentPublicKey: subscription.p256dh,
                                                     authSecret: subscription.auth)
            send(request, authorization: authorization, body: body,
                 extraHeaders: [HTTPHeader(name: "content-encoding", value: "aes128gcm")], clientCertificate: nil, connectPolicy: connectPolicy, attempt: attempt) { result in
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
                      attempt: Int, completion: @escaping Completion) {
        var headers = request.headers.map { HTTPHeader(name: $0.key, value: $0.value) }
        if let authorization { headers.append(HTTPHeader(name: "authorization", value: authorization)) }
        headers.append(contentsOf: extraHeaders)
        let httpRequest = HTTPRequest(method: request.method, url: request.url, headers: headers, body: body, timeout: requestTimeout,
                                      connectPolicy: connectPolicy, clientCertificate: clientCertificate)
        let platform = request.platform
        guard let gate else { return submit(httpRequest, platform: platform, attempt: attempt, completion: completion) }
        let origin = clientCertificate.map { OriginGate.origin(of: request.url) + "#" + $0.id } ?? OriginGate.origin(of: request.url)
        gate.enter(origin) { [self] in
            submit(httpRequest, platform: platform, attempt: attempt) { attempt in
                gate.leave(origin)
                completion(attempt)
            }
        }
    }

    private func submit(_ httpRequest: HTTPRequest, platform: Platform, attempt: Int, completion: @escaping Completion) {
        let started = DispatchTime.now().uptimeNanoseconds
        http.submit(httpRequest) { [metrics, logger] result in
            let latency = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
            let provider = Self.providerLabel(platform)
            metrics.observe("pushworker_provider_request_seconds", [("provider", provider)], seconds: latency)
            let now = Date().timeIntervalSince1970
            switch result {
            case .success(let response):
                metrics.increment("pushworker_provider_responses_total", [("provider", provider), ("status", "\(response.status)")])
                let outcome = ResponseClassifier.classify(platform: platform, status: response.status,
                                                          header: { response.header($0) }, body: response.body, nowUnix: now)
                completion(Attempt(outcome: outcome, httpStatus: response.status, latencyMs: latency * 1000, attempts: attempt))
            case .failure(let error):
                if case .addressRefused(let detail) = error {
                    logger.warning("Web Push endpoint refused at connect time: private address", ["webpush.detail": detail])
                }
                metrics.increment("pushworker_provider_responses_total", [("provider", provider), ("status", "error")])
                // A handshake the server aborted over our client certificate is final, like a 403
                // BadCertificate, not a transient TLS failure.
                let outcome = httpRequest.clientCertificate != nil && APNSCertificateCircuit.isHandshakeRefusal(error)
                    ? .rejected(reason: APNSCertificateCircuit.handshakeRefusalReason)
                    : ResponseClassifier.classify(transport: Self.transportFailure(error))
                completion(Attempt(outcome: outcome, httpStatus: nil, latencyMs: latency * 1000, attempts: attempt, detail: error.detail))
            }
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

    package static func providerLabel(_ platform: Platform) -> String {
        switch platform {
        case .ios: "apns"
        case .android: "fcm"
        case .web: "webpush"
        case .huawei: "hms"
        }
    }

    static func transportFailure(_ error: HTTPTransportError) -> TransportFailure {
        switch error {
        case .timeout: .timeout
        case .connect: .connect
        case .tls: .tls
        case .protocolError: .protocolError
        case .shutdown: .shutdown
        case .invalidRequest: .invalidRequest
        case .addressRefused: .addressRefused
        case .other: .other
        }
    }

    /// `https://host[:port]` of a push endpoint: the VAPID `aud` (RFC 8292 §2).
    static func origin(of endpoint: String) throws(CredentialsErrorBox) -> String {
        guard let components = URLComponents(string: endpoint), let scheme = components.scheme, let host = components.host else {
            throw CredentialsErrorBox()
        }
        let hostPart = host.contains(":") ? "[\(host)]" : host
        return components.port.map { "\(scheme)://\(hostPart):\($0)" } ?? "\(scheme)://\(hostPart)"
    }

    struct CredentialsErrorBox: Error {}
}

/// Per-origin admission: at most `limit` requests of one origin are with libcurl at once; the
/// rest wait here, first in, first out, and start as earlier ones complete.
///
/// Starting a request can complete it synchronously (a client that is shutting down fails it at
/// once, and that completion calls ``leave(_:)``), so requests are started by one "drainer" per
/// origin in a loop, never by recursion: whoever finds room while nobody drains becomes the
/// drainer; the role is claimed and given up inside the same critical sections that inspect the
/// queue, so no start is ever lost.
final class OriginGate: Sendable {
    typealias Start = @Sendable () -> Void

    private struct Lane {
        var active = 0
        var draining = false
        var waiting: [Start?] = []
        var head = 0

        var hasWaiting: Bool { head < waiting.count }

        mutating func pop() -> Start? {
            guard head < waiting.count else { return nil }
            let next = waiting[head]
            waiting[head] = nil
            head += 1
            if head == waiting.count {
                waiting.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 1024 && head * 2 >= waiting.count {
                waiting.removeFirst(head)
                head = 0
            }
            return next
        }

        /// Claims a slot and the next start if there is room and one waits.
        mutating func takeIfRoom(limit: Int) -> Start? {
            guard active < limit, hasWaiting else { return nil }
            active += 1
            return pop()
        }
    }

    let limit: Int
    private let lanes = Mutex<[String: Lane]>([:])

    init(limit: Int) { self.limit = limit }

    /// Runs `start` when `origin` has room: now, on the caller's thread, or after a request ends.
    func enter(_ origin: String, _ start: @escaping Start) {
        let first: Start? = lanes.withLock { lanes in
            lanes[origin, default: Lane()].waiting.append(start)
            return Self.claim(&lanes[origin, default: Lane()], limit: limit)
        }
        drain(origin, first)
    }

    /// A request of `origin` ended: its slot goes to the next waiting one, if any.
    func leave(_ origin: String) {
        let first: Start? = lanes.withLock { lanes in
            lanes[origin, default: Lane()].active -= 1
            return Self.claim(&lanes[origin, default: Lane()], limit: limit)
        }
        drain(origin, first)
    }

    /// Becomes the drainer (returns the first start) unless someone else is draining.
    private static func claim(_ lane: inout Lane, limit: Int) -> Start? {
        guard !lane.draining, let next = lane.takeIfRoom(limit: limit) else { return nil }
        lane.draining = true
        return next
    }

    private func drain(_ origin: String, _ first: Start?) {
        var next = first
        while let start = next {
            start()
            next = lanes.withLock { lanes in
                if let more = lanes[origin, default: Lane()].takeIfRoom(limit: limit) { return more }
                lanes[origin, default: Lane()].draining = false
                return nil
            }
        }
    }

    /// `scheme://authority` of `url` (everything before the path), without parsing the rest.
    static func origin(of url: String) -> String {
        var slashes = 0
        var end = url.utf8.endIndex
        var index = url.utf8.startIndex
        while index < url.utf8.endIndex {
            if url.utf8[index] == 0x2F {
                slashes += 1
                if slashes == 3 { end = index; break }
            }
            index = url.utf8.index(after: index)
        }
        return String(url[..<end])
    }
}
