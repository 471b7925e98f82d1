import Foundation
import PushTestSupport
import Testing
@testable import PushRedis

@Suite("Redis Cluster key slots (CRC16, hash tags)")
struct RedisClusterSlotTests {
    @Test("CRC16-XMODEM reference value of the Cluster specification")
    func crc16() {
        #expect(RedisClusterSlot.crc16(Array("123456789".utf8)) == 0x31C3)
        #expect(RedisClusterSlot.crc16([UInt8]()) == 0)
    }

    @Test("only the hash tag is hashed, as the specification's examples say", arguments: [
        ("{user1000}.following", "user1000"),
        ("{user1000}.followers", "user1000"),
        ("foo{bar}{zap}", "bar"),          // the first tag only
        ("foo{{bar}}zap", "{bar"),         // from the first { to the next }
        ("foo{}{bar}", "foo{}{bar}"),      // an empty tag: the whole key
        ("foo{bar", "foo{bar"),            // no closing brace: the whole key
        ("pw:{app_demo}:sent:m1", "app_demo"),
    ])
    func hashTags(key: String, hashed: String) {
        #expect(RedisClusterSlot.of(key) == Int(RedisClusterSlot.crc16(Array(hashed.utf8)) % 16384))
    }

    @Test("known slots (what CLUSTER KEYSLOT answers)", arguments: [("foo", 12182), ("hello", 866), ("123456789", 0x31C3 % 16384)])
    func knownSlots(key: String, slot: Int) {
        #expect(RedisClusterSlot.of(key) == slot)
        #expect(RedisClusterSlot.of(argument: .bytes(Array(key.utf8))) == slot)
    }

    @Test("binary keys and integer arguments hash by their bytes")
    func argumentKinds() {
        #expect(RedisClusterSlot.of(argument: .int(42)) == RedisClusterSlot.of("42"))
        #expect(RedisClusterSlot.of(bytes: [0xFF, 0x7B, 0x41, 0x7D]) == RedisClusterSlot.of("A"))
    }
}

@Suite("Redis Cluster slot map parsing")
struct RedisClusterSlotMapTests {
    private func node(_ port: Int) -> RedisClusterNode { RedisClusterNode(host: "127.0.0.1", port: port) }
    private func bulk(_ text: String) -> RedisReply { .string(Array(text.utf8)) }

    @Test("CLUSTER SLOTS: ranges, masters, replicas; an empty host is the node that answered")
    func clusterSlots() throws {
        let reply: RedisReply = .array([
            .array([.integer(0), .integer(5460), .array([bulk("127.0.0.1"), .integer(7001), bulk("id1"), .array([])]),
                    .array([bulk("127.0.0.1"), .integer(7004), bulk("id4"), .array([])])]),
            .array([.integer(5461), .integer(10922), .array([bulk(""), .integer(7002), bulk("id2")])]),
            .array([.integer(10923), .integer(16383), .array([bulk("127.0.0.1"), .integer(7003), bulk("id3")])]),
        ])
        let map = try RedisClusterSlotMap.parse(clusterSlots: reply, answeredBy: "10.0.0.9")
        #expect(map.masters == [RedisClusterNode(host: "10.0.0.9", port: 7002), node(7001), node(7003)].sorted())
        #expect(map.replicas == [node(7004)])
        #expect(map.master(forSlot: 0) == node(7001))
        #expect(map.master(forSlot: 5460) == node(7001))
        #expect(map.master(forSlot: 5461) == RedisClusterNode(host: "10.0.0.9", port: 7002))
        #expect(map.master(forSlot: 16383) == node(7003))
        #expect(map.master(forSlot: 16384) == nil)
        #expect(map.uncoveredSlotCount == 0)
        #expect(map.ranges.map(\.slots) == [0...5460, 5461...10922, 10923...16383])
    }

