import Foundation
import PushRuntime
import PushCore
import PushHTTP
import Synchronization
import PushProviders

/// Huawei Push Kit delivery (docs/providers.md): one request per batch of up to 1000 tokens sharing a
/// payload, one ``Deliverer/Attempt`` per token.
///
/// Re-sends happen only when Huawei's answer says nothing was sent: after 80200001/80200003 (the
/// access token is refreshed once and the same batch sent again, as Huawei's Go demo does, [H4])
/// and after 80300010 (too many tokens: the halves are sent). Any answer that may mean delivery
/// (80000000, 80100000, a 2xx without a code) is final; transient answers (502/503, 81000001,
/// transport errors) go back to the caller's retry path (the retry topic, `send`'s loop).
extension Deliverer {
    public typealias BatchCompletion = @Sendable ([Attempt]) -> Void

    /// Delivers one batch: `request` is the shared request of its recipients
    /// (``HMSPayloadBuilder``, no tokens in the body), `tokens` theirs, in order. `completion` gets
    /// exactly one attempt per token, in the same order, on the HTTP I/O thread (keep it cheap).
    public func deliverHMSBatch(_ request: ProviderRequest, tokens: [String], credentials: AppCredentials,
                                shouldWrite: @escaping WriteCheck = Deliverer.alwaysWrite, completion: @escaping BatchCompletion) {
        let count = tokens.count
        deliverHMSBatch(request, tokens: tokens, credentials: credentials, attempt: 1, shouldWrite: shouldWrite) { attempts in
            guard attempts.count != count else { return completion(attempts) }
            // Never happens by construction; a missing attempt would leave a recipient unfinished.
            let filler = Attempt(outcome: .retry(reason: "internal_error", retryAfterSeconds: nil, scope: .recipient),
                                 httpStatus: nil, latencyMs: 0, attempts: 1)
            completion(Array((attempts + Array(repeating: filler, count: max(0, count - attempts.count))).prefix(count)))
        }
    }

    private func deliverHMSBatch(_ request: ProviderRequest, tokens: [String], credentials: AppCredentials, attempt: Int,
                                 shouldWrite: @escaping WriteCheck, completion: @escaping BatchCompletion) {
        @Sendable func all(_ attempt: Attempt) -> [Attempt] { Array(repeating: attempt, count: tokens.count) }
        guard !tokens.isEmpty else { return completion([]) }
        guard let hms = credentials.hms else { return completion(all(Self.noCredentials(attempt))) }
        guard let body = HMSBatching.body(shared: request.body, tokens: tokens) else {
            return completion(all(Attempt(outcome: .rejected(reason: "invalid_request"), httpStatus: nil, latencyMs: 0, attempts: attempt - 1)))
        }
        hmsTokens.withToken(hms, now: clock()) { [self] token in
            let accessToken: String
            switch token {
            case .failure(let error):
                let outcome: ProviderOutcome = error.isRetryable
                    ? .retry(reason: "auth_unavailable", retryAfterSeconds: nil, scope: .provider)
                    : .rejected(reason: "auth_error")
                return completion(all(Attempt(outcome: outcome, httpStatus: nil, latencyMs: 0, attempts: attempt, detail: error.reason)))
            case .success(let value):
                accessToken = value
            }
            sendHMS(request, body: body, authorization: "Bearer " + accessToken, shouldWrite: shouldWrite) { [self] result, latencyMs in
                let response: HTTPResponse
                switch result {
                case .failure(let error) where error == .withheldByCaller:
                    return completion(all(Self.withheld(attempt)))
                case .failure(let error):
                    let transport = Self.transportFailure(error)
                    let outcome = ResponseClassifier.classify(transport: transport)
                    return completion(all(Attempt(outcome: outcome, httpStatus: nil, latencyMs: latencyMs, attempts: attempt,
                                                  detail: error.detail, certainty: Self.certainty(of: error), transport: transport)))
                case .success(let value):
                    response = value
                }
                let verdict = HMSResponseClassifier.classify(status: response.status, header: { response.header($0) },
                                                             body: response.body, tokens: tokens, nowUnix: Date().timeIntervalSince1970)
                switch verdict {
                case .split(let reason):
                    guard tokens.count > 1 else {
                        return completion([Attempt(outcome: .rejected(reason: reason), httpStatus: response.status, latencyMs: latencyMs,
                                                   attempts: attempt, certainty: .answered)])
                    }
                    logger.warning("Huawei refused the number of tokens in one request: sending the halves",
                                   ["app.id": credentials.appID, "hms.code": reason, "hms.tokens": "\(tokens.count)"])
                    split(request, tokens: tokens, credentials: credentials, attempt: attempt + 1, shouldWrite: shouldWrite,
                          completion: completion)
                case .outcomes(let outcomes):
                    if attempt == 1, case .authExpired = outcomes.first {
                        hmsTokens.invalidate(hms, token: accessToken)
                        return deliverHMSBatch(request, tokens: tokens, credentials: credentials, attempt: attempt + 1,
                                               shouldWrite: shouldWrite, completion: completion)
                    }
                    completion(outcomes.map {
                        Self.finalizeAuth(Attempt(outcome: $0, httpStatus: response.status, latencyMs: latencyMs, attempts: attempt,
                                                  certainty: .answered))
                    })
                }
            }
        }
    }

