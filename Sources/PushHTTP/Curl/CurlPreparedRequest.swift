import CCurl
import CPushCurl
#if canImport(Glibc)
import Glibc
#endif

/// A request as the I/O thread hands it to libcurl, built and checked once, on the thread that
/// submits it (``HTTP2Client/submit(_:completion:)``), so the I/O thread only points its easy
/// handle at it: ``HTTPRequestValidation`` passed, `http://` checked against the client, and
/// one buffer holding the `curl_slist` of `CURLOPT_HTTPHEADER` (nodes and `name: value` lines,
/// NUL-terminated, with libcurl's default `Accept:`, form `Content-Type:` and `Expect:` removed
/// where they would apply), the URL (a C string; where its path starts and whether the path is
/// plain is worked out here, see `CurlTransfer.setURL`) and the body (`CURLOPT_POSTFIELDS`).
///
/// libcurl only reads the list and the body (it neither copies nor frees them) and needs them
/// until the transfer ends: the transfer holds this object until then. Immutable after `init`;
/// the buffer is freed in `deinit`.
final class CurlPreparedRequest: @unchecked Sendable {
    /// How the method is set on the handle.
    enum Method: Equatable {
        /// `CURLOPT_POSTFIELDS` (the body, possibly empty); `custom` names a method other than POST.
        case body(custom: String?)
        /// `CURLOPT_NOBODY`.
        case head
        /// `CURLOPT_HTTPGET`; `custom` names a method other than GET (DELETE, OPTIONS …).
        case noBody(custom: String?)
    }

    private let storage: UnsafeMutableRawPointer
    /// The header list, nil when empty: the request's own lines, then those of its shared
    /// block (whose nodes it links to, so a request with no line of its own points libcurl
    /// at the block itself).
    let headers: UnsafeMutablePointer<curl_slist>?
    let headerCount: Int
    /// ``HTTPRequest/sharedHeaders``, kept alive while libcurl may read its lines.
    let sharedHeaders: HTTPHeaderBlock?
    /// The URL, NUL-terminated, and its length.
    let url: UnsafePointer<CChar>
    let urlCount: Int
    /// Where the path starts (``CurlTransfer/pathStart(_:)``), nil: none.
    let pathStart: Int?
    /// The path is at least `/x` and kept byte for byte by libcurl's parser (``CurlTransfer/isPlainPath(_:)``).
    let hasPlainPath: Bool
    /// Neither `?` nor `#` anywhere in the URL.
    let hasNoQueryOrFragment: Bool
    let body: UnsafeMutableRawPointer
    let bodyCount: Int
    let method: Method
    let cleartext: Bool
    let timeoutMS: Int
    let connectPolicy: ConnectAddressPolicy?
    let clientCertificate: ClientCertificate?
    /// ``HTTPRequest/responseHeaders``, lower-cased (nil: all).
    let responseHeaders: [String]?

    /// Throws `.invalidRequest` for what no transfer may send (``HTTPRequestValidation``, and
    /// `http://` unless the client allows h2c).
    convenience init(_ request: HTTPRequest, settings: TransferSettings) throws(HTTPTransportError) {
        try self.init(request, allowCleartextHTTP2: settings.allowCleartextHTTP2, requestTimeoutMS: settings.requestTimeoutMS)
    }

