/// One HTTP header field. Names are sent as given (HTTP/2 lower-cases them on the wire,
/// RFC 9113 §8.2.1); response header names are reported lower-cased.
public struct HTTPHeader: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// A request for ``HTTP2Client``. The client never follows redirects.
public struct HTTPRequest: Sendable {
    /// `GET`, `HEAD`, `POST`, `PUT`, `DELETE`, `PATCH`, …
    public var method: String
    /// An absolute `https://` URL (`http://` only with ``HTTPClientConfiguration/allowCleartextHTTP2``).
    public var url: String
    public var headers: [HTTPHeader]
    /// The request body; sent for any method when non-empty, and always for POST/PUT/PATCH.
    public var body: [UInt8]
    /// Whole-transfer timeout (connect + send + receive). Default: nil = the client's
    /// ``HTTPClientConfiguration/requestTimeout``.
    public var timeout: Duration?
    /// Checked against the address libcurl is about to connect to (docs/payloads.md "Web Push": the address actually connected to decides, so a name that resolves
    /// differently a second time cannot reach a refused one). Nil: any address.
    public var connectPolicy: ConnectAddressPolicy?
    /// The TLS client certificate to connect with (APNs certificate auth); nil: none. Requests
    /// with different certificates never share a connection (``ClientCertificate``).
    public var clientCertificate: ClientCertificate?
    /// The response header fields the caller reads (names, any case): only these are copied
    /// into ``HTTPResponse/headers``, from the fields libcurl keeps of every response
    /// (`curl_easy_header`), when the transfer ends. Nil: every field.
    public var responseHeaders: [String]?
    /// Header fields sent after ``headers``, checked and laid out once for every request that
    /// shares them (a job's provider headers and token are the same for all its recipients).
    public var sharedHeaders: HTTPHeaderBlock?

    public init(method: String = "GET", url: String, headers: [HTTPHeader] = [], sharedHeaders: HTTPHeaderBlock? = nil,
                body: [UInt8] = [], timeout: Duration? = nil, connectPolicy: ConnectAddressPolicy? = nil,
                clientCertificate: ClientCertificate? = nil, responseHeaders: [String]? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.sharedHeaders = sharedHeaders
        self.body = body
        self.timeout = timeout
        self.connectPolicy = connectPolicy
        self.clientCertificate = clientCertificate
        self.responseHeaders = responseHeaders
    }
}

/// Header fields for many requests (``HTTPRequest/sharedHeaders``), checked once — a
/// name that is not an RFC 9110 token, or CR, LF or NUL in a value, is refused here as
/// `.invalidRequest`, as in a request's own ``HTTPRequest/headers`` — and laid out once for
/// libcurl: a request then copies and checks only its own fields, URL and body. Immutable;
/// any number of requests on any threads may share one block.
public final class HTTPHeaderBlock: Sendable {
    /// The fields, as given.
    public let headers: [HTTPHeader]
    let lines: CurlHeaderLines

    public init(_ headers: [HTTPHeader]) throws(HTTPTransportError) {
        lines = try CurlHeaderLines(headers)
        self.headers = headers
    }
}

/// Which addresses a request may connect to, decided when libcurl opens the socket
/// (`CURLOPT_OPENSOCKETFUNCTION`), for every address libcurl tries (IPv4 and IPv6, each try of
/// happy eyeballs). A connection that exists already was checked when it was opened.
public struct ConnectAddressPolicy: Sendable {
    /// `address`: 4 bytes (IPv4) or 16 (IPv6), network order. True: connect.
    public let allows: @Sendable (_ address: [UInt8]) -> Bool

    public init(allows: @escaping @Sendable (_ address: [UInt8]) -> Bool) { self.allows = allows }
}

/// A complete HTTP response (any status: a 4xx/5xx is a response, not a transport error).
public struct HTTPResponse: Sendable {
    public var status: Int
    /// Header fields (and trailers) of the final response, names lower-cased, in arrival order;
    /// only those named in ``HTTPRequest/responseHeaders`` when the request named some.
    public var headers: [HTTPHeader]
    public var body: [UInt8]
    /// 2 for HTTP/2, 1 for HTTP/1.x, 3 for HTTP/3, 0 if unknown.
    public var httpVersion: Int
    /// Seconds from the start of the transfer to its end (libcurl `CURLINFO_TOTAL_TIME`).
    public var totalSeconds: Double
    /// New connections this transfer had to open (`CURLINFO_NUM_CONNECTS`): 0 when it
    /// reused or multiplexed onto an existing connection.
    public var connectionsOpened: Int

    public init(status: Int, headers: [HTTPHeader], body: [UInt8], httpVersion: Int, totalSeconds: Double, connectionsOpened: Int = 0) {
        self.status = status
        self.headers = headers
        self.body = body
        self.httpVersion = httpVersion
        self.totalSeconds = totalSeconds
        self.connectionsOpened = connectionsOpened
    }

