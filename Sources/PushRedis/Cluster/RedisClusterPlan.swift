/// How ``RedisClusterClient`` turns a caller's pipeline into commands that each go to one node,
/// and joins their replies back into one reply per caller command, in the caller's order.
///
/// Routing by command (name case-insensitive):
/// - one key, or several keys that must share a slot (Redis answers `CROSSSLOT` otherwise):
///   the slot of the first key (argument 1 for most commands; `OBJECT`/`MEMORY USAGE`/`BITOP`: 2;
///   `XREAD`/`XREADGROUP`: after `STREAMS`; `ZUNION`/`LMPOP`…: after numkeys);
/// - `MGET`, `DEL`, `UNLINK`, `EXISTS`, `TOUCH`, `MSET` over several slots: split into one command
///   per slot, rejoined (`MGET` values in key order; integer replies summed; `MSET` → `OK`);
/// - `EVAL`/`EVALSHA`/`FCALL` (and `_RO`): the keys after numkeys must share one slot, else the
///   pipeline is refused before anything is sent; no keys ⇒ any master;
/// - `SCRIPT …`, `FLUSHALL`, `FLUSHDB`: every master (one reply: the first error, else the first
///   reply; `SCRIPT EXISTS` answers 1 only where every master has the script); `KEYS`: every master,
///   arrays concatenated; `DBSIZE`: every master, summed;
/// - other keyless commands (`PING`, `INFO`, `CLUSTER …`, `TIME`, …): any one master;
/// - `MULTI`/`EXEC`/`WATCH`/`SELECT`/`SUBSCRIBE`…: refused (a pipeline split over nodes cannot
///   keep their connection-state semantics; use a script).
struct RedisClusterPlan {
    /// Where one unit goes.
    enum Target: Equatable {
        case slot(Int)
        case anyMaster
        case everyMaster(Merge)
    }

    /// How the replies of a command sent to every master become one reply.
    enum Merge: Equatable {
        /// The first error, else the first reply.
        case first
        /// Arrays concatenated (`KEYS`).
        case concatenate
        /// Integers summed (`DBSIZE`).
        case sum
        /// Element-wise: 1 only where every master answered 1 (`SCRIPT EXISTS`).
        case allOf
    }

    /// One command for one target.
    struct Unit {
        var command: [RedisArgument]
        var target: Target
    }

    /// How the replies of a caller command's units become its reply.
    private enum Join {
        case one(Int)
        /// `MGET` split by slot: for each key in order, its unit and its position in that unit's reply.
        case values([(unit: Int, index: Int)])
        /// `DEL`/`EXISTS`/… split by slot: the sum of the units' integers.
        case sum(Range<Int>)
        /// `MSET` split by slot: `OK` if every unit answered `OK`.
        case allOK(Range<Int>)
    }

    private(set) var units: [Unit] = []
    private var joins: [Join] = []
    /// True when every caller command is one unit: the replies need no joining.
    private var isOneToOne = true

    init(_ commands: [[RedisArgument]]) throws(RedisError) {
        units.reserveCapacity(commands.count)
        joins.reserveCapacity(commands.count)
        for command in commands { try add(command) }
    }

    /// One reply per caller command, from one reply per unit.
    func join(_ replies: [RedisReply]) -> [RedisReply] {
        if isOneToOne { return replies }
        return joins.map { join in
            switch join {
            case .one(let unit):
                return replies[unit]
            case .values(let positions):
                var values: [RedisReply] = []
                values.reserveCapacity(positions.count)
                for (unit, index) in positions {
                    switch replies[unit] {
                    case .array(let items) where index < items.count: values.append(items[index])
                    case .error(let message): return .error(message)
                    default: return .error("ERR unexpected reply to a split MGET: \(replies[unit])")
                    }
                }
                return .array(values)
            case .sum(let range):
                var total: Int64 = 0
                for unit in range {
                    if case .error = replies[unit] { return replies[unit] }
                    guard case .integer(let value) = replies[unit] else { return .error("ERR unexpected reply to a split command: \(replies[unit])") }
                    total &+= value
                }
                return .integer(total)
            case .allOK(let range):
                for unit in range where replies[unit] != .status("OK") { return replies[unit] }
                return .status("OK")
            }
        }
    }

