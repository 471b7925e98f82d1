@testable import PushHTTP
import Testing

/// The pure half of "when the server does not answer": what a failed transfer's facts map to,
/// and the gate that decides whether libcurl may send a request again by itself. No I/O.
@Suite("Failed transfers: not delivered or unanswered")
struct CurlFailureMappingTests {
    typealias Row = (failure: CurlFailure, expected: HTTPTransportError)

    static func failure(_ ending: CurlFailure.Ending, _ detail: String = "d", onTheWire: Bool = false,
                        stop: CurlResendGate.Stop? = nil, refusedAddress: String? = nil) -> CurlFailure {
        var failure = CurlFailure(ending: ending, detail: detail)
        failure.isOnTheWire = onTheWire
        failure.resendStop = stop
        failure.refusedAddress = refusedAddress
        return failure
    }

    static let alert = "OpenSSL SSL_read: OpenSSL/3.0.19: error:0A000418:SSL routines::tlsv1 alert unknown ca, errno 0"

    static let rows: [Row] = [
        // Nothing sent yet: the existing CURLcode table, all not delivered.
        (failure(.code(7)), .connect("d")),
        (failure(.code(6)), .connect("d")),
        (failure(.code(35)), .tls("d")),
        (failure(.code(60)), .tls("d")),
        (failure(.code(28)), .timeout),
        (failure(.code(56)), .protocolError("d")),
        (failure(.code(16)), .protocolError("d")),
        (failure(.code(92)), .protocolError("d")),
        (failure(.code(3)), .invalidRequest("d")),
        (failure(.code(43)), .other(code: 43, message: "d")),
        (failure(.timeout, "no response within 300 ms"), .timeout),
        (failure(.shutdown), .shutdown),
        (failure(.code(7), refusedAddress: "10.0.0.1"), .addressRefused("connection to 10.0.0.1 refused by the request's address policy")),
        // An attempt on the wire: unanswered, by cause.
        (failure(.timeout, "no response within 300 ms", onTheWire: true), .unanswered(.timeout, "no response within 300 ms")),
        (failure(.shutdown, "s", onTheWire: true), .unanswered(.shutdown, "s")),
        (failure(.code(28), onTheWire: true), .unanswered(.timeout, "d")),
        (failure(.code(92), onTheWire: true), .unanswered(.streamReset, "d")),
        (failure(.code(16), onTheWire: true), .unanswered(.connectionLost, "d")),
        (failure(.code(18), onTheWire: true), .unanswered(.connectionLost, "d")),
        (failure(.code(55), onTheWire: true), .unanswered(.connectionLost, "d")),
        (failure(.code(56), onTheWire: true), .unanswered(.connectionLost, "d")),
        (failure(.code(63), "response body larger than 10 bytes", onTheWire: true), .unanswered(.other, "response body larger than 10 bytes (CURLcode 63)")),
        (failure(.code(8), onTheWire: true), .unanswered(.other, "d (CURLcode 8)")),
        // The gate stopped libcurl's own re-send.
        (failure(.code(7), "ignored", stop: .afterError("Recv failure: Connection reset by peer")),
         .unanswered(.connectionLost, "Recv failure: Connection reset by peer")),
        (failure(.code(42), "ignored", stop: .afterError("OpenSSL SSL_read: unexpected eof")), .unanswered(.connectionLost, "OpenSSL SSL_read: unexpected eof")),
        // A certificate refusal read after TLS 1.3 let the request out: the handshake failed.
        (failure(.code(56), alert, onTheWire: true), .tls(alert)),
        (failure(.code(7), "ignored", stop: .afterError(alert)), .tls(alert)),
        (failure(.code(56), "OpenSSL SSL_read: OpenSSL/3.0.19: error:0A000119:SSL routines::decryption failed or bad record mac, errno 0", onTheWire: true),
         .unanswered(.connectionLost, "OpenSSL SSL_read: OpenSSL/3.0.19: error:0A000119:SSL routines::decryption failed or bad record mac, errno 0")),
        (failure(.code(42), stop: .refusedRepeatedly(attempts: 4)),
         .protocolError("the server refused the stream on 4 attempts (REFUSED_STREAM or above a GOAWAY's last-stream-id: not processed)")),
    ]

    @Test("each set of facts maps to one error", arguments: rows)
    func mapping(row: Row) {
        #expect(CurlErrorMapping.transportError(row.failure) == row.expected)
    }

