/// Lets libcurl send a request again on its own only when the attempt before was certainly not
/// processed by the server; one per transfer, on the I/O thread.
///
/// libcurl 8.14.1 starts a transfer over by itself (`Curl_retry_request`, lib/transfer.c) in two
/// cases. (1) The stream was refused: `RST_STREAM` with `REFUSED_STREAM`, or a stream above a
/// received `GOAWAY`'s last-stream-id, which nghttp2 closes as refused — the server did no
/// processing (RFC 9113 §8.7, §6.8), so sending again is safe. (2) A *reused* connection failed
/// (`CURLE_RECV_ERROR`: a TCP reset, a TLS close without close_notify, an HTTP/2 framing error;
/// or `CURLE_SEND_ERROR` while writing the request) before any response byte arrived — after
/// the request may have been written and processed, so sending again may duplicate it. Case (1)
/// reaches `Curl_retry_request` without an error message (lib/http2.c
/// `http2_handle_stream_close`; a stream nghttp2 closed before its HEADERS were sent ends the
/// same way in `cf_h2_send`); every path of case (2) reports one first (`failf`: "Recv
/// failure", "OpenSSL SSL_read: …", "nghttp2_session_mem_recv() returned …", "Send failure"),
/// and that first message stays in the transfer's error buffer (`CURLOPT_ERRORBUFFER`) until the
/// transfer ends. So when libcurl starts another attempt — it opens a connection
/// (`CURLOPT_OPENSOCKETFUNCTION`) or is about to write the request (`CURLOPT_PREREQFUNCTION`) —
/// while an attempt it already sent is unsettled, the gate lets it go on only if the error
/// buffer is empty; otherwise the transfer fails there, unanswered, before anything is sent
/// again. A stray message that does not end an attempt can only make the gate stop a safe
/// re-send (the request then counts as unanswered), never let an unsafe one through.
struct CurlResendGate: Sendable, Equatable {
    /// Why the gate ended the transfer.
    enum Stop: Sendable, Equatable {
        /// An attempt that was sent failed with this libcurl error: it may have been processed.
        case afterError(String)
        /// The server refused the request on this many attempts.
        case refusedRepeatedly(attempts: Int)
    }

    /// Re-sends allowed after refused attempts. Below libcurl's own limit (5, `CONN_MAX_RETRIES`
    /// in lib/transfer.c), so the gate, not libcurl, ends a transfer refused again and again:
    /// libcurl's give-up is a `CURLE_RECV_ERROR` that looks like a lost connection.
    static let maxRefusedResends = 3

    /// An attempt was sent (or is being sent) and is not known to have been refused.
    private(set) var isOnTheWire = false
    /// Attempts the server refused (each sent again, until the limit).
    private(set) var refusedAttempts = 0
    private(set) var stop: Stop?

    /// libcurl is about to write the request (`CURLOPT_PREREQFUNCTION`, called once per attempt
    /// right before the request goes out). `libcurlError`: the transfer's error message so far,
    /// nil when there is none (read only when an attempt is unsettled). False: abort the attempt.
    mutating func willSend(libcurlError: () -> String?) -> Bool {
        guard mayStartAttempt(libcurlError) else { return false }
        isOnTheWire = true
        return true
    }

    /// libcurl opens a connection for the transfer (`CURLOPT_OPENSOCKETFUNCTION`). False: refuse
    /// the socket (libcurl then fails the transfer with `CURLE_COULDNT_CONNECT`).
    mutating func willConnect(libcurlError: () -> String?) -> Bool {
        mayStartAttempt(libcurlError)
    }

    /// A new transfer on the handle.
    mutating func reset() { self = CurlResendGate() }

    private mutating func mayStartAttempt(_ libcurlError: () -> String?) -> Bool {
        if stop != nil { return false }
        guard isOnTheWire else { return true }
        // libcurl starts over although an attempt went out: it means to send the request again.
        if let message = libcurlError() {
            stop = .afterError(message)
            return false
        }
        isOnTheWire = false
        refusedAttempts += 1
        if refusedAttempts > Self.maxRefusedResends {
            stop = .refusedRepeatedly(attempts: refusedAttempts)
            return false
        }
        return true
    }
}
