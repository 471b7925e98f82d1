import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A blocking, pipelining client of the master a Redis Sentinel deployment names
/// (`redis+sentinel://…`, `rediss+sentinel://…`): the same contract as ``RedisClient``
/// (``RedisPipelining``), so ``DeliveryStateStore`` runs unchanged on it.
///
/// - **Discovery.** The Sentinels are asked in turn (the last one that answered first) for
///   `SENTINEL get-master-addr-by-name <name>`; the address named is connected to (TLS, `AUTH`
///   and `SELECT` as the endpoint says) and must answer `ROLE` with `master`, else the next
///   Sentinel is asked. Discovery runs at the first command and whenever the master is forgotten.
/// - **Failover.** The master is forgotten when its connection fails or a command is refused
///   with `READONLY` (a demoted master that is a replica now); the commands not answered are sent
///   again to the master discovered next, after a backoff (`retryBackoff`, doubling, at most
///   `maxRetryBackoff`), at most `maxRetries` times (≈ 2.5 s in all by default), then the call
///   throws a connection error. Commands whose connection broke after they were written may
///   have run: a retry runs them again (at-least-once, as ``RedisClusterClient``; the store's
///   commands are idempotent).
/// - **Health.** ``ping()`` asks a Sentinel where the master is (and moves to it when that is
///   not the master in use: a failover whose old master still answers, as after
///   `SENTINEL FAILOVER` or a partition, writes to it until it is told to replicate, seconds
///   later), then asks the master for its `ROLE`: true only while a master answers as master.
///   ``problem`` says why not; a switch to a new master is counted (``masterSwitchCount``) so a
///   caller can write back what the new master may not have received.
///
/// Sentinels get ``RedisSentinelEndpoint/sentinelPassword`` when set. Discovery asks each on a
/// fresh connection; the connection of the Sentinel that named the master is kept for health
/// checks, and so is the master connection. Callers are serialized; the async variants run on
/// the client's serial queue. The client connects lazily and never at `init`.
public final class RedisSentinelClient: RedisPipelining {
    /// Timeouts and retry bounds.
    public struct Options: Sendable, Equatable {
        /// Bounds each connect (Sentinel or master) and each socket operation. Default: 2 s.
        public var timeout: Duration
        /// Rounds one call may retry after the master failed or refused. Default: 5.
        public var maxRetries: Int
        /// Backoff before the first retry, doubled each time. Default: 100 ms.
        public var retryBackoff: Duration
        /// The longest backoff. Default: 1 s.
        public var maxRetryBackoff: Duration

        public init(timeout: Duration = .seconds(2), maxRetries: Int = 5, retryBackoff: Duration = .milliseconds(100),
                    maxRetryBackoff: Duration = .seconds(1)) {
            self.timeout = timeout
            self.maxRetries = maxRetries
            self.retryBackoff = retryBackoff
            self.maxRetryBackoff = maxRetryBackoff
        }
    }

    public let endpoint: RedisSentinelEndpoint
    public let options: Options
    private let timeoutMs: Int
    private let tls: RedisTLSContext?
    private let state: Mutex<State>
    private let published = Mutex(Published())
    private let queue: DispatchQueue
    private let roundTrips = Atomic<Int>(0)
    private let connectionErrors = Atomic<Int>(0)

    private struct State: ~Copyable {
        var context: HiredisContext?
        /// The connection to the Sentinel that named the master last, kept for health checks.
        var sentinel: (address: RedisEndpoint.Address, context: HiredisContext)?
        /// The Sentinels in the order they are asked: the last one that named a master first.
        var sentinels: [RedisEndpoint.Address]
        var isClosed = false
    }

    /// What health checks and metrics read without waiting for a call.
    private struct Published {
        var master: RedisEndpoint.Address?
        var lastMaster: RedisEndpoint.Address?
        var problem: String?
        var switches = 0
    }

    public var description: String { endpoint.description }
    /// Network round trips so far (master pipelines, Sentinel questions, health checks).
    public var roundTripCount: Int { roundTrips.load(ordering: .relaxed) }
    /// Calls that failed with a connection error so far.
    public var connectionErrorCount: Int { connectionErrors.load(ordering: .relaxed) }
    /// The master in use, nil while none is known.
    public var master: RedisEndpoint.Address? { published.withLock { $0.master } }
    /// Why no master is in use (the last discovery or master failure), nil while one is.
    public var problem: String? { published.withLock { $0.master == nil ? ($0.problem ?? "no master discovered yet") : nil } }
    /// How often the master changed: a master discovered at another address than the one before.
    public var masterSwitchCount: Int { published.withLock { $0.switches } }

