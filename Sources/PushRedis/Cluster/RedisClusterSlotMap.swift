/// A Redis Cluster node's address, as the cluster announces it.
public struct RedisClusterNode: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// `host:port` (`[v6]:port` for IPv6), as in `MOVED` replies and metrics.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        (lhs.host, lhs.port) < (rhs.host, rhs.port)
    }

    /// Parses `host:port` or `[v6]:port` (the address in `MOVED`/`ASK` replies; Redis 7 writes
    /// `:port` when the node's address is unknown: then `defaultHost`).
    init?(address text: Substring, defaultHost: String) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (1...65535).contains(port) else {
            return nil
        }
        var host = text[..<colon]
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        self.init(host: host.isEmpty ? defaultHost : String(host), port: port)
    }
}

/// Which master serves each of the 16384 slots (from `CLUSTER SHARDS` or `CLUSTER SLOTS`).
public struct RedisClusterSlotMap: Sendable, Equatable {
    /// A run of consecutive slots served by one master.
    public struct Range: Sendable, Equatable {
        public var slots: ClosedRange<Int>
        public var master: RedisClusterNode

        public init(slots: ClosedRange<Int>, master: RedisClusterNode) {
            self.slots = slots
            self.master = master
        }
    }

    /// The masters that serve at least one slot, sorted.
    public private(set) var masters: [RedisClusterNode]
    /// Replicas the cluster announced (candidates for reading a new map after a failover).
    public private(set) var replicas: [RedisClusterNode]
    /// Per slot: an index into `masters`, or `unowned`.
    private var owners: [UInt16]
    private static let unowned = UInt16.max

    /// Builds the map from ranges; later ranges win where they overlap.
    public init(ranges: [Range], replicas: [RedisClusterNode] = []) {
        masters = []
        self.replicas = []
        owners = Array(repeating: Self.unowned, count: RedisClusterSlot.count)
        var nodes: [RedisClusterNode] = []
        for range in ranges {
            let index: Int
            if let known = nodes.firstIndex(of: range.master) { index = known } else {
                index = nodes.count
                nodes.append(range.master)
            }
            let lower = max(0, range.slots.lowerBound), upper = min(RedisClusterSlot.count - 1, range.slots.upperBound)
            if lower <= upper {
                for slot in lower...upper { owners[slot] = UInt16(index) }
            }
        }
        masters = nodes
        compact()
        self.replicas = Array(Set(replicas).subtracting(masters)).sorted()
    }

    /// The master serving `slot`, or nil if no master does (a hole in the map).
    public func master(forSlot slot: Int) -> RedisClusterNode? {
        guard slot >= 0, slot < owners.count else { return nil }
        let owner = owners[slot]
        return owner == Self.unowned ? nil : masters[Int(owner)]
    }

    /// The index in ``masters`` of the master serving `slot`, or nil.
    public func masterIndex(forSlot slot: Int) -> Int? {
        guard slot >= 0, slot < owners.count else { return nil }
        let owner = owners[slot]
        return owner == Self.unowned ? nil : Int(owner)
    }

    /// The ranges of consecutive slots with the same master, in slot order.
    public var ranges: [Range] {
        var result: [Range] = []
        var start = 0
        while start < owners.count {
            var end = start
            while end + 1 < owners.count, owners[end + 1] == owners[start] { end += 1 }
            if owners[start] != Self.unowned { result.append(Range(slots: start...end, master: masters[Int(owners[start])])) }
            start = end + 1
        }
        return result
    }

    /// Slots served by no master: the cluster cannot serve some keys.
    public var uncoveredSlotCount: Int { owners.lazy.filter { $0 == Self.unowned }.count }

    /// Slots per master.
    public var slotCounts: [RedisClusterNode: Int] {
        var counts = [Int](repeating: 0, count: masters.count)
        for owner in owners where owner != Self.unowned { counts[Int(owner)] += 1 }
        return Dictionary(uniqueKeysWithValues: zip(masters, counts))
    }

    /// Records a `MOVED slot node` answer: `node` now serves `slot`.
    public mutating func assign(slot: Int, to node: RedisClusterNode) {
        guard slot >= 0, slot < owners.count else { return }
        if let index = masters.firstIndex(of: node) {
            owners[slot] = UInt16(index)
        } else {
            masters.append(node)
            owners[slot] = UInt16(masters.count - 1)
        }
        replicas.removeAll { $0 == node }
        compact()
    }

    /// Drops masters left without slots and sorts the rest (stable indices for equal maps).
    private mutating func compact() {
        var counts = [Int](repeating: 0, count: masters.count)
        for owner in owners where owner != Self.unowned { counts[Int(owner)] += 1 }
        let kept = masters.indices.filter { counts[$0] > 0 }.sorted { masters[$0] < masters[$1] }
        if kept == Array(masters.indices) { return }
        var remap = [UInt16](repeating: Self.unowned, count: masters.count)
        for (newIndex, oldIndex) in kept.enumerated() { remap[oldIndex] = UInt16(newIndex) }
        masters = kept.map { masters[$0] }
        for slot in owners.indices where owners[slot] != Self.unowned { owners[slot] = remap[Int(owners[slot])] }
    }
}

