import CCurl

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
    var caBundle: CurlCABundle?
}

/// A completion handler of ``HTTP2Client/submit(_:completion:)``.
typealias HTTPCompletion = @Sendable (Result<HTTPResponse, HTTPTransportError>) -> Void

/// One easy handle plus everything a transfer on it needs to stay alive: the request body
/// bytes (`CURLOPT_POSTFIELDS` points into `bodyStorage`, which this object owns and never
/// frees or reallocates while the transfer runs), the header `curl_slist`, the error buffer
/// and the response buffers. Reused from the I/O loop's free list; `curl_easy_reset` +
/// setting every option per request keeps nothing from the previous request.
///
/// libcurl gets `self` as `CURLOPT_PRIVATE`/`WRITEDATA`/`HEADERDATA` *unretained*: the I/O
/// loop holds a strong reference in its `active` table for as long as the handle is in the
/// multi handle. Confined to the I/O thread.
final class CurlTransfer {
    let handle: UnsafeMutableRawPointer
    private var completion: HTTPCompletion?
    private var bodyStorage: UnsafeMutableRawBufferPointer
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private var responseBody: [UInt8] = []
    private var responseHeaders: [HTTPHeader] = []
    private var maxResponseBodyBytes = 0
    private var bodyOverflowed = false
    /// Keeps the CA bytes alive while the handle may point at them.
    private var caBundle: CurlCABundle?

    init?() {
        CurlGlobal.ensureInitialized()
        guard let handle = curl_easy_init() else { return nil }
        self.handle = handle
        bodyStorage = UnsafeMutableRawBufferPointer.allocate(byteCount: 1024, alignment: 1)
        errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    deinit {
        curl_easy_cleanup(handle)
        if let headerList { curl_slist_free_all(headerList) }
        bodyStorage.deallocate()
        errorBuffer.deallocate()
    }

    /// Prepares the handle for `request`. On failure the handle is left idle and the error
    /// is returned (the completion is not stored).
    func configure(_ request: HTTPRequest, settings: TransferSettings, completion: @escaping HTTPCompletion) -> HTTPTransportError? {
        curl_easy_reset(handle)
        releaseRequestState()
        errorBuffer[0] = 0
        responseHeaders.removeAll(keepingCapacity: true)
        responseBody = []
        responseBody.reserveCapacity(1024)
        bodyOverflowed = false
        maxResponseBodyBytes = settings.maxResponseBodyBytes
        do {
            try apply(request, settings)
        } catch {
            releaseRequestState()
            return error
        }
        self.completion = completion
        return nil
    }

    private func apply(_ request: HTTPRequest, _ settings: TransferSettings) throws(HTTPTransportError) {
        try HTTPRequestValidation.validate(request)
        let me = Unmanaged.passUnretained(self).toOpaque()
        try set(CURLOPT_URL, string: request.url)
        try set(CURLOPT_PRIVATE, pointer: me)
        try set(CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(errorBuffer))
        try check(pw_curl_easy_setopt_write_cb(handle, curlWriteCallback), "CURLOPT_WRITEFUNCTION")
        try set(CURLOPT_WRITEDATA, pointer: me)
        try check(pw_curl_easy_setopt_header_cb(handle, curlHeaderCallback), "CURLOPT_HEADERFUNCTION")
        try set(CURLOPT_HEADERDATA, pointer: me)
        try set(CURLOPT_NOSIGNAL, 1)
        try set(CURLOPT_PROTOCOLS_STR, string: settings.protocols)
        try set(CURLOPT_REDIR_PROTOCOLS_STR, string: settings.protocols)
        try set(CURLOPT_FOLLOWLOCATION, 0)
        let cleartext = request.url.utf8.count >= 7 && request.url.prefix(7).lowercased() == "http://"
        if cleartext && !settings.allowCleartextHTTP2 {
            throw .invalidRequest("http:// URLs are not allowed (TLS only)")
        }
        try set(CURLOPT_HTTP_VERSION, Int(cleartext ? CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE : CURL_HTTP_VERSION_2TLS))
        try set(CURLOPT_SSL_VERIFYPEER, 1)
        try set(CURLOPT_SSL_VERIFYHOST, 2)
        if let bundle = settings.caBundle, let path = bundle.path {
            caBundle = bundle
            try set(CURLOPT_CAINFO, string: path)
        } else if let bundle = settings.caBundle {
            caBundle = bundle
            var blob = curl_blob(data: bundle.bytes.baseAddress, len: bundle.count, flags: UInt32(CURL_BLOB_NOCOPY))
            try check(pw_curl_easy_setopt_blob(handle, CURLOPT_CAINFO_BLOB, &blob), "CURLOPT_CAINFO_BLOB")
        }
        try set(CURLOPT_PIPEWAIT, 1)
        try set(CURLOPT_CONNECTTIMEOUT_MS, settings.connectTimeoutMS)
        try set(CURLOPT_TIMEOUT_MS, request.timeout.map(\.wholeMilliseconds) ?? settings.requestTimeoutMS)
        try set(CURLOPT_TCP_KEEPALIVE, 1)
        try set(CURLOPT_TCP_KEEPIDLE, settings.keepAliveSeconds)
        try set(CURLOPT_TCP_KEEPINTVL, settings.keepAliveSeconds)
        try set(CURLOPT_UPKEEP_INTERVAL_MS, settings.keepAliveMS)
        try set(CURLOPT_PROXY, string: settings.proxy)
        try check(pw_curl_easy_setopt_off(handle, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(settings.maxResponseBodyBytes)), "CURLOPT_MAXFILESIZE_LARGE")

        let method = request.method
        let sendsBody = !request.body.isEmpty || method == "POST" || method == "PUT" || method == "PATCH"
        if method == "HEAD" && !sendsBody {
            try set(CURLOPT_NOBODY, 1)
        } else if sendsBody {
            // CURLOPT_POSTFIELDS does not copy: the bytes must stay alive for the whole
            // transfer. They live in `bodyStorage`, owned by this object, untouched until the
            // next `configure`, which happens only after the handle left the multi handle.
            try storeBody(request.body)
            try check(pw_curl_easy_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count)), "CURLOPT_POSTFIELDSIZE_LARGE")
            try set(CURLOPT_POSTFIELDS, pointer: bodyStorage.baseAddress)
            if method != "POST" { try set(CURLOPT_CUSTOMREQUEST, string: method) }
        } else {
            try set(CURLOPT_HTTPGET, 1)
            if method != "GET" { try set(CURLOPT_CUSTOMREQUEST, string: method) }
        }

