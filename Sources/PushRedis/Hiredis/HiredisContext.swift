import CHiredis
import CPushRedisTLS
#if canImport(Glibc)
import Glibc
#endif

/// One blocking-mode `redisContext`, built by ``connect(_:timeoutMs:tls:)`` (the context first,
/// then this owner around it, then the connection check: a failed connect only throws) and freed
/// only in `deinit`.
///
/// The only type in PushRedis that touches hiredis pointers. Not thread-safe: it has one owner
/// at a time (``RedisClient``, ``RedisClusterClient`` and ``RedisSentinelClient`` hold it inside their lock). Once hiredis reports an error on the
/// context (`err != 0`) the context is unusable and the owner drops it.
///
/// With TLS (`rediss://…`) hiredis still formats the commands into its output buffer and parses
/// the replies with its reader, but the bytes move through the TLS session of CPushRedisTLS on a
/// non-blocking socket: every exchange is a `poll(2)` loop (``HiredisExchange``), never
/// hiredis's own blocking read or write. A plain context pays one nil check per call for this.
final class HiredisContext {
    private let context: UnsafeMutablePointer<redisContext>
    /// The TLS session on the context's socket (set once, by ``connect(_:timeoutMs:tls:)``), nil
    /// for a plain connection.
    private var session: OpaquePointer?
    private var tls: RedisTLS?
    /// The connect timeout, also the longest wait without progress of a TLS exchange.
    let timeoutMs: Int

    /// Takes ownership of `handle`.
    private init(handle: UnsafeMutablePointer<redisContext>, timeoutMs: Int) {
        context = handle
        self.timeoutMs = timeoutMs
    }

    deinit {
        if let session { pw_rtls_session_free(session) }
        redisFree(context)
    }

    /// Whether the bytes go through TLS.
    var isTLS: Bool { session != nil }

    /// Connects with `timeoutMs` as connect timeout and as read/write timeout (SO_RCVTIMEO/SO_SNDTIMEO);
    /// with `tls`, then runs the TLS handshake (within the same timeouts), the certificate checked
    /// against the address's host.
    static func connect(_ address: RedisEndpoint.Address, timeoutMs: Int, tls: RedisTLSContext? = nil) throws(RedisError) -> HiredisContext {
        let raw: UnsafeMutablePointer<redisContext>?
        switch address {
        case .tcp(let host, let port):
            raw = pw_redis_connect_tcp(host, Int32(port), timeoutMs)
        case .unix(let path):
            if tls != nil { throw RedisError("TLS needs a TCP address, not unix:\(path)") }
            raw = pw_redis_connect_unix(path, timeoutMs)
        }
        guard let raw else { throw RedisError("cannot allocate a hiredis context", isConnectionError: true) }
        let context = HiredisContext(handle: raw, timeoutMs: timeoutMs)
        if pw_redis_error_code(raw) != 0 {
            throw RedisError("cannot connect to \(address): \(context.errorString)", isConnectionError: true)
        }
        guard let tls, case .tcp(let host, _) = address else { return context }
        var failure = pw_rtls_failure()
        guard let session = pw_rtls_handshake(raw, tls.config, host, &failure) else {
            throw RedisTLS.handshakeError(failure, server: address.description, host: host, tls: tls.tls)
        }
        context.session = session
        context.tls = tls.tls
        return context
    }

    private var errorString: String {
        guard let message = pw_redis_error_string(context) else { return "unknown error" }
        let text = String(cString: message)
        return text.isEmpty ? "connection lost" : text
    }

    private func contextError() -> RedisError {
        RedisError("redis connection error: \(errorString) (hiredis code \(pw_redis_error_code(context)))", isConnectionError: true)
    }

    /// Writes every command, then reads one reply per command: one round trip.
    /// Throws only for connection-level failures (the context is then dead); error replies are values.
    func run(_ commands: [[RedisArgument]]) throws(RedisError) -> [RedisReply] {
        if session != nil { return try HiredisExchange.run([.init(context: self, commands: commands)], timeoutMs: timeoutMs)[0].get() }
        try append(contentsOf: commands)
        var replies: [RedisReply] = []
        replies.reserveCapacity(commands.count)
        for _ in commands { replies.append(try readReply()) }
        return replies
    }

    /// Formats one command into the output buffer (nothing is sent yet).
    func append(_ command: [RedisArgument]) throws(RedisError) {
        try append(contentsOf: [command])
    }

