import Foundation
import PushTestSupport

/// Debian's `nghttpd` (package nghttp2-server) on a free loopback port, over TLS with a fresh
/// self-signed P-256 certificate for IP 127.0.0.1 (or, `tls: false`, cleartext h2c with prior
/// knowledge), serving a small document root and echoing POST/PUT bodies. `verbose: true` logs
/// every frame, which ``receivedRequests()`` reads back. Stopped when dropped.
final class NghttpdServer: Sendable {
    let port: UInt16
    let process: TestProcess
    let folder: URL
    /// The server certificate (self-signed: it is its own CA).
    let caFile: String
    let isTLS: Bool
    var origin: String { "\(isTLS ? "https" : "http")://127.0.0.1:\(port)" }
    static let helloBody = "hello from nghttpd\n"

    init(maxConcurrentStreams: Int = 100, tls: Bool = true, verbose: Bool = false) throws {
        let folder = try TemporaryFolder.make(prefix: "nghttpd")
        self.folder = folder
        isTLS = tls
        let key = folder.appendingPathComponent("key.pem").path
        let cert = folder.appendingPathComponent("cert.pem").path
        let generated = try runCommand("/usr/bin/openssl", [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
            "-days", "1", "-keyout", key, "-out", cert,
        ])
        guard generated.status == 0 else { throw TestSupportError("openssl req failed: \(generated.stderr)") }
        caFile = cert
        let docroot = folder.appendingPathComponent("htdocs")
        try FileManager.default.createDirectory(at: docroot, withIntermediateDirectories: true)
        try Data(Self.helloBody.utf8).write(to: docroot.appendingPathComponent("hello.txt"))
        try Data(repeating: 0x41, count: 64 * 1024).write(to: docroot.appendingPathComponent("big.bin"))
        let port = freeLoopbackPort()
        self.port = port
        var arguments = ["-a", "127.0.0.1", "-d", docroot.path, "--echo-upload", "-m", "\(maxConcurrentStreams)"]
        if verbose { arguments.append("-v") }
        arguments += tls ? ["\(port)", key, cert] : ["--no-tls", "\(port)"]
        process = try TestProcess("/usr/sbin/nghttpd", arguments)
        guard eventually(timeout: 10, { isListening(port: port) }) else {
            throw TestSupportError("nghttpd did not start: \(process.stderr())")
        }
    }

    deinit {
        // nghttpd, spawned from the test runner, may inherit a blocked SIGTERM: do not wait long for it.
        process.stop(grace: 0.3)
        try? FileManager.default.removeItem(at: folder)
    }

    /// One request as the server decoded it (verbose mode): pseudo-headers included.
    struct ReceivedRequest {
        var headers: [(name: String, value: String)]
        var method: String? { value(":method") }
        var path: String? { value(":path") }
        func value(_ name: String) -> String? { headers.first { $0.name == name }?.value }
        func values(_ name: String) -> [String] { headers.filter { $0.name == name }.map(\.value) }
    }

    /// The requests the server received so far, in order (verbose mode), from lines such as
    /// `[id=1] [  0.509] recv (stream_id=13) :method: POST`.
    func receivedRequests() -> [ReceivedRequest] {
        var order: [String] = []
        var byStream: [String: [(name: String, value: String)]] = [:]
        for line in process.stdout().split(separator: "\n") {
            guard let recv = line.range(of: "] recv (stream_id="), let close = line[recv.upperBound...].firstIndex(of: ")") else { continue }
            let connection = line.prefix { $0 != "]" }
            // Fields HPACK must never index (nghttp2: `authorization`, short `cookie`) read
            // `recv (stream_id=13, sensitive) authorization: …`.
            let stream = line[recv.upperBound..<close].prefix { $0 != "," }
            let key = "\(connection)/\(stream)"
            let field = line[line.index(close, offsetBy: 2)...]
            // The name may start with ':' (a pseudo-header): split at the first ": " after it.
            guard let separator = field.dropFirst().range(of: ": ") ?? (field.hasSuffix(":") ? field.index(before: field.endIndex)..<field.endIndex : nil) else { continue }
            if byStream[key] == nil { order.append(key) }
            byStream[key, default: []].append((String(field[..<separator.lowerBound]), String(field[separator.upperBound...])))
        }
        return order.map { ReceivedRequest(headers: byStream[$0] ?? []) }
    }
}

/// A TCP socket on 127.0.0.1 that listens (the kernel completes handshakes) but never
/// reads or answers: a TLS handshake against it hangs until the client's timeout.
final class SilentListener: Sendable {
    let port: UInt16
    private let fd: Int32

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError("socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0, listen(fd, 64) == 0 else {
            close(fd)
            throw TestSupportError("bind/listen failed")
        }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        self.fd = fd
        port = UInt16(bigEndian: address.sin_port)
    }

    deinit { close(fd) }
}
