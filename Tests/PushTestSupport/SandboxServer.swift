import Foundation

/// A running `pushworker-dev sandbox` on a free loopback port, stopped (SIGTERM) when dropped.
///
/// It writes its self-signed certificate to `certificatePath` (trust it with `curl --cacert` or
/// `PUSHWORKER_CA_FILE`) and, with `apps`, credential folders for those apps under `credentialsPath`.
public final class SandboxServer: Sendable {
    public let process: TestProcess
    public let port: UInt16
    public let folder: URL
    public var origin: String { "https://127.0.0.1:\(port)" }
    public var certificatePath: String { folder.appendingPathComponent("sandbox-cert.pem").path }
    public var credentialsPath: String { folder.appendingPathComponent("credentials").path }

    /// Starts the sandbox with `arguments` added to the defaults (`--cert-out`, `--port-file`, and
    /// `--credentials-out` when `apps` is not empty).
    public init(apps: [String] = [], arguments: [String] = []) throws {
        folder = try TemporaryFolder.make(prefix: "sandbox")
        let portFile = folder.appendingPathComponent("port").path
        var all = ["sandbox", "--cert-out", folder.appendingPathComponent("sandbox-cert.pem").path, "--port-file", portFile]
        if !apps.isEmpty {
            all += ["--credentials-out", folder.appendingPathComponent("credentials").path]
            for app in apps { all += ["--app", app] }
        }
        all += arguments
        let process = try TestProcess(BuiltProducts.pushworkerDev, all)
        self.process = process
        var port: UInt16 = 0
        let started = eventually(timeout: 30) {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8), let value = UInt16(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                port = value
                return true
            }
            return !process.isRunning
        }
        guard started, port != 0 else {
            throw TestSupportError("sandbox did not start: \(process.stderr())\(process.stdout())")
        }
        self.port = port
    }

    /// One request with the curl CLI over HTTP/2 (TLS, trusting the sandbox certificate).
    public func curl(_ method: String = "POST", _ path: String, headers: [String: String] = [:], body: Data? = nil) throws -> SandboxReply {
        let work = try TemporaryFolder.make(prefix: "curl")
        defer { try? FileManager.default.removeItem(at: work) }
        let headerFile = work.appendingPathComponent("headers").path
        let bodyFile = work.appendingPathComponent("body").path
        var arguments = ["-sS", "--http2", "--cacert", certificatePath, "-X", method, "-D", headerFile, "-o", bodyFile,
                         "-w", "%{http_code} %{http_version}"]
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { arguments += ["-H", "\(name): \(value)"] }
        if let body {
            let file = work.appendingPathComponent("request").path
            try body.write(to: URL(fileURLWithPath: file))
            arguments += ["--data-binary", "@\(file)"]
        }
        arguments.append(origin + path)
        let result = try runCommand("/usr/bin/curl", arguments, timeout: 30)
        let parts = result.stdout.split(separator: " ")
        var replyHeaders: [String: String] = [:]
        for line in ((try? String(contentsOfFile: headerFile, encoding: .utf8)) ?? "").split(whereSeparator: \.isNewline) {
            guard let colon = line.firstIndex(of: ":") else { continue }
            replyHeaders[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return SandboxReply(status: parts.first.flatMap { Int($0) } ?? 0, httpVersion: parts.count > 1 ? String(parts[1]) : "",
                            headers: replyHeaders, body: (try? Data(contentsOf: URL(fileURLWithPath: bodyFile))) ?? Data(),
                            curlError: result.stderr)
    }

    /// `GET /_sandbox/stats` as a dictionary.
    public func stats() throws -> [String: Any] {
        let reply = try curl("GET", "/_sandbox/stats")
        return (try JSONSerialization.jsonObject(with: reply.body) as? [String: Any]) ?? [:]
    }

    /// `GET /_sandbox/messages` as dictionaries.
    public func messages() throws -> [[String: Any]] {
        let reply = try curl("GET", "/_sandbox/messages")
        return String(decoding: reply.body, as: UTF8.self).split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }
}

/// What curl got back from the sandbox.
public struct SandboxReply: Sendable {
    public let status: Int
    /// curl's `%{http_version}`: "2" for HTTP/2.
    public let httpVersion: String
    public let headers: [String: String]
    public let body: Data
    public let curlError: String

    public var text: String { String(decoding: body, as: UTF8.self) }
    public var json: [String: Any] { ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any]) ?? [:] }
}
