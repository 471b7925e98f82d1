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
        case .afterError(let message) where isHandshakeRefusal(message):
            return .tls(message)
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
            // TLS 1.3 lets the client write before the server has checked its certificate; a
            // refusal then arrives as an alert in place of an answer. The handshake failed:
            // nothing of the request was processed.
            if failure.isOnTheWire && isHandshakeRefusal(failure.detail) { return .tls(failure.detail) }
            return failure.isOnTheWire
                ? unanswered(rawCode: code, detail: failure.detail)
                : transportError(rawCode: code, detail: failure.detail)
        }
    }

    /// OpenSSL's reason codes (1000 + the alert number) of the alerts a server sends only while
    /// the TLS handshake fails (RFC 8446 §6.2): handshake_failure (40) and those refusing the
    /// client's certificate, bad_certificate (42), unsupported_certificate (43),
    /// certificate_revoked (44), certificate_expired (45), certificate_unknown (46), unknown_ca
    /// (48), access_denied (49), certificate_required (116).
    static let handshakeRefusalReasons: Set<UInt32> = [1040, 1042, 1043, 1044, 1045, 1046, 1048, 1049, 1116]

    /// Whether libcurl's message carries an OpenSSL error (`error:0A000418:SSL routines::tlsv1
    /// alert unknown ca`) whose reason is one of ``handshakeRefusalReasons`` (the low 12 bits of
    /// the packed code, in OpenSSL 1.1 and 3 alike).
    static func isHandshakeRefusal(_ message: String) -> Bool {
        let bytes = Array(message.utf8)
        let marker = Array("error:".utf8)
        var index = 0
        while index + marker.count + 9 <= bytes.count {
            if bytes[index..<(index + marker.count)].elementsEqual(marker) {
                let start = index + marker.count
                var code: UInt32 = 0
                var digits = 0
                while digits < 8, let value = hexValue(bytes[start + digits]) {
                    code = code << 4 | value
                    digits += 1
                }
                if digits == 8, bytes[start + 8] == UInt8(ascii: ":"), handshakeRefusalReasons.contains(code & 0xFFF) { return true }
            }
            index += 1
        }
        return false
    }

    private static func hexValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        default: nil
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
