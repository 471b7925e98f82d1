import Foundation
import PushRedis
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A throwaway Redis Cluster on loopback (bench, chaos drills): `masters` × (1 + `replicasPerMaster`)
/// `redis-server --cluster-enabled yes` joined by `redis-cli --cluster create`, every node
/// stopped by PID when dropped. Each node needs its port `p` and the cluster bus `p + 10000`
/// free, so `p < 55535`.
///
/// The drills drive it as a crash or an operator would: ``kill(_:)`` (SIGKILL), ``restart(_:)``
/// (the node comes back from its `nodes.conf`, empty: nothing is persisted, and rejoins as a
/// replica when its replica was promoted meanwhile), ``holdFailover(of:_:)``
/// (`cluster-replica-no-failover`), slot migration by hand (``beginMigration(slots:from:to:)``,
/// ``migrateKeys(slots:from:to:)``, ``finishMigration(slots:to:)``: `CLUSTER SETSLOT` and
/// `MIGRATE`, so `ASK` and `MOVED` happen exactly when a drill wants them) and
/// ``reshard(slots:from:to:)`` (`redis-cli --cluster reshard`). Admin commands go to one node at
/// a time through a plain ``RedisClient`` (never the cluster client under test).
/// (`Tests/PushTestSupport/RedisClusterServer.swift` is the same fixture for the client's own
/// tests, driven by `redis-cli` only.)
package final class LocalRedisCluster: Sendable {
    /// One line of `CLUSTER NODES`.
    package struct Node: Sendable, Equatable {
        var id: String
        package var port: UInt16
        var isMaster: Bool
        var isFailed: Bool
        /// The master's id, for a replica.
        var masterID: String?
        /// Slots served (masters), as ranges.
        package var slots: [ClosedRange<Int>]
        var slotCount: Int { slots.map(\.count).reduce(0, +) }
    }

    package let ports: [UInt16]
    package let nodeTimeoutMs: Int
    private let folder: URL
    private let server: String
    private let cli: String
    private let processes: Mutex<[UInt16: ChildProcess]>
    /// `redis+cluster://` with every node as a seed.
    package var url: String { "redis+cluster://" + ports.map { "127.0.0.1:\($0)" }.joined(separator: ",") }
    /// Every node's PID now (bench: the cluster's CPU).
    package var pids: [Int32] { processes.withLock { $0.values.filter(\.isRunning).map { $0.process.processIdentifier } } }

    package init(folder: URL, masters: Int = 3, replicasPerMaster: Int = 0, nodeTimeoutMs: Int = 5000) throws {
        guard masters >= 3 else { throw DemoError("a Redis Cluster needs at least 3 masters") }
        server = ["/usr/bin/redis-server", "/usr/sbin/redis-server", "/usr/local/bin/redis-server"]
            .first { FileManager.default.isExecutableFile(atPath: $0) } ?? "/usr/bin/redis-server"
        guard let cli = ["/usr/bin/redis-cli", "/usr/local/bin/redis-cli"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw DemoError("redis-cli not found (Debian: apt-get install redis-tools)")
        }
        self.cli = cli
        self.folder = folder
        self.nodeTimeoutMs = nodeTimeoutMs
        processes = Mutex([:])
        var chosen: [UInt16] = []
        var attempts = 0
        while chosen.count < masters * (1 + replicasPerMaster) {
            attempts += 1
            guard attempts < 10_000 else { throw DemoError("no free port pairs below 55535") }
            let port = ChildProcess.freePort()
            guard port > 1024, port < 55535, !chosen.contains(port), !chosen.contains(port + 10000), !chosen.contains(port &- 10000),
                  !LocalRedis.answers(port: port + 10000) else { continue }
            chosen.append(port)
        }
        ports = chosen
        do {
            for port in chosen { try start(port) }
            for port in chosen where !ChildProcess.waitFor(timeout: 10, { LocalRedis.answers(port: port) }) {
                throw DemoError("cluster node \(port) did not start")
            }
            let create = try ProcessStats.runMeasured(
                [cli, "--cluster", "create"] + chosen.map { "127.0.0.1:\($0)" } + ["--cluster-replicas", "\(replicasPerMaster)", "--cluster-yes"],
                output: folder.appendingPathComponent("redis-cluster-create.log").path
            )
            guard create.status == 0 else { throw DemoError("redis-cli --cluster create failed (see \(folder.path)/redis-cluster-create.log)") }
            try waitUntilHealthy(timeout: 30)
        } catch {
            stop()
            throw error
        }
    }

    private func start(_ port: UInt16) throws {
        let directory = folder.appendingPathComponent("redis-cluster-\(port)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let child = try ChildProcess(server, [
            "--port", "\(port)", "--bind", "127.0.0.1", "--cluster-enabled", "yes",
            "--cluster-config-file", directory.appendingPathComponent("nodes.conf").path,
            "--cluster-node-timeout", "\(nodeTimeoutMs)", "--save", "", "--appendonly", "no",
            "--repl-diskless-sync-delay", "0", "--dir", directory.path, "--daemonize", "no",
        ], log: directory.appendingPathComponent("redis-\(UUID().uuidString.prefix(4)).log"))
        processes.withLock { $0[port] = child }
    }

    /// Stops every node at once (SIGKILL: nothing is persisted anyway) and reaps them.
    package func stop() {
        let all = processes.withLock { processes -> [ChildProcess] in defer { processes.removeAll() }; return Array(processes.values) }
        for child in all { child.process.signal(SIGKILL) }
        for child in all { child.process.waitUntilExit() }
    }

    deinit { stop() }

    // MARK: - Commands to one node

    /// Runs `commands` as one pipeline on the node at `port` (a fresh plain connection).
    @discardableResult
    package func run(_ port: UInt16, _ commands: [[RedisArgument]]) throws -> [RedisReply] {
        let client = try RedisClient(url: "redis://127.0.0.1:\(port)", timeout: .seconds(5))
        defer { client.close() }
        return try client.pipeline(commands)
    }

    /// One command on one node; an error reply throws.
    @discardableResult
    package func command(_ port: UInt16, _ arguments: [RedisArgument]) throws -> RedisReply {
        let reply = try run(port, [arguments])[0]
        if let message = reply.errorMessage { throw DemoError("redis \(port): \(message)") }
        return reply
    }

    /// Ports of the nodes running now.
    package var livePorts: [UInt16] {
        processes.withLock { processes in ports.filter { processes[$0]?.isRunning == true } }
    }

    /// `CLUSTER NODES` as `port` (default: the first live node) sees it.
    package func nodes(asking port: UInt16? = nil) throws -> [Node] {
        guard let asked = port ?? livePorts.first else { throw DemoError("no live cluster node") }
        guard let text = try command(asked, ["CLUSTER", "NODES"]).text else { throw DemoError("CLUSTER NODES: no text") }
        return text.split(separator: "\n").compactMap(Self.parseNodeLine)
    }

    package static func parseNodeLine(_ line: Substring) -> Node? {
        let fields = line.split(separator: " ")
        guard fields.count >= 8, let address = fields[1].split(separator: "@").first, let colon = address.lastIndex(of: ":"),
              let port = UInt16(address[address.index(after: colon)...]) else { return nil }
        let flags = fields[2].split(separator: ",")
        var slots: [ClosedRange<Int>] = []
        for field in fields.dropFirst(8) where !field.hasPrefix("[") {
            let bounds = field.split(separator: "-").compactMap { Int($0) }
            if bounds.count == 1 { slots.append(bounds[0]...bounds[0]) } else if bounds.count == 2, bounds[0] <= bounds[1] { slots.append(bounds[0]...bounds[1]) }
        }
        return Node(id: String(fields[0]), port: port, isMaster: flags.contains("master"),
                    isFailed: flags.contains("fail") || flags.contains("fail?"), masterID: fields[3] == "-" ? nil : String(fields[3]), slots: slots)
    }

    /// Live masters that serve slots, sorted by port.
    package func masterPorts() throws -> [UInt16] {
        let live = Set(livePorts)
        return try nodes().filter { $0.isMaster && !$0.slots.isEmpty && live.contains($0.port) }.map(\.port).sorted()
    }

    /// The master of `slot` as the first live node sees it.
    package func owner(ofSlot slot: Int) throws -> UInt16? {
        try nodes().first { $0.isMaster && $0.slots.contains { $0.contains(slot) } }?.port
    }

    /// A live replica of the master at `port`.
    package func replica(of port: UInt16) throws -> UInt16? {
        let all = try nodes()
        guard let master = all.first(where: { $0.port == port }) else { return nil }
        let live = Set(livePorts)
        return all.first { $0.masterID == master.id && !$0.isFailed && live.contains($0.port) }?.port
    }

    /// Every live node says `cluster_state:ok`, every slot has a live master, and each live
    /// replica's link to its master is up.
    package func isHealthy() -> Bool {
        let live = livePorts
        let liveSet = Set(live)
        for port in live {
            guard let info = try? command(port, ["CLUSTER", "INFO"]).text, info.contains("cluster_state:ok") else { return false }
        }
        guard let nodes = try? nodes() else { return false }
        let served = nodes.filter { $0.isMaster && liveSet.contains($0.port) }.map(\.slotCount).reduce(0, +)
        guard served == 16384 else { return false }
        for node in nodes where !node.isMaster && liveSet.contains(node.port) {
            guard let info = try? command(node.port, ["INFO", "replication"]).text, info.contains("master_link_status:up") else { return false }
        }
        return true
    }

    package func waitUntilHealthy(timeout: Double) throws {
        guard ChildProcess.waitFor(timeout: timeout, { isHealthy() }) else {
            throw DemoError("the Redis Cluster did not become healthy: \((try? nodes().map { "\($0.port) \($0.isMaster ? "master" : "replica")\($0.isFailed ? " fail" : "") \($0.slotCount)" }.joined(separator: "; ")) ?? "?")")
        }
    }

    /// Slots no live master serves, as the live node at `port` sees it (`CLUSTER INFO` `cluster_slots_ok`).
    package func slotsOK(asking port: UInt16) -> Int? {
        guard let info = try? command(port, ["CLUSTER", "INFO"]).text,
              let line = info.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("cluster_slots_ok:") }) else { return nil }
        return Int(line.dropFirst("cluster_slots_ok:".count).trimmingCharacters(in: .whitespaces))
    }

    // MARK: - Harm

    /// SIGKILL, as a crash: whatever the node had not replicated is gone.
    package func kill(_ port: UInt16) {
        guard let child = processes.withLock({ $0[port] }) else { return }
        child.process.signal(SIGKILL)
        child.process.waitUntilExit()
    }

    /// Starts a killed node again on its port with its `nodes.conf` (no data).
    package func restart(_ port: UInt16) throws {
        try start(port)
        guard ChildProcess.waitFor(timeout: 10, { LocalRedis.answers(port: port) }) else { throw DemoError("cluster node \(port) did not restart") }
    }

    /// `cluster-replica-no-failover` on the replica at `port`: while held, it does not take over
    /// a failed master (so a drill can watch a slot range without a master).
    package func holdFailover(of port: UInt16, _ hold: Bool) throws {
        try command(port, ["CONFIG", "SET", "cluster-replica-no-failover", hold ? "yes" : "no"])
    }

    /// Waits until the node at `port` serves slots as a master.
    package func waitForPromotion(of port: UInt16, timeout: Double) -> Bool {
        ChildProcess.waitFor(timeout: timeout) {
            (try? nodes(asking: port))?.first { $0.port == port }.map { $0.isMaster && !$0.slots.isEmpty } == true
        }
    }

    /// `master_repl_offset` of a node (`INFO replication`): comparing a master's with its
    /// replica's says how many bytes of writes the replica has not received.
    package func replicationOffset(_ port: UInt16) -> Int64? {
        guard let info = try? command(port, ["INFO", "replication"]).text else { return nil }
        for line in info.split(whereSeparator: \.isNewline) where line.hasPrefix("master_repl_offset:") {
            return Int64(line.dropFirst("master_repl_offset:".count).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }

    // MARK: - Keys

    /// Keys matching `pattern` on each live master (`SCAN … MATCH`), by port.
    package func keyCounts(matching pattern: String) throws -> [UInt16: Int] {
        var counts: [UInt16: Int] = [:]
        for port in try masterPorts() {
            var cursor = "0", count = 0
            repeat {
                let reply = try command(port, ["SCAN", .string(cursor), "MATCH", .string(pattern), "COUNT", "1000"])
                guard case .array(let parts) = reply, parts.count == 2, let next = parts[0].text, case .array(let keys) = parts[1] else {
                    throw DemoError("SCAN: unexpected reply")
                }
                cursor = next
                count += keys.count
            } while cursor != "0"
            counts[port] = count
        }
        return counts
    }

    /// `FLUSHALL` on every live master (a drill starts from empty state).
    package func flushAll() throws {
        for port in try masterPorts() { try command(port, ["FLUSHALL"]) }
    }

    // MARK: - Slot migration

    private func nodeID(_ port: UInt16) throws -> String {
        guard let node = try nodes().first(where: { $0.port == port }) else { throw DemoError("no cluster node on \(port)") }
        return node.id
    }

    /// Step 1: `target` IMPORTING, `source` MIGRATING each slot. Commands for keys still on the
    /// source are served there; keys not there get `ASK` (to `target`).
    package func beginMigration(slots: [Int], from source: UInt16, to target: UInt16) throws {
        let sourceID = try nodeID(source), targetID = try nodeID(target)
        try Self.checkNoErrors(run(target, slots.map { ["CLUSTER", "SETSLOT", .int(Int64($0)), "IMPORTING", .string(sourceID)] }))
        try Self.checkNoErrors(run(source, slots.map { ["CLUSTER", "SETSLOT", .int(Int64($0)), "MIGRATING", .string(targetID)] }))
    }

    /// Step 2: every key of each slot moves from `source` to `target` (`MIGRATE … KEYS`); returns the keys moved.
    @discardableResult
    package func migrateKeys(slots: [Int], from source: UInt16, to target: UInt16) throws -> Int {
        let listed = try run(source, slots.map { ["CLUSTER", "GETKEYSINSLOT", .int(Int64($0)), "100000"] })
        var moved = 0
        var commands: [[RedisArgument]] = []
        for reply in listed {
            guard case .array(let keys) = reply, !keys.isEmpty else { continue }
            moved += keys.count
            commands.append(["MIGRATE", "127.0.0.1", .int(Int64(target)), "", "0", "5000", "REPLACE", "KEYS"] + keys.compactMap { $0.text.map(RedisArgument.string) })
        }
        if !commands.isEmpty { try Self.checkNoErrors(run(source, commands)) }
        return moved
    }

    /// Step 3: each slot belongs to `target`, told to the target, then every other master;
    /// waits until the masters agree.
    package func finishMigration(slots: [Int], to target: UInt16) throws {
        let id = try nodeID(target)
        let masters = try masterPorts()
        let commands: [[RedisArgument]] = slots.map { ["CLUSTER", "SETSLOT", .int(Int64($0)), "NODE", .string(id)] }
        try Self.checkNoErrors(run(target, commands))
        for port in masters where port != target { try Self.checkNoErrors(run(port, commands)) }
        let agreed = ChildProcess.waitFor(timeout: 10) {
            masters.allSatisfy { port in
                guard let owner = (try? nodes(asking: port))?.first(where: { $0.port == target }) else { return false }
                return slots.allSatisfy { slot in owner.slots.contains { $0.contains(slot) } }
            }
        }
        if !agreed { throw DemoError("the masters do not agree that \(target) owns the migrated slots") }
    }

    /// `redis-cli --cluster reshard`: moves `slots` slots (the tool picks them) with their keys
    /// from `source` to `target`, as an operator would. Returns its exit status.
    package func reshard(slots: Int, from source: UInt16, to target: UInt16) throws -> Int32 {
        let result = try ProcessStats.runMeasured(
            [cli, "--cluster", "reshard", "127.0.0.1:\(source)", "--cluster-from", try nodeID(source), "--cluster-to", try nodeID(target),
             "--cluster-slots", "\(slots)", "--cluster-yes"],
            output: folder.appendingPathComponent("redis-cluster-reshard-\(UUID().uuidString.prefix(4)).log").path
        )
        return result.status
    }

    /// `redis-cli --cluster check`: exit status 0 when every slot is covered, none is open
    /// (migrating/importing) and the nodes agree.
    package func check() throws -> Int32 {
        guard let seed = livePorts.first else { return -1 }
        return try ProcessStats.runMeasured([cli, "--cluster", "check", "127.0.0.1:\(seed)"],
                                            output: folder.appendingPathComponent("redis-cluster-check.log").path).status
    }

    private static func checkNoErrors(_ replies: [RedisReply]) throws {
        if let message = replies.lazy.compactMap(\.errorMessage).first { throw DemoError("redis: \(message)") }
    }
}
