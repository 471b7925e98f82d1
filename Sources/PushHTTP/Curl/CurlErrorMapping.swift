import CCurl

/// Converts `CURLcode`s into ``HTTPTransportError`` once, here.
enum CurlErrorMapping {
    static func transportError(code: CURLcode, detail: String) -> HTTPTransportError {
        transportError(rawCode: Int(code.rawValue), detail: detail)
    }

    /// The table, by numeric `CURLcode` (curl/curl.h), so it is testable without libcurl types.
    static func transportError(rawCode: Int, detail: String) -> HTTPTransportError {
        switch rawCode {
        case 28: // CURLE_OPERATION_TIMEDOUT (request or connect timeout)
            return .timeout
        case 5, 6, 7: // COULDNT_RESOLVE_PROXY, COULDNT_RESOLVE_HOST, COULDNT_CONNECT
            return .connect(detail)
        case 35, 53, 54, 58, 59, 60, 64, 66, 77, 80, 82, 83, 90, 91:
            // SSL_CONNECT_ERROR, SSL_ENGINE_*, SSL_CERTPROBLEM, SSL_CIPHER,
            // PEER_FAILED_VERIFICATION, USE_SSL_FAILED, SSL_CACERT_BADFILE, SSL_SHUTDOWN_FAILED,
            // SSL_CRL_BADFILE, SSL_ISSUER_ERROR, SSL_PINNEDPUBKEYNOTMATCH, SSL_INVALIDCERTSTATUS
            return .tls(detail)
        case 8, 16, 18, 52, 55, 56, 23, 63, 92, 95:
            // WEIRD_SERVER_REPLY, HTTP2, PARTIAL_FILE, GOT_NOTHING, SEND_ERROR, RECV_ERROR,
            // WRITE_ERROR (response rejected by us), FILESIZE_EXCEEDED, HTTP2_STREAM, HTTP3
            return .protocolError(detail)
        case 1, 3: // UNSUPPORTED_PROTOCOL (scheme not allowed), URL_MALFORMAT
            return .invalidRequest(detail)
        default:
            return .other(code: rawCode, message: detail)
        }
    }

    /// A `curl_easy_setopt` failure while preparing a request.
    static func setupError(code: CURLcode, message: String) -> HTTPTransportError {
        switch code {
        case CURLE_OUT_OF_MEMORY: .other(code: Int(code.rawValue), message: message)
        default: .invalidRequest(message)
        }
    }
}