    /// Joins the replies of one command sent to every master.
    static func merge(_ replies: [RedisReply], _ merge: Merge) -> RedisReply {
        if let error = replies.first(where: { $0.errorMessage != nil }) { return error }
        guard let first = replies.first else { return .error("ERR the cluster has no master") }
        switch merge {
        case .first:
            return first
        case .concatenate:
            var items: [RedisReply] = []
            for reply in replies {
                guard case .array(let part) = reply else { return first }
                items.append(contentsOf: part)
            }
            return .array(items)
        case .sum:
            var total: Int64 = 0
            for reply in replies {
                guard case .integer(let value) = reply else { return first }
                total &+= value
            }
            return .integer(total)
        case .allOf:
            guard case .array(var items) = first else { return first }
            for reply in replies.dropFirst() {
                guard case .array(let other) = reply, other.count == items.count else { return first }
                for index in items.indices where other[index] != .integer(1) { items[index] = other[index] }
            }
            return .array(items)
        }
    }

    // MARK: - Routing

    private mutating func add(_ command: [RedisArgument]) throws(RedisError) {
        guard let first = command.first else { throw RedisError("a Redis command needs at least one argument") }
        let name = Self.upperName(first)
        switch Self.kinds[name] ?? .firstKey {
        case .firstKey:
            addKeyed(command, at: 1)
        case .mget:
            try addSplit(command, step: 1, join: { positions, _ in .values(positions) })
        case .countKeys:
            try addSplit(command, step: 1, join: { _, units in .sum(units) })
        case .mset:
            guard command.count >= 3, command.count % 2 == 1 else { return addUnit(command, .anyMaster) } // Redis answers the arity error
            try addSplit(command, step: 2, join: { _, units in .allOK(units) })
        case .script:
            guard command.count >= 3, let keyCount = Self.integer(command[2]), keyCount >= 0, keyCount <= command.count - 3 else {
                return addUnit(command, .anyMaster) // Redis answers the bad numkeys
            }
            if keyCount == 0 { return addUnit(command, .anyMaster) }
            let slot = RedisClusterSlot.of(argument: command[3])
            for key in command[4..<(3 + keyCount)] where RedisClusterSlot.of(argument: key) != slot {
                throw RedisError("\(name) keys must share one cluster slot (use one hash tag); \(keyCount) keys span slots \(Set(command[3..<(3 + keyCount)].map(RedisClusterSlot.of(argument:))).sorted())")
            }
            addUnit(command, .slot(slot))
        case .scriptCache:
            let sub = command.count > 1 ? Self.upperName(command[1]) : ""
            addUnit(command, .everyMaster(sub == "EXISTS" ? .allOf : .first))
        case .everyMaster(let merge):
            addUnit(command, .everyMaster(merge))
        case .refused:
            throw RedisError("\(name) is not supported by the Redis Cluster client (a pipeline is split over nodes; use a script)")
        case .anyMaster:
            addUnit(command, .anyMaster)
        case .memory:
            if command.count > 2, Self.upperName(command[1]) == "USAGE" { addUnit(command, .slot(RedisClusterSlot.of(argument: command[2]))) } else { addUnit(command, .anyMaster) }
        case .keyAt(let index):
            addKeyed(command, at: index)
        case .streams:
            let streams = command.firstIndex { Self.upperName($0) == "STREAMS" }
            addKeyed(command, at: streams.map { $0 + 1 } ?? command.count)
        }
    }

    /// How a command names its keys.
    private enum Kind {
        /// The key is argument 1 (the default: GET, SET, HSET, SADD, PEXPIRE, ZUNIONSTORE, BLPOP…).
        case firstKey
        case keyAt(Int)
        case mget
        /// DEL, UNLINK, EXISTS, TOUCH: several keys, the reply counts them.
        case countKeys
        case mset
        /// EVAL, EVALSHA, FCALL (and _RO): numkeys at 2, keys after it.
        case script
        /// SCRIPT LOAD / FLUSH / EXISTS / KILL.
        case scriptCache
        case everyMaster(Merge)
        case anyMaster
        case memory
        case streams
        case refused
    }

