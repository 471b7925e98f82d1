import PushHTTPServer

/// The worker's operational HTTP surface on `PUSHWORKER_HTTP_ADDR` (docs/reference/metrics.md):
/// `GET /metrics` (Prometheus text 0.0.4), `GET /healthz` (200 while the process runs),
/// `GET /readyz` (200 when Redis answers and the consumer joined its group, else 503).
/// Other paths ⇒ 404; methods other than GET and HEAD ⇒ 405 with `Allow: GET, HEAD`.
public enum OperationsEndpoints {
    /// A listener handler over `metrics` and a readiness check (called per request, must be cheap).
    public static func handler(metrics: Metrics, isReady: @escaping @Sendable () -> Bool) -> HTTPListener.Handler {
        { request in respond(to: request, metrics: metrics, isReady: isReady) }
    }

    static let paths: Set<String> = ["/metrics", "/healthz", "/readyz"]

    static func respond(to request: HTTPListener.Request, metrics: Metrics, isReady: () -> Bool) -> HTTPListener.Response {
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
            return isReady() ? .init(status: 200, body: "ready\n") : .init(status: 503, body: "not ready\n")
        }
    }
}