    @Test("OpenSSL errors of handshake_failure and certificate alerts are handshake refusals, in 3.x and 1.1 wording; others are not", arguments: [
        ("error:0A000418:SSL routines::tlsv1 alert unknown ca", true), ("error:0A000412:SSL routines::sslv3 alert bad certificate", true),
        ("error:0A00045C:SSL routines::tlsv13 alert certificate required", true), ("error:0A000415:SSL routines::sslv3 alert certificate expired", true),
        ("error:14094418:SSL routines:ssl3_read_bytes:tlsv1 alert unknown ca", true),
        ("error:0A000126:SSL routines::unexpected eof while reading", false), ("error:0A000410:SSL routines::sslv3 alert handshake failure", true),
        ("error:0A00042E:SSL routines::tlsv1 alert protocol version", false),
        ("Recv failure: Connection reset by peer", false), ("error:0A0004", false), ("", false),
    ])
    func handshakeRefusal(message: String, expected: Bool) {
        #expect(CurlErrorMapping.isHandshakeRefusal(message) == expected)
    }

    @Test("certainty: unanswered is unknown, everything else not delivered", arguments: [
        (HTTPTransportError.timeout, HTTPDeliveryCertainty.notDelivered), (.connect("x"), .notDelivered), (.tls("x"), .notDelivered),
        (.protocolError("x"), .notDelivered), (.shutdown, .notDelivered), (.invalidRequest("x"), .notDelivered),
        (.addressRefused("x"), .notDelivered), (.other(code: 43, message: "x"), .notDelivered),
        (.unanswered(.timeout, "x"), .unknown), (.unanswered(.streamReset, "x"), .unknown), (.unanswered(.connectionLost, "x"), .unknown),
        (.unanswered(.shutdown, "x"), .unknown), (.unanswered(.other, "x"), .unknown),
    ])
    func certainty(error: HTTPTransportError, expected: HTTPDeliveryCertainty) {
        #expect(error.certainty == expected)
    }

    @Test("an unanswered request is retryable and says why")
    func unansweredDetail() {
        let error = HTTPTransportError.unanswered(.streamReset, "HTTP/2 stream 1 was not closed cleanly: INTERNAL_ERROR (err 2)")
        #expect(error.isRetryable)
        #expect(error.detail == "streamReset: HTTP/2 stream 1 was not closed cleanly: INTERNAL_ERROR (err 2)")
    }

    // MARK: the gate

    @Test("a first attempt connects and is sent without reading libcurl's error")
    func firstAttempt() {
        var gate = CurlResendGate()
        #expect(gate.willConnect { Issue.record("read"); return nil })
        #expect(gate.willSend { Issue.record("read"); return nil })
        #expect(gate.isOnTheWire && gate.stop == nil && gate.refusedAttempts == 0)
    }

    @Test("another attempt after one ended without an error (refused) goes, on a new connection or an existing one")
    func refusedAttemptResent() {
        var onNewConnection = CurlResendGate()
        _ = onNewConnection.willSend { nil }
        #expect(onNewConnection.willConnect { nil })
        #expect(!onNewConnection.isOnTheWire, "settled as refused: nothing of it reached the server")
        #expect(onNewConnection.willSend { nil })
        #expect(onNewConnection.isOnTheWire && onNewConnection.refusedAttempts == 1)

        var onExisting = CurlResendGate()
        _ = onExisting.willSend { nil }
        #expect(onExisting.willSend { nil })
        #expect(onExisting.isOnTheWire && onExisting.refusedAttempts == 1)
    }

    @Test("another attempt after one that failed with an error is stopped, at connect or before sending")
    func resendAfterErrorStopped() {
        var atConnect = CurlResendGate()
        _ = atConnect.willSend { nil }
        #expect(!atConnect.willConnect { "Recv failure: Connection reset by peer" })
        #expect(atConnect.stop == .afterError("Recv failure: Connection reset by peer"))
        #expect(!atConnect.willConnect { nil }, "every later address is refused too")
        #expect(!atConnect.willSend { nil })

        var beforeSending = CurlResendGate()
        _ = beforeSending.willSend { nil }
        #expect(beforeSending.willConnect { nil }) // refused once
        #expect(beforeSending.willSend { nil })
        #expect(!beforeSending.willSend { "OpenSSL SSL_read: unexpected eof" })
        #expect(beforeSending.stop == .afterError("OpenSSL SSL_read: unexpected eof"))
    }

    @Test("refused attempts are sent again up to the limit, below libcurl's own five retries")
    func refusedLimit() {
        #expect(CurlResendGate.maxRefusedResends < 5)
        var gate = CurlResendGate()
        _ = gate.willSend { nil }
        for _ in 0..<CurlResendGate.maxRefusedResends { #expect(gate.willSend { nil }) }
        #expect(!gate.willSend { nil })
        #expect(gate.stop == .refusedRepeatedly(attempts: CurlResendGate.maxRefusedResends + 1))
        gate.reset()
        #expect(gate == CurlResendGate())
    }
}
