import CMicroHTTPD
import CPushHTTPD
import Foundation
import PushCore
import Synchronization

/// A small HTTP/1.1 server over libmicrohttpd (its own polling thread) for `/metrics`,
/// `/healthz`, `/readyz`, the tracking endpoint, the sandbox inbox and the operators' HTTP API.
/// Handlers are synchronous. HTTP/1.1 keep-alive; request bodies (at most
/// ``Limits/maximumBodyBytes``) are read and discarded, or with ``Limits/collectsBodies`` handed
/// to the handler in ``Request/body``; `threads` > 1 runs a pool of polling threads (MHD's
/// thread pool), each calling the handler. Every connection is held to ``Limits``: header
/// size, body size, idle time, connections per client address.
/// With `allowsStreaming`, a handler may answer with an ``HTTPResponseStream`` (Server-Sent
/// Events): the body is written later, from any thread.
public final class HTTPListener: Sendable {
    public struct Request: Sendable {
        public var method: String
        /// The path, without the query string: percent-decoded by libmicrohttpd, or as sent with
        /// ``Limits/rawPaths``.
        public var path: String
        public var clientAddress: String
        /// The headers named in the listener's `headerNames`, by lower-case name; a header sent
        /// on several lines is one value, the lines joined with ", " in order (RFC 9110 §5.3).
        public var headers: [String: String]
        /// Query parameters, percent-decoded by libmicrohttpd (the first value of a repeated name;
        /// left escaped with ``Limits/rawPaths``).
        public var query: [String: String]
        /// The request body with ``Limits/collectsBodies`` (at most ``Limits/maximumBodyBytes``);
        /// empty otherwise.
        public var body: [UInt8]
        public init(method: String, path: String, clientAddress: String, headers: [String: String], query: [String: String] = [:],
                    body: [UInt8] = []) {
            self.method = method; self.path = path; self.clientAddress = clientAddress; self.headers = headers; self.query = query
            self.body = body
        }
    }

    public struct Response: Sendable {
        public var status: Int
        public var contentType: String
        public var body: [UInt8]
        public var headers: [(String, String)]
        /// When set, `body` is ignored and the response body is whatever is written to the
        /// stream until it is finished (chunked transfer encoding).
        public var stream: HTTPResponseStream?
        public init(status: Int, contentType: String = "text/plain; charset=utf-8", body: String = "", headers: [(String, String)] = []) {
            self.status = status; self.contentType = contentType; self.body = Array(body.utf8); self.headers = headers
        }
        public init(status: Int, contentType: String, bytes: [UInt8], headers: [(String, String)] = []) {
            self.status = status; self.contentType = contentType; self.body = bytes; self.headers = headers
        }
        /// A streamed response (`text/event-stream` for Server-Sent Events).
        public static func streaming(_ stream: HTTPResponseStream, contentType: String, headers: [(String, String)] = []) -> Response {
            var response = Response(status: 200, contentType: contentType, headers: headers)
            response.stream = stream
            return response
        }
    }

    public typealias Handler = @Sendable (Request) -> Response

    /// What one connection may cost (docs/security.md): every limit is enforced
    /// by libmicrohttpd or by the access handler before the request reaches the `Handler`.
    public struct Limits: Sendable {
        /// Connections at once, all clients; more are refused at accept. Default: 10,000.
        public var maximumConnections: UInt32 = 10_000
        /// Connections at once from one client address (the socket's peer); more are refused at
        /// accept. 0: no cap. Default: 0 (the tracking endpoint sets `EVENT_CONNECTIONS_PER_IP`).
        public var connectionsPerAddress: UInt32 = 0
        /// Seconds a connection may be idle — between requests, or in the middle of one (a
        /// client that sends half a request and waits) — before it is closed. Default: 30.
        public var idleTimeoutSeconds: UInt32 = 30
        /// Bytes libmicrohttpd may use per connection: the request line and headers must fit in
        /// about half of it; a larger request is answered 431 (414 for a long URL) and closed.
        /// Default: 16 KiB (headers up to ≈ 8 KiB, like nginx's default).
        public var connectionMemoryBytes: Int = 16 << 10
        /// Bytes of request body accepted (bodies are read and discarded): a request declaring a
        /// larger `Content-Length` is answered 413 before any of the body is read; a chunked body
        /// that grows past it is answered 413 (or the connection closed). Default: 4 KiB.
        public var maximumBodyBytes: Int = 4 << 10
        /// Keep request bodies for the handler (``Request/body``) instead of discarding them.
        /// Default: false.
        public var collectsBodies = false
        /// Hand the handler the path as sent (percent-escapes kept, ``Request/path``) so it can
        /// split segments before decoding them. Default: false (libmicrohttpd decodes it).
        public var rawPaths = false
        /// The answer to a body over ``maximumBodyBytes`` (its `Connection: close` is added).
        /// Default: 413 `request body too large`, plain text.
        public var bodyTooLarge = Response(status: 413, body: "request body too large\n")

