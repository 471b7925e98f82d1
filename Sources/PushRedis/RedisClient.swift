import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A blocking, pipelining Redis client over one hiredis context (hiredis 0.14.1 has no Cluster
/// and no TLS: ``RedisClusterClient`` routes a cluster, CPushRedisTLS carries `rediss://`).
///
/// Commands go out with `redisAppendCommandArgv` and come back with `redisGetReply`: a whole
/// pipeline is one round trip, however many commands it holds.
/// One context, used by one thread at a time (a lock serializes callers); the async variant of
/// ``pipeline(_:)`` runs on the client's own serial queue so the cooperative pool never blocks.
///
/// Timeouts: `timeout` (default 2 s) bounds the connect and every socket read/write.
/// Failures: a refused/reset/timed-out connection throws ``RedisError`` with
/// `isConnectionError == true` and drops the context; the next call reconnects (lazily), so the
/// client works again once Redis is back. The client never connects at `init`: it connects at the
/// first command.
///
/// hiredis writes with `write(2)`, so a peer that went away raises SIGPIPE: creating a client sets
/// SIGPIPE to "ignore" for the process if it still has the default action (as servers do).
public final class RedisClient: Sendable {
    /// Where this client connects.
    public let endpoint: RedisEndpoint
    private let timeoutMs: Int
    /// The OpenSSL settings of `rediss://`, made once from the endpoint's files.
    private let tls: RedisTLSContext?
    private let state = Mutex(State())
    private let queue: DispatchQueue
    private let roundTrips = Atomic<Int>(0)
    private let connectionErrors = Atomic<Int>(0)

    /// Pipelines sent so far (each is one network round trip), for metrics and tests.
    public var roundTripCount: Int { roundTrips.load(ordering: .relaxed) }
    /// Calls that failed with a connection error so far, for metrics (`pushworker_redis_errors_total`).
    public var connectionErrorCount: Int { connectionErrors.load(ordering: .relaxed) }

    private struct State: ~Copyable {
        var context: HiredisContext?
        var isClosed = false
    }

    public convenience init(url: String, timeout: Duration = .seconds(2)) throws(RedisError) {
        try self.init(endpoint: RedisEndpoint(url: url), timeout: timeout)
    }

    /// With TLS, reads the CA and client certificate files now (a bad one throws here).
    public init(endpoint: RedisEndpoint, timeout: Duration = .seconds(2)) throws(RedisError) {
        let ms = DeliveryStateStore.milliseconds(timeout)
        guard ms > 0 else { throw RedisError("the timeout must be positive") }
        if endpoint.tls != nil, case .unix = endpoint.address { throw RedisError("TLS needs a TCP address, not \(endpoint.address)") }
        self.endpoint = endpoint
        self.timeoutMs = Int(clamping: ms)
        self.tls = try endpoint.tls.map { tls throws(RedisError) in try RedisTLSContext(tls) }
        self.queue = DispatchQueue(label: "pushworker.redis")
        _ = Self.ignoreSIGPIPE
    }

    static let ignoreSIGPIPE: Void = {
        #if canImport(Glibc)
        var current = sigaction()
        if sigaction(SIGPIPE, nil, &current) == 0, current.__sigaction_handler.sa_handler == nil {
            signal(SIGPIPE, SIG_IGN)
        }
        #endif
    }()

    /// Sends all commands in one round trip and returns one reply per command, in order.
    ///
    /// Error replies (`.error`) are values; only connection failures, an empty command, or a closed
    /// client throw. Blocking (at most about `timeout` per socket operation): call it from a thread
    /// of your own, not from the cooperative pool (use the async variant there).
    public func pipeline(_ commands: [[RedisArgument]]) throws(RedisError) -> [RedisReply] {
        if commands.isEmpty { return [] }
        if commands.contains(where: \.isEmpty) { throw RedisError("a Redis command needs at least one argument") }
        roundTrips.add(1, ordering: .relaxed)
        do throws(RedisError) {
            return try run(commands)
        } catch {
            if error.isConnectionError { connectionErrors.add(1, ordering: .relaxed) }
            throw error
        }
    }

    private func run(_ commands: [[RedisArgument]]) throws(RedisError) -> [RedisReply] {
        try state.withLock { (state: inout State) throws(RedisError) -> [RedisReply] in
            if state.isClosed { throw RedisError("the client is closed") }
            let context: HiredisContext
            if let existing = state.context {
                context = existing
            } else {
                context = try Self.connect(endpoint, timeoutMs: timeoutMs, tls: tls)
                state.context = context
            }
            do throws(RedisError) {
                return try context.run(commands)
            } catch {
                if error.isConnectionError { state.context = nil }
                throw error
            }
        }
    }

    /// As the blocking ``pipeline(_:)``, run on the client's serial queue; safe on the cooperative pool.
    public func pipeline(_ commands: [[RedisArgument]]) async throws(RedisError) -> [RedisReply] {
        try await queue.blockingCall { () throws(RedisError) in try self.pipeline(commands) }
    }

    /// Whether Redis answers `PING` now (connecting if needed). For readiness probes.
    public func ping() -> Bool {
        (try? pipeline([["PING"]])) == [.status("PONG")]
    }

    /// Async ``ping()`` on the client's queue.
    public func ping() async -> Bool {
        (try? await pipeline([["PING"]])) == [.status("PONG")]
    }

    /// Closes the connection; later calls throw. Idempotent.
    public func close() {
        state.withLock { state in
            state.context = nil
            state.isClosed = true
        }
    }

    /// Connects, then AUTH and SELECT as the endpoint asks. A refused AUTH/SELECT counts as a
    /// connection error: the client is unusable until the configuration or the server changes.
    private static func connect(_ endpoint: RedisEndpoint, timeoutMs: Int, tls: RedisTLSContext?) throws(RedisError) -> HiredisContext {
        let context = try HiredisContext.connect(endpoint.address, timeoutMs: timeoutMs, tls: tls)
        var setup: [[RedisArgument]] = []
        if let password = endpoint.password {
            if let username = endpoint.username {
                setup.append(["AUTH", .string(username), .string(password)])
            } else {
                setup.append(["AUTH", .string(password)])
            }
        }
        if endpoint.database != 0 { setup.append(["SELECT", .int(Int64(endpoint.database))]) }
        if !setup.isEmpty {
            for reply in try context.run(setup) {
                if let message = reply.errorMessage {
                    throw RedisError("connection set-up to \(endpoint) refused: \(message)", isConnectionError: true)
                }
            }
        }
        return context
    }
}
