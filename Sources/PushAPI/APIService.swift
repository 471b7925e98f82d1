import Foundation
import PushCore
import PushEncoding
import PushHTTPServer
import PushRedis
import PushRuntime

/// The HTTP API's request handling (`pushworker api`, docs/reference/api.md): route → method →
/// bearer token (everything under `/v1/`) → path segments → body → the endpoint. Every failure
/// is a JSON ``APIError``; every request is counted in `pushworker_api_requests_total{route,code}`,
/// and every accepted campaign action and job submission is logged with the caller's token id
/// (an audit trail that never holds a token).
///
/// Handlers run on the listener's threads and block on Redis and Kafka: a thread serves its
/// connections one request at a time (`PUSHWORKER_API_THREADS`).
public final class APIService: Sendable {
    public struct Dependencies: Sendable {
        public var tokens: APITokens
        public var campaigns: any CampaignControlling
        public var idempotency: IdempotencyStore
        public var publisher: JobPublisher
        public var metrics: Metrics
        public var logger: Logger
        /// What `/readyz` answers (cheap: the process checks its dependencies in the background).
        public var readiness: @Sendable () -> Readiness
        /// Relative job dates (`"+4h"`) resolve against this.
        public var now: @Sendable () -> Date

        public init(tokens: APITokens, campaigns: any CampaignControlling, idempotency: IdempotencyStore, publisher: JobPublisher,
                    metrics: Metrics, logger: Logger, readiness: @escaping @Sendable () -> Readiness,
                    now: @escaping @Sendable () -> Date = { Date() }) {
            self.tokens = tokens; self.campaigns = campaigns; self.idempotency = idempotency; self.publisher = publisher
            self.metrics = metrics; self.logger = logger; self.readiness = readiness; self.now = now
        }
    }

    /// The request headers the handler reads (the listener passes only these).
    public static let headerNames = ["Authorization", "Content-Type", "Idempotency-Key"]

    private let dependencies: Dependencies

    public init(_ dependencies: Dependencies) { self.dependencies = dependencies }

    /// Handles one request (called on the listener's threads).
    public func handle(_ request: HTTPListener.Request) -> HTTPListener.Response {
        let response: HTTPListener.Response
        let label: String
        switch APIRouting.resolve(method: request.method, rawPath: request.path) {
        case .failure(let error):
            label = "unknown"
            response = error.response
        case .success(let route):
            label = route.label
            response = serve(route, request)
        }
        dependencies.metrics.increment("pushworker_api_requests_total", [("route", label), ("code", String(response.status))])
        return response
    }

    private func serve(_ route: APIRoute, _ request: HTTPListener.Request) -> HTTPListener.Response {
        var tokenID = ""
        if route.needsToken {
            switch dependencies.tokens.check(authorization: request.headers["authorization"]) {
            case .missing: return APIError.unauthorized(presented: false).response
            case .refused: return APIError.unauthorized(presented: true).response
            case .accepted(let id): tokenID = id
            }
        }
        switch route {
        case .healthz:
            return .init(status: 200, body: "ok\n")
        case .readyz:
            return OperationsEndpoints.readyz(dependencies.readiness())
        case .metrics:
            return .init(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: dependencies.metrics.render())
        case .openAPI:
            return .init(status: 200, contentType: APIResponses.jsonType, body: OpenAPIDocument.text)
        case .submitJobs:
            return submit(request, tokenID: tokenID)
        case .campaignStatus(let path):
            return campaignStatus(path).either
        case .campaignAction(let path, let verb):
            return act(verb, on: path, request, tokenID: tokenID).either
        }
    }

    /// Whether a `Content-Type` names JSON: absent, `application/json` or `application/…+json`
    /// (parameters such as `charset` ignored).
    static func isJSON(_ contentType: String?) -> Bool {
        guard let contentType else { return true }
        let type = (contentType.split(separator: ";", maxSplits: 1).first.map(String.init) ?? "").trimmingCharacters(in: .whitespaces).lowercased()
        return type == "application/json" || (type.hasPrefix("application/") && type.hasSuffix("+json"))
    }

    // MARK: - Jobs

