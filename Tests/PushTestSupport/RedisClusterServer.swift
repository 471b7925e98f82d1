import Foundation

/// A real Redis Cluster on loopback: `masters` masters with `replicasPerMaster` replicas each,
/// Debian's `redis-server --cluster-enabled yes`, joined by `redis-cli --cluster create`.
/// Every node is stopped by its PID when the cluster is stopped or dropped.
///
/// Ports: each node needs `p` and the cluster bus `p + 10000` free, so `p < 55535`.
/// `nodeTimeoutMs` (default 2000) is `cluster-node-timeout`: a killed master's replica takes over
/// about 2 × that later. With `tls` every node speaks only TLS, to clients and to each other
/// (`--port 0 --tls-port p --tls-cluster yes --tls-replication yes`, ``RedisTLSFiles``' server
/// certificate). The fixture drives the cluster with `redis-cli`, never with the client under test.
///
/// Thread safety: `processes` and `killed` are only touched under `lock`.
public final class RedisClusterServer: @unchecked Sendable {
    /// One line of `CLUSTER NODES`.
    public struct NodeInfo: Sendable, Equatable {
        public var id: String
        public var port: UInt16
        public var isMaster: Bool
        public var isFailed: Bool
        /// The master's id, for a replica.
        public var masterID: String?
        public var slots: [ClosedRange<Int>]
    }

    /// Every node's port, masters first as created (roles change after a failover).
    public let ports: [UInt16]
    public let nodeTimeoutMs: Int
    public let tls: RedisTLSFiles?
    private let lock = NSLock()
    private var processes: [UInt16: TestProcess] = [:]
    private var killed: Set<UInt16> = []
    private let folder: URL

    /// A `redis+cluster://` URL naming every node still running as a seed.
    public var url: String { "\(tls == nil ? "redis" : "rediss")+cluster://" + livePorts.map { "127.0.0.1:\($0)" }.joined(separator: ",") }

    /// Ports of the nodes not killed.
    public var livePorts: [UInt16] {
        lock.lock(); defer { lock.unlock() }
        return ports.filter { !killed.contains($0) }
    }

    public init(masters: Int = 3, replicasPerMaster: Int = 1, nodeTimeoutMs: Int = 2000, tls: RedisTLSFiles? = nil) throws {
        self.nodeTimeoutMs = nodeTimeoutMs
        self.tls = tls
        folder = try TemporaryFolder.make(prefix: "redis-cluster")
        var chosen: [UInt16] = []
        var attempts = 0
        while chosen.count < masters * (1 + replicasPerMaster) {
            attempts += 1
            if attempts > 10_000 { throw TestSupportError("no free port pairs below 55535 for the cluster") }
            let port = freeLoopbackPort()
            guard port > 1024, port < 55535, !chosen.contains(port), !chosen.contains(port + 10000), !chosen.contains(port &- 10000),
                  isFreeLoopbackPort(port + 10000) else { continue }
            chosen.append(port)
        }
        ports = chosen
        do {
            for port in chosen {
                let directory = folder.appendingPathComponent("\(port)")
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                let portArguments = tls.map { $0.serverArguments(port: port) + ["--tls-cluster", "yes", "--tls-replication", "yes"] }
                    ?? ["--port", "\(port)"]
                let process = try TestProcess("/usr/bin/redis-server", portArguments + [
                    "--bind", "127.0.0.1", "--cluster-enabled", "yes",
                    "--cluster-config-file", directory.appendingPathComponent("nodes.conf").path,
                    "--cluster-node-timeout", "\(nodeTimeoutMs)", "--save", "", "--appendonly", "no",
                    "--repl-diskless-sync-delay", "0", "--dir", directory.path, "--daemonize", "no", "--protected-mode", "yes",
                ])
                lock.lock(); processes[port] = process; lock.unlock()
            }
            for port in chosen {
                guard eventually(timeout: 10, { isListening(port: port) }) else {
                    throw TestSupportError("cluster node \(port) did not start: \(process(port)?.stderr() ?? "")\(process(port)?.stdout() ?? "")")
                }
            }
            let create = try runCommand("/usr/bin/redis-cli", (tls?.cliArguments ?? []) + ["--cluster", "create"] + chosen.map { "127.0.0.1:\($0)" }
                + ["--cluster-replicas", "\(replicasPerMaster)", "--cluster-yes"], timeout: 60)
            guard create.status == 0 else { throw TestSupportError("redis-cli --cluster create failed: \(create.stdout.suffix(800)) \(create.stderr)") }
            try waitUntilHealthy(timeout: 30)
        } catch {
            stop()
            throw error
        }
    }

