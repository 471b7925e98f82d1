import CHiredis

/// One blocking-mode `redisContext`, built by ``connect(_:timeoutMs:)`` (the context first, then
/// this owner around it, then the connection check: a failed connect only throws) and freed
/// only in `deinit`.
///
/// The only type in PushRedis that touches hiredis pointers. Not thread-safe: it has one owner
/// at a time (``RedisClient`` holds it inside its lock). Once hiredis reports an error on the
/// context (`err != 0`) the context is unusable and the owner drops it.
final class HiredisContext {
    private let context: UnsafeMutablePointer<redisContext>
    /// Reused argument buffers, so a pipeline of thousands of commands allocates little.
    private var flat: [UInt8] = []
    private var lengths: [Int] = []
    private var offsets: [Int] = []

    /// Takes ownership of `handle`.
    private init(handle: UnsafeMutablePointer<redisContext>) {
        context = handle
    }

    deinit { redisFree(context) }

    /// Connects with `timeoutMs` as connect timeout and as read/write timeout (SO_RCVTIMEO/SO_SNDTIMEO).
    static func connect(_ address: RedisEndpoint.Address, timeoutMs: Int) throws(RedisError) -> HiredisContext {
        let raw: UnsafeMutablePointer<redisContext>?
        switch address {
        case .tcp(let host, let port):
            raw = pw_redis_connect_tcp(host, Int32(port), timeoutMs)
        case .unix(let path):
            raw = pw_redis_connect_unix(path, timeoutMs)
        }
        guard let raw else { throw RedisError("cannot allocate a hiredis context", isConnectionError: true) }
        let context = HiredisContext(handle: raw)
        if pw_redis_error_code(raw) != 0 {
            throw RedisError("cannot connect to \(address): \(context.errorString)", isConnectionError: true)
        }
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
        for command in commands { try append(command) }
        var replies: [RedisReply] = []
        replies.reserveCapacity(commands.count)
        for _ in commands { replies.append(try readReply()) }
        return replies
    }

    private func append(_ command: [RedisArgument]) throws(RedisError) {
        flat.removeAll(keepingCapacity: true)
        lengths.removeAll(keepingCapacity: true)
        offsets.removeAll(keepingCapacity: true)
        for argument in command {
            let start = flat.count
            argument.append(to: &flat)
            offsets.append(start)
            lengths.append(flat.count - start)
        }
        flat.append(0) // never empty, so the base address exists even for empty arguments
        // hiredis copies the arguments into its output buffer before returning, so the pointers
        // only need to live for this call.
        let status: Int32 = flat.withUnsafeBufferPointer { bytes in
            guard let base = bytes.baseAddress else { return REDIS_ERR }
            let raw = UnsafeRawPointer(base)
            var argv: [UnsafePointer<CChar>?] = offsets.map { raw.advanced(by: $0).assumingMemoryBound(to: CChar.self) }
            return argv.withUnsafeMutableBufferPointer { argvBuffer in
                lengths.withUnsafeBufferPointer { lengthBuffer in
                    redisAppendCommandArgv(context, Int32(command.count), argvBuffer.baseAddress, lengthBuffer.baseAddress)
                }
            }
        }
        if status != REDIS_OK { throw contextError() }
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
