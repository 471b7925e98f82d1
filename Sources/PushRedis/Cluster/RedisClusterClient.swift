import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A blocking, pipelining Redis Cluster client over hiredis 0.14.1 (which has no cluster support:
/// the routing is here). Same contract as ``RedisClient`` (``RedisPipelining``), so
/// ``DeliveryStateStore`` runs unchanged on either.
///
/// - **Slot map.** Read with `CLUSTER SHARDS` (Redis ≥ 7; `CLUSTER SLOTS` on older servers) from
///   the first reachable node: known masters, then replicas, then the URL's seeds. Read at the
///   first command, after a `MOVED`, after a connection error, and by every health check.
/// - **TLS** (`rediss+cluster://`). Every node over TLS, at its `tls-port` (the map's, or the
///   one a TLS connection is told by `CLUSTER SLOTS` and `MOVED`); each certificate is checked
///   against the host the map names the node by (its hostname when the cluster announces
///   hostnames, else its IP address).
/// - **Routing.** Every command goes to the master of its key's slot (``RedisClusterSlot``);
///   ``RedisClusterPlan`` says which argument is the key, splits `MGET`/`DEL`/`MSET`… over slots,
///   sends `SCRIPT LOAD`/`FLUSHALL`… to every master and keyless commands to one.
/// - **One round trip per batch.** One connection per master; each master gets its part of a
///   pipeline as one pipeline, all at once (``HiredisExchange``: write everything, then `poll(2)`),
///   and the replies are put back in the caller's order.
/// - **Redirections.** `MOVED slot node`: the map learns the new owner, is read again, and the
///   command is sent again to that node; `ASK slot node`: `ASKING` + the command on that node,
///   map unchanged. At most `maxRedirects` such rounds per call.
/// - **Failures.** A connection error on a node (killed master, failover), `CLUSTERDOWN`,
///   `TRYAGAIN`, `LOADING`, `MASTERDOWN`: the commands of that node are sent again after the map is
///   read again and a backoff (`retryBackoff`, doubling, at most `maxRetryBackoff`), at most
///   `maxRetries` times; then the call throws a connection error. Commands whose connection broke
///   after they were written may have run: a retry runs them again (at-least-once; make such
///   commands idempotent, as the store's are, or tolerant: a token bucket retried takes twice).
/// - **Scripts.** `EVALSHA` goes where its keys are; the caller's `NOSCRIPT` ⇒ `EVAL` fallback
///   (``DeliveryStateStore``) is routed the same way, so only the node that lost its scripts pays
///   the second round trip; `SCRIPT LOAD` reaches every master.
///
/// Callers are serialized (one batch at a time); the async variant runs on the client's serial
/// queue. The client connects lazily and never at `init`.
public final class RedisClusterClient: RedisPipelining {
    /// Timeouts and retry bounds.
    public struct Options: Sendable, Equatable {
        /// Bounds each connect and each wait for a node's replies. Default: 2 s.
        public var timeout: Duration
        /// Rounds with a failure (connection error, `CLUSTERDOWN`, `TRYAGAIN`…) one call may retry. Default: 5.
        public var maxRetries: Int
        /// Backoff before the first retry, doubled each time. Default: 100 ms.
        public var retryBackoff: Duration
        /// The longest backoff. Default: 1 s (so the default budget waits ≈ 2.5 s in all).
        public var maxRetryBackoff: Duration
        /// `MOVED`/`ASK` rounds one call may follow. Default: 5.
        public var maxRedirects: Int

        public init(
            timeout: Duration = .seconds(2), maxRetries: Int = 5, retryBackoff: Duration = .milliseconds(100),
            maxRetryBackoff: Duration = .seconds(1), maxRedirects: Int = 5
        ) {
            self.timeout = timeout
            self.maxRetries = maxRetries
            self.retryBackoff = retryBackoff
            self.maxRetryBackoff = maxRetryBackoff
            self.maxRedirects = maxRedirects
        }
    }

    public let endpoint: RedisClusterEndpoint
    public let options: Options
    private let timeoutMs: Int
    /// The OpenSSL settings of `rediss+cluster://`, shared by every node's connection.
    private let tls: RedisTLSContext?
    private let state = Mutex(State())
    private let published = Mutex(Published())
    private let queue: DispatchQueue
    private let roundTrips = Atomic<Int>(0)
    private let connectionErrors = Atomic<Int>(0)
    private let mapReads = Atomic<Int>(0)

    private struct State: ~Copyable {
        var map: RedisClusterSlotMap?
        var connections: [RedisClusterNode: HiredisContext] = [:]
        var isClosed = false
        /// False once a node answered that it does not know `CLUSTER SHARDS` (Redis < 7).
        var useShards = true
    }

    /// What metrics read without waiting for a batch: counters and the last map.
    private struct Published {
        var counters: [RedisClusterNode: Counters] = [:]
        var map: RedisClusterSlotMap?
    }

    private struct Counters {
        var roundTrips = 0
        var connectionErrors = 0
        var moved = 0
        var ask = 0
    }

    /// Network round trips so far: batch rounds (all nodes at once count one), map reads and
    /// health checks.
    public var roundTripCount: Int { roundTrips.load(ordering: .relaxed) }
    /// Calls that failed with a connection error so far.
    public var connectionErrorCount: Int { connectionErrors.load(ordering: .relaxed) }
    /// Slot map reads so far (successful or not).
    public var slotMapReadCount: Int { mapReads.load(ordering: .relaxed) }

    public var description: String { endpoint.description }

    public convenience init(url: String, options: Options = Options()) throws(RedisError) {
        try self.init(endpoint: RedisClusterEndpoint(url: url), options: options)
    }

    /// With TLS, reads the CA and client certificate files now (a bad one throws here).
    public init(endpoint: RedisClusterEndpoint, options: Options = Options()) throws(RedisError) {
        let ms = DeliveryStateStore.milliseconds(options.timeout)
        guard ms > 0 else { throw RedisError("the timeout must be positive") }
        guard options.maxRetries >= 0, options.maxRedirects >= 0 else { throw RedisError("retry bounds must not be negative") }
        guard !endpoint.seeds.isEmpty else { throw RedisError("a cluster needs at least one seed node") }
        self.endpoint = endpoint
        self.options = options
        self.timeoutMs = Int(clamping: ms)
        self.tls = try endpoint.tls.map { tls throws(RedisError) in try RedisTLSContext(tls) }
        self.queue = DispatchQueue(label: "pushworker.redis-cluster")
        _ = RedisClient.ignoreSIGPIPE
    }

    // MARK: - Pipelines

    /// Sends every node its part of `commands` as one pipeline, all nodes at once, and returns one
    /// reply per command in order (see the type's documentation for redirections and retries).
    public func pipeline(_ commands: [[RedisArgument]]) throws(RedisError) -> [RedisReply] {
        if commands.isEmpty { return [] }
        if commands.contains(where: \.isEmpty) { throw RedisError("a Redis command needs at least one argument") }
        let plan = try RedisClusterPlan(commands)
        do throws(RedisError) {
            let replies = try state.withLock { (state: inout State) throws(RedisError) -> [RedisReply] in
                if state.isClosed { throw RedisError("the client is closed") }
                if state.map == nil { try readMap(&state) }
                return try execute(plan.units, &state)
            }
            return plan.join(replies)
        } catch {
            if error.isConnectionError { connectionErrors.add(1, ordering: .relaxed) }
            throw error
        }
    }

    /// As the blocking ``pipeline(_:)``, run on the client's serial queue; safe on the cooperative pool.
    public func pipeline(_ commands: [[RedisArgument]]) async throws(RedisError) -> [RedisReply] {
        try await queue.blockingCall { () throws(RedisError) in try self.pipeline(commands) }
    }

    private enum Route {
        case slot(Int)
        case anyMaster
        case node(RedisClusterNode)
    }

    private struct Job {
        var command: [RedisArgument]
        var route: Route
    }

    private enum Outcome {
        case done
        case redirected
        case failed
    }

    /// The jobs of a batch: one per unit, or one per master for a unit sent to every master.
    private struct Expansion {
        var jobs: [Job] = []
        /// The job of each unit (the first one of a broadcast).
        var jobOfUnit: [Int] = []
        var broadcasts: [(unit: Int, jobs: Range<Int>, merge: RedisClusterPlan.Merge)] = []

        init(_ units: [RedisClusterPlan.Unit], masters: [RedisClusterNode]) {
            jobs.reserveCapacity(units.count)
            jobOfUnit.reserveCapacity(units.count)
            for (index, unit) in units.enumerated() {
                jobOfUnit.append(jobs.count)
                switch unit.target {
                case .slot(let slot): jobs.append(Job(command: unit.command, route: .slot(slot)))
                case .anyMaster: jobs.append(Job(command: unit.command, route: .anyMaster))
                case .everyMaster(let merge):
                    let start = jobs.count
                    for master in masters { jobs.append(Job(command: unit.command, route: .node(master))) }
                    broadcasts.append((unit: index, jobs: start..<jobs.count, merge: merge))
                }
            }
        }

        /// One reply per unit from the jobs' replies (a broadcast's merged).
        func unitReplies(_ replies: [RedisReply?]) -> [RedisReply] {
            var unitReplies: [RedisReply] = []
            unitReplies.reserveCapacity(jobOfUnit.count)
            for job in jobOfUnit { unitReplies.append(replies[job] ?? .null) }
            for broadcast in broadcasts {
                unitReplies[broadcast.unit] = RedisClusterPlan.merge(broadcast.jobs.map { replies[$0] ?? .null }, broadcast.merge)
            }
            return unitReplies
        }
    }

    /// One round of ``execute(_:_:)``: the jobs to send again, and why.
    private struct Round {
        var retry: [Int] = []
        /// A failure (not a redirection): the round counts against `maxRetries` and backs off.
        var sawFailure = false
        var needsMap = false
        var lastFailure = ""
        /// Where replies sent `ASK` (the next round sends those jobs there, after `ASKING`).
        var asking: [Int: RedisClusterNode] = [:]
        var delta: [RedisClusterNode: Counters] = [:]

        /// Jobs that reach no node, or whose node failed: sent again after the slot map is read.
        mutating func retryWithNewMap(_ failed: [Int], _ why: String) {
            retry.append(contentsOf: failed)
            sawFailure = true
            needsMap = true
            lastFailure = why
        }
    }

    /// Runs the units (one node each, or every master), with redirections and retries; one reply per unit.
    private func execute(_ units: [RedisClusterPlan.Unit], _ state: inout State) throws(RedisError) -> [RedisReply] {
        guard let map = state.map else { throw RedisError("no slot map", isConnectionError: true) }
        let expansion = Expansion(units, masters: map.masters)
        var replies = [RedisReply?](repeating: nil, count: expansion.jobs.count)
        var pending = Array(expansion.jobs.indices)
        var asking: [Int: RedisClusterNode] = [:]
        var failedNodes: Set<RedisClusterNode> = []
        var failureRounds = 0, redirectRounds = 0
        while !pending.isEmpty {
            var round = Round()
            let targets = route(pending, expansion.jobs, asking: asking, failedNodes: failedNodes, map: state.map, &round)
            send(targets, expansion.jobs, asked: asking, &state, &failedNodes, &replies, &round)
            asking = round.asking
            record(round.delta)
            if round.retry.isEmpty { break }
            if round.sawFailure {
                failureRounds += 1
                guard failureRounds <= options.maxRetries else {
                    throw RedisError("redis cluster: \(round.retry.count) command(s) failed after \(options.maxRetries) retries: \(round.lastFailure)",
                                     isConnectionError: true)
                }
                backoff(failureRounds)
            } else {
                redirectRounds += 1
                guard redirectRounds <= options.maxRedirects else {
                    throw RedisError("redis cluster: still redirected after \(options.maxRedirects) redirections", isConnectionError: true)
                }
            }
            if round.needsMap { try? readMap(&state) }
            pending = round.retry.sorted()
        }
        return expansion.unitReplies(replies)
    }

    /// The node of every pending job, with its jobs: masters by their index in the map (no
    /// hashing on the hot path), other targets (ASK, a node outside the map) by address. Jobs with
    /// no node go to `round`'s retries.
    private func route(_ pending: [Int], _ jobs: [Job], asking: [Int: RedisClusterNode], failedNodes: Set<RedisClusterNode>,
                       map: RedisClusterSlotMap?, _ round: inout Round) -> [(node: RedisClusterNode, jobs: [Int])] {
        let masters = map?.masters ?? []
        var jobsOfMaster = [[Int]](repeating: [], count: masters.count)
        var others: [(node: RedisClusterNode, jobs: [Int])] = []
        func add(_ job: Int, to node: RedisClusterNode) {
            if let index = masters.firstIndex(of: node) { return jobsOfMaster[index].append(job) }
            if let index = others.firstIndex(where: { $0.node == node }) { return others[index].jobs.append(job) }
            others.append((node, [job]))
        }
        for job in pending {
            if let target = asking[job] {
                add(job, to: target)
                continue
            }
            switch jobs[job].route {
            case .slot(let slot):
                if let index = map?.masterIndex(forSlot: slot) {
                    jobsOfMaster[index].append(job)
                } else {
                    round.retryWithNewMap([job], "no master serves slot \(slot)")
                }
            case .node(let target):
                add(job, to: target)
            case .anyMaster:
                if let index = masters.firstIndex(where: { !failedNodes.contains($0) }) ?? (masters.isEmpty ? nil : 0) {
                    jobsOfMaster[index].append(job)
                } else {
                    round.retryWithNewMap([job], "the slot map has no master")
                }
            }
        }
        var targets: [(node: RedisClusterNode, jobs: [Int])] = []
        for (index, list) in jobsOfMaster.enumerated() where !list.isEmpty { targets.append((masters[index], list)) }
        return targets + others
    }

    /// Sends every target its jobs as one pipeline, all nodes at once (one round trip), after
    /// connecting where needed (`ASKING` before the jobs `asked` redirected); files each reply
    /// in `replies` or, for a redirection or a failure, in `round`.
    private func send(_ targets: [(node: RedisClusterNode, jobs: [Int])], _ jobs: [Job], asked: [Int: RedisClusterNode],
                      _ state: inout State, _ failedNodes: inout Set<RedisClusterNode>, _ replies: inout [RedisReply?], _ round: inout Round) {
        var parts: [HiredisExchange.Part] = []
        var sent: [(node: RedisClusterNode, jobs: [Int])] = []
        for (node, nodeJobs) in targets {
            do throws(RedisError) {
                let context = try connection(to: node, &state)
                var commands: [[RedisArgument]] = []
                commands.reserveCapacity(nodeJobs.count)
                for job in nodeJobs {
                    if asked[job] != nil { commands.append(["ASKING"]) }
                    commands.append(jobs[job].command)
                }
                parts.append(HiredisExchange.Part(context: context, commands: commands))
                sent.append((node, nodeJobs))
            } catch {
                round.delta[node, default: Counters()].connectionErrors += 1
                failedNodes.insert(node)
                round.retryWithNewMap(nodeJobs, error.message)
            }
        }
        guard !parts.isEmpty else { return }
        roundTrips.add(1, ordering: .relaxed)
        for (index, result) in HiredisExchange.run(parts, timeoutMs: timeoutMs).enumerated() {
            let (node, nodeJobs) = sent[index]
            round.delta[node, default: Counters()].roundTrips += 1
            switch result {
            case .failure(let error):
                state.connections[node] = nil
                round.delta[node, default: Counters()].connectionErrors += 1
                failedNodes.insert(node)
                round.retryWithNewMap(nodeJobs, "\(node): \(error.message)")
            case .success(let nodeReplies):
                var position = 0
                for job in nodeJobs {
                    if asked[job] != nil { position += 1 } // ASKING's +OK
                    let reply = nodeReplies[position]
                    position += 1
                    switch classify(reply, from: node, job: job, &state, &round.asking, &round.delta) {
                    case .done: replies[job] = reply
                    case .redirected:
                        round.retry.append(job)
                        if case .error(let message) = reply, message.hasPrefix("MOVED") { round.needsMap = true }
                    case .failed:
                        round.retry.append(job)
                        round.sawFailure = true
                        round.needsMap = round.needsMap || reply.errorMessage?.hasPrefix("CLUSTERDOWN") == true
                        round.lastFailure = "\(node): \(reply.errorMessage ?? "")"
                    }
                }
            }
        }
    }

    /// What a reply means for its job: final, a redirection to follow, or a transient cluster error.
    private func classify(
        _ reply: RedisReply, from node: RedisClusterNode, job: Int, _ state: inout State,
        _ asking: inout [Int: RedisClusterNode], _ delta: inout [RedisClusterNode: Counters]
    ) -> Outcome {
        guard case .error(let message) = reply else { return .done }
        if message.hasPrefix("MOVED ") || message.hasPrefix("ASK ") {
            let parts = message.split(separator: " ")
            guard parts.count >= 3, let slot = Int(parts[1]), let target = RedisClusterNode(address: parts[2], defaultHost: node.host) else {
                return .done
            }
            if parts[0] == "MOVED" {
                delta[node, default: Counters()].moved += 1
                state.map?.assign(slot: slot, to: target)
            } else {
                delta[node, default: Counters()].ask += 1
                asking[job] = target
            }
            return .redirected
        }
        for transient in ["CLUSTERDOWN", "TRYAGAIN", "LOADING", "MASTERDOWN", "READONLY"] where message.hasPrefix(transient) {
            return .failed
        }
        return .done
    }

    private func backoff(_ round: Int) {
        let base = DeliveryStateStore.milliseconds(options.retryBackoff)
        let cap = DeliveryStateStore.milliseconds(options.maxRetryBackoff)
        let shift = min(round - 1, 20)
        let ms = min(cap, base.multipliedReportingOverflow(by: Int64(1) << shift).partialValue)
        if ms > 0 { usleep(UInt32(clamping: ms * 1000)) }
    }

    private func record(_ delta: [RedisClusterNode: Counters]) {
        if delta.isEmpty { return }
        published.withLock { published in
            for (node, change) in delta {
                var counters = published.counters[node] ?? Counters()
                counters.roundTrips += change.roundTrips
                counters.connectionErrors += change.connectionErrors
                counters.moved += change.moved
                counters.ask += change.ask
                published.counters[node] = counters
            }
        }
    }

    // MARK: - Connections and the slot map

    /// The pooled connection to `node`, connecting (and authenticating) if needed. With TLS the
    /// node's certificate is checked against the host the slot map (or the URL) names it by.
    private func connection(to node: RedisClusterNode, _ state: inout State) throws(RedisError) -> HiredisContext {
        if let existing = state.connections[node] { return existing }
        let context = try HiredisContext.connect(.tcp(host: node.host, port: node.port), timeoutMs: timeoutMs, tls: tls)
        if let password = endpoint.password {
            let auth: [RedisArgument] = endpoint.username.map { ["AUTH", .string($0), .string(password)] } ?? ["AUTH", .string(password)]
            if let message = try context.run([auth])[0].errorMessage {
                throw RedisError("connection set-up to \(node) refused: \(message)", isConnectionError: true)
            }
        }
        state.connections[node] = context
        return context
    }

    /// Reads the slot map from the first node that answers: known masters, replicas, then seeds.
    private func readMap(_ state: inout State) throws(RedisError) {
        var candidates: [RedisClusterNode] = []
        if let map = state.map { candidates = map.masters + map.replicas }
        for seed in endpoint.seeds where !candidates.contains(seed) { candidates.append(seed) }
        var problems: [String] = []
        for node in candidates {
            do throws(RedisError) {
                let map = try readMap(from: node, &state)
                guard !map.masters.isEmpty else {
                    problems.append("\(node): no slots assigned")
                    continue
                }
                state.map = map
                for connected in state.connections.keys where !map.masters.contains(connected) { state.connections[connected] = nil }
                published.withLock { $0.map = map }
                return
            } catch {
                problems.append("\(node): \(error.message)")
            }
        }
        throw RedisError("cannot read the cluster's slot map: \(problems.joined(separator: "; "))", isConnectionError: true)
    }

    private func readMap(from node: RedisClusterNode, _ state: inout State) throws(RedisError) -> RedisClusterSlotMap {
        mapReads.add(1, ordering: .relaxed)
        var delta = Counters()
        defer { record([node: delta]) }
        do throws(RedisError) {
            let context = try connection(to: node, &state)
            if state.useShards {
                roundTrips.add(1, ordering: .relaxed)
                delta.roundTrips += 1
                let reply = try context.run([["CLUSTER", "SHARDS"]])[0]
                if let message = reply.errorMessage {
                    guard message.lowercased().contains("unknown subcommand") else { throw RedisError("CLUSTER SHARDS: \(message)") }
                    state.useShards = false
                } else {
                    return try RedisClusterSlotMap.parse(clusterShards: reply, answeredBy: node.host, tls: tls != nil)
                }
            }
            roundTrips.add(1, ordering: .relaxed)
            delta.roundTrips += 1
            let reply = try context.run([["CLUSTER", "SLOTS"]])[0]
            if let message = reply.errorMessage { throw RedisError("CLUSTER SLOTS: \(message)") }
            return try RedisClusterSlotMap.parse(clusterSlots: reply, answeredBy: node.host)
        } catch {
            if error.isConnectionError {
                state.connections[node] = nil
                delta.connectionErrors += 1
            }
            throw error
        }
    }

    /// Reads the slot map again now (it is also read by itself when needed).
    public func refreshSlotMap() throws(RedisError) {
        try state.withLock { (state: inout State) throws(RedisError) in
            if state.isClosed { throw RedisError("the client is closed") }
            try readMap(&state)
        }
    }

    /// The slot map last read, or nil before the first command. Does not wait for a running batch.
    public func slotMap() -> RedisClusterSlotMap? {
        published.withLock { $0.map }
    }

    // MARK: - Health and metrics

    /// Reads the slot map again and pings every master at once: healthy when every slot has a
    /// master and every master answers `PONG` (for `/readyz`). Two round trips.
    public func checkHealth() -> RedisClusterHealth {
        state.withLock { (state: inout State) -> RedisClusterHealth in
            if state.isClosed { return RedisClusterHealth(masters: [], unreachableMasters: [], uncoveredSlots: 0, problem: "the client is closed") }
            do throws(RedisError) { try readMap(&state) } catch {
                return RedisClusterHealth(masters: [], unreachableMasters: [], uncoveredSlots: RedisClusterSlot.count, problem: error.message)
            }
            guard let map = state.map else {
                return RedisClusterHealth(masters: [], unreachableMasters: [], uncoveredSlots: RedisClusterSlot.count, problem: "no slot map")
            }
            var unreachable: [RedisClusterNode] = []
            var parts: [HiredisExchange.Part] = []
            var partNodes: [RedisClusterNode] = []
            var delta: [RedisClusterNode: Counters] = [:]
            for master in map.masters {
                do throws(RedisError) {
                    parts.append(HiredisExchange.Part(context: try connection(to: master, &state), commands: [["PING"]]))
                    partNodes.append(master)
                } catch {
                    unreachable.append(master)
                    delta[master, default: Counters()].connectionErrors += 1
                }
            }
            if !parts.isEmpty {
                roundTrips.add(1, ordering: .relaxed)
                for (node, result) in zip(partNodes, HiredisExchange.run(parts, timeoutMs: timeoutMs)) {
                    delta[node, default: Counters()].roundTrips += 1
                    switch result {
                    case .success(let replies) where replies == [.status("PONG")]: break
                    case .success:
                        unreachable.append(node)
                    case .failure:
                        state.connections[node] = nil
                        delta[node, default: Counters()].connectionErrors += 1
                        unreachable.append(node)
                    }
                }
            }
            record(delta)
            let uncovered = map.uncoveredSlotCount
            var problem: String?
            if uncovered > 0 { problem = "\(uncovered) slots have no master" }
            if !unreachable.isEmpty { problem = [problem, "masters not answering: \(unreachable.map(\.description).joined(separator: ", "))"].compactMap { $0 }.joined(separator: "; ") }
            return RedisClusterHealth(masters: map.masters, unreachableMasters: unreachable, uncoveredSlots: uncovered, problem: problem)
        }
    }

    /// Async ``checkHealth()`` on the client's queue.
    public func checkHealth() async -> RedisClusterHealth {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: self.checkHealth()) }
        }
    }

    /// ``checkHealth()``'s verdict: every slot has a master that answers.
    public func ping() -> Bool { checkHealth().isHealthy }

    /// Async ``ping()`` on the client's queue.
    public func ping() async -> Bool { await checkHealth().isHealthy }

    /// Counters per node since the client was created (every node it talked to, sorted), with each
    /// node's role in the last slot map. Does not wait for a running batch.
    public func nodeStats() -> [RedisClusterNodeStats] {
        published.withLock { published in
            let slots = published.map?.slotCounts ?? [:]
            let nodes = Set(published.counters.keys).union(slots.keys)
            return nodes.sorted().map { node in
                let counters = published.counters[node] ?? Counters()
                return RedisClusterNodeStats(
                    node: node, isMaster: slots[node] != nil, slots: slots[node] ?? 0, roundTrips: counters.roundTrips,
                    connectionErrors: counters.connectionErrors, moved: counters.moved, ask: counters.ask
                )
            }
        }
    }

    /// Closes every connection; later calls throw. Idempotent.
    public func close() {
        state.withLock { state in
            state.connections.removeAll()
            state.isClosed = true
        }
    }
}

/// Counters of one cluster node, for metrics (`RedisClusterClient.nodeStats()`).
public struct RedisClusterNodeStats: Sendable, Equatable {
    public var node: RedisClusterNode
    /// Whether the last slot map names this node as the master of some slots.
    public var isMaster: Bool
    /// Slots it serves in the last slot map.
    public var slots: Int
    /// Pipelines sent to it (batch parts, map reads, pings).
    public var roundTrips: Int
    /// Connects, writes or reads that failed.
    public var connectionErrors: Int
    /// `MOVED` replies it sent.
    public var moved: Int
    /// `ASK` replies it sent.
    public var ask: Int
}

/// The verdict of ``RedisClusterClient/checkHealth()``.
public struct RedisClusterHealth: Sendable, Equatable {
    /// The masters of the slot map just read.
    public var masters: [RedisClusterNode]
    /// Masters that did not answer `PING`.
    public var unreachableMasters: [RedisClusterNode]
    /// Slots no master serves.
    public var uncoveredSlots: Int
    /// Why it is not healthy; nil when healthy.
    public var problem: String?

    /// Every slot has a master and every master answered.
    public var isHealthy: Bool { problem == nil }
}
