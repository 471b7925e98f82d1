import CCurl
import CPushCurl
#if canImport(Glibc)
import Glibc
#endif

/// What every transfer of one client shares: the options derived from its configuration.
struct TransferSettings: Sendable {
    var protocols: String
    var allowCleartextHTTP2: Bool
    var connectTimeoutMS: Int
    var requestTimeoutMS: Int
    var keepAliveSeconds: Int
    var keepAliveMS: Int
    var maxResponseBodyBytes: Int
    var proxy: String
    var noProxy: String
    var resolveOverrides: [String]
    var caBundle: CurlCABundle?
    /// The client's connection limits, raised per client certificate (``ClientCertificate``).
    var maxConnectionsPerHost = 2
    var maxTotalConnections = 16
}

/// A completion handler of ``HTTP2Client/submit(_:completion:)``.
typealias HTTPCompletion = @Sendable (Result<HTTPResponse, HTTPTransportError>) -> Void

/// One easy handle plus everything a transfer on it needs to stay alive: the running request
/// (``CurlPreparedRequest``: `CURLOPT_HTTPHEADER` and `CURLOPT_POSTFIELDS` point into it, and
/// this object holds it until the transfer ends), the error buffer and the response buffers.
/// Reused from the I/O loop's free list.
///
/// The options every transfer of the client shares (callbacks, protocols, TLS verification,
/// CA bundle, keepalive, proxy, size limit, and the pointers to this object) are set once, in
/// `init`. `configure` sets only what a request changes, and each only when it differs from
/// what the handle's previous transfer left: URL (only the path when the origin is the
/// previous one's), HTTP version (h2c or TLS), method and body, headers, client certificate
/// (and a timeout, only for a request the I/O loop's ``TransferDeadlines`` cannot keep).
/// Method options stay on an easy handle from one transfer to the next (`CURLOPT_NOBODY`
/// turns a later POST into HEAD, `CURLOPT_CUSTOMREQUEST` overrides any method), so
/// `configure` undoes what the previous request set. A handle
/// whose `configure` failed is not reused (the I/O loop drops it), so no half-applied request
/// leaks into the next one.
///
/// libcurl gets `self` as `CURLOPT_PRIVATE`/`WRITEDATA`/`HEADERDATA` *unretained*: the I/O
/// loop holds a strong reference in its `active` table for as long as the handle is in the
/// multi handle. Confined to the I/O thread.
final class CurlTransfer {
    let handle: UnsafeMutableRawPointer
    /// The position of this transfer in the I/O loop's `active` array while it runs.
    var activeIndex = -1
    /// The I/O loop's ticket for the running transfer (0: none), matched against its
    /// ``TransferDeadlines`` entries.
    var ticket: UInt64 = 0
    private let settings: TransferSettings
    /// Kept alive while the easy handle may use its event callbacks (cork, socket close).
    private let multi: CurlMulti
    /// The transfer's URL, pre-parsed (`CURLOPT_CURLU`): libcurl duplicates it per transfer
    /// instead of parsing a URL string. See `setURL`.
    private let url: OpaquePointer
    /// `scheme://authority` of the URL last parsed whole into `url`, when that URL had no query
    /// or fragment: a request to the same origin then only replaces the path.
    private var parsedOrigin: [UInt8] = []
    private var completion: HTTPCompletion?
    /// The running request: libcurl reads its header list and body until the transfer ends.
    private var current: CurlPreparedRequest?
    /// The running request's connect-time address check (read by the open-socket callback,
    /// on the I/O thread like everything else here).
    private var connectPolicy: ConnectAddressPolicy?
    /// The address the policy refused during this transfer, for its error.
    private var refusedAddress: String?
    /// Whether libcurl may send the request again on its own, and whether an attempt of it may
    /// have reached the server (``CurlResendGate``).
    private var gate = CurlResendGate()
    /// `CURLOPT_RESOLVE`'s list: libcurl keeps the pointer, so it lives as long as the handle.
    private var resolveList: OpaquePointer?
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private var responseBody: [UInt8] = []
    private var bodyOverflowed = false