        public init() {}
    }

    /// The handler and the listener's settings, read by the access callback through the
    /// daemon's (unretained) context; `streams` holds the streamed responses in progress.
    fileprivate final class Box: Sendable {
        let handler: Handler
        let allowsStreaming: Bool
        let limits: Limits
        /// Request headers passed to the handler: the name looked up (case-insensitively) and its lower-case key.
        let headerNames: [(lookup: String, key: String)]
        let streams = Mutex<[ObjectIdentifier: HTTPResponseStream]>([:])
        init(handler: @escaping Handler, allowsStreaming: Bool, limits: Limits, headerNames: [String]) {
            self.handler = handler; self.allowsStreaming = allowsStreaming; self.limits = limits
            self.headerNames = headerNames.map { ($0, $0.lowercased()) }
        }

        /// Ends every stream in progress (libmicrohttpd must not stop with a suspended connection).
        func finishStreams() {
            for stream in streams.withLock({ Array($0.values) }) { stream.finish() }
        }
    }

    /// The running daemon; nil once stopped. Stopping drops it, and its `deinit` stops MHD.
    private let daemon: Mutex<MHDDaemon?>
    /// The bound port (useful with port 0).
    public let port: UInt16

    /// Starts listening on `address` (`host:port`, IPv4; `0.0.0.0` for all). Throws if the
    /// address is not IPv4 or MHD cannot listen there (port in use, no permission).
    /// - Parameters:
    ///   - allowsStreaming: enables suspend/resume, needed for ``HTTPResponseStream`` answers.
    ///   - limits: what one connection may cost (``Limits``). Default: ``Limits/init()``.
    ///   - headerNames: the request headers the handler sees in ``Request/headers``. Default:
    ///     `X-Forwarded-For`.
    public init(address: HostPort, threads: UInt32 = 1, allowsStreaming: Bool = false, limits: Limits = Limits(),
                headerNames: [String] = ["X-Forwarded-For"], handler: @escaping Handler) throws {
        let host = address.host == "localhost" ? "127.0.0.1" : address.host
        let box = Box(handler: handler, allowsStreaming: allowsStreaming, limits: limits, headerNames: headerNames)
        let started = try MHDDaemon.start(host: host, port: address.port, threads: threads, box: box,
                                          describing: "\(address.host):\(address.port)")
        port = started.port
        daemon = Mutex(started)
    }

    public struct ListenerError: Error, CustomStringConvertible, Sendable {
        public let message: String
        public var description: String { message }
    }

    /// Stops the listener and its threads (idempotent); streams in progress are finished first.
    /// Not from inside a handler: MHD waits for its polling threads, one of which would be the caller.
    public func stop() {
        let running = daemon.withLock { $0.take() }
        _ = running  // released here, outside the lock: its deinit stops the daemon
    }

