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
    /// Oldest libcurl the client is built for: `CURLOPT_PROTOCOLS_STR` appeared in 7.85.0.
    public static let minimumVersionNumber = 0x075500
    /// First libcurl whose h2c (HTTP/2 prior knowledge over cleartext) multiplexing works:
    /// 7.88.1 answers the first request and then breaks the connection (fixed in 8.0).
    public static let minimumCleartextHTTP2VersionNumber = 0x080000

    /// The loaded libcurl.
    public static func info() -> LibcurlInfo { CurlVersion.current() }

    /// Refuses known-broken combinations with a clear message: no HTTP/2 or TLS support,
    /// libcurl older than 7.85, and cleartext h2c on libcurl < 8.0 (Debian 12's 7.88.1
    /// multiplexes fine over TLS but breaks after the first request on h2c).
    public static func validate(allowCleartextHTTP2: Bool) throws(HTTPClientError) -> LibcurlInfo {
        try validate(info(), allowCleartextHTTP2: allowCleartextHTTP2)
    }

    /// ``validate(allowCleartextHTTP2:)`` for a given `info` (testable for any version).
    public static func validate(_ info: LibcurlInfo, allowCleartextHTTP2: Bool) throws(HTTPClientError) -> LibcurlInfo {
        if !info.hasHTTP2 {
            throw HTTPClientError("libcurl \(info.version) has no HTTP/2 support (built without nghttp2); install a libcurl with the HTTP2 feature")
        }
        if info.sslVersion.isEmpty {
            throw HTTPClientError("libcurl \(info.version) has no TLS support")
        }
        if info.versionNumber < minimumVersionNumber {
            throw HTTPClientError("libcurl \(info.version) is too old: need 7.85.0 or newer")
        }
        if allowCleartextHTTP2 && info.versionNumber < minimumCleartextHTTP2VersionNumber {
            throw HTTPClientError(
                "libcurl \(info.version) cannot multiplex cleartext HTTP/2 (h2c): it breaks after the first request (curl bug fixed in 8.0). Use https endpoints, or libcurl >= 8.0 (e.g. bookworm-backports)"
            )
        }
        return info
    }
}