    @Test("CLUSTER SHARDS: the online master of each shard; failed masters without slots are skipped; holes are uncovered")
    func clusterShards() throws {
        func nodeInfo(_ port: Int, _ role: String, _ health: String) -> RedisReply {
            .array([bulk("id"), bulk("x\(port)"), bulk("port"), .integer(Int64(port)), bulk("ip"), bulk("127.0.0.1"),
                    bulk("endpoint"), bulk("127.0.0.1"), bulk("role"), bulk(role), bulk("replication-offset"), .integer(14),
                    bulk("health"), bulk(health)])
        }
        let reply: RedisReply = .array([
            .array([bulk("slots"), .array([.integer(5461), .integer(10922)]), bulk("nodes"),
                    .array([nodeInfo(7002, "master", "online"), nodeInfo(7004, "replica", "online")])]),
            .array([bulk("slots"), .array([.integer(0), .integer(99), .integer(200), .integer(5460)]), bulk("nodes"),
                    .array([nodeInfo(7006, "master", "online")])]),
            .array([bulk("slots"), .array([]), bulk("nodes"), .array([nodeInfo(7001, "master", "fail")])]),
            .array([bulk("slots"), .array([.integer(10923), .integer(16383)]), bulk("nodes"),
                    .array([nodeInfo(7003, "master", "online"), nodeInfo(7005, "replica", "loading")])]),
        ])
        let map = try RedisClusterSlotMap.parse(clusterShards: reply, answeredBy: "127.0.0.1")
        #expect(map.masters == [node(7002), node(7003), node(7006)])
        #expect(map.replicas == [node(7004), node(7005)])
        #expect(map.master(forSlot: 50) == node(7006))
        #expect(map.master(forSlot: 150) == nil)
        #expect(map.uncoveredSlotCount == 100)
        #expect(map.slotCounts[node(7006)] == 100 + 5261)
    }

    @Test("malformed replies are errors, not guesses", arguments: [
        RedisReply.integer(1), .array([.integer(1)]), .array([.array([.integer(5), .integer(1), .array([])])]),
        .array([.array([.integer(0), .integer(1), .integer(3)])]),
    ])
    func malformed(reply: RedisReply) {
        #expect(throws: RedisError.self) { try RedisClusterSlotMap.parse(clusterSlots: reply, answeredBy: "h") }
        #expect(throws: RedisError.self) { try RedisClusterSlotMap.parse(clusterShards: reply, answeredBy: "h") }
    }

    @Test("MOVED moves one slot; a master left without slots leaves the map")
    func assign() {
        var map = RedisClusterSlotMap(ranges: [.init(slots: 0...9999, master: node(1)), .init(slots: 10000...16383, master: node(2)),
                                               .init(slots: 5...5, master: node(3))])
        #expect(map.master(forSlot: 5) == node(3))
        map.assign(slot: 5, to: node(2))
        #expect(map.master(forSlot: 5) == node(2))
        #expect(map.masters == [node(1), node(2)])
        map.assign(slot: 7, to: node(4))
        #expect(map.masters == [node(1), node(2), node(4)])
        #expect(map.master(forSlot: 7) == node(4))
        #expect(map.master(forSlot: 8) == node(1))
    }

    @Test("MOVED/ASK addresses parse, IPv6 and unknown hosts included")
    func addresses() {
        #expect(RedisClusterNode(address: "127.0.0.1:7000", defaultHost: "x") == node(7000))
        #expect(RedisClusterNode(address: "[::1]:7000", defaultHost: "x") == RedisClusterNode(host: "::1", port: 7000))
        #expect(RedisClusterNode(address: ":7000", defaultHost: "10.1.1.1") == RedisClusterNode(host: "10.1.1.1", port: 7000))
        #expect(RedisClusterNode(address: "h:0", defaultHost: "x") == nil)
        #expect(RedisClusterNode(address: "h", defaultHost: "x") == nil)
        #expect(RedisClusterNode(host: "::1", port: 7).description == "[::1]:7")
    }
}

@Suite("Redis Cluster routing of a pipeline")
struct RedisClusterPlanTests {
    private func slot(_ key: String) -> Int { RedisClusterSlot.of(key) }

