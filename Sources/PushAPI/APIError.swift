import PushEncoding

/// Every failure of the HTTP API, answered as JSON (docs/reference/api.md "Errors"):
///
///     {"error": {"code": "invalid_job", "message": "…", "field": "$.recipients[3].token",
///                "problems": [{"field": "$.recipients[3].token", "message": "…"}]}}
///
/// `code` is a fixed word per kind of failure (clients branch on it), `message` a sentence for
/// people, `field` where the first problem is (a JSON path into the body, or `app`/`campaign`
/// for a path segment, or a header name) and `problems` every problem of an invalid job.
public struct APIError: Error, Sendable {
    /// One problem of an invalid body: where (a JSON path) and what.
    public struct Problem: Sendable, Equatable {
        public var field: String
        public var message: String
        public init(field: String, message: String) { self.field = field; self.message = message }
    }

    public var status: Int
    public var code: String
    public var message: String
    public var field: String?
    public var problems: [Problem]
    /// Extra response headers (`Allow`, `WWW-Authenticate`, `Retry-After`).
    public var headers: [(String, String)]

    public init(status: Int, code: String, message: String, field: String? = nil, problems: [Problem] = [],
                headers: [(String, String)] = []) {
        self.status = status; self.code = code; self.message = message; self.field = field
        self.problems = problems; self.headers = headers
    }

    /// The JSON body.
    public var json: [UInt8] {
        JSONWriter.object(capacity: 256) { w in
            w.member("error", object: { e in
                e.member("code", code)
                e.member("message", message)
                e.member("field", ifPresent: field)
                guard !problems.isEmpty else { return }
                e.key("problems")
                e.beginArray()
                for problem in problems {
                    e.beginObject()
                    e.member("field", problem.field)
                    e.member("message", problem.message)
                    e.endObject()
                }
                e.endArray()
            })
        }.bytes + [0x0A]
    }

    // MARK: - The failures, one factory each

    public static func notFound(_ path: String) -> APIError {
        APIError(status: 404, code: "not_found", message: "no such endpoint: \(path.prefix(200)) (see GET /openapi.json)")
    }

    /// `allow`: the methods the path takes, for the `Allow` header.
    public static func methodNotAllowed(_ method: String, allow: String) -> APIError {
        APIError(status: 405, code: "method_not_allowed", message: "\(method.prefix(20)) is not allowed here; allowed: \(allow)",
                 headers: [("Allow", allow)])
    }

    /// 401 with `WWW-Authenticate: Bearer` (RFC 6750 §3: `error="invalid_token"` when a token
    /// was presented and refused).
    public static func unauthorized(presented: Bool) -> APIError {
        let challenge = presented ? #"Bearer realm="pushworker", error="invalid_token""# : #"Bearer realm="pushworker""#
        return APIError(status: 401, code: "unauthorized",
                        message: presented ? "the bearer token is not valid" : "an Authorization: Bearer <token> header is required",
                        headers: [("WWW-Authenticate", challenge)])
    }

    public static func bodyTooLarge(maximum: Int) -> APIError {
        APIError(status: 413, code: "body_too_large", message: "the request body is larger than \(maximum) bytes (PUSHWORKER_API_MAX_BODY)")
    }

    public static func unsupportedMediaType(_ type: String) -> APIError {
        APIError(status: 415, code: "unsupported_media_type", message: "the body must be application/json, got \(type.prefix(100))",
                 field: "Content-Type")
    }

    public static func invalidJSON(_ detail: String) -> APIError {
        APIError(status: 400, code: "invalid_json", message: "the body is not valid JSON: \(detail)")
    }

    public static func invalidPath(_ field: String, _ why: String) -> APIError {
        APIError(status: 400, code: "invalid_path", message: "\(field): \(why)", field: field)
    }

    public static func invalidField(_ field: String, _ why: String) -> APIError {
        APIError(status: 422, code: "invalid_field", message: "\(field): \(why)", field: field)
    }

    public static func invalidJobs(_ problems: [Problem], omitted: Int, invalidJobs: Int, of jobs: Int) -> APIError {
        let count = problems.count + omitted
        var message = "\(invalidJobs) of \(jobs) job\(jobs == 1 ? "" : "s") invalid, \(count) problem\(count == 1 ? "" : "s"); nothing was produced"
        if omitted > 0 { message += " (\(omitted) more problems not listed)" }
        return APIError(status: 422, code: "invalid_job", message: message, field: problems.first?.field, problems: problems)
    }

    public static func jobTooLarge(field: String, detail: String) -> APIError {
        APIError(status: 422, code: "job_too_large", message: "\(field): larger than the jobs topic accepts (\(detail)); split its recipients",
                 field: field)
    }

    public static let campaignCancelled = APIError(
        status: 409, code: "campaign_cancelled",
        message: "the campaign is cancelled: a cancel is final while its control lives (7 days after the last change); only cancel is accepted")

    public static func invalidIdempotencyKey() -> APIError {
        APIError(status: 400, code: "invalid_idempotency_key", message: "Idempotency-Key must be 1 to 255 visible ASCII characters",
                 field: "Idempotency-Key")
    }

    public static func idempotencyKeyReused() -> APIError {
        APIError(status: 422, code: "idempotency_key_reused",
                 message: "this Idempotency-Key was used with a different body; use a new key for a new request", field: "Idempotency-Key")
    }

    public static func idempotencyKeyInUse() -> APIError {
        APIError(status: 409, code: "idempotency_key_in_use",
                 message: "a request with this Idempotency-Key is still being processed; retry later", field: "Idempotency-Key",
                 headers: [("Retry-After", "1")])
    }

    public static func redisUnavailable(_ detail: String) -> APIError {
        APIError(status: 503, code: "redis_unavailable", message: "Redis did not answer: \(detail)", headers: [("Retry-After", "5")])
    }

    public static func kafkaUnavailable(_ detail: String) -> APIError {
        APIError(status: 503, code: "kafka_unavailable", message: "Kafka did not acknowledge the jobs: \(detail)", headers: [("Retry-After", "5")])
    }

    public static func internalError(_ detail: String) -> APIError {
        APIError(status: 500, code: "internal", message: "internal error: \(detail)")
    }
}
