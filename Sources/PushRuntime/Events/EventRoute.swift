/// What a request to `pushworker events` asks for, decided from method and path alone
/// (pure, table-tested). The tracking routes are `POST /v1/e/{d,o,c,x}/<msgId>` (seed 003).
public enum EventRoute: Sendable, Equatable {
    case track(TrackingEventType, msgID: String)
    case health, ready, metrics
    /// The path exists but the method is not allowed: answer 405 with `Allow: <allow>`.
    case methodNotAllowed(allow: String)
    /// Unknown path or event type: 404.
    case notFound

    public init(method: String, path: String) {
        switch path {
        case "/healthz", "/readyz", "/metrics":
            guard method == "GET" || method == "HEAD" else { self = .methodNotAllowed(allow: "GET, HEAD"); return }
            self = path == "/healthz" ? .health : path == "/readyz" ? .ready : .metrics
            return
        default: break
        }
        guard path.hasPrefix("/v1/e/") else { self = .notFound; return }
        let rest = path.utf8.dropFirst(6)
        let parts = Substring(rest).split(separator: "/", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 2, let type = TrackingEventType(pathLetter: parts[0]) else { self = .notFound; return }
        guard method == "POST" else { self = .methodNotAllowed(allow: "POST"); return }
        // An empty or malformed id is a bad msgId (400), decided by verification.
        self = .track(type, msgID: String(parts[1]))
    }
}
