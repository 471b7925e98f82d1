import Dispatch

/// What ``DeliveryStateStore`` (and every other user of Redis) needs from a connection:
/// implemented by ``RedisClient`` (one server), ``RedisClusterClient`` (a Redis Cluster) and
/// ``RedisSentinelClient`` (the master Sentinel names).
///
/// Contract of both: replies come back one per command, in order; error replies (`.error`) are
/// values; only connection failures, invalid calls (an empty command, a command the client cannot
/// route) and a closed client throw. The blocking calls must not run on the cooperative pool; the
/// `async` twins run on the client's own queue.
public protocol RedisPipelining: AnyObject, Sendable, CustomStringConvertible {
    /// Sends the commands as one pipeline (per node) and returns one reply per command, in order.
    func pipeline(_ commands: [[RedisArgument]]) throws(RedisError) -> [RedisReply]
    /// As the blocking ``pipeline(_:)``, on the client's queue.
    func pipeline(_ commands: [[RedisArgument]]) async throws(RedisError) -> [RedisReply]
    /// Whether the server (every slot's master, for a cluster) answers now. For readiness probes.
    func ping() -> Bool
    /// Async ``ping()``.
    func ping() async -> Bool
    /// Closes the connections; later calls throw. Idempotent.
    func close()
    /// Network round trips so far (a pipeline sent to several cluster nodes at once is one).
    var roundTripCount: Int { get }
    /// Calls that failed with a connection error so far (`pushworker_redis_errors_total`).
    var connectionErrorCount: Int { get }
}

extension RedisClient: RedisPipelining {
    public var description: String { endpoint.description }
}

/// What `PUSHWORKER_REDIS_URL` names: one server, a cluster, or the master Sentinel watches.
///
/// - `redis://…`, `rediss://…`, `unix://…` ⇒ ``RedisEndpoint`` ⇒ ``RedisClient``
/// - `redis+cluster://…`, `rediss+cluster://…` ⇒ ``RedisClusterEndpoint`` ⇒ ``RedisClusterClient``
/// - `redis+sentinel://…`, `rediss+sentinel://…` ⇒ ``RedisSentinelEndpoint`` ⇒ ``RedisSentinelClient``
public enum RedisTarget: Sendable, Equatable, CustomStringConvertible {
    case standalone(RedisEndpoint)
    case cluster(RedisClusterEndpoint)
    case sentinel(RedisSentinelEndpoint)

    /// Parses any URL form; errors never contain the password.
    public init(url: String) throws(RedisError) {
        if RedisClusterEndpoint.schemes.contains(where: url.hasPrefix) {
            self = .cluster(try RedisClusterEndpoint(url: url))
        } else if RedisSentinelEndpoint.schemes.contains(where: url.hasPrefix) {
            self = .sentinel(try RedisSentinelEndpoint(url: url))
        } else {
            self = .standalone(try RedisEndpoint(url: url))
        }
    }

    /// Whether the connections use TLS (a `rediss…` scheme).
    public var usesTLS: Bool { tls != nil }

    /// The TLS settings, nil for plain connections.
    public var tls: RedisTLS? {
        get {
            switch self {
            case .standalone(let endpoint): endpoint.tls
            case .cluster(let endpoint): endpoint.tls
            case .sentinel(let endpoint): endpoint.tls
            }
        }
        set {
            switch self {
            case .standalone(var endpoint): endpoint.tls = newValue; self = .standalone(endpoint)
            case .cluster(var endpoint): endpoint.tls = newValue; self = .cluster(endpoint)
            case .sentinel(var endpoint): endpoint.tls = newValue; self = .sentinel(endpoint)
            }
        }
    }

    /// The password sent to the data servers (not to Sentinels).
    public var password: String? {
        get {
            switch self {
            case .standalone(let endpoint): endpoint.password
            case .cluster(let endpoint): endpoint.password
            case .sentinel(let endpoint): endpoint.password
            }
        }
        set {
            switch self {
            case .standalone(var endpoint): endpoint.password = newValue; self = .standalone(endpoint)
            case .cluster(var endpoint): endpoint.password = newValue; self = .cluster(endpoint)
            case .sentinel(var endpoint): endpoint.password = newValue; self = .sentinel(endpoint)
            }
        }
    }

    /// A client for this target; it connects at the first command, not here (TLS files are read
    /// here: a bad one throws). `timeout` bounds every connect and socket operation (default 2 s).
    public func makeClient(timeout: Duration = .seconds(2)) throws(RedisError) -> any RedisPipelining {
        switch self {
        case .standalone(let endpoint): try RedisClient(endpoint: endpoint, timeout: timeout)
        case .cluster(let endpoint): try RedisClusterClient(endpoint: endpoint, options: .init(timeout: timeout))
        case .sentinel(let endpoint): try RedisSentinelClient(endpoint: endpoint, options: .init(timeout: timeout))
        }
    }

    /// `RedisTarget(url:).makeClient(timeout:)`.
    public static func makeClient(url: String, timeout: Duration = .seconds(2)) throws(RedisError) -> any RedisPipelining {
        try RedisTarget(url: url).makeClient(timeout: timeout)
    }

    public var description: String {
        switch self {
        case .standalone(let endpoint): endpoint.description
        case .cluster(let endpoint): endpoint.description
        case .sentinel(let endpoint): endpoint.description
        }
    }
}

extension DispatchQueue {
    /// Runs the blocking `call` on this serial queue and suspends until it returns: how a Redis
    /// client's blocking calls are offered to async code without blocking the cooperative pool.
    func blockingCall<T: Sendable>(_ call: @escaping @Sendable () throws(RedisError) -> T) async throws(RedisError) -> T {
        let result: Result<T, RedisError> = await withCheckedContinuation { continuation in
            self.async { continuation.resume(returning: Result { () throws(RedisError) -> T in try call() }) }
        }
        return try result.get()
    }
}