    /// `allowCleartextHTTP2` and `requestTimeoutMS`: the client's (``TransferSettings``).
    init(_ request: HTTPRequest, allowCleartextHTTP2: Bool, requestTimeoutMS: Int) throws(HTTPTransportError) {
        // HTTPRequestValidation.validate, with the headers checked in the loop that measures them.
        try HTTPRequestValidation.validateMethodAndURL(request)
        let cleartext = CurlTransfer.isCleartext(request.url)
        if cleartext && !allowCleartextHTTP2 {
            throw .invalidRequest("http:// URLs are not allowed (TLS only)")
        }
        self.cleartext = cleartext
        timeoutMS = request.timeout.map(\.wholeMilliseconds) ?? requestTimeoutMS
        connectPolicy = request.connectPolicy
        clientCertificate = request.clientCertificate
        // Kept as given (no copy) when already lower-case, as callers' lists are.
        responseHeaders = request.responseHeaders.map { names in
            let isLowercase = names.allSatisfy { name in !name.utf8.contains { $0 >= 0x41 && $0 <= 0x5A } }
            return isLowercase ? names : names.map { String($0.lowercased()) }
        }

        let methodName = request.method
        let sendsBody = !request.body.isEmpty || methodName == "POST" || methodName == "PUT" || methodName == "PATCH"
        if sendsBody {
            method = .body(custom: methodName == "POST" ? nil : methodName)
        } else if methodName == "HEAD" {
            method = .head
        } else {
            method = .noBody(custom: methodName == "GET" ? nil : methodName)
        }

        // Only the headers the request asked for: libcurl's default "Accept: */*" and its
        // invented form content type are removed ("Name:" lines), and "Expect: 100-continue"
        // (which libcurl adds only over HTTP/1.1, above 1 MiB) is refused where it could apply.
        // A shared block removed (or set) both already (``CurlHeaderLines``).
        let shared = request.sharedHeaders
        sharedHeaders = shared
        let own = try HeaderMeasure(request.headers)
        var lines = own.lines, lineBytes = own.lineBytes
        let hasAccept = own.hasAccept || shared != nil, hasContentType = own.hasContentType || shared != nil
        let removeContentType = sendsBody && !hasContentType
        let removeExpect = request.body.count > CurlTransfer.expectThreshold
        if !hasAccept { lines += 1; lineBytes += 8 }           // "Accept:"
        if removeContentType { lines += 1; lineBytes += 14 }   // "Content-Type:"
        if removeExpect { lines += 1; lineBytes += 8 }         // "Expect:"

        let urlCount = request.url.utf8.count
        let nodeBytes = lines * MemoryLayout<curl_slist>.stride
        let total = nodeBytes + lineBytes + urlCount + 1 + request.body.count
        storage = pw_curl_storage_alloc(total)
        let nodes = storage.bindMemory(to: curl_slist.self, capacity: lines)
        let bytes = (storage + nodeBytes).bindMemory(to: UInt8.self, capacity: total - nodeBytes)
        var writer = CurlHeaderWriter(nodes: nodes, bytes: bytes)
        for header in request.headers { writer.append(name: header.name, value: header.value) }
        if !hasAccept { writer.append(line: "Accept:") }
        if removeContentType { writer.append(line: "Content-Type:") }
        if removeExpect { writer.append(line: "Expect:") }
        if lines > 0 {
            nodes[lines - 1].next = shared?.lines.head
            headers = nodes
        } else {
            headers = shared?.lines.head
        }
        headerCount = lines + (shared?.lines.count ?? 0)

        let urlStart = writer.used
        writer.copy(request.url)
        writer.put(0)
        let urlBytes = UnsafeBufferPointer(start: bytes + urlStart, count: urlCount)
        url = UnsafeRawPointer(bytes + urlStart).assumingMemoryBound(to: CChar.self)
        self.urlCount = urlCount
        let start = CurlTransfer.pathStart(urlBytes)
        pathStart = start
        hasNoQueryOrFragment = memchr(bytes + urlStart, Int32(UInt8(ascii: "?")), urlCount) == nil
            && memchr(bytes + urlStart, Int32(UInt8(ascii: "#")), urlCount) == nil
        if let start, urlCount - start >= 2 {
            hasPlainPath = CurlTransfer.isPlainPath(UnsafeBufferPointer(rebasing: urlBytes[start...]))
        } else {
            hasPlainPath = false
        }

        body = UnsafeMutableRawPointer(bytes + writer.used)
        bodyCount = request.body.count
        request.body.withUnsafeBytes { source in
            if let base = source.baseAddress { body.copyMemory(from: base, byteCount: source.count) }
        }
    }

    deinit { pw_curl_storage_free(storage) }

    /// Bytes a `name: value` line takes, NUL included (`name;` for an empty value).
    static func lineBytes(name: String, value: String) -> Int {
        name.utf8.count + (value.isEmpty ? 1 : 2 + value.utf8.count) + 1
    }

    /// The header lines as libcurl reads them (tests).
    var headerLines: [String] {
        var lines: [String] = []
        var node = headers
        while let current = node {
            lines.append(current.pointee.data.map { String(cString: $0) } ?? "<nil>")
            node = current.pointee.next
        }
        return lines
    }

}

