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
    /// `CURLOPT_PROXY`. Default: nil = no proxy, and proxy environment variables
    /// (`https_proxy`, …) are ignored.
    public var proxy: String?

    public init() {}
}
