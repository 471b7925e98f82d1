/// Settings of one ``HTTP2Client`` (one connection pool). Defaults suit one provider origin
/// (APNs allows many streams per connection; a couple of connections saturate a core).
public struct HTTPClientConfiguration: Sendable {
    /// A PEM file of extra CA certificates to trust *in addition to* the system bundle.
    /// TLS peer and host verification are always on; nothing disables them.
    /// The client reads the system bundle (libcurl's default `CURLINFO_CAINFO`, usually
    /// `/etc/ssl/certs/ca-certificates.crt`) and this file once at start, concatenates them
    /// in memory and hands the result to libcurl as `CURLOPT_CAINFO_BLOB` (CURLOPT_CAINFO
    /// would *replace* the system bundle). Default: nil (system bundle only).
    public var caFile: String?
    /// `CURLMOPT_MAX_HOST_CONNECTIONS`. Default: 2.
    public var maxConnectionsPerHost: Int = 2
    /// `CURLMOPT_MAX_CONCURRENT_STREAMS`: streams per HTTP/2 connection (the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS may lower it). Default: 100.
    public var maxConcurrentStreams: Int = 100
    /// `CURLMOPT_MAX_TOTAL_CONNECTIONS` and the idle-connection cache size. Default: 16.
    public var maxTotalConnections: Int = 16
    /// `CURLOPT_CONNECTTIMEOUT_MS` (TCP + TLS). Default: 5 s.
    public var connectTimeout: Duration = .seconds(5)
    /// `CURLOPT_TIMEOUT_MS` for requests without their own timeout, counted from submission
    /// to the I/O thread, so it includes waiting for a free stream. Default: 15 s.
    public var requestTimeout: Duration = .seconds(15)
    /// TCP keepalive idle time and probe interval, and `CURLOPT_UPKEEP_INTERVAL_MS`
    /// (libcurl ≤ 8.9 runs h2 PING upkeep only for easy-interface connections, so with a
    /// multi handle TCP keepalive is what keeps idle connections alive). Default: 30 s.
    public var keepAliveInterval: Duration = .seconds(30)
    /// Allow `http://` URLs spoken as HTTP/2 with prior knowledge (h2c). Refused on
    /// libcurl < 8.0 (see ``LibcurlCheck``). Default: false (TLS only).
    public var allowCleartextHTTP2: Bool = false
    /// Largest response body accepted; a larger one fails with `.protocolError`. Default: 1 MiB.
    public var maxResponseBodyBytes: Int = 1 << 20
    /// `CURLOPT_PROXY`: an `http://`, `https://`, `socks4://`, `socks4a://`, `socks5://` or
    /// `socks5h://` URL (`scheme://[user:password@]host[:port]`); HTTPS requests go through it
    /// with `CONNECT`. Default: nil = no proxy. Never taken from the environment: libcurl gets
    /// `CURLOPT_PROXY ""` when nil, so `https_proxy`, `HTTPS_PROXY`, `ALL_PROXY` & co. are ignored.
    public var proxy: String?
    /// `CURLOPT_NOPROXY`: comma-separated host names (a leading `.` or none matches
    /// sub-domains), IP addresses or CIDR ranges reached directly although `proxy` is set; `*`
    /// means every host. Default: nil = none, and `no_proxy`/`NO_PROXY` are never read (libcurl
    /// gets `CURLOPT_NOPROXY ""`, which also spares it two `getenv` calls per transfer).
    public var noProxy: String?
    /// `CURLOPT_RESOLVE` entries, `host:port:address[,address…]`: these names resolve to these
    /// addresses for every transfer, without DNS. For tests (a resolver double answering
    /// loopback addresses only) and for pinning a provider's addresses. Default: none.
    public var resolveOverrides: [String] = []
    /// Coalesce writes per I/O-loop turn (`TCP_CORK` on every connection, lifted before every
    /// wait): libcurl writes a request's frames one `SSL_write` at a time, and corked they leave
    /// in one TCP push per turn. Off only to compare.
    var coalesceWrites = true

    public init() {}

    /// The proxy schemes libcurl is asked to use.
    public static let proxySchemes = ["http", "https", "socks4", "socks4a", "socks5", "socks5h"]

    /// Why `proxy` is unusable, or nil when it is nil or a `scheme://host[:port]` URL with one
    /// of ``proxySchemes`` (an explicit scheme is required: libcurl would guess `http://`).
    public static func proxyProblem(_ proxy: String?) -> String? {
        guard let proxy else { return nil }
        guard let separator = schemeSeparator(proxy) else {
            return "proxy must be a URL such as http://host:port (schemes: \(proxySchemes.joined(separator: ", ")))"
        }
        let scheme = proxy[..<separator.lowerBound].lowercased()
        guard proxySchemes.contains(scheme) else {
            return "proxy scheme \(scheme.isEmpty ? "(none)" : scheme) is not one of \(proxySchemes.joined(separator: ", "))"
        }
        let rest = proxy[separator.upperBound...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let host = authority.split(separator: "@").last.map(String.init) ?? ""
        guard !host.isEmpty, !host.hasPrefix(":") else { return "proxy \(redacted(proxy)) names no host" }
        let printable = rest.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
        guard printable else {
            return "proxy \(redacted(proxy)) contains spaces or control characters"
        }
        if let colon = host.lastIndex(of: ":"), !host.hasSuffix("]") {
            let port = host[host.index(after: colon)...]
            guard let number = Int(port), (1...65535).contains(number) else { return "proxy \(redacted(proxy)) has a bad port" }
        }
        return nil
    }

    /// The proxy URL with any user-info replaced (it may hold a password).
    public static func redacted(_ proxy: String) -> String {
        guard let separator = schemeSeparator(proxy) else { return "<proxy>" }
        let rest = proxy[separator.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        guard let at = rest[..<authorityEnd].lastIndex(of: "@") else { return proxy }
        let head = String(proxy[..<separator.upperBound])
        let tail = String(rest[at...])
        return head + "<redacted>" + tail
    }

    /// The range of the first "://" (no Foundation in this module).
    static func schemeSeparator(_ text: String) -> Range<String.Index>? {
        var index = text.startIndex
        while index < text.endIndex {
            if text[index...].hasPrefix("://") { return index..<text.index(index, offsetBy: 3) }
            index = text.index(after: index)
        }
        return nil
    }
}