    fileprivate static func handle(_ connection: OpaquePointer?, context: UnsafeMutableRawPointer?, url: UnsafePointer<CChar>?,
                                   method: UnsafePointer<CChar>?, uploadData: UnsafePointer<CChar>?, uploadSize: UnsafeMutablePointer<Int>?,
                                   requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> MHD_Result {
        guard let context, let connection, let requestContext else { return .NO }
        let box = Unmanaged<Box>.fromOpaque(context).takeUnretainedValue()
        // MHD calls the handler first with only the headers, then once per chunk of body, then a
        // last time with no data. Answering on the first call makes MHD close the connection
        // (no keep-alive), so the first call only marks the request as seen — unless it declares
        // a body too large, which is answered at once, before a byte of it is read. The answer
        // goes out on the last call.
        var body: [UInt8] = []
        if box.limits.collectsBodies {
            switch collect(connection, box: box, uploadData: uploadData, uploadSize: uploadSize, requestContext: requestContext) {
            case .answered(let result): return result
            case .complete(let bytes): body = bytes
            }
        } else if let result = discard(connection, box: box, uploadSize: uploadSize, requestContext: requestContext) {
            return result
        }
        var addressBuffer = [CChar](repeating: 0, count: 64)
        let clientAddress = pw_httpd_client_address(connection, &addressBuffer, 64) == 0
            ? String(decoding: addressBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
        var headers: [String: String] = [:]
        for name in box.headerNames {
            if let value = headerValues(connection, name.lookup) { headers[name.key] = value }
        }
        let request = Request(method: method.map { String(cString: $0) } ?? "", path: url.map { String(cString: $0) } ?? "/",
                              clientAddress: clientAddress, headers: headers, query: queryArguments(connection), body: body)
        let answer = box.handler(request)
        if let stream = answer.stream {
            return queueStream(stream, answer: answer, connection: connection, box: box)
        }
        let response = answer.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let response else { return .NO }
        defer { MHD_destroy_response(response) }
        addHeaders(response, answer)
        return MHD_queue_response(connection, UInt32(answer.status), response)
    }

    /// A listener that takes no bodies: `requestContext` holds 1 + the body bytes seen so far
    /// (an integer, never dereferenced); bodies are counted and discarded. nil on the last call
    /// (the request is complete), else what to return to MHD.
    private static func discard(_ connection: OpaquePointer, box: Box, uploadSize: UnsafeMutablePointer<Int>?,
                                requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> MHD_Result? {
        if requestContext.pointee == nil {
            requestContext.pointee = UnsafeMutableRawPointer(bitPattern: 1)
            if let declared = MHD_lookup_connection_value(connection, .HEADER_KIND, "Content-Length"),
               Self.exceeds(declared, box.limits.maximumBodyBytes) {
                return answer(connection, box.limits.bodyTooLarge)
            }
            return .YES
        }
        if let uploadSize, uploadSize.pointee > 0 {
            let seen = Int(bitPattern: requestContext.pointee) - 1 + uploadSize.pointee
            uploadSize.pointee = 0
            requestContext.pointee = UnsafeMutableRawPointer(bitPattern: min(seen, Int.max - 1) + 1)
            if seen > box.limits.maximumBodyBytes {
                // A chunked body (no Content-Length) that grew too large: answer if MHD lets us
                // now, else close the connection.
                return answer(connection, box.limits.bodyTooLarge)
            }
            return .YES
        }
        return nil
    }

    /// What ``collect(_:box:uploadData:uploadSize:requestContext:)`` made of one call.
    private enum BodyStep {
        /// Return this to MHD (more body to come, or the request was answered already).
        case answered(MHD_Result)
        /// The last call: the whole body.
        case complete([UInt8])
    }

    /// A listener that collects bodies: `requestContext` holds a retained ``RequestBody``
    /// (released by the request-completed callback, whether or not the request completes). A
    /// declared `Content-Length` over the limit is answered before a byte is read; a body that
    /// grows past it (chunked, or longer than declared) is answered as soon as it does.
    private static func collect(_ connection: OpaquePointer, box: Box, uploadData: UnsafePointer<CChar>?,
                                uploadSize: UnsafeMutablePointer<Int>?,
                                requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> BodyStep {
        let maximum = box.limits.maximumBodyBytes
        guard let pointer = requestContext.pointee else {
            let body = RequestBody()
            requestContext.pointee = Unmanaged.passRetained(body).toOpaque()
            if let declared = MHD_lookup_connection_value(connection, .HEADER_KIND, "Content-Length"), Self.exceeds(declared, maximum) {
                body.refused = true
                return .answered(answer(connection, box.limits.bodyTooLarge))
            }
            return .answered(.YES)
        }
        let body = Unmanaged<RequestBody>.fromOpaque(pointer).takeUnretainedValue()
        if let uploadSize, uploadSize.pointee > 0 {
            let count = uploadSize.pointee
            uploadSize.pointee = 0
            if body.refused { return .answered(.YES) }
            guard count <= maximum - body.bytes.count else {
                body.refused = true
                body.bytes = []
                return .answered(answer(connection, box.limits.bodyTooLarge))
            }
            if let uploadData { body.bytes.append(contentsOf: UnsafeRawBufferPointer(start: UnsafeRawPointer(uploadData), count: count)) }
            return .answered(.YES)
        }
        // A refused request was answered already; MHD does not call again for it (close if it does).
        if body.refused { return .answered(.NO) }
        defer { body.bytes = [] }
        return .complete(body.bytes)
    }

    /// Whether a `Content-Length` value is a number above `maximum` (a malformed one is MHD's to refuse).
    static func exceeds(_ declared: UnsafePointer<CChar>, _ maximum: Int) -> Bool {
        var value = 0
        var pointer = declared
        while pointer.pointee == 0x20 || pointer.pointee == 0x09 { pointer += 1 }
        while pointer.pointee >= 0x30 && pointer.pointee <= 0x39 {
            value = value * 10 + Int(pointer.pointee - 0x30)
            if value > maximum { return true }
            pointer += 1
        }
        return false
    }

    /// Queues an answer before the request's body is read (413), with `Connection: close`: MHD
    /// closes the connection after it. `.NO` (close at once) if MHD refuses to queue it.
    private static func answer(_ connection: OpaquePointer, _ answer: Response) -> MHD_Result {
        let response = answer.body.withUnsafeBytes {
            MHD_create_response_from_buffer($0.count, UnsafeMutableRawPointer(mutating: $0.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let response else { return .NO }
        defer { MHD_destroy_response(response) }
        addHeaders(response, answer)
        _ = MHD_add_response_header(response, "Connection", "close")
        return MHD_queue_response(connection, UInt32(answer.status), response)
    }

    /// Every line of header `name`, joined with ", " (pw_httpd_header_values); nil when absent.
    private static func headerValues(_ connection: OpaquePointer, _ name: String) -> String? {
        let length = pw_httpd_header_values(connection, name, nil, 0)
        guard length >= 0 else { return nil }
        guard length > 0 else { return "" }
        var buffer = [CChar](repeating: 0, count: length + 1)
        guard pw_httpd_header_values(connection, name, &buffer, buffer.count) == length else { return nil }
        return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func addHeaders(_ response: OpaquePointer, _ answer: Response) {
        _ = MHD_add_response_header(response, "Content-Type", answer.contentType)
        for (name, value) in answer.headers { _ = MHD_add_response_header(response, name, value) }
    }

    /// The GET arguments MHD parsed from the URL (percent-decoded).
    private static func queryArguments(_ connection: OpaquePointer) -> [String: String] {
        // Counting first keeps the common case (no query: tracking pings, /metrics) allocation-free.
        guard MHD_get_connection_values(connection, .GET_ARGUMENT_KIND, nil, nil) > 0 else { return [:] }
        let collector = QueryCollector()
        let context = Unmanaged.passUnretained(collector).toOpaque()
        _ = MHD_get_connection_values(connection, .GET_ARGUMENT_KIND, { context, _, key, value in
            guard let context, let key else { return .YES }
            let collector = Unmanaged<QueryCollector>.fromOpaque(context).takeUnretainedValue()
            let name = String(cString: key)
            if collector.values[name] == nil { collector.values[name] = value.map { String(cString: $0) } ?? "" }
            return .YES
        }, context)
        return collector.values
    }

    /// Answers with a body produced by `stream`: MHD pulls it through the content reader,
    /// which suspends the connection while nothing is pending; ``HTTPResponseStream/write(_:)``
    /// resumes it.
    private static func queueStream(_ stream: HTTPResponseStream, answer: Response, connection: OpaquePointer, box: Box) -> MHD_Result {
        guard box.allowsStreaming else {
            stream.finish()
            let body = Array("streaming is not enabled on this listener\n".utf8)
            let response = body.withUnsafeBytes { MHD_create_response_from_buffer($0.count, UnsafeMutableRawPointer(mutating: $0.baseAddress), .RESPMEM_MUST_COPY) }
            guard let response else { return .NO }
            defer { MHD_destroy_response(response) }
            return MHD_queue_response(connection, 500, response)
        }
        stream.attach(connection: connection)
        let identifier = ObjectIdentifier(stream)
        box.streams.withLock { $0[identifier] = stream }
        stream.setCloseHandler { [weak box] in _ = box?.streams.withLock { $0.removeValue(forKey: identifier) } }
        // One retain for MHD, given back in the free callback (also when queueing fails:
        // MHD_destroy_response below drops the last reference and calls it).
        let context = Unmanaged.passRetained(stream).toOpaque()
        guard let response = MHD_create_response_from_callback(pw_mhd_size_unknown(), 4096, httpStreamReader, context, httpStreamFree) else {
            Unmanaged<HTTPResponseStream>.fromOpaque(context).takeRetainedValue().released()
            return .NO
        }
        defer { MHD_destroy_response(response) }
        addHeaders(response, answer)
        return MHD_queue_response(connection, UInt32(answer.status), response)
    }
}

/// Thread safety: used only during one `MHD_get_connection_values` call, on the calling thread.
private final class QueryCollector: @unchecked Sendable {
    var values: [String: String] = [:]
}

/// The body of one request received so far (``HTTPListener/Limits/collectsBodies``).
/// Thread safety: touched only by the access handler, which MHD calls for one connection from
/// one polling thread at a time, and released by the request-completed callback after it.
final class RequestBody: @unchecked Sendable {
    var bytes: [UInt8] = []
    /// Answered 413: the rest of the body is dropped.
    var refused = false
}

private let httpListenerAccessHandler: MHD_AccessHandlerCallback = { context, connection, url, method, _, uploadData, uploadSize, requestContext in
    HTTPListener.handle(connection, context: context, url: url, method: method, uploadData: uploadData, uploadSize: uploadSize,
                        requestContext: requestContext)
}

/// Releases a request's ``RequestBody`` (registered only on listeners that collect bodies).
private let httpListenerRequestCompleted: MHD_RequestCompletedCallback = { _, _, requestContext, _ in
    guard let requestContext, let pointer = requestContext.pointee else { return }
    requestContext.pointee = nil
    Unmanaged<RequestBody>.fromOpaque(pointer).release()
}

/// Owns one running `MHD_Daemon`, built by ``start(host:port:threads:box:describing:)`` (the daemon
/// first, then this owner around it); stopped only in `deinit`. The daemon's callback context
/// is `box`, unretained: this object holds the box until `MHD_stop_daemon` has joined every
/// polling thread, so no callback sees it freed.
private final class MHDDaemon {
    private let handle: OpaquePointer
    private let box: HTTPListener.Box

    static func start(host: String, port: UInt16, threads: UInt32, box: HTTPListener.Box,
                      describing address: String) throws(HTTPListener.ListenerError) -> MHDDaemon {
        let context = Unmanaged.passUnretained(box).toOpaque()
        var limits = pw_httpd_limits(connection_limit: box.limits.maximumConnections,
                                     per_address_connection_limit: box.limits.connectionsPerAddress,
                                     idle_timeout_seconds: max(1, box.limits.idleTimeoutSeconds),
                                     connection_memory_bytes: max(0, box.limits.connectionMemoryBytes),
                                     request_completed: box.limits.collectsBodies ? httpListenerRequestCompleted : nil,
                                     raw_paths: box.limits.rawPaths ? 1 : 0)
        let started = pw_httpd_start_limited(host, port, threads, &limits, box.allowsStreaming ? 1 : 0,
                                             httpListenerAccessHandler, context)
        guard let handle = started else {
            throw HTTPListener.ListenerError(message: "cannot listen on \(address)")
        }
        return MHDDaemon(handle: handle, box: box)
    }

    private init(handle: OpaquePointer, box: HTTPListener.Box) {
        self.handle = handle
        self.box = box
    }

    /// The port the daemon listens on (the kernel's pick for port 0).
    var port: UInt16 { pw_mhd_bound_port(handle) }

    deinit {
        box.finishStreams()
        MHD_stop_daemon(handle)
    }
}

private let httpStreamReader: MHD_ContentReaderCallback = { context, _, buffer, maximum in
    guard let context, let buffer else { return -2 }  // MHD_CONTENT_READER_END_WITH_ERROR
    return Unmanaged<HTTPResponseStream>.fromOpaque(context).takeUnretainedValue().read(into: buffer, maximum: maximum)
}

private let httpStreamFree: MHD_ContentReaderFreeCallback = { context in
    guard let context else { return }
    Unmanaged<HTTPResponseStream>.fromOpaque(context).takeRetainedValue().released()
}

/// A response body written over time, from any thread (Server-Sent Events). Bytes are queued
/// (at most `maximumPendingBytes`; a client that falls further behind is cut off) and pulled by
/// libmicrohttpd's polling thread; while nothing is queued the connection is suspended, so an
/// idle stream costs no CPU. Write something (an SSE comment) every few seconds: a client that
/// went away is only noticed when a write to it fails.
///
/// Thread safety: every mutable field is in `unsafeState`, touched only inside `locked`. `MHD_suspend_connection` is called with
/// the lock held, from the content reader (the only place MHD allows it); `MHD_resume_connection`
/// after the lock is released (a suspended connection is not touched by MHD until resumed, so
/// the pointer stays valid), and only for a connection this stream suspended.
public final class HTTPResponseStream: @unchecked Sendable {
    private struct State {
        var pending: [UInt8] = []
        var offset = 0
        var isFinished = false
        var isReleased = false
        var connection: OpaquePointer?
        var isSuspended = false
        var closeHandlers: [@Sendable () -> Void] = []
    }

    private let lock = NSLock()
    private var unsafeState = State()
    /// Bytes queued at most before the stream is finished (slow client). Default: 1 MiB.
    public let maximumPendingBytes: Int

    public init(maximumPendingBytes: Int = 1 << 20) {
        self.maximumPendingBytes = maximumPendingBytes
    }

    /// Calls `handler` once, on libmicrohttpd's thread, when the response is done (finished and
    /// sent, or the client went away).
    public func setCloseHandler(_ handler: @escaping @Sendable () -> Void) {
        let isReleased = locked { state -> Bool in
            if !state.isReleased { state.closeHandlers.append(handler) }
            return state.isReleased
        }
        if isReleased { handler() }
    }

    /// Queues `bytes`. Returns false (and writes nothing) when the stream is finished or closed,
    /// or when the client is too far behind (the stream is then finished).
    @discardableResult
    public func write(_ bytes: [UInt8]) -> Bool {
        let (accepted, resume) = locked { state -> (Bool, OpaquePointer?) in
            guard !state.isFinished, !state.isReleased else { return (false, nil) }
            if state.pending.count - state.offset + bytes.count > maximumPendingBytes {
                state.isFinished = true
                state.pending.removeAll()
                state.offset = 0
                return (false, Self.takeSuspended(&state))
            }
            if state.offset > 0 && state.offset >= state.pending.count / 2 {
                state.pending.removeFirst(state.offset)
                state.offset = 0
            }
            state.pending.append(contentsOf: bytes)
            return (true, Self.takeSuspended(&state))
        }
        if let resume { MHD_resume_connection(resume) }
        return accepted
    }

    /// Ends the body once what is queued has been sent.
    public func finish() {
        let resume = locked { state -> OpaquePointer? in
            state.isFinished = true
            return Self.takeSuspended(&state)
        }
        if let resume { MHD_resume_connection(resume) }
    }

    /// Whether the stream takes no more writes.
    public var isClosed: Bool { locked { $0.isFinished || $0.isReleased } }

    private func locked<T>(_ body: (inout State) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&unsafeState)
    }

    private static func takeSuspended(_ state: inout State) -> OpaquePointer? {
        guard state.isSuspended, !state.isReleased, let connection = state.connection else { return nil }
        state.isSuspended = false
        return connection
    }

    func attach(connection: OpaquePointer) { locked { $0.connection = connection } }


    /// The content reader: copies queued bytes, or ends the stream, or suspends the connection.
    func read(into buffer: UnsafeMutablePointer<CChar>, maximum: Int) -> Int {
        locked { state in
            let available = state.pending.count - state.offset
            if available > 0 {
                let count = min(available, maximum)
                state.pending.withUnsafeBufferPointer { source in
                    guard let base = source.baseAddress else { return }
                    UnsafeMutableRawPointer(buffer).copyMemory(from: base + state.offset, byteCount: count)
                }
                state.offset += count
                if state.offset == state.pending.count {
                    state.pending.removeAll(keepingCapacity: true)
                    state.offset = 0
                }
                return count
            }
            if state.isFinished { return -1 }  // MHD_CONTENT_READER_END_OF_STREAM
            guard let connection = state.connection else { return -2 }
            state.isSuspended = true
            MHD_suspend_connection(connection)
            return 0
        }
    }

    /// libmicrohttpd is done with the response: no more resumes, tell the owner.
    func released() {
        let handlers = locked { state -> [@Sendable () -> Void] in
            state.isReleased = true
            state.isFinished = true
            state.connection = nil
            state.isSuspended = false
            state.pending = []
            defer { state.closeHandlers = [] }
            return state.closeHandlers
        }
        for handler in handlers { handler() }
    }
}
