import Foundation
import PushCore
import PushCrypto
import PushHTTP

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
    }

    public typealias Completion = @Sendable (Attempt) -> Void

    let http: HTTP2Client
    private let metrics: Metrics
    private let logger: Logger
    private let requestTimeout: Duration
    private let apnsTokens: APNSTokenCache
    private let fcmTokens: FCMTokenCache
    private let vapid: VAPIDCache
    private let clock: @Sendable () -> Double
    private let webPushGuard: WebPushAddressGuard?

    /// - Parameters:
    ///   - webPushGuard: refuses Web Push endpoints that resolve to private/loopback addresses
    ///     (DESIGN §7); nil skips the address check (the planner still matches names).
    ///   - clock: Unix time in seconds, for provider token ages (injectable for tests).
    public init(http: HTTP2Client, metrics: Metrics, logger: Logger, requestTimeout: Duration,
                webPushGuard: WebPushAddressGuard? = nil,
                clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.http = http
        self.metrics = metrics
        self.logger = logger
        self.requestTimeout = requestTimeout
        self.clock = clock
        self.webPushGuard = webPushGuard
        apnsTokens = APNSTokenCache(metrics: metrics)
        fcmTokens = FCMTokenCache(http: http, metrics: metrics, logger: logger)
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
                    completion(Attempt(outcome: outcome, httpStatus: nil, latencyMs: 0, attempts: attempt))
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
            guard let host = URLComponents(string: subscription.endpoint)?.host else {
                return completion(Attempt(outcome: .rejected(reason: "bad_subscription"), httpStatus: nil, latencyMs: 0, attempts: attempt - 1))
            }
            webPushGuard.check(host: host) { [self] verdict in
                switch verdict {
                case .allowed:
                    sendWebPush(request, subscription: subscription, web: web, appID: credentials.appID, now: now, attempt: attempt,
                                completion: completion)
                case .refused(let address):
                    logger.warning("Web Push endpoint refused: private or loopback address", ["webpush.host": host, "webpush.address": address])
                    completion(Attempt(outcome: .rejected(reason: "endpoint_not_allowed"), httpStatus: nil, latencyMs: 0, attempts: attempt - 1))
                case .unresolvable:
                    completion(Attempt(outcome: .retry(reason: "dns_error", retryAfterSeconds: nil, scope: .recipient),
                                       httpStatus: nil, latencyMs: 0, attempts: attempt))
                }
            }
        }
    }

    private func sendWebPush(_ request: ProviderRequest, subscription: WebPushSubscription, web: AppCredentials.WebPush, appID: String,
                             now: Double, attempt: Int, completion: @escaping Completion) {
        do {
            let audience = try Self.origin(of: subscription.endpoint)
            let authorization = try vapid.authorization(appID: appID, audience: audience, web: web, now: now)
            let body = try WebPushEncryption.encrypt(plaintext: request.body, userAgentPublicKey: subscription.p256dh,
                                                     authSecret: subscription.auth)
            send(request, authorization: authorization, body: body,
                 extraHeaders: [HTTPHeader(name: "content-encoding", value: "aes128gcm")], attempt: attempt) { result in
                completion(Self.finalizeAuth(result))
            }
        } catch {
            completion(Attempt(outcome: .rejected(reason: "bad_subscription"), httpStatus: nil, latencyMs: 0, attempts: attempt - 1))
        }
    }

    private func send(_ request: ProviderRequest, authorization: String, body: [UInt8], extraHeaders: [HTTPHeader],
                      attempt: Int, completion: @escaping Completion) {
        var headers = request.headers.map { HTTPHeader(name: $0.key, value: $0.value) }
        headers.append(HTTPHeader(name: "authorization", value: authorization))
        headers.append(contentsOf: extraHeaders)
        let httpRequest = HTTPRequest(method: request.method, url: request.url, headers: headers, body: body, timeout: requestTimeout)
        let platform = request.platform
        let started = DispatchTime.now().uptimeNanoseconds
        http.submit(httpRequest) { [metrics] result in
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
                metrics.increment("pushworker_provider_responses_total", [("provider", provider), ("status", "error")])
                let outcome = ResponseClassifier.classify(transport: Self.transportFailure(error))
                completion(Attempt(outcome: outcome, httpStatus: nil, latencyMs: latency * 1000, attempts: attempt))
            }
        }
    }

    /// An auth answer that survived the one refresh is a credentials problem: loud, and final.
    private static func finalizeAuth(_ attempt: Attempt) -> Attempt {
        guard case .authExpired(let reason) = attempt.outcome else { return attempt }
        var final = attempt
        final.outcome = .retry(reason: reason, retryAfterSeconds: nil, scope: .provider)
        return final
    }

    private static func noCredentials(_ attempt: Int) -> Attempt {
        Attempt(outcome: .rejected(reason: "no_credentials"), httpStatus: nil, latencyMs: 0, attempts: attempt - 1)
    }

    static func providerLabel(_ platform: Platform) -> String {
        switch platform {
        case .ios: "apns"
        case .android: "fcm"
        case .web: "webpush"
        }
    }

    static func transportFailure(_ error: HTTPTransportError) -> TransportFailure {
        switch error {
        case .timeout: .timeout
        case .connect: .connect
        case .tls: .tls
        case .protocolError: .protocolError
        case .shutdown: .shutdown
        case .invalidRequest, .other: .other
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