    /// What the previous request left set on the handle (a fresh handle: GET, TLS unset).
    private var cleartextSet: Bool?
    /// `CURLOPT_TIMEOUT_MS` as set (0, libcurl's default: none; the I/O loop keeps the
    /// deadlines, ``TransferDeadlines``).
    private var timeoutSet = 0
    private var noBodySet = false
    private var postFieldsSet = false
    private var postFieldSizeSet = -1
    private var headersSet: UnsafeMutablePointer<curl_slist>?
    private var customRequestSet = false
    /// The ``ClientCertificate/id`` set on the handle (nil: none).
    var clientCertificateID: String?

    /// Creates the URL and easy handles, wraps them, then sets the client-wide options. Throws
    /// when libcurl refuses one (out of memory, or a libcurl built without a protocol or feature
    /// the client needs); the transfer is then released and `deinit` cleans both handles up, once.
    static func make(settings: TransferSettings, multi: CurlMulti) throws(HTTPTransportError) -> CurlTransfer {
        CurlGlobal.ensureInitialized()
        guard let url = curl_url() else {
            throw .other(code: Int(CURLE_OUT_OF_MEMORY.rawValue), message: "curl_url failed")
        }
        guard let handle = curl_easy_init() else {
            curl_url_cleanup(url) // no owner exists yet: freed here, and only here
            throw .other(code: Int(CURLE_OUT_OF_MEMORY.rawValue), message: "curl_easy_init failed")
        }
        let transfer = CurlTransfer(handle: handle, url: url, settings: settings, multi: multi)
        try transfer.applyClientOptions()
        return transfer
    }