    /// The first value of header `name` (case-insensitive), or nil.
    public func header(_ name: String) -> String? {
        headers.first { Self.equalLowercased($0.name, name) }?.value
    }

    /// `stored` (a lower-case name) equals `wanted` with A-Z lower-cased: the comparison
    /// `stored == wanted.lowercased()` makes, without building the lower-cased string.
    static func equalLowercased(_ stored: String, _ wanted: String) -> Bool {
        let a = stored.utf8.span, b = wanted.utf8.span
        guard a.count == b.count else { return false }
        for index in 0..<a.count {
            let byte = b[index]
            if a[index] != (byte >= 0x41 && byte <= 0x5A ? byte + 32 : byte) { return false }
        }
        return true
    }
}

/// Whether a failed request may have reached the server.
public enum HTTPDeliveryCertainty: Sendable, Equatable {
    /// Nothing the server may act on reached it: sending again cannot duplicate.
    case notDelivered
    /// The request was (or may have been) written and no complete answer came: the server may
    /// have acted on it (shown the notification), so sending again may duplicate it.
    case unknown
}

/// Why a written request got no complete answer (``HTTPTransportError/unanswered(_:_:)``).
public enum HTTPUnansweredCause: String, Sendable, Equatable {
    /// The request timeout expired after the request started sending.
    case timeout
    /// The server reset the stream (`RST_STREAM` with an error code other than
    /// `REFUSED_STREAM`, or closed it before the response headers).
    case streamReset
    /// The connection was closed, reset or broke after the request was written, including a
    /// `GOAWAY` whose last-stream-id covers the stream followed by a close.
    case connectionLost
    /// ``HTTP2Client/shutdown(drainTimeout:)`` aborted the request after it started sending.
    case shutdown
    /// Any other failure after the request started sending (an oversize or malformed response …).
    case other
}

/// Why a request got no HTTP response. ``certainty`` tells whether it may have reached the
/// server: every case but ``unanswered(_:_:)`` is ``HTTPDeliveryCertainty/notDelivered``
/// (docs/http-client.md "When the server does not answer").
public enum HTTPTransportError: Error, Sendable, Equatable {
    /// The connect timeout, or the request timeout before the request started sending.
    case timeout
    /// The TCP connection could not be made (refused, unreachable, DNS failure).
    case connect(String)
    /// TLS handshake or certificate verification failed.
    case tls(String)
    /// The server did not process the request: it refused the stream (`RST_STREAM`
    /// `REFUSED_STREAM`, RFC 9113 §8.7) or the stream was above a `GOAWAY`'s last-stream-id
    /// (RFC 9113 §6.8) on every attempt, or the connection broke before this request was written.
    case protocolError(String)
    /// The client is shut down, or was shut down before this request started sending.
    case shutdown
    /// The request itself is malformed (CR/LF/NUL in a header, unsupported scheme …): never retry.
    case invalidRequest(String)
    /// The address libcurl was about to connect to was refused by the request's
    /// ``ConnectAddressPolicy`` (nothing was sent): never retry.
    case addressRefused(String)
    /// Any other libcurl error (`CURLcode` and its message) before the request started sending.
    case other(code: Int, message: String)
    /// Written (or possibly written) and no complete answer: the server may have acted on it.
    case unanswered(HTTPUnansweredCause, String)

    /// Whether the request may have reached the server: ``HTTPDeliveryCertainty/unknown`` for
    /// ``unanswered(_:_:)``, ``HTTPDeliveryCertainty/notDelivered`` for everything else.
    public var certainty: HTTPDeliveryCertainty {
        if case .unanswered = self { return .unknown }
        return .notDelivered
    }

    /// The text libcurl gave, if any (for people: `send` explains TLS failures with it).
    public var detail: String? {
        switch self {
        case .timeout: "timed out"
        case .connect(let text), .tls(let text), .protocolError(let text), .invalidRequest(let text), .addressRefused(let text): text
        case .shutdown: nil
        case .other(let code, let message): "\(message) (CURLcode \(code))"
        case .unanswered(let cause, let text): "\(cause.rawValue): \(text)"
        }
    }

    /// Whether sending the same request again later may succeed. TLS and malformed requests
    /// are configuration problems; timeouts, refused connections, refused streams, a shutdown
    /// and unanswered requests are transient. Whether a new attempt may duplicate the request
    /// is ``certainty``'s to say: after ``unanswered(_:_:)`` it may.
    public var isRetryable: Bool {
        switch self {
        case .timeout, .connect, .protocolError, .shutdown, .unanswered: true
        case .tls, .invalidRequest, .addressRefused, .other: false
        }
    }
}

/// A client that cannot be created (libcurl too old or lacking a feature, bad configuration).
public struct HTTPClientError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
