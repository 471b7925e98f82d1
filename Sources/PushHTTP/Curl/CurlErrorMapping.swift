import CCurl

/// What the I/O loop knows about a transfer that ended without a response: how it ended, and
/// whether an attempt of it may have reached the server (``CurlResendGate``). The input of
/// ``CurlErrorMapping/transportError(_:)``, kept free of libcurl types so the table is testable
/// without I/O.
struct CurlFailure: Sendable, Equatable {
    enum Ending: Sendable, Equatable {
        /// libcurl finished the transfer with this numeric `CURLcode`.
        case code(Int)
        /// The I/O loop's deadline: the request timeout, or the connect timeout before sending.
        case timeout
        /// ``HTTP2Client/shutdown(drainTimeout:)`` ended it.
        case shutdown
    }

    var ending: Ending
    /// libcurl's error text, or the loop's words for its own endings.
    var detail: String
    /// An attempt libcurl started sending (it called `CURLOPT_PREREQFUNCTION`) has not been
    /// settled as refused: it may have reached the server.
    var isOnTheWire = false
    /// Why the gate stopped libcurl from sending the request again, if it did.
    var resendStop: CurlResendGate.Stop?
    /// The address the request's ``ConnectAddressPolicy`` refused, if it did.
    var refusedAddress: String?
}

/// Converts `CURLcode`s into ``HTTPTransportError`` once, here.
enum CurlErrorMapping {
    /// The outcome of a failed transfer. Not delivered (RFC 9113 §8.7: the server did no
    /// processing) when nothing of it may have reached the server: nothing was sent, or every
    /// attempt sent was refused (`REFUSED_STREAM`, or above a `GOAWAY`'s last-stream-id, RFC 9113
    /// §6.8). Otherwise ``HTTPTransportError/unanswered(_:_:)``.
    static func transportError(_ failure: CurlFailure) -> HTTPTransportError {
        switch failure.resendStop {
        case .afterError(let message):
            return .unanswered(.connectionLost, message)
        case .refusedRepeatedly(let attempts):
            return .protocolError("the server refused the stream on \(attempts) attempts (REFUSED_STREAM or above a GOAWAY's last-stream-id: not processed)")
        case nil:
            break
        }
        if let address = failure.refusedAddress {
            return .addressRefused("connection to \(address) refused by the request's address policy")
        }
        switch failure.ending {
        case .timeout:
            return failure.isOnTheWire ? .unanswered(.timeout, failure.detail) : .timeout
        case .shutdown:
            return failure.isOnTheWire ? .unanswered(.shutdown, failure.detail) : .shutdown
        case .code(let code):
            return failure.isOnTheWire
                ? unanswered(rawCode: code, detail: failure.detail)
                : transportError(rawCode: code, detail: failure.detail)
        }
    }

    /// A `CURLcode` that ended a transfer after it started sending.
    static func unanswered(rawCode: Int, detail: String) -> HTTPTransportError {
        switch rawCode {
        case 28: // OPERATION_TIMEDOUT: libcurl's own timer (a request with a fifth timeout value)
            return .unanswered(.timeout, detail)
        case 92: // HTTP2_STREAM: RST_STREAM with an error code, or closed before the response headers
            return .unanswered(.streamReset, detail)
        case 16, 18, 52, 55, 56:
            // HTTP2 (connection closed, session ended), PARTIAL_FILE, GOT_NOTHING, SEND_ERROR,
            // RECV_ERROR (reset, TLS close without close_notify)
            return .unanswered(.connectionLost, detail)
        default:
            return .unanswered(.other, "\(detail) (CURLcode \(rawCode))")
        }
    }

    static func transportError(code: CURLcode, detail: String) -> HTTPTransportError {
        transportError(rawCode: Int(code.rawValue), detail: detail)
    }

    /// The table for transfers that never started sending, by numeric `CURLcode`
    /// (curl/curl.h), so it is testable without libcurl types.
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
            // WRITE_ERROR, FILESIZE_EXCEEDED, HTTP2_STREAM, HTTP3: a connection that broke
            // before this request was written
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
