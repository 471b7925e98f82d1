import CMicroHTTPD
import CPushHTTPD
import Foundation
import PushCore

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

    /// Thread safety: `daemon` is set once in init and only read by `stop`; MHD serialises
    /// nothing for us, so `handler` must be thread-safe (it is `@Sendable`).
    private final class Box: @unchecked Sendable {
        let handler: Handler
        var daemon: OpaquePointer?
        init(handler: @escaping Handler) { self.handler = handler }
    }

    private let box: Box
    /// The bound port (useful with port 0).
    public let port: UInt16

    /// Starts listening on `address` (`host:port`, IPv4; `0.0.0.0` for all).
    public init(address: HostPort, threads: UInt32 = 1, handler: @escaping Handler) throws {
        let box = Box(handler: handler)
        let context = Unmanaged.passRetained(box).toOpaque()
        let host = address.host == "localhost" ? "127.0.0.1" : address.host
        guard let daemon = pw_httpd_start(host, address.port, threads, httpListenerAccessHandler, context) else {
            Unmanaged<Box>.fromOpaque(context).release()
            throw ListenerError(message: "cannot listen on \(address.host):\(address.port)")
        }
        box.daemon = daemon
        self.box = box
        self.port = pw_mhd_bound_port(daemon)
    }

    public struct ListenerError: Error, CustomStringConvertible, Sendable {
        public let message: String
        public var description: String { message }
    }

    /// Stops the listener and its thread.
    public func stop() {
        if let daemon = box.daemon {
            box.daemon = nil
            MHD_stop_daemon(daemon)
            Unmanaged.passUnretained(box).release()
        }
    }

    deinit { stop() }

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
