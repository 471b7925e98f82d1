import COpenSSL

/// The libcrypto loaded at run time.
public enum OpenSSLLibrary {
    /// `OpenSSL_version(OPENSSL_VERSION_STRING)`, e.g. "3.0.11" (what the loaded library says,
    /// not the headers built against).
    public static var version: String {
        guard let text = OpenSSL_version(OPENSSL_VERSION_STRING) else { return "unknown" }
        return String(cString: text)
    }
}