    private func process(_ port: UInt16) -> TestProcess? {
        lock.lock(); defer { lock.unlock() }
        return processes[port]
    }

    /// Runs `redis-cli -p port arguments…` and returns its (raw) output; throws if it fails or
    /// answers an error.
    @discardableResult
    public func cli(_ port: UInt16, _ arguments: [String]) throws -> String {
        let result = try runCommand("/usr/bin/redis-cli", ["-h", "127.0.0.1", "-p", "\(port)"] + (tls?.cliArguments ?? []) + arguments, timeout: 30)
        let output = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard result.status == 0, !output.hasPrefix("ERR"), !output.hasPrefix("(error)") else {
            throw TestSupportError("redis-cli -p \(port) \(arguments.joined(separator: " ")): \(output) \(result.stderr)")
        }
        return output
    }

    /// `CLUSTER NODES` as one live node sees it.
    public func nodes(asking port: UInt16? = nil) throws -> [NodeInfo] {
        guard let asked = port ?? livePorts.first else { throw TestSupportError("no live node") }
        return try cli(asked, ["CLUSTER", "NODES"]).split(separator: "\n").compactMap(Self.parseNodeLine)
    }

    static func parseNodeLine(_ line: Substring) -> NodeInfo? {
        let fields = line.split(separator: " ")
        guard fields.count >= 8 else { return nil }
        guard let address = fields[1].split(separator: "@").first, let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...]) else { return nil }
        let flags = fields[2].split(separator: ",")
        var slots: [ClosedRange<Int>] = []
        for field in fields.dropFirst(8) where !field.hasPrefix("[") {
            let bounds = field.split(separator: "-").compactMap { Int($0) }
            if bounds.count == 1 { slots.append(bounds[0]...bounds[0]) } else if bounds.count == 2 { slots.append(bounds[0]...bounds[1]) }
        }
        return NodeInfo(
            id: String(fields[0]), port: port, isMaster: flags.contains("master"), isFailed: flags.contains("fail") || flags.contains("fail?"),
            masterID: fields[3] == "-" ? nil : String(fields[3]), slots: slots
        )
    }

    /// Live masters that serve slots, by port.
    public func masterPorts() throws -> [UInt16] {
        let live = Set(livePorts)
        return try nodes().filter { $0.isMaster && !$0.slots.isEmpty && live.contains($0.port) }.map(\.port).sorted()
    }

    /// The port of the master serving `slot` (as the first live node sees it).
    public func owner(ofSlot slot: Int) throws -> UInt16 {
        guard let owner = try nodes().first(where: { $0.isMaster && $0.slots.contains { $0.contains(slot) } }) else {
            throw TestSupportError("no master serves slot \(slot)")
        }
        return owner.port
    }

    /// Waits until every live node reports `cluster_state:ok`, every slot is served by a live
    /// master and every replica is attached to one.
    public func waitUntilHealthy(timeout: Double = 30) throws {
        let healthy = eventually(timeout: timeout) {
            let live = livePorts
            for port in live {
                guard let info = try? cli(port, ["CLUSTER", "INFO"]), info.contains("cluster_state:ok") else { return false }
            }
            guard let nodes = try? nodes() else { return false }
            let liveSet = Set(live)
            let served = nodes.filter { $0.isMaster && liveSet.contains($0.port) }.flatMap(\.slots).map(\.count).reduce(0, +)
            // Right after `--cluster create`, replicas still show as masters without slots for a moment.
            let settled = nodes.filter { liveSet.contains($0.port) }.allSatisfy { !$0.isMaster || !$0.slots.isEmpty }
            return served == 16384 && settled
        }
        if !healthy { throw TestSupportError("the cluster did not become healthy: \((try? cli(livePorts.first ?? 0, ["CLUSTER", "NODES"])) ?? "?")") }
    }

    /// Waits until `port`'s replica has synced (a failover needs an up-to-date replica) and returns it.
    public func syncedReplica(of port: UInt16, timeout: Double = 20) throws -> UInt16 {
        let all = try nodes()
        guard let master = all.first(where: { $0.port == port }),
              let replica = all.first(where: { $0.masterID == master.id && !$0.isFailed }) else {
            throw TestSupportError("master \(port) has no replica")
        }
        guard eventually(timeout: timeout, { (try? cli(replica.port, ["INFO", "replication"]))?.contains("master_link_status:up") == true }) else {
            throw TestSupportError("the replica \(replica.port) of \(port) did not sync")
        }
        return replica.port
    }

    /// Kills a node at once (SIGKILL), as a crash would.
    public func kill(_ port: UInt16) {
        guard let process = process(port) else { return }
        process.signal(SIGKILL)
        process.wait(timeout: 5)
        lock.lock(); killed.insert(port); lock.unlock()
    }

    /// Waits until `replica` serves as a master and the cluster is healthy again (after its master died).
    public func waitForPromotion(of replica: UInt16, timeout: Double = 30) throws {
        guard eventually(timeout: timeout, { (try? nodes(asking: replica))?.first { $0.port == replica }?.isMaster == true }) else {
            throw TestSupportError("replica \(replica) was not promoted")
        }
        try waitUntilHealthy(timeout: timeout)
    }

    // MARK: - Slot migration by hand (CLUSTER SETSLOT + MIGRATE), to produce MOVED and ASK

    private func nodeID(_ port: UInt16) throws -> String {
        guard let node = try nodes().first(where: { $0.port == port }) else { throw TestSupportError("no node on \(port)") }
        return node.id
    }

    /// Step 1: `target` IMPORTING `slot`, its owner MIGRATING it. Keys still on the owner are served
    /// there; keys already moved get `ASK`. Returns the owner's port.
    @discardableResult
    public func beginMigration(slot: Int, to target: UInt16) throws -> UInt16 {
        let source = try owner(ofSlot: slot)
        try cli(target, ["CLUSTER", "SETSLOT", "\(slot)", "IMPORTING", try nodeID(source)])
        try cli(source, ["CLUSTER", "SETSLOT", "\(slot)", "MIGRATING", try nodeID(target)])
        return source
    }

    /// Step 2: moves `keys` (all of the slot's keys when nil) from `source` to `target` with MIGRATE.
    public func migrateKeys(slot: Int, from source: UInt16, to target: UInt16, keys: [String]? = nil) throws {
        let moving = try keys ?? cli(source, ["CLUSTER", "GETKEYSINSLOT", "\(slot)", "100000"]).split(separator: "\n").map(String.init)
        if moving.isEmpty { return }
        try cli(source, ["MIGRATE", "127.0.0.1", "\(target)", "", "0", "5000", "REPLACE", "KEYS"] + moving)
    }

    /// Step 3: `slot` belongs to `target`, on every live master; waits until they all agree.
    public func finishMigration(slot: Int, to target: UInt16) throws {
        let id = try nodeID(target)
        let masters = try masterPorts()
        try cli(target, ["CLUSTER", "SETSLOT", "\(slot)", "NODE", id])
        for port in masters where port != target { try cli(port, ["CLUSTER", "SETSLOT", "\(slot)", "NODE", id]) }
        let agreed = eventually(timeout: 10) {
            masters.allSatisfy { port in
                (try? nodes(asking: port))?.first { $0.port == target }?.slots.contains { $0.contains(slot) } == true
            }
        }
        if !agreed { throw TestSupportError("the masters do not agree that \(target) owns slot \(slot)") }
    }

    /// Moves `slot` (and its keys) to `target`: steps 1 to 3.
    public func moveSlot(_ slot: Int, to target: UInt16) throws {
        let source = try beginMigration(slot: slot, to: target)
        try migrateKeys(slot: slot, from: source, to: target)
        try finishMigration(slot: slot, to: target)
    }

    /// Stops every node (SIGKILL: the test data need not survive).
    public func stop() {
        lock.lock()
        let all = processes
        processes = [:]
        lock.unlock()
        for process in all.values { process.signal(SIGKILL) }
        for process in all.values { process.wait(timeout: 5) }
        try? FileManager.default.removeItem(at: folder)
    }

    deinit { stop() }
}