    public convenience init(url: String, options: Options = Options()) throws(RedisError) {
        try self.init(endpoint: RedisSentinelEndpoint(url: url), options: options)
    }

    /// Reads the TLS files now (a bad one throws here); connects at the first command.
    public init(endpoint: RedisSentinelEndpoint, options: Options = Options()) throws(RedisError) {
        let ms = DeliveryStateStore.milliseconds(options.timeout)
        guard ms > 0 else { throw RedisError("the timeout must be positive") }
        guard options.maxRetries >= 0 else { throw RedisError("retry bounds must not be negative") }
        guard !endpoint.sentinels.isEmpty else { throw RedisError("Sentinel needs at least one host") }
        self.endpoint = endpoint
        self.options = options
        self.timeoutMs = Int(clamping: ms)
        self.tls = try endpoint.tls.map { tls throws(RedisError) in try RedisTLSContext(tls) }
        self.state = Mutex(State(sentinels: endpoint.sentinels))
        self.queue = DispatchQueue(label: "pushworker.redis-sentinel")
        _ = RedisClient.ignoreSIGPIPE
    }

    // MARK: - Pipelines

    /// Sends the commands to the master as one pipeline and returns one reply per command, in
    /// order, following the master across a failover (see the type's documentation).
    public func pipeline(_ commands: [[RedisArgument]]) throws(RedisError) -> [RedisReply] {
        if commands.isEmpty { return [] }
        if commands.contains(where: \.isEmpty) { throw RedisError("a Redis command needs at least one argument") }
        do throws(RedisError) {
            return try state.withLock { (state: inout State) throws(RedisError) -> [RedisReply] in
                if state.isClosed { throw RedisError("the client is closed") }
                return try execute(commands, &state)
            }
        } catch {
            if error.isConnectionError { connectionErrors.add(1, ordering: .relaxed) }
            throw error
        }
    }

    /// As the blocking ``pipeline(_:)``, run on the client's serial queue; safe on the cooperative pool.
    public func pipeline(_ commands: [[RedisArgument]]) async throws(RedisError) -> [RedisReply] {
        try await queue.blockingCall { () throws(RedisError) in try self.pipeline(commands) }
    }

    /// Runs `commands` on the master, again on the next master for those a failure or `READONLY`
    /// left unanswered, within the retry bounds.
    private func execute(_ commands: [[RedisArgument]], _ state: inout State) throws(RedisError) -> [RedisReply] {
        var replies: [RedisReply?] = []
        var pending = Array(commands.indices)
        var failures = 0
        while true {
            var why: String
            do throws(RedisError) {
                let context = try masterConnection(&state)
                roundTrips.add(1, ordering: .relaxed)
                let answered = try context.run(pending.count == commands.count ? commands : pending.map { commands[$0] })
                var refused: [Int] = []
                for (position, reply) in answered.enumerated() where Self.isNotMaster(reply) { refused.append(position) }
                if refused.isEmpty && replies.isEmpty { return answered }
                if replies.isEmpty { replies = [RedisReply?](repeating: nil, count: commands.count) }
                for (position, reply) in answered.enumerated() { replies[pending[position]] = reply }
                if refused.isEmpty { return replies.map { $0 ?? .null } }
                why = "\(published.withLock { $0.master?.description } ?? "the master") refused: \(answered[refused[0]].errorMessage ?? "")"
                pending = refused.map { pending[$0] }
            } catch {
                guard error.isConnectionError else { throw error }
                why = error.message
            }
            forgetMaster(&state, because: why)
            failures += 1
            guard failures <= options.maxRetries else {
                throw RedisError("redis sentinel: \(pending.count) command(s) failed after \(options.maxRetries) retries: \(why)",
                                 isConnectionError: true)
            }
            backoff(failures)
        }
    }

    /// A reply that says the server is not the master (any more): the command did not run.
    static func isNotMaster(_ reply: RedisReply) -> Bool {
        guard case .error(let message) = reply else { return false }
        return message.hasPrefix("READONLY") || message.contains("READONLY You can't write")
    }

