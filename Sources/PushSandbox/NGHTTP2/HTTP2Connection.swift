import CNGHTTP2
import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// One accepted TCP connection: non-blocking TLS (OpenSSL) carrying an HTTP/2 server session (libnghttp2).
///
/// Owned by one ``EventLoop`` and used only on its thread. The nghttp2 session's user data is this
/// object, unretained: the session is deleted in `close()`/`deinit`, before the object goes away.
final class HTTP2Connection {
    let fd: Int32
    private let ssl: OpaquePointer
    private var session: OpaquePointer?
    private var isHandshaking = true
    private(set) var isClosed = false
    /// Streams by id, from their first HEADERS until nghttp2 closes them.
    fileprivate var streams: [Int32: HTTP2Stream] = [:]
    private var output: [UInt8] = []
    private var outputOffset = 0
    /// Whether epoll currently watches EPOLLOUT for this connection.
    var isWatchingWritable = false
    private unowned let loop: EventLoop
    /// This connection's number on its loop (``SandboxRequest/connectionID``).
    let number: Int
    /// SHA-256 (hex) of the verified client certificate, once the handshake is done.
    private(set) var clientCertificate: String?
    /// The connection carried a request to a provider path (not `/_sandbox/`): an outage closes it.
    var carriesProviderTraffic = false
    /// Close once the input being read is processed (``requestClose()``).
    private(set) var isCloseRequested = false
    /// The highest stream id handed to the router so far.
    private var highestDispatchedStreamID: Int32 = 0
    /// The last-stream-id of the `GOAWAY` sent, if one was: streams above it are not processed.
    private var goAwayLastStreamID: Int32?

    /// Coalesce outgoing frames into TLS records of about this size.
    private static let outputChunk = 16 * 1024
    /// SETTINGS_MAX_CONCURRENT_STREAMS advertised (APNs advertises 1000 after authentication).
    static let maxConcurrentStreams: UInt32 = 1000

    /// A connection on the accepted socket `fd`, or nil if OpenSSL cannot make an `SSL` for it
    /// (out of memory, or `SSL_set_fd` failing); the caller then still owns and closes `fd`.
    static func make(fd: Int32, tls: TLSServerContext, loop: EventLoop, number: Int) -> HTTP2Connection? {
        guard let ssl = SSL_new(tls.context) else {
            ERR_clear_error()
            return nil
        }
        guard SSL_set_fd(ssl, fd) == 1 else {
            // Nothing owns the SSL yet and it does not own the socket: free it alone.
            SSL_free(ssl)
            ERR_clear_error()
            return nil
        }
        SSL_set_accept_state(ssl)
        return HTTP2Connection(fd: fd, ssl: ssl, loop: loop, number: number)
    }

    /// Takes ownership of `ssl` and of the socket `fd` (closed in `close()` or `deinit`).
    private init(fd: Int32, ssl: OpaquePointer, loop: EventLoop, number: Int) {
        self.fd = fd
        self.ssl = ssl
        self.loop = loop
        self.number = number
    }

    deinit {
        if let session { nghttp2_session_del(session) }
        SSL_free(ssl)
        if !isClosed { Glibc.close(fd) }
    }