    /// Takes ownership of `handle` and `url`.
    private init(handle: UnsafeMutableRawPointer, url: OpaquePointer, settings: TransferSettings, multi: CurlMulti) {
        self.handle = handle
        self.url = url
        self.settings = settings
        self.multi = multi
        errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    deinit {
        // Cleanup first: the handle may still point at the request (`current`) and the error buffer.
        curl_easy_cleanup(handle)
        if let resolveList { curl_slist_free_all(UnsafeMutablePointer(resolveList)) }
        curl_url_cleanup(url)
        errorBuffer.deallocate()
    }

    private func applyClientOptions() throws(HTTPTransportError) {
        let me = Unmanaged.passUnretained(self).toOpaque()
        try set(CURLOPT_PRIVATE, pointer: me)
        try set(CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(errorBuffer))
        try check(pw_curl_easy_setopt_write_cb(handle, curlWriteCallback), CURLOPT_WRITEFUNCTION)
        try set(CURLOPT_WRITEDATA, pointer: me)
        // No header callback (and no CURLOPT_HEADERDATA, which would send header lines to the
        // write callback): libcurl keeps every response's fields for `curl_easy_header`, and
        // `finish` copies out the ones the request names.
        try set(CURLOPT_NOSIGNAL, 1)
        try set(CURLOPT_PROTOCOLS_STR, string: settings.protocols)
        try set(CURLOPT_REDIR_PROTOCOLS_STR, string: settings.protocols)
        try set(CURLOPT_FOLLOWLOCATION, 0)
        try set(CURLOPT_SSL_VERIFYPEER, 1)
        try set(CURLOPT_SSL_VERIFYHOST, 2)
        if let bundle = settings.caBundle, let path = bundle.path {
            try set(CURLOPT_CAINFO, string: path)
        } else if let bundle = settings.caBundle {
            // CURL_BLOB_NOCOPY: the bytes stay alive as long as `settings` (held by this object).
            var blob = curl_blob(data: bundle.bytes.baseAddress, len: bundle.count, flags: UInt32(CURL_BLOB_NOCOPY))
            try check(pw_curl_easy_setopt_blob(handle, CURLOPT_CAINFO_BLOB, &blob), CURLOPT_CAINFO_BLOB)
        }
        try set(CURLOPT_PIPEWAIT, 1)
        // No CURLOPT_CONNECTTIMEOUT_MS / CURLOPT_TIMEOUT_MS: the I/O loop keeps both deadlines
        // (TransferDeadlines), which spares libcurl two timers per transfer.
        try set(CURLOPT_TCP_KEEPALIVE, 1)
        try set(CURLOPT_TCP_KEEPIDLE, settings.keepAliveSeconds)
        try set(CURLOPT_TCP_KEEPINTVL, settings.keepAliveSeconds)
        try set(CURLOPT_UPKEEP_INTERVAL_MS, settings.keepAliveMS)
        // Never from the environment: "" = no proxy, and an explicit no-proxy list ("" = none)
        // keeps libcurl from reading no_proxy/NO_PROXY for every transfer.
        try set(CURLOPT_PROXY, string: settings.proxy)
        try set(CURLOPT_NOPROXY, string: settings.noProxy)
        try set(CURLOPT_CURLU, pointer: UnsafeMutableRawPointer(url))
        try check(pw_curl_events_attach(handle, multi.events), CURLOPT_SOCKOPTFUNCTION)
        try check(pw_curl_easy_setopt_opensocket_cb(handle, curlOpenSocketCallback), CURLOPT_OPENSOCKETFUNCTION)
        try set(CURLOPT_OPENSOCKETDATA, pointer: me)
        try check(pw_curl_easy_setopt_prereq_cb(handle, curlPrereqCallback), CURLOPT_PREREQFUNCTION)
        try set(CURLOPT_PREREQDATA, pointer: me)
        if !settings.resolveOverrides.isEmpty {
            for entry in settings.resolveOverrides {
                guard let grown = curl_slist_append(resolveList.map { UnsafeMutablePointer($0) }, entry) else {
                    throw .other(code: Int(CURLE_OUT_OF_MEMORY.rawValue), message: "curl_slist_append failed")
                }
                resolveList = OpaquePointer(grown)
            }
            try set(CURLOPT_RESOLVE, pointer: resolveList.map { UnsafeMutableRawPointer($0) })
        }
        try check(pw_curl_easy_setopt_off(handle, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(settings.maxResponseBodyBytes)), CURLOPT_MAXFILESIZE_LARGE)
    }

    /// Prepares the handle for `request`. On failure the error is returned, the completion is
    /// not stored, and the handle must not be reused. `libcurlTimeoutMS`: the request timeout
    /// libcurl enforces (0: none, the I/O loop keeps it).
    func configure(_ request: CurlPreparedRequest, completion: @escaping HTTPCompletion, libcurlTimeoutMS: Int = 0) -> HTTPTransportError? {
        // `finish` and `abandon` left the response buffers empty.
        errorBuffer[0] = 0
        bodyOverflowed = false
        // A proxy connection goes to the proxy, not to the request's host: the address check
        // applies to direct connections (docs/http-client.md).
        connectPolicy = settings.proxy.isEmpty ? request.connectPolicy : nil
        refusedAddress = nil
        gate.reset()
        current = request
        do {
            try apply(request, libcurlTimeoutMS: libcurlTimeoutMS)
        } catch {
            current = nil
            return error
        }
        self.completion = completion
        return nil
    }

    /// Sets the per-request options that differ from the handle's previous transfer.
    private func apply(_ request: CurlPreparedRequest, libcurlTimeoutMS: Int) throws(HTTPTransportError) {
        try setURL(request)
        let cleartext = request.cleartext
        if cleartextSet != cleartext {
            try set(CURLOPT_HTTP_VERSION, Int(cleartext ? CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE : CURL_HTTP_VERSION_2TLS))
            cleartextSet = cleartext
        }
        if timeoutSet != libcurlTimeoutMS {
            try set(CURLOPT_TIMEOUT_MS, libcurlTimeoutMS)
            timeoutSet = libcurlTimeoutMS
        }

        switch request.method {
        case .body(let custom):
            if noBodySet {
                try set(CURLOPT_NOBODY, 0)
                noBodySet = false
            }
            // CURLOPT_POSTFIELDS does not copy: the bytes live in `request`, held as `current`
            // until the transfer ended.
            if postFieldSizeSet != request.bodyCount {
                try check(pw_curl_easy_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.bodyCount)), CURLOPT_POSTFIELDSIZE_LARGE)
                postFieldSizeSet = request.bodyCount
            }
            try set(CURLOPT_POSTFIELDS, pointer: request.body) // also selects POST
            postFieldsSet = true
            try setCustomRequest(custom)
        case .head, .noBody:
            if postFieldsSet {
                try set(CURLOPT_POSTFIELDS, pointer: nil)
                try check(pw_curl_easy_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, -1), CURLOPT_POSTFIELDSIZE_LARGE)
                postFieldsSet = false
                postFieldSizeSet = -1
            }
            if case .noBody(let custom) = request.method {
                try set(CURLOPT_HTTPGET, 1) // also clears CURLOPT_NOBODY
                noBodySet = false
                try setCustomRequest(custom)
            } else {
                try set(CURLOPT_NOBODY, 1)
                noBodySet = true
                try setCustomRequest(nil)
            }
        }
        if headersSet != request.headers {
            try set(CURLOPT_HTTPHEADER, pointer: request.headers.map { UnsafeMutableRawPointer($0) })
            headersSet = request.headers
        }
        try applyClientCertificate(request.clientCertificate)
    }

    /// libcurl 8's `EXPECT_100_THRESHOLD`: larger bodies get `Expect: 100-continue` over HTTP/1.1.
    static let expectThreshold = 1024 * 1024

    /// Points the transfer's CURLU at the request's URL. A URL of the origin parsed last (no
    /// query, no fragment, a path of plain characters without dot segments: what provider URLs
    /// are) only replaces the path, which libcurl stores as given; anything else is parsed whole,
    /// as `CURLOPT_URL` would be. Both give libcurl the same URL: the full parse changes nothing
    /// in such a path. A URL libcurl refuses is `.invalidRequest`. Where the path starts and
    /// whether it is plain was found when the request was prepared (the submitting thread).
    private func setURL(_ request: CurlPreparedRequest) throws(HTTPTransportError) {
        let code: CURLUcode
        let cString = request.url
        if request.hasPlainPath, let start = request.pathStart, start == parsedOrigin.count,
           parsedOrigin.withUnsafeBufferPointer({ origin in origin.baseAddress.map { memcmp($0, cString, start) == 0 } ?? false }) {
            code = curl_url_set(url, CURLUPART_PATH, cString + start, 0)
        } else {
            // Parsed whole; its origin is remembered (and kept only if the parse succeeds) when
            // the URL has a path and no query or fragment.
            parsedOrigin.removeAll(keepingCapacity: true)
            if let start = request.pathStart, request.hasNoQueryOrFragment {
                cString.withMemoryRebound(to: UInt8.self, capacity: start) { base in
                    parsedOrigin.append(contentsOf: UnsafeBufferPointer(start: base, count: start))
                }
            }
            code = curl_url_set(url, CURLUPART_URL, cString, 0)
        }
        guard code == CURLUE_OK else {
            parsedOrigin.removeAll(keepingCapacity: true)
            throw .invalidRequest("URL rejected: \(String(cString: curl_url_strerror(code)))")
        }
    }

    /// Where the path starts in `scheme://authority/path…` (the first `/`, `?` or `#` after
    /// `://`), nil when there is no `://` or no path.
    static func pathStart(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        var index = 0
        // The scheme, up to "://".
        while index < bytes.count && bytes[index] != UInt8(ascii: ":") {
            if bytes[index] == UInt8(ascii: "/") { return nil }
            index += 1
        }
        guard index + 2 < bytes.count, bytes[index + 1] == UInt8(ascii: "/"), bytes[index + 2] == UInt8(ascii: "/") else { return nil }
        index += 3
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") { return index }
            index += 1
        }
        return nil
    }

    static func pathStart(_ text: String) -> Int? {
        var text = text
        return text.withUTF8 { pathStart($0) }
    }

    /// Bytes libcurl's URL parser keeps as they are in a path: unreserved characters,
    /// sub-delims, `:`, `@`, `/` (a bit per ASCII byte; `.` is checked for segments apart).
    /// `HTTPRequestValidation.mask` of "!$&'()*+,-./0123456789:;=" and of "@", the letters, "_~"
    /// (literals: no lazy initialisation check per byte; `RequestBuildingTests` checks them).
    static let plainLow: UInt64 = 0x2FFF_FFD2_0000_0000
    static let plainHigh: UInt64 = 0x47FF_FFFE_87FF_FFFF

    /// A path libcurl's URL parser would keep byte for byte: unreserved characters, sub-delims,
    /// `:`, `@` and `/` only (no `%`, `?`, `#`, space or non-ASCII), and no `.`/`..` segment.
    static func isPlainPath(_ path: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = path.baseAddress, path.first == UInt8(ascii: "/") else { return false }
        let low = plainLow, high = plainHigh
        var bits: UInt64 = 1
        for byte in path {
            // Bit 6 picks the mask, the low six bits the position; bit 7 (non-ASCII) fails below.
            bits &= ((byte & 64 == 0 ? low : high) >> UInt64(byte & 63)) & ~UInt64(byte >> 7)
        }
        if bits & 1 == 0 { return false }
        // Dot segments only where there is a dot (provider paths have none).
        guard memchr(base, Int32(UInt8(ascii: ".")), path.count) != nil else { return true }
        var previous: UInt8 = 0, beforePrevious: UInt8 = 0
        for byte in path {
            // "/./" or "/../" (a dot segment) ahead: leave it to the full parse.
            if byte == UInt8(ascii: "/") && previous == UInt8(ascii: ".")
                && (beforePrevious == UInt8(ascii: "/") || beforePrevious == UInt8(ascii: ".")) { return false }
            beforePrevious = previous
            previous = byte
        }
        // A trailing "/." or "/.." segment.
        return !(previous == UInt8(ascii: ".") && (beforePrevious == UInt8(ascii: "/") || beforePrevious == UInt8(ascii: ".")))
    }

    static func isPlainPath(_ path: String) -> Bool {
        var path = path
        return path.withUTF8 { isPlainPath($0) }
    }

    private func setCustomRequest(_ method: String?) throws(HTTPTransportError) {
        if let method {
            try set(CURLOPT_CUSTOMREQUEST, string: method)
            customRequestSet = true
        } else if customRequestSet {
            try set(CURLOPT_CUSTOMREQUEST, pointer: nil)
            customRequestSet = false
        }
    }

    /// `http://` (any case) starts the URL.
    static func isCleartext(_ url: String) -> Bool {
        let bytes = url.utf8.span
        guard bytes.count >= 7 else { return false }
        // "http" in any case (0x20 folds A-Z onto a-z), then "://".
        return bytes[0] | 0x20 == UInt8(ascii: "h") && bytes[1] | 0x20 == UInt8(ascii: "t") && bytes[2] | 0x20 == UInt8(ascii: "t")
            && bytes[3] | 0x20 == UInt8(ascii: "p") && bytes[4] == UInt8(ascii: ":") && bytes[5] == UInt8(ascii: "/")
            && bytes[6] == UInt8(ascii: "/")
    }

    /// `accept`, in any case.
    static func isAccept(_ name: String) -> Bool {
        guard name.utf8.count == 6 else { return false }
        return zip(name.utf8, "accept".utf8).allSatisfy { pair in
            let byte = pair.0 >= UInt8(ascii: "A") && pair.0 <= UInt8(ascii: "Z") ? pair.0 + 32 : pair.0
            return byte == pair.1
        }
    }

    /// `content-type`, in any case.
    static func isContentType(_ name: String) -> Bool {
        guard name.utf8.count == 12 else { return false }
        return zip(name.utf8, "content-type".utf8).allSatisfy { pair in
            let byte = pair.0 >= UInt8(ascii: "A") && pair.0 <= UInt8(ascii: "Z") ? pair.0 + 32 : pair.0
            return byte == pair.1
        }
    }

    private func set(_ option: CURLoption, _ value: Int) throws(HTTPTransportError) {
        try check(pw_curl_easy_setopt_long(handle, option, value), option)
    }

    private func set(_ option: CURLoption, string: String) throws(HTTPTransportError) {
        try check(pw_curl_easy_setopt_str(handle, option, string), option)
    }

    private func set(_ option: CURLoption, pointer: UnsafeMutableRawPointer?) throws(HTTPTransportError) {
        try check(pw_curl_easy_setopt_ptr(handle, option, pointer), option)
    }

    @inline(__always)
    private func check(_ code: CURLcode, _ option: CURLoption) throws(HTTPTransportError) {
        guard code == CURLE_OK else { throw Self.setupError(code, option) }
    }

    private static func setupError(_ code: CURLcode, _ option: CURLoption) -> HTTPTransportError {
        let message = String(cString: curl_easy_strerror(code))
        return CurlErrorMapping.setupError(code: code, message: "option \(option.rawValue): \(message)")
    }

    // MARK: completion

    /// Builds the outcome of a finished transfer (the handle has left the multi handle),
    /// returns it with the completion to call, and leaves the object ready for reuse.
    func finish(_ code: CURLcode) -> (HTTPCompletion?, Result<HTTPResponse, HTTPTransportError>) {
        let completion = self.completion
        self.completion = nil
        let wanted = current?.responseHeaders
        current = nil
        // Moved out, not copied: the next request starts with an empty array.
        let body = responseBody
        responseBody = []
        guard code == CURLE_OK else {
            var failure = CurlFailure(ending: .code(Int(code.rawValue)), detail: "")
            if bodyOverflowed || code == CURLE_FILESIZE_EXCEEDED {
                failure.ending = .code(Int(CURLE_FILESIZE_EXCEEDED.rawValue))
                failure.detail = "response body larger than \(settings.maxResponseBodyBytes) bytes"
            } else {
                failure.detail = libcurlError ?? String(cString: curl_easy_strerror(code))
            }
            return (completion, .failure(CurlErrorMapping.transportError(facts(failure))))
        }
        var status = 0, version = 0, connects = 0
        var total = 0.0
        _ = pw_curl_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        _ = pw_curl_easy_getinfo_long(handle, CURLINFO_HTTP_VERSION, &version)
        _ = pw_curl_easy_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &connects)
        _ = pw_curl_easy_getinfo_double(handle, CURLINFO_TOTAL_TIME, &total)
        let response = HTTPResponse(
            status: status, headers: responseHeaders(wanted), body: body,
            httpVersion: Self.httpVersion(curlValue: version), totalSeconds: total, connectionsOpened: connects
        )
        return (completion, .success(response))
    }

    /// The transfer has sent its request head and is about to transfer (libcurl's
    /// `TIMER_PRETRANSFER`: reset by each transfer's `Curl_pretransfer`, set — at least 1 µs —
    /// once a connection and a stream on it were ready): past what the connect timeout bounds.
    var hasStartedSending: Bool {
        var microseconds: curl_off_t = 0
        return pw_curl_easy_getinfo_off(handle, CURLINFO_PRETRANSFER_TIME_T, &microseconds) == CURLE_OK && microseconds > 0
    }

    /// Ends a transfer whose deadline passed (``TransferDeadlines``); the handle has left the
    /// multi handle (libcurl reset its stream, or dropped the connection still being set up).
    func timedOut() -> (HTTPCompletion?, Result<HTTPResponse, HTTPTransportError>) {
        let detail = "no response within \(current?.timeoutMS ?? settings.requestTimeoutMS) ms"
        let failure = facts(CurlFailure(ending: .timeout, detail: detail))
        return (abandon(), .failure(CurlErrorMapping.transportError(failure)))
    }

    /// Ends a transfer the client's shutdown aborts; the handle has left the multi handle.
    func shutDown() -> (HTTPCompletion?, Result<HTTPResponse, HTTPTransportError>) {
        let failure = facts(CurlFailure(ending: .shutdown, detail: "aborted by the client's shutdown before a response"))
        return (abandon(), .failure(CurlErrorMapping.transportError(failure)))
    }

    /// `failure` with what this transfer's gate and address policy know.
    private func facts(_ failure: CurlFailure) -> CurlFailure {
        var failure = failure
        failure.isOnTheWire = gate.isOnTheWire
        failure.resendStop = gate.stop
        failure.refusedAddress = refusedAddress
        return failure
    }

    /// The first error message libcurl reported in this transfer (`CURLOPT_ERRORBUFFER`), if any.
    private var libcurlError: String? {
        errorBuffer[0] != 0 ? String(cString: errorBuffer) : nil
    }

    /// Ends a transfer that will not complete; the handle has left the multi handle.
    func abandon() -> HTTPCompletion? {
        let completion = self.completion
        self.completion = nil
        current = nil
        responseBody = []
        return completion
    }

    /// The final response's header fields and trailers libcurl kept: those named in `wanted`
    /// (lower-case names, every value of each, `curl_easy_header`), or all of them, in arrival
    /// order (`curl_easy_nextheader`). Names lower-cased.
    private func responseHeaders(_ wanted: [String]?) -> [HTTPHeader] {
        let origins = UInt32(CURLH_HEADER | CURLH_TRAILER)
        var headers: [HTTPHeader] = []
        guard let wanted else {
            var previous: UnsafeMutablePointer<curl_header>?
            while let field = curl_easy_nextheader(handle, origins, -1, previous) {
                if let name = field.pointee.name, let value = field.pointee.value {
                    let nameBytes = UnsafeRawBufferPointer(start: name, count: strlen(name))
                    headers.append(HTTPHeader(name: Self.lowercasedASCII(nameBytes), value: String(cString: value)))
                }
                previous = field
            }
            return headers
        }
        for name in wanted {
            // withCString: a native string's own bytes (passing `name` itself would copy it into a new array).
            name.withCString { cName in
                var field: UnsafeMutablePointer<curl_header>?
                guard curl_easy_header(handle, cName, 0, origins, -1, &field) == CURLHE_OK, let first = field else { return }
                let amount = first.pointee.amount
                if headers.capacity == 0 { headers.reserveCapacity(wanted.count) }
                if let value = first.pointee.value { headers.append(HTTPHeader(name: name, value: String(cString: value))) }
                var index = 1
                while index < amount {
                    guard curl_easy_header(handle, cName, index, origins, -1, &field) == CURLHE_OK, let value = field?.pointee.value else { break }
                    headers.append(HTTPHeader(name: name, value: String(cString: value)))
                    index += 1
                }
            }
        }
        return headers
    }

    /// A header name with A-Z lower-cased (HTTP/2 names arrive lower-case already: then it is
    /// decoded as is).
    static func lowercasedASCII(_ name: UnsafeRawBufferPointer) -> String {
        func isUpper(_ byte: UInt8) -> Bool { byte >= 0x41 && byte <= 0x5A }
        guard name.contains(where: isUpper) else { return String(decoding: name, as: UTF8.self) }
        return String(unsafeUninitializedCapacity: name.count) { buffer in
            for (index, byte) in name.enumerated() { buffer[index] = isUpper(byte) ? byte + 32 : byte }
            return name.count
        }
    }

    static func httpVersion(curlValue: Int) -> Int {
        switch curlValue {
        case CURL_HTTP_VERSION_1_0, CURL_HTTP_VERSION_1_1: 1
        case CURL_HTTP_VERSION_2_0: 2
        case CURL_HTTP_VERSION_3: 3
        default: 0
        }
    }

    // MARK: callbacks (I/O thread, inside curl_multi_perform)

    fileprivate func appendBody(_ data: UnsafeMutablePointer<CChar>, _ count: Int) -> Int {
        if responseBody.count + count > settings.maxResponseBodyBytes {
            bodyOverflowed = true
            return 0 // makes libcurl fail the transfer with CURLE_WRITE_ERROR
        }
        responseBody.append(contentsOf: UnsafeRawBufferPointer(start: data, count: count))
        return count
    }

}

