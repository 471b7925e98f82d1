/// What the libcurl loaded at run time is and can do.
public struct LibcurlInfo: Sendable {
    /// e.g. "7.88.1".
    public let version: String
    /// `0xXXYYZZ` (major, minor, patch), e.g. 0x075801 for 7.88.1.
    public let versionNumber: Int
    public let hasHTTP2: Bool
    /// e.g. "OpenSSL/3.0.11"; empty without TLS support.
    public let sslVersion: String

    public init(version: String, versionNumber: Int, hasHTTP2: Bool, sslVersion: String) {
        self.version = version
        self.versionNumber = versionNumber
        self.hasHTTP2 = hasHTTP2
        self.sslVersion = sslVersion
    }
}

/// Start-up check of the run-time libcurl.
public enum LibcurlCheck {
    /// Oldest libcurl the worker runs on: 8.0. Debian 12's stock 7.88.1 multiplexes HTTP/2 over
    /// TLS, but it sends RST_STREAM(STREAM_CLOSED) after nearly every stream it completes
    /// (measured against the sandbox with the curl CLI: 285 resets for 300 requests; libcurl
    /// 8.14.1 from bookworm-backports, same ABI: none). A server with rapid-reset protection
    /// (CVE-2023-44487; nghttp2's default: a bucket of 1000 resets refilled at 33/s) answers
    /// with GOAWAY every ~1,100 requests, so the client reconnects, re-handshakes and re-sends
    /// what was in flight — a production risk, not only a sandbox artefact.
    public static let minimumVersionNumber = 0x080000
    /// First libcurl whose h2c (HTTP/2 prior knowledge over cleartext) multiplexing works:
    /// 7.88.1 answers the first request and then breaks the connection (fixed in 8.0).
    public static let minimumCleartextHTTP2VersionNumber = 0x080000

    /// The loaded libcurl.
    public static func info() -> LibcurlInfo { CurlVersion.current() }

    /// Refuses known-broken combinations with a clear message: no HTTP/2 or TLS support,
    /// libcurl older than 8.0 (see ``minimumVersionNumber``), and cleartext h2c on libcurl < 8.0.
    public static func validate(allowCleartextHTTP2: Bool) throws(HTTPClientError) -> LibcurlInfo {
        let info = try validate(info(), allowCleartextHTTP2: allowCleartextHTTP2)
        if !CurlVersion.hasHeaderAPI() {
            throw HTTPClientError("libcurl \(info.version) was built without its header API (CURL_DISABLE_HEADERS_API): response headers (apns-id, retry-after) cannot be read")
        }
        return info
    }

    /// ``validate(allowCleartextHTTP2:)`` for a given `info` (testable for any version).
    public static func validate(_ info: LibcurlInfo, allowCleartextHTTP2: Bool) throws(HTTPClientError) -> LibcurlInfo {
        if !info.hasHTTP2 {
            throw HTTPClientError("libcurl \(info.version) has no HTTP/2 support (built without nghttp2); install a libcurl with the HTTP2 feature")
        }
        if info.sslVersion.isEmpty {
            throw HTTPClientError("libcurl \(info.version) has no TLS support")
        }
        if allowCleartextHTTP2 && info.versionNumber < minimumCleartextHTTP2VersionNumber {
            throw HTTPClientError(
                "libcurl \(info.version) cannot multiplex cleartext HTTP/2 (h2c): it breaks after the first request (curl bug fixed in 8.0). Use https endpoints, or libcurl >= 8.0 (e.g. bookworm-backports)"
            )
        }
        if info.versionNumber < minimumVersionNumber {
            throw HTTPClientError(
                "libcurl \(info.version) is too old: it sends RST_STREAM after every HTTP/2 stream, which providers with rapid-reset protection answer with GOAWAY every ~1000 requests. Need libcurl 8.0 or newer (Debian 12: `apt-get install libcurl4/bookworm-backports`, same ABI; scripts/install-deps.sh does it)"
            )
        }
        return info
    }
}
