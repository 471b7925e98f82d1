import CMicroHTTPD
import CPushHTTPD
import Foundation
import PushCore
import Synchronization

/// A small HTTP/1.1 server over libmicrohttpd (its own polling thread) for `/metrics`,
/// `/healthz`, `/readyz` and the tracking endpoint. Handlers are synchronous and cheap.
/// HTTP/1.1 keep-alive; request bodies are read and discarded; `threads` > 1 runs a pool of
/// polling threads (MHD's thread pool), each calling the handler.
public final class HTTPListener: Sendable {
    public struct Request: Sendable {
        public var method: String
        public var path: String
        public var clientAddress: String
        public var headers: [String: String]
        public init(method: String, path: String, clientAddress: String, headers: [String: String]) {
            self.method = method; self.path = path; self.clientAddress = clientAddress; self.headers = headers
        }
    }

    public struct Response: Sendable {
        public var status: Int
        public var contentType: String
        public var body: [UInt8]
        public var headers: [(String, String)]
        public init(status: Int, contentType: String = "text/plain; charset=utf-8", body: String = "", headers: [(String, String)] = []) {
            self.status = status; self.contentType = contentType; self.body = Array(body.utf8); self.headers = headers
        }
    }

    public typealias Handler = @Sendable (Request) -> Response

    /// The handler, read by the access callback through the daemon's (unretained) context.
    fileprivate final class Box: Sendable {
        let handler: Handler
        init(handler: @escaping Handler) { self.handler = handler }
    }

    /// The running daemon; nil once stopped. Stopping drops it, and its `deinit` stops MHD.
    private let daemon: Mutex<MHDDaemon?>
    /// The bound port (useful with port 0).
    public let port: UInt16

    /// Starts listening on `address` (`host:port`, IPv4; `0.0.0.0` for all). Throws if the
    /// address is not IPv4 or MHD cannot listen there (port in use, no permission).
    public init(address: HostPort, threads: UInt32 = 1, handler: @escaping Handler) throws {
        let host = address.host == "localhost" ? "127.0.0.1" : address.host
        let started = try MHDDaemon.start(host: host, port: address.port, threads: threads, box: Box(handler: handler),
                                          describing: "\(address.host):\(address.port)")
        port = started.port
        daemon = Mutex(started)
    }

    public struct ListenerError: Error, CustomStringConvertible, Sendable {
        public let message: String
        public var description: String { message }
    }

    /// Stops the listener and its threads (idempotent). Not from inside a handler: MHD waits
    /// for its polling threads, one of which would be the caller.
    public func stop() {
        let running = daemon.withLock { $0.take() }
        _ = running  // released here, outside the lock: its deinit stops the daemon
    }

    fileprivate static func handle(_ connection: OpaquePointer?, context: UnsafeMutableRawPointer?, url: UnsafePointer<CChar>?,
                                   method: UnsafePointer<CChar>?, uploadSize: UnsafeMutablePointer<Int>?,
                                   requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> MHD_Result {
        guard let context, let connection, let requestContext else { return .NO }
        // MHD calls the handler first with only the headers, then once per chunk of body, then a
        // last time with no data. Answering on the first call makes MHD close the connection
        // (no keep-alive), so the first call only marks the request as seen; bodies (we take
        // none) are read and discarded; the answer goes out on the last call.
        if requestContext.pointee == nil {
            requestContext.pointee = context
            return .YES
        }
        if let uploadSize, uploadSize.pointee > 0 {
            uploadSize.pointee = 0
            return .YES
        }
        let box = Unmanaged<Box>.fromOpaque(context).takeUnretainedValue()
        var addressBuffer = [CChar](repeating: 0, count: 64)
        let clientAddress = pw_httpd_client_address(connection, &addressBuffer, 64) == 0
            ? String(decoding: addressBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
        var headers: [String: String] = [:]
        if let forwarded = MHD_lookup_connection_value(connection, .HEADER_KIND, "X-Forwarded-For") {
            headers["x-forwarded-for"] = String(cString: forwarded)
        }
        let request = Request(method: method.map { String(cString: $0) } ?? "", path: url.map { String(cString: $0) } ?? "/",
                              clientAddress: clientAddress, headers: headers)
        let answer = box.handler(request)
        let response = answer.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let response else { return .NO }
        defer { MHD_destroy_response(response) }
        _ = MHD_add_response_header(response, "Content-Type", answer.contentType)
        for (name, value) in answer.headers { _ = MHD_add_response_header(response, name, value) }
        return MHD_queue_response(connection, UInt32(answer.status), response)
    }
}

private let httpListenerAccessHandler: MHD_AccessHandlerCallback = { context, connection, url, method, _, _, uploadSize, requestContext in
    HTTPListener.handle(connection, context: context, url: url, method: method, uploadSize: uploadSize, requestContext: requestContext)
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
        guard let handle = pw_httpd_start(host, port, threads, httpListenerAccessHandler, Unmanaged.passUnretained(box).toOpaque()) else {
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

    deinit { MHD_stop_daemon(handle) }
}
