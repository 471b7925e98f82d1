/// One HTTP/2 request as the sandbox sees it: pseudo-headers split out, regular header names lower-case.
struct SandboxRequest: Sendable {
    var method: String = ""
    var path: String = ""
    var authority: String = ""
    var headers: [(name: String, value: String)] = []
    var body: [UInt8] = []
    /// The body exceeded ``SandboxRequest/maximumBodyBytes`` and was cut; `body` holds the first bytes.
    var isBodyTruncated = false
    /// The number of body bytes received, including those dropped.
    var bodyLength = 0
    /// SHA-256 (hex) of the TLS client certificate the connection presented, verified against
    /// the sandbox's client CA (`--require-client-cert`); nil without one.
    var clientCertificate: String?
    /// The connection's number on its event loop (1, 2, …): tells connections apart.
    var connectionID = 0

    /// Bytes kept per request body (1 MiB); anything larger is only counted.
    static let maximumBodyBytes = 1 << 20

    /// The first value of header `name` (lower-case), if any.
    func header(_ name: String) -> String? {
        for entry in headers where entry.name == name { return entry.value }
        return nil
    }

    /// How many times header `name` occurs.
    func headerCount(_ name: String) -> Int {
        var count = 0
        for entry in headers where entry.name == name { count += 1 }
        return count
    }

    /// The path without its query string.
    var pathWithoutQuery: Substring {
        if let mark = path.utf8.firstIndex(of: UInt8(ascii: "?")) { return path[..<mark] }
        return path[...]
    }

    /// The value of query parameter `name` (no percent-decoding), if any.
    func queryParameter(_ name: String) -> String? {
        guard let mark = path.firstIndex(of: "?") else { return nil }
        for pair in path[path.index(after: mark)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.first.map(String.init) == name { return parts.count > 1 ? String(parts[1]) : "" }
        }
        return nil
    }
}

/// The answer to a ``SandboxRequest``.
struct SandboxResponse: Sendable {
    var status: Int
    var headers: [(name: String, value: String)] = []
    var body: [UInt8] = []
    /// Whether the injected latency applies (provider endpoints yes, control endpoints no).
    var isProviderResponse = true
    /// What the event loop does instead of sending this answer (nil: send it).
    var transportFault: SandboxTransportFault?

    init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = [], isProviderResponse: Bool = true,
         transportFault: SandboxTransportFault? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.isProviderResponse = isProviderResponse
        self.transportFault = transportFault
    }

    /// A JSON response; `body` must already be JSON text.
    static func json(_ status: Int, _ body: String, headers: [(name: String, value: String)] = [], isProviderResponse: Bool = true) -> SandboxResponse {
        var all = headers
        all.append((name: "content-type", value: "application/json; charset=UTF-8"))
        return SandboxResponse(status: status, headers: all, body: Array(body.utf8), isProviderResponse: isProviderResponse)
    }

    /// A plain-text control response.
    static func text(_ status: Int, _ body: String) -> SandboxResponse {
        SandboxResponse(status: status, headers: [(name: "content-type", value: "text/plain; charset=utf-8")],
                        body: Array(body.utf8), isProviderResponse: false)
    }
}