    private func submit(_ request: HTTPListener.Request, tokenID: String) -> HTTPListener.Response {
        guard Self.isJSON(request.headers["content-type"]) else {
            return APIError.unsupportedMediaType(request.headers["content-type"] ?? "").response
        }
        guard let key = request.headers["idempotency-key"] else {
            return accept(request.body, tokenID: tokenID, key: nil).either
        }
        guard IdempotencyStore.isValidKey(key) else { return APIError.invalidIdempotencyKey().response }
        let store = dependencies.idempotency
        let fingerprint = IdempotencyStore.fingerprint(request.body)
        switch store.claim(tokenID: tokenID, key: key, fingerprint: fingerprint) {
        case .failure(let error):
            if error.code == "redis_unavailable" { dependencies.metrics.increment("pushworker_redis_errors_total") }
            return error.response
        case .success(.replay(let status, let body)):
            return APIResponses.json(status, body, headers: [("Idempotent-Replayed", "true")])
        case .success(.claimed):
            let response = accept(request.body, tokenID: tokenID, key: key).either
            do {
                if response.status == 202 {
                    try store.complete(tokenID: tokenID, key: key, fingerprint: fingerprint, status: response.status, body: response.body)
                } else {
                    try store.release(tokenID: tokenID, key: key)
                }
            } catch {
                dependencies.metrics.increment("pushworker_redis_errors_total")
                dependencies.logger.warning("idempotency key not updated: it frees itself when its pending marker expires",
                                            ["api.token": tokenID, "error": error.description])
            }
            return response
        }
    }

    /// Validates and produces; the 202 answer or the error.
    private func accept(_ body: [UInt8], tokenID: String, key: String?) -> Result<HTTPListener.Response, APIError> {
        let accepted: JobSubmission.Accepted
        switch JobSubmission.check(body, now: dependencies.now()) {
        case .success(let value): accepted = value
        case .failure(let error): return .failure(error)
        }
        let publisher = dependencies.publisher
        if case .failure(let error) = publisher.publish(jobIDs: accepted.jobIDs, records: accepted.records, lanes: accepted.lanes) {
            if error.code == "kafka_unavailable" { dependencies.metrics.increment("pushworker_kafka_errors_total") }
            dependencies.logger.warning("jobs not produced", ["api.token": tokenID, "error": error.message])
            return .failure(error)
        }
        dependencies.metrics.increment("pushworker_api_jobs_total", by: Double(accepted.jobIDs.count))
        var fields = ["api.token": tokenID, "jobs": "\(accepted.jobIDs.count)", "recipients": "\(accepted.recipients)",
                      "topic": publisher.topic(for: accepted.lanes.first ?? .bulk), "job_id": accepted.jobIDs[0]]
        if let key { fields["idempotency_key"] = key }
        dependencies.logger.info("jobs produced", fields)
        return .success(APIResponses.json(202, JobSubmission.acceptedJSON(accepted, topic: publisher.topic(for: accepted.lanes.first ?? .bulk))))
    }

    // MARK: - Campaigns

    private func campaignStatus(_ path: CampaignPath) -> Result<HTTPListener.Response, APIError> {
        do {
            let status = try dependencies.campaigns.status(appID: path.appID, campaignID: path.campaignID)
            return .success(APIResponses.json(200, CampaignJSON.status(status)))
        } catch {
            return .failure(failure(error, field: nil))
        }
    }

    private func act(_ verb: APIRoute.CampaignVerb, on path: CampaignPath, _ request: HTTPListener.Request,
                     tokenID: String) -> Result<HTTPListener.Response, APIError> {
        if !request.body.isEmpty, !Self.isJSON(request.headers["content-type"]) {
            return .failure(.unsupportedMediaType(request.headers["content-type"] ?? ""))
        }
        let action: CampaignAction
        switch CampaignJSON.action(verb, body: request.body) {
        case .success(let value): action = value
        case .failure(let error): return .failure(error)
        }
        let field: String? = switch verb {
        case .throttle: "$.perMinute"
        case .deadline: "$.sendBy"
        default: nil
        }
        do {
            let control = try dependencies.campaigns.apply(action, appID: path.appID, campaignID: path.campaignID)
            dependencies.logger.info("campaign \(verb.rawValue)", [
                "api.token": tokenID, "app_id": path.appID, "campaign_id": path.campaignID, "state": control.state.rawValue,
            ])
        } catch {
            return .failure(failure(error, field: field))
        }
        return campaignStatus(path)
    }

    /// A store's error as the API's: a cancelled campaign 409, a refused value 422, Redis away 503, else 500.
    private func failure(_ error: any Error, field: String?) -> APIError {
        if let refused = error as? CampaignActionError {
            switch refused {
            case .cancelled: return .campaignCancelled
            case .invalid(let why): return .invalidField(field ?? "$", why)
            }
        }
        if let redis = error as? RedisError {
            if redis.isConnectionError {
                dependencies.metrics.increment("pushworker_redis_errors_total")
                return .redisUnavailable(redis.message)
            }
            dependencies.logger.error("Redis refused a campaign command", ["error": redis.description])
            return .internalError("Redis refused the command")
        }
        dependencies.logger.error("campaign command failed", ["error": "\(error)"])
        return .internalError("unexpected failure")
    }
}

extension Result where Success == HTTPListener.Response, Failure == APIError {
    /// The response either way.
    var either: HTTPListener.Response {
        switch self {
        case .success(let response): response
        case .failure(let error): error.response
        }
    }
}