extension CurlTransfer {
    /// `CURLOPT_OPENSOCKETFUNCTION`: the address libcurl resolved and is about to connect to
    /// (every try, IPv4 and IPv6). Refused by the request's policy ⇒ no socket
    /// (`CURL_SOCKET_BAD`: libcurl tries the next address, then fails with COULDNT_CONNECT).
    fileprivate func openSocket(_ address: UnsafeMutablePointer<curl_sockaddr>) -> curl_socket_t {
        // A connection opened while an attempt that was sent is unsettled: libcurl starts over.
        guard gate.willConnect(libcurlError: { libcurlError }) else { return CURL_SOCKET_BAD }
        let family = address.pointee.family
        if let connectPolicy {
            var bytes: [UInt8] = []
            withUnsafeMutablePointer(to: &address.pointee.addr) { raw in
                if family == AF_INET {
                    raw.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { inet in
                        var value = inet.pointee.sin_addr
                        bytes = withUnsafeBytes(of: &value) { Array($0) }
                    }
                } else if family == AF_INET6, Int(address.pointee.addrlen) >= MemoryLayout<sockaddr_in6>.size {
                    raw.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { inet6 in
                        var value = inet6.pointee.sin6_addr
                        bytes = withUnsafeBytes(of: &value) { Array($0) }
                    }
                }
            }
            guard bytes.count == 4 || bytes.count == 16, connectPolicy.allows(bytes) else {
                refusedAddress = Self.text(bytes)
                return CURL_SOCKET_BAD
            }
        }
        return socket(family, address.pointee.socktype, address.pointee.protocol)
    }

