import CHiredis
import CPushRedisTLS
import PushTestSupport
import Testing

/// CPushRedisTLS on its own: settings from files, the handshake's verdicts, and one command
/// through the TLS session against a real TLS `redis-server` (Debian's, started per test).
@Suite("CPushRedisTLS: settings, handshake, I/O")
struct RedisTLSGlueTests {
    static func text<T>(_ array: T) -> String {
        withUnsafeBytes(of: array) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }

    /// The settings, or the error text.
    static func config(ca: String?, cert: String? = nil, key: String? = nil) -> (OpaquePointer?, String) {
        var error = [CChar](repeating: 0, count: 512)
        let made = error.withUnsafeMutableBufferPointer { pw_rtls_config_new(ca, cert, key, $0.baseAddress, $0.count) }
        return (made, String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    @Test("settings: a missing CA file, a certificate without its key, a key of another certificate are refused, naming the file")
    func settingsErrors() throws {
        let files = try RedisTLSFiles.shared()
        let missing = Self.config(ca: "/nonexistent/ca.pem")
        #expect(missing.0 == nil && missing.1.contains("/nonexistent/ca.pem"), "\(missing.1)")
        let keyless = Self.config(ca: files.caFile, cert: files.clientCertificate)
        #expect(keyless.0 == nil && keyless.1.contains("both"), "\(keyless.1)")
        let notACertificate = Self.config(ca: files.clientKey)
        #expect(notACertificate.0 == nil && notACertificate.1.contains(files.clientKey), "\(notACertificate.1)")
        let mismatched = Self.config(ca: files.caFile, cert: files.clientCertificate, key: files.serverKey)
        #expect(mismatched.0 == nil && mismatched.1.contains("does not belong"), "\(mismatched.1)")
        let good = Self.config(ca: files.caFile, cert: files.clientCertificate, key: files.clientKey)
        #expect(good.0 != nil, "\(good.1)")
        pw_rtls_config_free(good.0)
        let system = Self.config(ca: nil)
        #expect(system.0 != nil, "the system store loads: \(system.1)")
        pw_rtls_config_free(system.0)
    }

    /// Connects with hiredis, then runs the handshake with `config` against `host`.
    static func handshake(port: UInt16, host: String, config: OpaquePointer, timeoutMs: Int = 2000) -> (UnsafeMutablePointer<redisContext>?, OpaquePointer?, pw_rtls_failure) {
        var failure = pw_rtls_failure()
        guard let context = pw_redis_connect_tcp("127.0.0.1", Int32(port), timeoutMs), pw_redis_error_code(context) == 0 else { return (nil, nil, failure) }
        let session = pw_rtls_handshake(context, config, host, &failure)
        return (context, session, failure)
    }

    @Test("a PING through the session: TLS 1.3, the reply parsed by hiredis's reader")
    func ping() throws {
        let files = try RedisTLSFiles.shared()
        let server = try RedisServer(tls: .init(files: files))
        let (config, error) = Self.config(ca: files.caFile)
        let settings = try #require(config, "\(error)")
        defer { pw_rtls_config_free(settings) }
        let (context, session, failure) = Self.handshake(port: server.port, host: "127.0.0.1", config: settings)
        defer { if let context { redisFree(context) } }
        let tls = try #require(session, "kind \(failure.kind): \(Self.text(failure.detail))")
        defer { pw_rtls_session_free(tls) }
        let raw = try #require(context)
        #expect(String(cString: pw_rtls_version(tls)) == "TLSv1.3")
        let command = "*1\r\n$4\r\nPING\r\n"
        #expect(redisAppendFormattedCommand(raw, command, command.utf8.count) == REDIS_OK)
        #expect(pw_rtls_write(raw, tls) == 0)
        #expect(pw_redis_pending_output(raw) == 0)
        var reply: UnsafeMutablePointer<redisReply>?
        let answered = eventually(timeout: 5) {
            guard pw_rtls_read(raw, tls) >= 0 else { return true }
            return pw_redis_parsed_reply(raw, &reply) == REDIS_OK && reply != nil
        }
        let parsed = try #require(reply, "answered: \(answered), error: \(String(cString: pw_rtls_error(tls)))")
        defer { freeReplyObject(UnsafeMutableRawPointer(parsed)) }
        #expect(parsed.pointee.type == REDIS_REPLY_STATUS)
        #expect(String(cString: parsed.pointee.str) == "PONG")
    }

    @Test("verdicts: another CA ⇒ untrusted; a certificate for localhost reached as 127.0.0.1 ⇒ name mismatch with its names; a plain server ⇒ protocol")
    func verdicts() throws {
        let files = try RedisTLSFiles.shared()
        let server = try RedisServer(tls: .init(files: files, certificate: (files.localhostOnlyCertificate, files.localhostOnlyKey)))
        let plain = try RedisServer()

        let other = try #require(Self.config(ca: files.otherCAFile).0)
        defer { pw_rtls_config_free(other) }
        let (context1, session1, untrusted) = Self.handshake(port: server.port, host: "localhost", config: other)
        defer { if let context1 { redisFree(context1) } }
        #expect(session1 == nil && untrusted.kind == Int32(PW_RTLS_UNTRUSTED), "\(untrusted.kind) \(Self.text(untrusted.detail))")

        let trusted = try #require(Self.config(ca: files.caFile).0)
        defer { pw_rtls_config_free(trusted) }
        let (context2, session2, mismatch) = Self.handshake(port: server.port, host: "127.0.0.1", config: trusted)
        defer { if let context2 { redisFree(context2) } }
        #expect(session2 == nil && mismatch.kind == Int32(PW_RTLS_NAME_MISMATCH), "\(mismatch.kind) \(Self.text(mismatch.detail))")
        #expect(Self.text(mismatch.names) == "localhost")

        let (context3, session3, byName) = Self.handshake(port: server.port, host: "localhost", config: trusted)
        defer { if let context3 { redisFree(context3) } }
        #expect(session3 != nil, "\(byName.kind) \(Self.text(byName.detail))")
        pw_rtls_session_free(session3)

        // No subjectAltName, CN 127.0.0.1: accepted by that address, refused by another name.
        let ipNamed = try RedisServer(tls: .init(files: files, certificate: (files.ipCommonNameCertificate, files.ipCommonNameKey)))
        let (context5, session5, byAddress) = Self.handshake(port: ipNamed.port, host: "127.0.0.1", config: trusted)
        defer { if let context5 { redisFree(context5) } }
        #expect(session5 != nil, "\(byAddress.kind) \(Self.text(byAddress.detail))")
        pw_rtls_session_free(session5)
        let (context6, session6, byOtherName) = Self.handshake(port: ipNamed.port, host: "localhost", config: trusted)
        defer { if let context6 { redisFree(context6) } }
        #expect(session6 == nil && byOtherName.kind == Int32(PW_RTLS_NAME_MISMATCH) && Self.text(byOtherName.names) == "127.0.0.1")

        let (context4, session4, notTLS) = Self.handshake(port: plain.port, host: "127.0.0.1", config: trusted, timeoutMs: 300)
        defer { if let context4 { redisFree(context4) } }
        #expect(session4 == nil && (notTLS.kind == Int32(PW_RTLS_PROTOCOL) || notTLS.kind == Int32(PW_RTLS_IO)),
                "\(notTLS.kind) \(Self.text(notTLS.detail))")
    }
}