    private func backoff(_ round: Int) {
        let base = DeliveryStateStore.milliseconds(options.retryBackoff)
        let cap = DeliveryStateStore.milliseconds(options.maxRetryBackoff)
        let ms = min(cap, base.multipliedReportingOverflow(by: Int64(1) << min(round - 1, 20)).partialValue)
        if ms > 0 { usleep(UInt32(clamping: ms * 1000)) }
    }

    // MARK: - Discovery

    /// The master connection, discovering the master first when none is known.
    private func masterConnection(_ state: inout State) throws(RedisError) -> HiredisContext {
        if let context = state.context { return context }
        let (address, context) = try discover(&state)
        state.context = context
        published.withLock { published in
            if let last = published.lastMaster, last != address { published.switches += 1 }
            published.master = address
            published.lastMaster = address
            published.problem = nil
        }
        return context
    }

    private func forgetMaster(_ state: inout State, because why: String) {
        state.context = nil
        published.withLock { published in
            published.master = nil
            published.problem = why
        }
    }

    /// Asks the Sentinels in turn for the master and connects to the first address that answers
    /// as a master; the Sentinel that named it is asked first next time.
    private func discover(_ state: inout State) throws(RedisError) -> (RedisEndpoint.Address, HiredisContext) {
        var problems: [String] = []
        state.sentinel = nil
        for (index, sentinel) in state.sentinels.enumerated() {
            let address: RedisEndpoint.Address
            let asked: HiredisContext
            do throws(RedisError) {
                asked = try connectSentinel(sentinel)
                guard let named = try ask(asked) else {
                    problems.append("\(sentinel) does not know master '\(endpoint.masterName)'")
                    continue
                }
                address = named
            } catch {
                problems.append("\(sentinel): \(error.message)")
                continue
            }
            do throws(RedisError) {
                let context = try connectMaster(address)
                if index > 0 { state.sentinels.insert(state.sentinels.remove(at: index), at: 0) }
                state.sentinel = (sentinel, asked)
                return (address, context)
            } catch {
                problems.append("\(sentinel) names \(address): \(error.message)")
            }
        }
        throw RedisError("no master known for '\(endpoint.masterName)': \(problems.joined(separator: "; "))", isConnectionError: true)
    }

    /// Where the Sentinels name the master now: the kept Sentinel connection first, then each
    /// Sentinel in turn (the first that names one is kept).
    private func namedMaster(_ state: inout State) throws(RedisError) -> RedisEndpoint.Address {
        var problems: [String] = []
        if let (sentinel, context) = state.sentinel {
            do throws(RedisError) {
                if let address = try ask(context) { return address }
                problems.append("\(sentinel) does not know master '\(endpoint.masterName)'")
            } catch {
                problems.append("\(sentinel): \(error.message)")
            }
            state.sentinel = nil
        }
        for sentinel in state.sentinels {
            do throws(RedisError) {
                let context = try connectSentinel(sentinel)
                guard let address = try ask(context) else {
                    problems.append("\(sentinel) does not know master '\(endpoint.masterName)'")
                    continue
                }
                state.sentinel = (sentinel, context)
                return address
            } catch {
                problems.append("\(sentinel): \(error.message)")
            }
        }
        throw RedisError("no master known for '\(endpoint.masterName)': \(problems.joined(separator: "; "))", isConnectionError: true)
    }

    /// A connection to `sentinel`, authenticated with the Sentinels' password when one is set.
    private func connectSentinel(_ sentinel: RedisEndpoint.Address) throws(RedisError) -> HiredisContext {
        let context = try HiredisContext.connect(sentinel, timeoutMs: timeoutMs, tls: tls)
        if let password = endpoint.sentinelPassword {
            let auth: [RedisArgument] = endpoint.sentinelUsername.map { ["AUTH", .string($0), .string(password)] } ?? ["AUTH", .string(password)]
            roundTrips.add(1, ordering: .relaxed)
            if let message = try context.run([auth])[0].errorMessage {
                throw RedisError("AUTH refused (PUSHWORKER_REDIS_SENTINEL_PASSWORD): \(message)", isConnectionError: true)
            }
        }
        return context
    }