    @Test("one-key commands go to their key's slot; keyless ones to any master or to every master")
    func targets() throws {
        let plan = try RedisClusterPlan([
            ["GET", "a"], ["set", "b", "1"], ["HMGET", "{t}h", "f"], ["PING"], ["CLUSTER", "INFO"], ["SCRIPT", "LOAD", "return 1"],
            ["SCRIPT", "EXISTS", "abc"], ["KEYS", "*"], ["DBSIZE"], ["MEMORY", "USAGE", "k"], ["OBJECT", "ENCODING", "o"],
            ["EVALSHA", "sha", 0], ["XREAD", "COUNT", 1, "STREAMS", "s", "0"], ["ZUNION", 2, "z1", "z2"], ["BLPOP", "q", 1],
        ])
        #expect(plan.units.map(\.target) == [
            .slot(slot("a")), .slot(slot("b")), .slot(slot("t")), .anyMaster, .anyMaster, .everyMaster(.first),
            .everyMaster(.allOf), .everyMaster(.concatenate), .everyMaster(.sum), .slot(slot("k")), .slot(slot("o")),
            .anyMaster, .slot(slot("s")), .slot(slot("z1")), .slot(slot("q")),
        ])
    }

    @Test("MGET over several slots is split by slot and rejoined in key order")
    func mgetSplit() throws {
        let keys = ["a", "b", "c", "{a}x", "d", "a"]
        let plan = try RedisClusterPlan([["GET", "z"], ["MGET"] + keys.map { .string($0) }, ["MGET", "{t}1", "{t}2"]])
        // One unit per distinct slot, keys in first-seen order within each.
        let bySlot = Dictionary(grouping: keys, by: slot)
        #expect(plan.units.count == 1 + bySlot.count + 1)
        #expect(plan.units.last?.target == .slot(slot("t")))
        #expect(plan.units.last?.command == ["MGET", "{t}1", "{t}2"])
        // Answer each unit with its own keys' names as values, then join.
        let replies: [RedisReply] = plan.units.map { unit in
            unit.command.first == "GET" ? .null : .array(unit.command.dropFirst().map { argument in
                guard case .string(let key) = argument else { return .null }
                return .string(Array("v:\(key)".utf8))
            })
        }
        let joined = plan.join(replies)
        #expect(joined.count == 3)
        #expect(joined[0] == .null)
        #expect(joined[1] == .array(keys.map { .string(Array("v:\($0)".utf8)) }))
        #expect(joined[2] == .array([.string(Array("v:{t}1".utf8)), .string(Array("v:{t}2".utf8))]))
    }

    @Test("DEL/EXISTS split sum their integers; MSET split is OK only if every part is; an error part wins")
    func otherSplits() throws {
        let plan = try RedisClusterPlan([["DEL", "a", "b", "c"], ["MSET", "a", "1", "b", "2"]])
        let delUnits = plan.units.filter { $0.command.first == "DEL" }.count
        let msetUnits = plan.units.filter { $0.command.first == "MSET" }
        #expect(delUnits == Set(["a", "b", "c"].map(slot)).count)
        #expect(msetUnits.count == 2)
        #expect(msetUnits.allSatisfy { $0.command.count == 3 })
        var replies = plan.units.map { $0.command.first == "DEL" ? RedisReply.integer(1) : .status("OK") }
        #expect(plan.join(replies) == [.integer(Int64(delUnits)), .status("OK")])
        replies[replies.count - 1] = .error("OOM")
        #expect(plan.join(replies)[1] == .error("OOM"))
    }

    @Test("a script's keys must share a slot: otherwise the pipeline is refused before anything is sent")
    func scriptKeys() throws {
        let plan = try RedisClusterPlan([["EVALSHA", "sha", 2, "{a}1", "{a}2", "arg"], ["EVAL", "return 1", "1", "k"]])
        #expect(plan.units.map(\.target) == [.slot(slot("a")), .slot(slot("k"))])
        let error = #expect(throws: RedisError.self) { try RedisClusterPlan([["EVALSHA", "sha", 2, "a", "b"]]) }
        #expect(error?.message.contains("share one cluster slot") == true)
        #expect(error?.isConnectionError == false)
        // A bad numkeys is Redis's to answer.
        #expect(try RedisClusterPlan([["EVALSHA", "sha", 5, "a"]]).units.map(\.target) == [.anyMaster])
    }

    @Test("transactions and connection-state commands are refused", arguments: ["MULTI", "EXEC", "WATCH", "SELECT", "SUBSCRIBE"])
    func refused(name: String) {
        #expect(throws: RedisError.self) { try RedisClusterPlan([[.string(name), "x"]]) }
    }

    @Test("replies of a command sent to every master merge into one")
    func merges() {
        #expect(RedisClusterPlan.merge([.string([1]), .string([1])], .first) == .string([1]))
        #expect(RedisClusterPlan.merge([.status("OK"), .error("ERR x")], .first) == .error("ERR x"))
        #expect(RedisClusterPlan.merge([.array([.integer(1), .integer(1)]), .array([.integer(1), .integer(0)])], .allOf)
            == .array([.integer(1), .integer(0)]))
        #expect(RedisClusterPlan.merge([.array([.string([1])]), .array([]), .array([.string([2])])], .concatenate)
            == .array([.string([1]), .string([2])]))
        #expect(RedisClusterPlan.merge([.integer(2), .integer(3)], .sum) == .integer(5))
    }
}