// MARK: - Parsing the cluster's answers

extension RedisClusterSlotMap {
    /// Parses a `CLUSTER SLOTS` reply (Redis ≥ 3): `[[start, end, [host, port, id, …], replica…], …]`.
    /// An empty host means "the node that answered" (`answeredBy`); `?` (unknown) skips that node.
    public static func parse(clusterSlots reply: RedisReply, answeredBy: String) throws(RedisError) -> RedisClusterSlotMap {
        guard case .array(let entries) = reply else { throw malformed("CLUSTER SLOTS", reply) }
        var ranges: [Range] = []
        var replicas: [RedisClusterNode] = []
        for entry in entries {
            guard case .array(let fields) = entry, fields.count >= 3,
                  let start = fields[0].integerValue, let end = fields[1].integerValue, start <= end
            else { throw malformed("CLUSTER SLOTS", entry) }
            var nodes: [RedisClusterNode] = []
            for field in fields[2...] {
                guard case .array(let address) = field, address.count >= 2, let port = address[1].integerValue else {
                    throw malformed("CLUSTER SLOTS", field)
                }
                let host = address[0].text ?? ""
                if host == "?" { nodes.append(RedisClusterNode(host: "", port: 0)); continue }
                nodes.append(RedisClusterNode(host: host.isEmpty ? answeredBy : host, port: Int(port)))
            }
            guard let master = nodes.first, master.port != 0 else { continue }
            ranges.append(Range(slots: Int(start)...Int(end), master: master))
            replicas.append(contentsOf: nodes.dropFirst().filter { $0.port != 0 })
        }
        return RedisClusterSlotMap(ranges: ranges, replicas: replicas)
    }

    /// Parses a `CLUSTER SHARDS` reply (Redis ≥ 7.0), RESP2 form: per shard a flat
    /// `[slots, [start, end, …], nodes, [[id, …, port, p, ip, …, endpoint, …, role, …, health, …], …]]`.
    /// A shard's master is its node with role `master` (an online one first); shards without slots
    /// (a failed master whose replica took over) are skipped. With `tls` a node's `tls-port` is
    /// used (its `port` when it announces none): a TLS cluster (`tls-cluster yes`) lists the
    /// plain port, if any, as `port`.
    public static func parse(clusterShards reply: RedisReply, answeredBy: String, tls: Bool = false) throws(RedisError) -> RedisClusterSlotMap {
        guard case .array(let shards) = reply else { throw malformed("CLUSTER SHARDS", reply) }
        var ranges: [Range] = []
        var replicas: [RedisClusterNode] = []
        for shard in shards {
            let fields = try pairs(shard, "CLUSTER SHARDS")
            guard case .array(let slotBounds)? = fields["slots"], case .array(let nodes)? = fields["nodes"], slotBounds.count % 2 == 0 else {
                throw malformed("CLUSTER SHARDS", shard)
            }
            if slotBounds.isEmpty { continue }
            var master: RedisClusterNode?
            var masterOnline = false
            for node in nodes {
                let info = try pairs(node, "CLUSTER SHARDS")
                let announced = tls ? (info["tls-port"] ?? info["port"]) : info["port"]
                guard let port = announced?.integerValue, port > 0 else { continue }
                var host = info["endpoint"]?.text ?? ""
                if host.isEmpty || host == "?" { host = info["ip"]?.text ?? "" }
                if host == "?" { continue }
                let address = RedisClusterNode(host: host.isEmpty ? answeredBy : host, port: Int(port))
                let online = info["health"]?.text.map { $0 == "online" } ?? true
                if info["role"]?.text == "master" {
                    if master == nil || (online && !masterOnline) {
                        if let previous = master { replicas.append(previous) }
                        master = address
                        masterOnline = online
                    } else {
                        replicas.append(address)
                    }
                } else {
                    replicas.append(address)
                }
            }
            guard let master else { continue }
            for pair in stride(from: 0, to: slotBounds.count, by: 2) {
                guard let start = slotBounds[pair].integerValue, let end = slotBounds[pair + 1].integerValue, start <= end else {
                    throw malformed("CLUSTER SHARDS", shard)
                }
                ranges.append(Range(slots: Int(start)...Int(end), master: master))
            }
        }
        return RedisClusterSlotMap(ranges: ranges, replicas: replicas)
    }

    /// A RESP2 flat `[name, value, name, value, …]` array as a dictionary.
    private static func pairs(_ reply: RedisReply, _ command: String) throws(RedisError) -> [String: RedisReply] {
        guard case .array(let items) = reply, items.count % 2 == 0 else { throw malformed(command, reply) }
        var result: [String: RedisReply] = [:]
        for index in stride(from: 0, to: items.count, by: 2) {
            guard let name = items[index].text else { throw malformed(command, reply) }
            result[name] = items[index + 1]
        }
        return result
    }

    private static func malformed(_ command: String, _ reply: RedisReply) -> RedisError {
        RedisError("unexpected \(command) reply: \(String(describing: reply).prefix(200))")
    }
}