    /// Closes the socket and drops the session; pending streams are abandoned.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        if let session { nghttp2_session_del(session) }
        session = nil
        streams.removeAll()
        Glibc.close(fd)
    }

    /// Closes the connection as soon as no nghttp2 callback of it runs (after the input being
    /// read); until then no further request of it is processed or answered.
    func requestClose() { isCloseRequested = true }

    /// Answers `streamID` with `RST_STREAM` and `errorCode` instead of a response; call
    /// ``flush()`` afterwards.
    func resetStream(_ streamID: Int32, errorCode: nghttp2_error_code) {
        guard !isClosed, !isCloseRequested, let session, streams[streamID] != nil else { return }
        _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, errorCode.rawValue)
    }

    /// Answers `streamID` with a `GOAWAY` (`NO_ERROR`) whose last-stream-id is the client stream
    /// below it (RFC 9113 §6.8): it and every stream above are not processed; the lower ones are
    /// answered, then the connection closes (nghttp2 wants neither to read nor to write once
    /// none is left: ``flush()``). False (nothing sent) when a higher stream was already
    /// processed, which a last-stream-id below this one would disown, or a `GOAWAY` was sent.
    func goAway(refusing streamID: Int32) -> Bool {
        guard !isClosed, !isCloseRequested, let session, goAwayLastStreamID == nil, highestDispatchedStreamID < streamID else { return false }
        let last = max(0, streamID - 2)
        guard nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), last, NGHTTP2_NO_ERROR.rawValue, nil, 0) == 0 else { return false }
        goAwayLastStreamID = last
        return true
    }

    /// Called when epoll reports the socket readable or writable.
    func handleEvent() {
        if isLingering { return drainUntilClosed() }
        if isHandshaking {
            guard handshake() else { return }
        }
        readAvailable()
        flush()
    }

    /// After a failed handshake (a refused client certificate): OpenSSL has written its alert.
    /// With TLS 1.3 the client may already be sending its request; closing with that data
    /// unread would answer with a TCP reset, which can destroy the alert before the client
    /// reads it. So the write side is shut (FIN after the alert) and input is discarded until
    /// the client closes: it then reports the alert (`tlsv1 alert unknown ca`), as with APNs.
    private var isLingering = false

    private func lingerAfterAlert() {
        isLingering = true
        loop.watchWritable(self, false)
        _ = shutdown(fd, Int32(SHUT_WR))
        drainUntilClosed()
    }

    private func drainUntilClosed() {
        var scratch = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(fd, &scratch, scratch.count, Int32(MSG_DONTWAIT))
            if count > 0 { continue }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { return }
            close() // EOF, or the peer reset
            return
        }
    }

    /// Continues the TLS handshake; true once done and the HTTP/2 session exists.
    private func handshake() -> Bool {
        ERR_clear_error()
        let result = SSL_do_handshake(ssl)
        if result != 1 {
            let error = SSL_get_error(ssl, result)
            if error == SSL_ERROR_WANT_READ { loop.watchWritable(self, false); return false }
            if error == SSL_ERROR_WANT_WRITE { loop.watchWritable(self, true); return false }
            ERR_clear_error()
            lingerAfterAlert()
            return false
        }
        isHandshaking = false
        var selected: UnsafePointer<UInt8>?
        var selectedLength: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &selected, &selectedLength)
        guard let selected, selectedLength == 2, selected[0] == UInt8(ascii: "h"), selected[1] == UInt8(ascii: "2") else {
            close() // HTTP/2 over TLS requires ALPN "h2" (RFC 9113 §3.2).
            return false
        }
        guard startSession() else { close(); return false }
        clientCertificate = Self.peerFingerprint(ssl)
        return true
    }

    /// SHA-256 (hex) of the client's certificate, when it sent one (it was verified in the
    /// handshake: `SSL_VERIFY_PEER` fails the handshake otherwise).
    private static func peerFingerprint(_ ssl: OpaquePointer) -> String? {
        guard let peer = SSL_get1_peer_certificate(ssl) else { return nil }
        defer { X509_free(peer) }
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard X509_digest(peer, EVP_sha256(), &digest, &length) == 1 else { ERR_clear_error(); return nil }
        let hex = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in digest.prefix(Int(length)) { text.append(hex[Int(byte >> 4)]); text.append(hex[Int(byte & 0x0F)]) }
        return String(decoding: text, as: UTF8.self)
    }

    private func startSession() -> Bool {
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else { return false }
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, onBeginHeaders)
        nghttp2_session_callbacks_set_on_header_callback(callbacks, onHeader)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, onDataChunk)
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, onFrameReceived)
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, onStreamClose)
        var created: OpaquePointer?
        guard nghttp2_session_server_new(&created, callbacks, Unmanaged.passUnretained(self).toOpaque()) == 0, let created else { return false }
        session = created
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: Self.maxConcurrentStreams),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: 1 << 20),
        ]
        guard nghttp2_submit_settings(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count) == 0 else { return false }
        // Let the client send more than the default 64 KiB on the connection before a WINDOW_UPDATE.
        _ = nghttp2_session_set_local_window_size(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 16 << 20)
        return true
    }

    private func readAvailable() {
        guard !isClosed, let session else { return }
        let buffer = loop.readBuffer
        while true {
            ERR_clear_error()
            let count = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
            if count > 0 {
                let consumed = nghttp2_session_mem_recv(session, buffer.baseAddress, Int(count))
                if consumed < 0 || isClosed || isCloseRequested { close(); return }
                continue
            }
            let error = SSL_get_error(ssl, count)
            if error == SSL_ERROR_WANT_READ { return }
            if error == SSL_ERROR_WANT_WRITE { loop.watchWritable(self, true); return }
            ERR_clear_error()
            close()
            return
        }
    }

    /// Moves frames nghttp2 wants to send into TLS, as far as the socket takes them.
    func flush() {
        guard !isClosed, !isHandshaking, let session else { return }
        while true {
            if outputOffset < output.count {
                ERR_clear_error()
                let written = output.withUnsafeBytes { raw in
                    SSL_write(ssl, raw.baseAddress.map { $0 + outputOffset }, Int32(output.count - outputOffset))
                }
                if written > 0 {
                    outputOffset += Int(written)
                    if outputOffset == output.count { output.removeAll(keepingCapacity: true); outputOffset = 0 }
                    continue
                }
                let error = SSL_get_error(ssl, written)
                if error == SSL_ERROR_WANT_WRITE || error == SSL_ERROR_WANT_READ {
                    loop.watchWritable(self, true)
                    return
                }
                ERR_clear_error()
                close()
                return
            }
            // Gather frames up to one chunk, then write them as one TLS record.
            while output.count < Self.outputChunk {
                var data: UnsafePointer<UInt8>?
                let count = nghttp2_session_mem_send(session, &data)
                if count < 0 { close(); return }
                guard count > 0, let data else { break }
                output.append(contentsOf: UnsafeBufferPointer(start: data, count: count))
            }
            if output.isEmpty { break }
        }
        loop.watchWritable(self, false)
        if nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0 {
            close()
        }
    }

    /// Queues the response for `streamID` (if the stream is still open); call ``flush()`` afterwards.
    func respond(streamID: Int32, _ response: SandboxResponse) {
        guard !isClosed, !isCloseRequested, let session, let stream = streams[streamID] else { return }
        stream.responseBody = response.body
        stream.responseOffset = 0
        var names: [String] = [":status"]
        var values: [String] = [String(response.status)]
        for header in response.headers {
            names.append(header.name)
            values.append(header.value)
        }
        if !response.body.isEmpty {
            names.append("content-length")
            values.append(String(response.body.count))
        }
        // nghttp2 copies names and values during nghttp2_submit_response (no NO_COPY flags).
        var storage: [UInt8] = []
        var ranges: [(Int, Int, Int, Int)] = []
        for index in names.indices {
            let nameStart = storage.count
            storage.append(contentsOf: names[index].utf8)
            let valueStart = storage.count
            storage.append(contentsOf: values[index].utf8)
            ranges.append((nameStart, valueStart - nameStart, valueStart, storage.count - valueStart))
        }
        storage.append(0)
        storage.withUnsafeMutableBufferPointer { bytes in
            guard let base = bytes.baseAddress else { return }
            var headers = ranges.map { range in
                nghttp2_nv(name: base + range.0, value: base + range.2, namelen: range.1, valuelen: range.3, flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            if response.body.isEmpty {
                _ = nghttp2_submit_response(session, streamID, &headers, headers.count, nil)
            } else {
                var provider = nghttp2_data_provider(
                    source: nghttp2_data_source(ptr: Unmanaged.passUnretained(stream).toOpaque()),
                    read_callback: readResponseBody)
                _ = nghttp2_submit_response(session, streamID, &headers, headers.count, &provider)
            }
        }
    }

    fileprivate func requestCompleted(streamID: Int32) {
        guard let stream = streams[streamID], !stream.isDispatched, !isCloseRequested else { return }
        // After a GOAWAY, the streams above its last-stream-id are not processed (RFC 9113 §6.8).
        if let last = goAwayLastStreamID, streamID > last { return }
        stream.isDispatched = true
        var request = stream.request
        request.clientCertificate = clientCertificate
        request.connectionID = number
        stream.request = SandboxRequest()
        loop.dispatch(request, connection: self, streamID: streamID)
        highestDispatchedStreamID = max(highestDispatchedStreamID, streamID)
    }
}

/// Per-stream state: the request being received, then the response body being sent.
///
/// Lives in ``HTTP2Connection/streams`` until nghttp2 reports the stream closed; the data
/// provider refers to it unretained, which is safe because nghttp2 stops reading a stream before closing it.
final class HTTP2Stream {
    var request = SandboxRequest()
    var isDispatched = false
    var responseBody: [UInt8] = []
    var responseOffset = 0
    /// Header fields accepted per request; more are ignored.
    static let maximumHeaders = 64
}

private func connection(_ userData: UnsafeMutableRawPointer?) -> HTTP2Connection? {
    guard let userData else { return nil }
    return Unmanaged<HTTP2Connection>.fromOpaque(userData).takeUnretainedValue()
}

private let onBeginHeaders: nghttp2_on_begin_headers_callback = { _, frame, userData in
    guard let frame, let owner = connection(userData) else { return 0 }
    if frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue), frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST {
        owner.streams[frame.pointee.hd.stream_id] = HTTP2Stream()
    }
    return 0
}