@Suite("Redis URLs: standalone and cluster")
struct RedisTargetTests {
    private func seed(_ host: String, _ port: Int) -> RedisClusterNode { RedisClusterNode(host: host, port: port) }

    @Test("cluster URLs", arguments: [
        ("redis+cluster://127.0.0.1:7000", RedisClusterEndpoint(seeds: [RedisClusterNode(host: "127.0.0.1", port: 7000)])),
        ("redis+cluster://a:7000,b,[::1]:7002/", RedisClusterEndpoint(seeds: [
            RedisClusterNode(host: "a", port: 7000), RedisClusterNode(host: "b", port: 6379), RedisClusterNode(host: "::1", port: 7002),
        ])),
        ("redis+cluster://:p%40ss@h:1,h:2", RedisClusterEndpoint(seeds: [RedisClusterNode(host: "h", port: 1), RedisClusterNode(host: "h", port: 2)], password: "p@ss")),
        ("redis+cluster://u%3A1:pw@h:1", RedisClusterEndpoint(seeds: [RedisClusterNode(host: "h", port: 1)], username: "u:1", password: "pw")),
    ])
    func validCluster(url: String, expected: RedisClusterEndpoint) throws {
        #expect(try RedisClusterEndpoint(url: url) == expected)
        #expect(try RedisTarget(url: url) == .cluster(expected))
    }

    @Test("bad cluster URLs throw a RedisError that is not a connection error", arguments: [
        "redis+cluster://", "redis+cluster://h:1/0", "redis+cluster://h:1/2", "redis+cluster://h:1,,h:2", "redis+cluster://h:1,",
        "redis+cluster://h:0", "redis+cluster://[::1", "redis+cluster://user@h:1", "redis+cluster://h:1?db=1", "redis+cluster://:p%zz@h",
    ])
    func invalidCluster(url: String) {
        let error = #expect(throws: RedisError.self) { try RedisTarget(url: url) }
        #expect(error?.isConnectionError == false)
        #expect(throws: RedisError.self) { try RedisTarget.makeClient(url: url) }
    }

    @Test("a database in a cluster URL is refused with a clear reason")
    func databaseRefused() {
        let error = #expect(throws: RedisError.self) { try RedisClusterEndpoint(url: "redis+cluster://h:1/3") }
        #expect(error?.message.contains("only database 0") == true)
    }

    @Test("the factory picks the client by scheme; passwords stay out of descriptions")
    func factory() throws {
        #expect(try RedisTarget.makeClient(url: "redis://127.0.0.1:1") is RedisClient)
        #expect(try RedisTarget.makeClient(url: "unix:///tmp/x.sock") is RedisClient)
        #expect(try RedisTarget.makeClient(url: "redis+cluster://127.0.0.1:1") is RedisClusterClient)
        let target = try RedisTarget(url: "redis+cluster://:secret@h:1,h:2")
        #expect(!target.description.contains("secret"))
        #expect(target.description == "redis+cluster://:***@h:1,h:2")
        #expect(throws: RedisError.self) { try RedisEndpoint(url: "redis+cluster://h:1") }
    }

    @Test("no reachable seed: a connection error, quickly, and the client works later")
    func unreachableSeeds() throws {
        let ports = [freeLoopbackPort(), freeLoopbackPort()]
        let client = try RedisClusterClient(url: "redis+cluster://" + ports.map { "127.0.0.1:\($0)" }.joined(separator: ","))
        let error = #expect(throws: RedisError.self) { try client.pipeline([["GET", "k"]]) }
        #expect(error?.isConnectionError == true)
        #expect(client.connectionErrorCount == 1)
        #expect(!client.ping())
        #expect(client.checkHealth().problem?.contains("slot map") == true)
    }

    @Test("a standalone server behind a cluster URL: a clear error")
    func notACluster() throws {
        let server = try RedisServer()
        let client = try RedisClusterClient(url: "redis+cluster://127.0.0.1:\(server.port)")
        let error = #expect(throws: RedisError.self) { try client.pipeline([["GET", "k"]]) }
        #expect(error?.message.contains("cluster support disabled") == true)
    }
}