    /// Commands that are not "key at argument 1", by upper-case name (one hash lookup per command).
    private static let kinds: [String: Kind] = {
        var kinds: [String: Kind] = ["MGET": .mget, "MSET": .mset, "SCRIPT": .scriptCache, "MEMORY": .memory,
                                     "KEYS": .everyMaster(.concatenate), "DBSIZE": .everyMaster(.sum),
                                     "FLUSHALL": .everyMaster(.first), "FLUSHDB": .everyMaster(.first),
                                     "XREAD": .streams, "XREADGROUP": .streams, "OBJECT": .keyAt(2), "BITOP": .keyAt(2),
                                     "BLMPOP": .keyAt(3), "BZMPOP": .keyAt(3)]
        for name in ["DEL", "UNLINK", "EXISTS", "TOUCH"] { kinds[name] = .countKeys }
        for name in ["EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO"] { kinds[name] = .script }
        // numkeys at 1, the first key at 2.
        for name in ["ZUNION", "ZINTER", "ZDIFF", "SINTERCARD", "ZINTERCARD", "LMPOP", "ZMPOP"] { kinds[name] = .keyAt(2) }
        for name in ["MULTI", "EXEC", "DISCARD", "WATCH", "UNWATCH", "SELECT", "SWAPDB", "MOVE", "SUBSCRIBE", "PSUBSCRIBE",
                     "SSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE", "MONITOR", "SYNC", "PSYNC", "RESET", "QUIT"] {
            kinds[name] = .refused
        }
        for name in ["PING", "ECHO", "INFO", "TIME", "CLUSTER", "COMMAND", "CLIENT", "CONFIG", "AUTH", "HELLO", "ROLE", "LASTSAVE",
                     "SLOWLOG", "LATENCY", "WAIT", "WAITAOF", "RANDOMKEY", "FUNCTION", "DEBUG", "ACL", "MODULE", "SAVE", "BGSAVE",
                     "BGREWRITEAOF", "LOLWUT", "READONLY", "READWRITE", "ASKING", "PUBLISH", "PUBSUB", "SHUTDOWN", "REPLICAOF",
                     "SLAVEOF", "FAILOVER", "SCAN"] {
            kinds[name] = .anyMaster
        }
        return kinds
    }()

    private mutating func addUnit(_ command: [RedisArgument], _ target: Target) {
        joins.append(.one(units.count))
        units.append(Unit(command: command, target: target))
    }

    private mutating func addKeyed(_ command: [RedisArgument], at index: Int) {
        addUnit(command, index < command.count ? .slot(RedisClusterSlot.of(argument: command[index])) : .anyMaster)
    }

    /// A command whose arguments after the name are keys (step 1) or key/value pairs (step 2):
    /// one unit if they share a slot, else one unit per slot (keys in their original order).
    private mutating func addSplit(
        _ command: [RedisArgument], step: Int,
        join: ([(unit: Int, index: Int)], Range<Int>) -> Join
    ) throws(RedisError) {
        guard command.count > 1 else { return addUnit(command, .anyMaster) } // Redis answers the arity error
        let firstSlot = RedisClusterSlot.of(argument: command[1])
        var sameSlot = true
        var slots: [Int] = []
        slots.reserveCapacity((command.count - 1) / step)
        for index in stride(from: 1, to: command.count, by: step) {
            let slot = index == 1 ? firstSlot : RedisClusterSlot.of(argument: command[index])
            if slot != firstSlot { sameSlot = false }
            slots.append(slot)
        }
        if sameSlot { return addUnit(command, .slot(firstSlot)) }
        isOneToOne = false
        let base = units.count
        var unitOfSlot: [Int: Int] = [:]
        var positions: [(unit: Int, index: Int)] = []
        positions.reserveCapacity(slots.count)
        for (keyNumber, slot) in slots.enumerated() {
            let unit: Int
            if let known = unitOfSlot[slot] { unit = known } else {
                unit = units.count
                unitOfSlot[slot] = unit
                units.append(Unit(command: [command[0]], target: .slot(slot)))
            }
            let argument = 1 + keyNumber * step
            positions.append((unit: unit, index: (units[unit].command.count - 1) / step))
            units[unit].command.append(contentsOf: command[argument..<min(argument + step, command.count)])
        }
        joins.append(join(positions, base..<units.count))
    }

    /// The command or sub-command name in upper case (ASCII).
    static func upperName(_ argument: RedisArgument) -> String {
        let text: String
        switch argument {
        case .string(let string): text = string
        case .bytes(let bytes): text = String(decoding: bytes, as: UTF8.self)
        case .int(let value): return String(value)
        case .dedupKey(let name): text = name.text
        }
        return text.utf8.contains(where: { $0 >= 0x61 && $0 <= 0x7A }) ? text.uppercased() : text
    }

    private static func integer(_ argument: RedisArgument) -> Int? {
        switch argument {
        case .int(let value): Int(exactly: value)
        case .string(let text): Int(text)
        case .bytes(let bytes): Int(String(decoding: bytes, as: UTF8.self))
        case .dedupKey: nil
        }
    }
}
