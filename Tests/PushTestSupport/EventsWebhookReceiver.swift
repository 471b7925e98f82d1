import Foundation

/// A real local HTTPS server receiving webhooks, for the events tests: Python's `http.server`
/// wrapped in TLS with a self-signed certificate for 127.0.0.1 made by the `openssl` CLI. It
/// answers 500 to the first `failFirst` requests, then 200, and records every request (status
/// answered, headers, body) as one JSON line in `requests.jsonl`. Stopped by PID when dropped.
public final class EventsWebhookReceiver: Sendable {
    public let process: TestProcess
    public let port: UInt16
    public let folder: URL
    /// The self-signed certificate (PEM): pass it as `PUSHWORKER_CA_FILE`.
    public var certificatePath: String { folder.appendingPathComponent("cert.pem").path }
    public var url: String { "https://127.0.0.1:\(port)/hook" }

    static let script = #"""
    import json, ssl, sys, threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    folder, fail_first = sys.argv[1], int(sys.argv[2])
    lock = threading.Lock()
    seen = [0]
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def log_message(self, *args): pass
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with lock:
                seen[0] += 1
                status = 500 if seen[0] <= fail_first else 200
                with open(folder + "/requests.jsonl", "a") as out:
                    out.write(json.dumps({"status": status, "path": self.path,
                                          "headers": {k.lower(): v for k, v in self.headers.items()},
                                          "body": body.decode("utf-8", "replace")}) + "\n")
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(folder + "/cert.pem", folder + "/key.pem")
    context.set_alpn_protocols(["http/1.1"])
    server.socket = context.wrap_socket(server.socket, server_side=True)
    with open(folder + "/port.tmp", "w") as out: out.write(str(server.server_address[1]))
    import os; os.rename(folder + "/port.tmp", folder + "/port")
    server.serve_forever()
    """#

    public init(failFirst: Int = 0) throws {
        folder = try TemporaryFolder.make(prefix: "webhook")
        let made = try runCommand("/usr/bin/openssl", [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", folder.appendingPathComponent("key.pem").path, "-out", folder.appendingPathComponent("cert.pem").path,
            "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
        ])
        guard made.status == 0 else { throw TestSupportError("openssl req failed: \(made.stderr)") }
        let scriptURL = folder.appendingPathComponent("receiver.py")
        try Self.script.write(to: scriptURL, atomically: true, encoding: .utf8)
        process = try TestProcess("/usr/bin/python3", [scriptURL.path, folder.path, String(failFirst)])
        var port: UInt16 = 0
        let portFile = folder.appendingPathComponent("port").path
        guard eventually(timeout: 15, {
            port = UInt16((try? String(contentsOfFile: portFile, encoding: .utf8)) ?? "") ?? 0
            return port != 0
        }) else { throw TestSupportError("webhook receiver did not start: \(process.stderr())") }
        self.port = port
    }

    /// The requests received so far, oldest first.
    public func requests() -> [[String: Any]] {
        let text = (try? String(contentsOf: folder.appendingPathComponent("requests.jsonl"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    deinit { process.stop() }
}
