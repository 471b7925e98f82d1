import PushEncoding
import PushHTTPServer

/// Whether a process is ready for traffic, and when not, which dependency is failing and why
/// (`GET /readyz`'s body, docs/reference/metrics.md "Endpoints").
public struct Readiness: Sendable, Equatable {
    /// One dependency that is not ready: a short fixed name (`redis`, `kafka_consumer_group`,
    /// `kafka_producer`, `shutdown`) and a sentence for people.
    public struct Failure: Sendable, Equatable {
        public var dependency: String
        public var detail: String
        public init(dependency: String, detail: String) { self.dependency = dependency; self.detail = detail }
    }

    public var failing: [Failure]

    public init(failing: [Failure] = []) { self.failing = failing }

    public static let ready = Readiness()

    public var isReady: Bool { failing.isEmpty }

    /// `{"ready":true}` or `{"ready":false,"failing":[{"dependency":"redis","detail":"…"}, …]}`.
    public var json: String {
        JSONWriter.object(capacity: 128) { w in
            w.member("ready", isReady)
            guard !isReady else { return }
            w.key("failing")
            w.beginArray()
            for failure in failing {
                w.beginObject()
                w.member("dependency", failure.dependency)
                w.member("detail", failure.detail)
                w.endObject()
            }
            w.endArray()
        }.text
    }
}

/// The worker's operational HTTP surface on `PUSHWORKER_HTTP_ADDR` (docs/reference/metrics.md):
/// `GET /metrics` (Prometheus text 0.0.4), `GET /healthz` (200 while the process runs),
/// `GET /readyz` (200 `{"ready":true}` when Redis answers and the consumer joined its group,
/// else 503 with the failing dependencies, ``Readiness/json``).
/// Other paths ⇒ 404; methods other than GET and HEAD ⇒ 405 with `Allow: GET, HEAD`.
public enum OperationsEndpoints {
    /// A listener handler over `metrics` and a readiness check (called per request, must be cheap).
    public static func handler(metrics: Metrics, readiness: @escaping @Sendable () -> Readiness) -> HTTPListener.Handler {
        { request in respond(to: request, metrics: metrics, readiness: readiness) }
    }

    static let paths: Set<String> = ["/metrics", "/healthz", "/readyz"]

    static func respond(to request: HTTPListener.Request, metrics: Metrics, readiness: () -> Readiness) -> HTTPListener.Response {
        guard paths.contains(request.path) else { return .init(status: 404, body: "not found\n") }
        guard request.method == "GET" || request.method == "HEAD" else {
            return .init(status: 405, body: "method not allowed\n", headers: [("Allow", "GET, HEAD")])
        }
        switch request.path {
        case "/metrics":
            return .init(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: metrics.render())
        case "/healthz":
            return .init(status: 200, body: "ok\n")
        default:
            return readyz(readiness())
        }
    }

    /// `/readyz`'s answer: 200 or 503, the JSON body either way.
    public static func readyz(_ readiness: Readiness) -> HTTPListener.Response {
        .init(status: readiness.isReady ? 200 : 503, contentType: "application/json", body: readiness.json + "\n")
    }
}
