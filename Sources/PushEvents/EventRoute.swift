/// What a request to `pushworker events` asks for, decided from method and path alone
/// (pure, table-tested). The tracking routes are `POST /v1/e/{d,o,c,x}/<msgId>` (docs/reference/tracking-api.md).
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
        // Byte-wise (this runs per ping): "/v1/e/" letter "/" msgId, the msgId without "/".
        let bytes = path.utf8
        guard bytes.count >= 8, bytes.starts(with: "/v1/e/".utf8) else { self = .notFound; return }
        let letter = bytes.index(bytes.startIndex, offsetBy: 6)
        let slash = bytes.index(after: letter)
        guard bytes[slash] == UInt8(ascii: "/"), let type = TrackingEventType(pathByte: bytes[letter]) else { self = .notFound; return }
        let idStart = bytes.index(after: slash)
        guard !bytes[idStart...].contains(UInt8(ascii: "/")) else { self = .notFound; return }
        guard method == "POST" else { self = .methodNotAllowed(allow: "POST"); return }
        // An empty or malformed id is a bad msgId (400), decided by verification.
        self = .track(type, msgID: String(path[idStart...]))
    }
}
