import CCurl

/// Reads `curl_version_info` of the loaded libcurl.
enum CurlVersion {
    static func current() -> LibcurlInfo {
        CurlGlobal.ensureInitialized()
        guard let data = pw_curl_version_info() else {
            return LibcurlInfo(version: "unknown", versionNumber: 0, hasHTTP2: false, sslVersion: "")
        }
        let info = data.pointee
        let version = info.version.map { String(cString: $0) } ?? "unknown"
        let ssl = info.ssl_version.map { String(cString: $0) } ?? ""
        let features = Int(info.features)
        return LibcurlInfo(
            version: version,
            versionNumber: Int(info.version_num),
            hasHTTP2: features & pw_curl_version_http2_feature() != 0,
            sslVersion: (features & pw_curl_version_ssl_feature() != 0) ? ssl : ""
        )
    }
}

extension CurlVersion {
    /// Whether libcurl keeps response headers for `curl_easy_header` (not built with
    /// `CURL_DISABLE_HEADERS_API`): the client reads response fields only through it.
    static func hasHeaderAPI() -> Bool {
        CurlGlobal.ensureInitialized()
        guard let easy = curl_easy_init() else { return false }
        defer { curl_easy_cleanup(easy) }
        var field: UnsafeMutablePointer<curl_header>?
        return curl_easy_header(easy, "x", 0, UInt32(CURLH_HEADER), -1, &field) != CURLHE_NOT_BUILT_IN
    }
}

/// `curl_global_init`, exactly once per process (Swift globals are initialised lazily and
/// thread-safely). Since 7.84 it is thread-safe itself, but older builds are not.
enum CurlGlobal {
    private static let initResult: CURLcode = curl_global_init(pw_curl_global_default())

    static func ensureInitialized() { _ = initResult }
}