        var list: UnsafeMutablePointer<curl_slist>?
        var hasContentType = false
        for header in request.headers {
            if header.name.lowercased() == "content-type" { hasContentType = true }
            // "name;" is libcurl's syntax for a header with an empty value ("name:" removes it).
            let line = header.value.isEmpty ? "\(header.name);" : "\(header.name): \(header.value)"
            list = try append(list, line)
        }
        // No "Expect: 100-continue" round trip, and no invented form content type.
        list = try append(list, "Expect:")
        if sendsBody && !hasContentType { list = try append(list, "Content-Type:") }
        headerList = list
        try set(CURLOPT_HTTPHEADER, pointer: UnsafeMutableRawPointer(list))
    }

    private func append(_ list: UnsafeMutablePointer<curl_slist>?, _ line: String) throws(HTTPTransportError) -> UnsafeMutablePointer<curl_slist>? {
        guard let appended = curl_slist_append(list, line) else {
            if let list { curl_slist_free_all(list) }
            throw .other(code: Int(CURLE_OUT_OF_MEMORY.rawValue), message: "curl_slist_append failed")
        }
        return appended
    }

    private func storeBody(_ body: [UInt8]) throws(HTTPTransportError) {
        if body.count > bodyStorage.count {
            bodyStorage.deallocate()
            bodyStorage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(body.count, bodyStorage.count * 2), alignment: 1)
        }
        body.withUnsafeBytes { bodyStorage.copyMemory(from: $0) }
    }

    private func set(_ option: CURLoption, _ value: Int) throws(HTTPTransportError) {
        try check(pw_curl_easy_setopt_long(handle, option, value), "option \(option.rawValue)")
    }

    private func set(_ option: CURLoption, string: String) throws(HTTPTransportError) {
        try check(pw_curl_easy_setopt_str(handle, option, string), "option \(option.rawValue)")
    }

    private func set(_ option: CURLoption, pointer: UnsafeMutableRawPointer?) throws(HTTPTransportError) {
        try check(pw_curl_easy_setopt_ptr(handle, option, pointer), "option \(option.rawValue)")
    }

    private func check(_ code: CURLcode, _ what: String) throws(HTTPTransportError) {
        guard code == CURLE_OK else {
            let message = String(cString: curl_easy_strerror(code))
            throw CurlErrorMapping.setupError(code: code, message: "\(what): \(message)")
        }
    }

    // MARK: completion

    /// Builds the outcome of a finished transfer (the handle has left the multi handle),
    /// returns it with the completion to call, and leaves the object ready for reuse.
    func finish(_ code: CURLcode) -> (HTTPCompletion?, Result<HTTPResponse, HTTPTransportError>) {
        let completion = self.completion
        defer { releaseRequestState() }
        guard code == CURLE_OK else {
            if bodyOverflowed || code == CURLE_FILESIZE_EXCEEDED {
                return (completion, .failure(.protocolError("response body larger than \(maxResponseBodyBytes) bytes")))
            }
            let detail = errorBuffer[0] != 0 ? String(cString: errorBuffer) : String(cString: curl_easy_strerror(code))
            return (completion, .failure(CurlErrorMapping.transportError(code: code, detail: detail)))
        }
        var status = 0, version = 0, connects = 0
        var total = 0.0
        _ = pw_curl_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        _ = pw_curl_easy_getinfo_long(handle, CURLINFO_HTTP_VERSION, &version)
        _ = pw_curl_easy_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &connects)
        _ = pw_curl_easy_getinfo_double(handle, CURLINFO_TOTAL_TIME, &total)
        let body = responseBody
        responseBody = []
        let response = HTTPResponse(
            status: status, headers: responseHeaders, body: body,
            httpVersion: Self.httpVersion(curlValue: version), totalSeconds: total, connectionsOpened: connects
        )
        return (completion, .success(response))
    }

    /// Ends a transfer that will not complete (shutdown); the handle has left the multi handle.
    func abandon() -> HTTPCompletion? {
        let completion = self.completion
        releaseRequestState()
        responseBody = []
        return completion
    }

    private func releaseRequestState() {
        if let headerList {
            _ = pw_curl_easy_setopt_ptr(handle, CURLOPT_HTTPHEADER, nil)
            curl_slist_free_all(headerList)
            self.headerList = nil
        }
        completion = nil
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
        if responseBody.count + count > maxResponseBodyBytes {
            bodyOverflowed = true
            return 0 // makes libcurl fail the transfer with CURLE_WRITE_ERROR
        }
        responseBody.append(contentsOf: UnsafeRawBufferPointer(start: data, count: count))
        return count
    }

    fileprivate func appendHeaderLine(_ data: UnsafeMutablePointer<CChar>, _ count: Int) {
        let bytes = UnsafeRawBufferPointer(start: data, count: count)
        var end = count
        while end > 0 && (bytes[end - 1] == 0x0A || bytes[end - 1] == 0x0D) { end -= 1 }
        guard end > 0 else { return }
        let line = bytes[0..<end]
        if end >= 5 && line.starts(with: "HTTP/".utf8) {
            responseHeaders.removeAll(keepingCapacity: true) // a new (final or interim) response
            return
        }
        guard let colon = line.firstIndex(of: 0x3A) else { return }
        let name = String(decoding: line[line.startIndex..<colon], as: UTF8.self).lowercased()
        var valueStart = colon + 1
        while valueStart < end && (bytes[valueStart] == 0x20 || bytes[valueStart] == 0x09) { valueStart += 1 }
        var valueEnd = end
        while valueEnd > valueStart && (bytes[valueEnd - 1] == 0x20 || bytes[valueEnd - 1] == 0x09) { valueEnd -= 1 }
        let value = String(decoding: bytes[valueStart..<valueEnd], as: UTF8.self)
        responseHeaders.append(HTTPHeader(name: name, value: value))
    }
}

/// `CURLOPT_WRITEFUNCTION`: copies the chunk into the transfer's body buffer.
private let curlWriteCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = { data, size, count, user in
    guard let data, let user else { return 0 }
    return Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue().appendBody(data, size * count)
}

/// `CURLOPT_HEADERFUNCTION`: called once per complete header line (status line included).
private let curlHeaderCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = { data, size, count, user in
    guard let data, let user else { return 0 }
    Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue().appendHeaderLine(data, size * count)
    return size * count
}

extension Duration {
    /// Whole milliseconds, rounded up so that a tiny positive duration is not 0 ("none"
    /// for libcurl timeouts); negative durations count as 1 ms.
    var wholeMilliseconds: Int {
        let (seconds, attoseconds) = components
        let ms = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int(max(ms, 1))
    }
}