    /// `SENTINEL get-master-addr-by-name` on a Sentinel connection: the address, or nil when the
    /// Sentinel does not know the name.
    private func ask(_ context: HiredisContext) throws(RedisError) -> RedisEndpoint.Address? {
        roundTrips.add(1, ordering: .relaxed)
        let replies = try context.run([["SENTINEL", "get-master-addr-by-name", .string(endpoint.masterName)]])
        switch replies[replies.count - 1] {
        case .null: return nil
        case .array(let parts) where parts.count == 2:
            guard let host = parts[0].text, !host.isEmpty, let portText = parts[1].text, let port = Int(portText), (1...65535).contains(port) else {
                throw RedisError("unexpected answer \(replies[replies.count - 1])", isConnectionError: true)
            }
            return .tcp(host: host, port: port)
        case .error(let message):
            if message.hasPrefix("NOAUTH") { throw RedisError("\(message) (set PUSHWORKER_REDIS_SENTINEL_PASSWORD)", isConnectionError: true) }
            throw RedisError(message, isConnectionError: true)
        case let other:
            throw RedisError("unexpected answer \(other)", isConnectionError: true)
        }
    }

    /// Connects to `address` with the master's credentials and database, and checks in the same
    /// round trip that it is a master (`ROLE`).
    private func connectMaster(_ address: RedisEndpoint.Address) throws(RedisError) -> HiredisContext {
        let context = try HiredisContext.connect(address, timeoutMs: timeoutMs, tls: tls)
        var commands: [[RedisArgument]] = []
        if let password = endpoint.password {
            commands.append(endpoint.username.map { ["AUTH", .string($0), .string(password)] } ?? ["AUTH", .string(password)])
        }
        if endpoint.database != 0 { commands.append(["SELECT", .int(Int64(endpoint.database))]) }
        commands.append(["ROLE"])
        roundTrips.add(1, ordering: .relaxed)
        let replies = try context.run(commands)
        for reply in replies.dropLast() {
            if let message = reply.errorMessage { throw RedisError("connection set-up refused: \(message)", isConnectionError: true) }
        }
        let role = Self.role(replies[replies.count - 1])
        guard role == "master" else { throw RedisError("not a master (ROLE: \(role ?? "no answer"))", isConnectionError: true) }
        return context
    }

    /// The first element of a `ROLE` reply: `master`, `slave` or `sentinel`.
    static func role(_ reply: RedisReply) -> String? {
        guard case .array(let parts) = reply else { return nil }
        return parts.first?.text
    }

    // MARK: - Health

    /// Asks a Sentinel where the master is, moves to it when that is not the master in use, then
    /// asks the master for its `ROLE` (discovering it when none is known, and once more when the
    /// one in use fails or is no longer master): nil while a master answers as master, otherwise
    /// why not (also kept in ``problem``). For `/readyz`.
    public func checkMaster() -> String? {
        state.withLock { (state: inout State) -> String? in
            if state.isClosed { return "the client is closed" }
            var why = ""
            do throws(RedisError) {
                let named = try namedMaster(&state)
                if let current = published.withLock({ $0.master }), current != named {
                    forgetMaster(&state, because: "the Sentinels name \(named) as master, no longer \(current)")
                }
            } catch {
                forgetMaster(&state, because: error.message)
                return error.message
            }
            for _ in 0..<2 {
                do throws(RedisError) {
                    let context = try masterConnection(&state)
                    roundTrips.add(1, ordering: .relaxed)
                    let role = Self.role(try context.run([["ROLE"]])[0])
                    if role == "master" { return nil }
                    why = "\(published.withLock { $0.master?.description } ?? "the master") is no longer master (ROLE: \(role ?? "no answer"))"
                } catch {
                    why = error.message
                }
                forgetMaster(&state, because: why)
            }
            return why
        }
    }

    /// Async ``checkMaster()`` on the client's queue.
    public func checkMaster() async -> String? {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: self.checkMaster()) }
        }
    }

    /// Whether a master answers as master now (``checkMaster()``).
    public func ping() -> Bool { checkMaster() == nil }

    /// Async ``ping()`` on the client's queue.
    public func ping() async -> Bool { await checkMaster() == nil }

    /// Closes the master connection; later calls throw. Idempotent.
    public func close() {
        state.withLock { state in
            state.context = nil
            state.sentinel = nil
            state.isClosed = true
        }
        published.withLock { $0.master = nil }
    }
}