    /// libcurl is about to write an attempt: false stops a re-send the gate refuses.
    fileprivate func willSend() -> Bool {
        gate.willSend(libcurlError: { libcurlError })
    }

    /// An address as text (dotted quad or IPv6 groups), for errors.
    static func text(_ bytes: [UInt8]) -> String {
        if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
        guard bytes.count == 16 else { return "an unknown address family" }
        return stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }.joined(separator: ":")
    }
}

/// `CURLOPT_PREREQFUNCTION`: libcurl is about to write an attempt of the request (every attempt,
/// libcurl's own re-sends included: lib/multi.c `state_do`).
private let curlPrereqCallback: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<CChar>?, Int32, Int32) -> Int32 = { user, _, _, _, _ in
    guard let user else { return Int32(CURL_PREREQFUNC_ABORT) }
    return Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue().willSend() ? Int32(CURL_PREREQFUNC_OK) : Int32(CURL_PREREQFUNC_ABORT)
}

private let curlOpenSocketCallback: @convention(c) (UnsafeMutableRawPointer?, curlsocktype, UnsafeMutablePointer<curl_sockaddr>?) -> curl_socket_t = { user, _, address in
    guard let user, let address else { return CURL_SOCKET_BAD }
    return Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue().openSocket(address)
}

/// `CURLOPT_WRITEFUNCTION`: copies the chunk into the transfer's body buffer.
private let curlWriteCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = { data, size, count, user in
    guard let data, let user else { return 0 }
    return Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue().appendBody(data, size * count)
}

extension Duration {
    /// Whole milliseconds, rounded up so that a tiny positive duration is not 0 ("none"
    /// for libcurl timeouts); negative durations count as 1 ms, and any duration longer than
    /// ``maxTimeoutMilliseconds`` as that (no overflow: libcurl takes a `long`, and the I/O
    /// loop adds it to a monotonic clock).
    var wholeMilliseconds: Int {
        let (seconds, attoseconds) = components
        let limit = Int64(Self.maxTimeoutMilliseconds)
        guard seconds >= 0 else { return 1 }
        guard seconds <= limit / 1000 else { return Self.maxTimeoutMilliseconds }
        let ms = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int(min(max(ms, 1), limit))
    }

    /// The longest timeout kept (2³¹ − 1 ms, ≈ 24.8 days: a 32-bit `long` holds it too).
    static var maxTimeoutMilliseconds: Int { Int(Int32.max) }
}