private let onHeader: nghttp2_on_header_callback = { _, frame, name, nameLength, value, valueLength, _, userData in
    guard let frame, let name, let value, let owner = connection(userData),
          let stream = owner.streams[frame.pointee.hd.stream_id] else { return 0 }
    let nameText = String(decoding: UnsafeBufferPointer(start: name, count: nameLength), as: UTF8.self)
    let valueText = String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self)
    switch nameText {
    case ":method": stream.request.method = valueText
    case ":path": stream.request.path = valueText
    case ":authority": stream.request.authority = valueText
    case ":scheme": break
    default:
        if stream.request.headers.count < HTTP2Stream.maximumHeaders {
            stream.request.headers.append((name: nameText, value: valueText))
        }
    }
    return 0
}

private let onDataChunk: nghttp2_on_data_chunk_recv_callback = { _, _, streamID, data, length, userData in
    guard let data, let owner = connection(userData), let stream = owner.streams[streamID] else { return 0 }
    stream.request.bodyLength += length
    let room = SandboxRequest.maximumBodyBytes - stream.request.body.count
    if length > room { stream.request.isBodyTruncated = true }
    if room > 0 { stream.request.body.append(contentsOf: UnsafeBufferPointer(start: data, count: min(room, length))) }
    return 0
}

private let onFrameReceived: nghttp2_on_frame_recv_callback = { _, frame, userData in
    guard let frame, let owner = connection(userData) else { return 0 }
    let type = frame.pointee.hd.type
    let isEndStream = frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
    if isEndStream, type == UInt8(NGHTTP2_HEADERS.rawValue) || type == UInt8(NGHTTP2_DATA.rawValue) {
        owner.requestCompleted(streamID: frame.pointee.hd.stream_id)
    }
    return 0
}

private let onStreamClose: nghttp2_on_stream_close_callback = { _, streamID, _, userData in
    connection(userData)?.streams[streamID] = nil
    return 0
}

private let readResponseBody: nghttp2_data_source_read_callback = { _, _, buffer, length, flags, source, _ in
    guard let buffer, let flags, let pointer = source?.pointee.ptr else { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }
    let stream = Unmanaged<HTTP2Stream>.fromOpaque(pointer).takeUnretainedValue()
    let remaining = stream.responseBody.count - stream.responseOffset
    let count = min(remaining, length)
    if count > 0 {
        stream.responseBody.withUnsafeBytes { raw in
            if let base = raw.baseAddress { buffer.update(from: base.assumingMemoryBound(to: UInt8.self) + stream.responseOffset, count: count) }
        }
        stream.responseOffset += count
    }
    if stream.responseOffset >= stream.responseBody.count {
        flags.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue)
    }
    return count
}