    /// Formats `commands` as RESP (`*argc`, then `$len` and the bytes of each argument) into one
    /// buffer and hands it to hiredis in one `redisAppendFormattedCommand`: the same bytes as
    /// `redisAppendCommandArgv` per command, without an argv array and an sds string per
    /// command (a cluster batch is hundreds of small script calls; docs/redis.md "Cluster").
    func append(contentsOf commands: [[RedisArgument]]) throws(RedisError) {
        if commands.isEmpty { return }
        let buffer = Self.format(commands)
        let status: Int32 = buffer.withUnsafeBufferPointer { bytes in
            guard let base = bytes.baseAddress else { return REDIS_ERR }
            return UnsafeRawPointer(base).withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                redisAppendFormattedCommand(context, $0, bytes.count)
            }
        }
        if status != REDIS_OK { throw contextError() }
    }

    /// The RESP bytes of `commands`. Two passes: the exact length first, then every byte written
    /// once into uninitialized storage (a claim of 500 recipients is tens of KB of RESP; appending
    /// byte by byte to an array would check its capacity and uniqueness for every byte).
    static func format(_ commands: [[RedisArgument]]) -> [UInt8] {
        var total = 0
        for command in commands {
            total += 3 + decimalLength(Int64(command.count))
            for argument in command {
                let length: Int
                switch argument {
                case .string(let text): length = text.utf8.count
                case .bytes(let bytes): length = bytes.count
                case .int(let value): length = decimalLength(value)
                case .dedupKey(let name): length = name.count
                }
                total += 5 + decimalLength(Int64(length)) + length
            }
        }
        return [UInt8](unsafeUninitializedCapacity: total) { output, initialized in
            var writer = RESPWriter(output: output)
            for command in commands {
                writer.head(UInt8(ascii: "*"), command.count)
                for argument in command {
                    switch argument {
                    case .string(var text):
                        text.withUTF8 { writer.bulk($0) }
                    case .bytes(let bytes):
                        bytes.withUnsafeBufferPointer { writer.bulk($0) }
                    case .int(let value):
                        writer.head(UInt8(ascii: "$"), decimalLength(value))
                        writer.decimal(value)
                        writer.crlf()
                    case .dedupKey(let name):
                        writer.head(UInt8(ascii: "$"), name.count)
                        name.prefix.bytes.withUnsafeBufferPointer { writer.raw($0) }
                        for index in 0..<DedupKeyName.tailCount { writer.byte(name.tailByte(index)) }
                        writer.crlf()
                    }
                }
            }
            initialized = writer.position
        }
    }

    /// Writes into the storage ``format(_:)`` sized in its first pass (bounds-checked writes: a
    /// miscount traps in a test rather than writing past the end).
    private struct RESPWriter {
        let output: UnsafeMutableBufferPointer<UInt8>
        var position = 0

        mutating func byte(_ value: UInt8) {
            output[position] = value
            position += 1
        }

        mutating func crlf() {
            byte(0x0D)
            byte(0x0A)
        }

        /// `<marker><count>\r\n`
        mutating func head(_ marker: UInt8, _ count: Int) {
            byte(marker)
            decimal(Int64(count))
            crlf()
        }

        /// `$<length>\r\n<bytes>\r\n`
        mutating func bulk(_ bytes: UnsafeBufferPointer<UInt8>) {
            head(UInt8(ascii: "$"), bytes.count)
            raw(bytes)
            crlf()
        }

        /// The bytes as they are.
        mutating func raw(_ bytes: UnsafeBufferPointer<UInt8>) {
            if bytes.isEmpty { return }
            let target = UnsafeMutableBufferPointer(rebasing: output[position..<position + bytes.count])
            _ = target.initialize(from: bytes)
            position += bytes.count
        }

        /// `value` in decimal, the digits written last first into their places.
        mutating func decimal(_ value: Int64) {
            let length = HiredisContext.decimalLength(value)
            if value < 0 { output[position] = UInt8(ascii: "-") }
            var magnitude = value.magnitude
            var index = position + length
            repeat {
                index -= 1
                output[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            position += length
        }
    }

    /// Characters of `value` in decimal (a `-` included).
    static func decimalLength(_ value: Int64) -> Int {
        var magnitude = value.magnitude
        var length = value < 0 ? 2 : 1
        while magnitude >= 10 {
            magnitude /= 10
            length += 1
        }
        return length
    }

    // MARK: Non-blocking use (HiredisExchange: several servers at once)

    /// The socket, for poll(2).
    var fileDescriptor: Int32 { pw_redis_fd(context) }

    /// Whether the socket must become writable before the exchange can go on: formatted commands
    /// wait to be written, or the TLS session waits to write.
    var hasPendingOutput: Bool {
        pw_redis_pending_output(context) > 0 || session.map { pw_rtls_wants_write($0) != 0 } == true
    }

    /// Writes what the socket takes now; never blocks.
    func writeAvailable() throws(RedisError) {
        if let session {
            let result = pw_rtls_write(context, session)
            if result == -1 { throw socketError("write") }
            if result < 0 { throw tlsError(session) }
        } else if pw_redis_write_nonblocking(context) != 0 {
            throw socketError("write")
        }
    }

    /// Reads what has arrived into the reply parser; never blocks. Returns the bytes read (0: none yet).
    func readAvailable() throws(RedisError) -> Int {
        let result = session.map { pw_rtls_read(context, $0) } ?? pw_redis_read_nonblocking(context)
        switch result {
        case -1: throw socketError("read")
        case -2: throw RedisError("redis connection error: the server closed the connection", isConnectionError: true)
        case -4: throw tlsError(session)
        case ..<0: throw RedisError("redis protocol error: the reply could not be parsed", isConnectionError: true)
        default: return result
        }
    }

    /// The TLS session's last error as a connection error, with what to change when OpenSSL's
    /// reason says (e.g. a server that requires a client certificate alerts after the handshake).
    private func tlsError(_ session: OpaquePointer?) -> RedisError {
        let reason = session.flatMap { pw_rtls_error($0) }.map { String(cString: $0) } ?? ""
        return RedisError("TLS: \(reason.isEmpty ? "the session failed" : reason)\(RedisTLS.hint(reason, tls: tls ?? RedisTLS()))", isConnectionError: true)
    }

    /// The next reply complete in what was read so far, or nil.
    func parsedReply() throws(RedisError) -> RedisReply? {
        var reply: UnsafeMutablePointer<redisReply>?
        guard pw_redis_parsed_reply(context, &reply) == REDIS_OK else {
            throw RedisError("redis protocol error: the reply could not be parsed", isConnectionError: true)
        }
        guard let reply else { return nil }
        defer { freeReplyObject(UnsafeMutableRawPointer(reply)) }
        return Self.convert(UnsafePointer(reply))
    }

    private func socketError(_ operation: String) -> RedisError {
        let code = errno
        let text = strerror(code).map { String(cString: $0) } ?? "errno \(code)"
        return RedisError("redis connection error: \(operation) failed: \(text)", isConnectionError: true)
    }

    private func readReply() throws(RedisError) -> RedisReply {
        var reply: UnsafeMutablePointer<redisReply>?
        let status = pw_redis_get_reply(context, &reply)
        guard status == REDIS_OK, let reply else { throw contextError() }
        defer { freeReplyObject(UnsafeMutableRawPointer(reply)) }
        return Self.convert(UnsafePointer(reply))
    }

    private static func convert(_ reply: UnsafePointer<redisReply>) -> RedisReply {
        let value = reply.pointee
        switch value.type {
        case REDIS_REPLY_STRING: return .string(bytes(value))
        case REDIS_REPLY_STATUS: return .status(String(decoding: bytes(value), as: UTF8.self))
        case REDIS_REPLY_ERROR: return .error(String(decoding: bytes(value), as: UTF8.self))
        case REDIS_REPLY_INTEGER: return .integer(Int64(value.integer))
        case REDIS_REPLY_NIL: return .null
        case REDIS_REPLY_ARRAY:
            guard let elements = value.element else { return .array([]) }
            var items: [RedisReply] = []
            items.reserveCapacity(value.elements)
            for index in 0..<value.elements {
                if let element = elements[index] { items.append(convert(UnsafePointer(element))) } else { items.append(.null) }
            }
            return .array(items)
        default: return .error("unsupported hiredis reply type \(value.type)")
        }
    }

    private static func bytes(_ reply: redisReply) -> [UInt8] {
        guard let start = reply.str, reply.len > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: start, count: reply.len))
    }
}