/// Header lines checked and laid out once for many requests (``HTTPHeaderBlock``): the
/// `curl_slist` nodes and their NUL-terminated lines in one buffer, followed by the lines that
/// remove libcurl's default `Accept:` and form `Content-Type:` when the block sets neither. A
/// request's own nodes link to `head`; nothing writes to the buffer after `init`, so any number
/// of transfers read it at once. (Removing `Content-Type` where no body is sent removes what
/// libcurl would not have added.)
final class CurlHeaderLines: @unchecked Sendable {
    private let storage: UnsafeMutableRawPointer
    let head: UnsafeMutablePointer<curl_slist>?
    let count: Int

    init(_ headers: [HTTPHeader]) throws(HTTPTransportError) {
        let measure = try HeaderMeasure(headers)
        let hasAccept = measure.hasAccept, hasContentType = measure.hasContentType
        var lines = measure.lines, lineBytes = measure.lineBytes
        if !hasAccept { lines += 1; lineBytes += 8 }         // "Accept:"
        if !hasContentType { lines += 1; lineBytes += 14 }   // "Content-Type:"
        let nodeBytes = lines * MemoryLayout<curl_slist>.stride
        storage = pw_curl_storage_alloc(nodeBytes + lineBytes)
        let nodes = storage.bindMemory(to: curl_slist.self, capacity: lines)
        let bytes = (storage + nodeBytes).bindMemory(to: UInt8.self, capacity: lineBytes)
        var writer = CurlHeaderWriter(nodes: nodes, bytes: bytes)
        for header in headers { writer.append(name: header.name, value: header.value) }
        if !hasAccept { writer.append(line: "Accept:") }
        if !hasContentType { writer.append(line: "Content-Type:") }
        head = nodes
        count = lines
    }

    deinit { pw_curl_storage_free(storage) }
}

/// Header fields checked (``HTTPRequestValidation``) and measured for a ``CurlHeaderWriter``:
/// the lines and bytes they take, and whether they set `Accept` or `Content-Type`.
struct HeaderMeasure {
    var lines = 0
    var lineBytes = 0
    var hasAccept = false
    var hasContentType = false

    @inline(__always)
    init(_ headers: [HTTPHeader]) throws(HTTPTransportError) {
        for header in headers {
            try HTTPRequestValidation.validate(header)
            lines += 1
            lineBytes += CurlPreparedRequest.lineBytes(name: header.name, value: header.value)
            if CurlTransfer.isContentType(header.name) { hasContentType = true } else if CurlTransfer.isAccept(header.name) { hasAccept = true }
        }
    }
}

/// Fills a node array and its line bytes (room made by the caller).
struct CurlHeaderWriter {
    let nodes: UnsafeMutablePointer<curl_slist>
    let bytes: UnsafeMutablePointer<UInt8>
    var count = 0
    var used = 0

    /// Appends the line `name: value`, or `name;` for an empty value (libcurl's syntax for a
    /// header sent with no value; `name:` would remove it).
    mutating func append(name: String, value: String) {
        let start = used
        copy(name)
        if value.isEmpty {
            put(UInt8(ascii: ";"))
        } else {
            put(UInt8(ascii: ":"))
            put(UInt8(ascii: " "))
            copy(value)
        }
        finishLine(from: start)
    }

    /// Appends a fixed line such as `Expect:`.
    mutating func append(line: StaticString) {
        let start = used
        line.withUTF8Buffer { source in
            guard let base = source.baseAddress else { return }
            (bytes + used).update(from: base, count: source.count)
            used += source.count
        }
        finishLine(from: start)
    }

    private mutating func finishLine(from start: Int) {
        put(0)
        let node = nodes + count
        node.initialize(to: curl_slist(data: UnsafeMutableRawPointer(bytes + start).assumingMemoryBound(to: CChar.self), next: nil))
        if count > 0 { (node - 1).pointee.next = node }
        count += 1
    }

    @inline(__always)
    mutating func put(_ byte: UInt8) {
        bytes[used] = byte
        used += 1
    }

    mutating func copy(_ text: String) {
        let copied = text.utf8.withContiguousStorageIfAvailable { source -> Int in
            if let base = source.baseAddress { (bytes + used).update(from: base, count: source.count) }
            return source.count
        }
        if let copied {
            used += copied
        } else {
            for byte in text.utf8 { put(byte) }
        }
    }
}