    /// Sends both halves of `tokens` and completes once with their attempts, in order.
    private func split(_ request: ProviderRequest, tokens: [String], credentials: AppCredentials, attempt: Int,
                       shouldWrite: @escaping WriteCheck, completion: @escaping BatchCompletion) {
        let middle = tokens.count / 2
        let halves = [Array(tokens[..<middle]), Array(tokens[middle...])]
        let results = Mutex<(parts: [[Attempt]?], missing: Int)>(([nil, nil], 2))
        for (position, half) in halves.enumerated() {
            deliverHMSBatch(request, tokens: half, credentials: credentials, attempt: attempt, shouldWrite: shouldWrite) { attempts in
                let joined: [Attempt]? = results.withLock { state in
                    state.parts[position] = attempts
                    state.missing -= 1
                    return state.missing == 0 ? state.parts.flatMap { $0 ?? [] } : nil
                }
                if let joined { completion(joined) }
            }
        }
    }

    /// One HTTP request through the origin's admission gate, with the provider metrics.
    private func sendHMS(_ request: ProviderRequest, body: [UInt8], authorization: String, shouldWrite: @escaping WriteCheck,
                         completion: @escaping @Sendable (Result<HTTPResponse, HTTPTransportError>, Double) -> Void) {
        var headers = request.headers.map { HTTPHeader(name: $0.key, value: $0.value) }
        headers.append(HTTPHeader(name: "authorization", value: authorization))
        let httpRequest = HTTPRequest(method: request.method, url: request.url, headers: headers, body: body, timeout: requestTimeout)
        let lane = gate?.lane(forURL: request.url)
        let providerMetrics = providerMetrics[ProviderMetrics.index(.huawei)]
        let start: @Sendable () -> Void = { [self] in
            guard shouldWrite() else {
                if let gate, let lane { gate.leave(lane) }
                return completion(.failure(.withheldByCaller), 0)
            }
            let started = DispatchTime.now().uptimeNanoseconds
            http.submit(httpRequest) { [self] result in
                let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
                switch result {
                case .success(let response): providerMetrics.record(seconds: seconds, status: response.status)
                case .failure: providerMetrics.record(seconds: seconds, status: nil)
                }
                if let gate, let lane { gate.leave(lane) }
                completion(result, seconds * 1000)
            }
        }
        if let gate, let lane { gate.enter(lane, start) } else { start() }
    }
}

extension HTTPTransportError {
    /// Stands for "the caller's write check said no" inside ``Deliverer/deliverHMSBatch(_:tokens:credentials:shouldWrite:completion:)``.
    static let withheldByCaller = HTTPTransportError.other(code: -1, message: "withheld by the caller")
}
