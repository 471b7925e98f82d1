import Foundation
import PushCore
import PushTestSupport
import Synchronization
import Testing
@testable import PushRedis

/// `redis+sentinel://` and `rediss+sentinel://` against real Sentinels (docs/redis.md "Sentinel"):
/// one master, one replica, three Sentinels (``RedisSentinelServer``), a failover by
/// `SENTINEL FAILOVER` and one by killing the master.
/// What the writer thread of a test did.
final class Writes: Sendable {
    let stop = Atomic<Bool>(false)
    let counts = Mutex((ok: 0, failed: 0, lastError: ""))
}

@Suite("RedisSentinelClient against real Sentinels", .serialized)
struct RedisSentinelClientTests {
    /// The message of the connection error `body` throws, or "".
    func failure(_ body: () throws -> Void) -> String {
        do { try body() } catch let error as RedisError {
            #expect(error.isConnectionError, "\(error)")
            return error.description
        } catch { return "\(error)" }
        return ""
    }

    func store(_ client: RedisSentinelClient) -> DeliveryStateStore { DeliveryStateStore(client: client) }

    /// `count` items of msgIds `m<start>…`.
    func items(_ range: Range<Int>, owner: String = "o1") -> [DeliveryStateStore.ClaimItem] {
        range.map { .init(appID: "app", campaignID: "cmp", key: DedupKey(msgID: "m\($0)"), owner: owner, platform: "ios", tokenHash: "h\($0)") }
    }

    @Test("discovery, an ACL password on the master, a failover by SENTINEL FAILOVER during writes: the client follows, nothing recorded is lost")
    func failover() throws {
        let set = try RedisSentinelServer(password: "m4ster")
        defer { set.stop() }
        let client = try RedisSentinelClient(url: set.url + "/1")
        let state = store(client)
        try state.preloadScripts()
        #expect(client.ping())
        #expect(client.master == .tcp(host: "127.0.0.1", port: Int(set.dataPorts[0])))
        #expect(client.problem == nil)
        #expect(try state.claim(items(0..<500), nowMs: 1_000, leaseMs: 30_000).replies == Array(repeating: .claimed, count: 500))
        try state.record(items(0..<500).map { .init(appID: $0.appID, campaignID: $0.campaignID, key: $0.key, owner: $0.owner, sentRetentionMs: 3_600_000) })

        // Writes keep going while the Sentinels promote the replica.
        let writes = Writes()
        let writer = DispatchGroup()
        DispatchQueue.global().async(group: writer) {
            var n = 0
            while !writes.stop.load(ordering: .relaxed) {
                n += 1
                do { _ = try client.pipeline([["SET", .string("w\(n)"), .int(Int64(n))]]); writes.counts.withLock { $0.ok += 1 } }
                catch { writes.counts.withLock { $0.failed += 1; $0.lastError = "\(error)" } }
                usleep(2_000) // ≈ 500 writes/s: steady, without taking a core from the other tests
            }
        }
        let newMaster = try set.failover()
        #expect(newMaster == set.dataPorts[1])
        // The old master takes writes until the Sentinels tell it to replicate (seconds later): a
        // health check (the worker's probe, every 2 s) asks a Sentinel and moves to the new master.
        #expect(eventually(timeout: 10) { client.ping() && client.master == .tcp(host: "127.0.0.1", port: Int(newMaster)) }, "\(client.problem ?? "")")
        let before = writes.counts.withLock { $0.ok }
        #expect(eventually(timeout: 5) { writes.counts.withLock { $0.ok } > before + 10 }, "writes go on after the failover")
        writes.stop.store(true, ordering: .relaxed)
        writer.wait()
        let tally = writes.counts.withLock { $0 }
        #expect(tally.failed == 0, "the retries ride the failover out: \(tally.failed) failed, last: \(tally.lastError)")
        #expect(client.masterSwitchCount == 1)
        #expect(client.master == .tcp(host: "127.0.0.1", port: Int(newMaster)))
        // The records made before the failover were replicated: the new master answers alreadySent.
        #expect(try state.claim(items(0..<500, owner: "o2"), nowMs: 2_000, leaseMs: 30_000).replies == Array(repeating: .alreadySent, count: 500))
        #expect(client.ping())
    }

    @Test("the master killed: calls fail while no master is known (ping false, problem named), then the promoted replica serves")
    func masterKilled() throws {
        let set = try RedisSentinelServer()
        defer { set.stop() }
        let client = try RedisSentinelClient(url: set.url, options: .init(timeout: .milliseconds(500), maxRetries: 1, retryBackoff: .milliseconds(50)))
        #expect(try client.pipeline([["SET", "k", "before"]]) == [.status("OK")])
        #expect(eventually(timeout: 5) { (try? set.cli(set.dataPorts[1], ["GET", "k"])) == "before" })
        set.kill(set.dataPorts[0])
        let down = failure { _ = try client.pipeline([["SET", "k", "during"]]) }
        #expect(down.contains("failed after 1 retries"), "\(down)")
        #expect(!client.ping())
        #expect(client.master == nil)
        #expect(client.problem?.isEmpty == false)
        try set.waitForNewMaster(replacing: set.dataPorts[0], timeout: 30)
        #expect(eventually(timeout: 10) { client.ping() }, "\(client.problem ?? "")")
        #expect(client.master == .tcp(host: "127.0.0.1", port: Int(set.dataPorts[1])))
        #expect(try client.pipeline([["GET", "k"]]) == [.string(Array("before".utf8))])
    }

    @Test("Sentinels that do not know the master, that require a password, or that are all down: a connection error naming why; the Sentinels' password works")
    func discoveryFailures() throws {
        let set = try RedisSentinelServer(replicas: 0, sentinels: 1, sentinelPassword: "sent1nel")
        defer { set.stop() }
        let port = set.sentinelPorts[0]
        var endpoint = try RedisSentinelEndpoint(url: "redis+sentinel://127.0.0.1:\(port)/nosuchmaster")
        endpoint.sentinelPassword = "sent1nel"
        let unknown = try RedisSentinelClient(endpoint: endpoint, options: .init(maxRetries: 0))
        let said = failure { _ = try unknown.pipeline([["PING"]]) }
        #expect(said.contains("no master known for 'nosuchmaster'") && said.contains("does not know master 'nosuchmaster'"), "\(said)")
        #expect(!unknown.ping() && unknown.problem?.contains("does not know master") == true)

        let noPassword = try RedisSentinelClient(url: set.url, options: .init(maxRetries: 0))
        let refused = failure { _ = try noPassword.pipeline([["PING"]]) }
        #expect(refused.contains("PUSHWORKER_REDIS_SENTINEL_PASSWORD") && !refused.contains("sent1nel"), "\(refused)")
        endpoint.masterName = set.masterName
        let withPassword = try RedisSentinelClient(endpoint: endpoint)
        #expect(try withPassword.pipeline([["PING"]]) == [.status("PONG")])

        let nobody = try RedisSentinelClient(url: "redis+sentinel://127.0.0.1:\(freeLoopbackPort()),127.0.0.1:\(freeLoopbackPort())/m",
                                             options: .init(timeout: .milliseconds(300), maxRetries: 1, retryBackoff: .milliseconds(10)))
        let down = failure { _ = try nobody.pipeline([["PING"]]) }
        #expect(down.contains("no master known for 'm'") && down.contains("cannot connect"), "\(down)")
        #expect(nobody.connectionErrorCount == 1)
        nobody.close()
        #expect(throws: RedisError.self) { try nobody.pipeline([["PING"]]) }
    }

    @Test("rediss+sentinel://: TLS to the Sentinels and the master (tls-replication), the store's operations")
    func overTLS() throws {
        let files = try RedisTLSFiles.shared()
        let set = try RedisSentinelServer(tls: files)
        defer { set.stop() }
        var target = try RedisTarget(url: set.url)
        target.tls = RedisTLS(caFile: files.caFile)
        let client = try target.makeClient()
        let state = DeliveryStateStore(client: client)
        #expect(!state.keysMustShareSlot)
        try state.preloadScripts()
        #expect(try state.claim(items(0..<300), nowMs: 1_000, leaseMs: 30_000).replies == Array(repeating: .claimed, count: 300))
        #expect(client.ping())
        var untrusted = target
        untrusted.tls = RedisTLS(caFile: files.otherCAFile)
        let refused = failure { _ = try untrusted.makeClient().pipeline([["PING"]]) }
        #expect(refused.contains("set PUSHWORKER_REDIS_CA_FILE to the CA that signed the server certificate"), "\(refused)")
    }

    @Test("READONLY from a demoted master is a reason to look again, not an answer")
    func readOnlyReplies() {
        #expect(RedisSentinelClient.isNotMaster(.error("READONLY You can't write against a read only replica.")))
        #expect(RedisSentinelClient.isNotMaster(.error("ERR Error running script (call to f_x): @user_script:1: READONLY You can't write against a read only replica.")))
        #expect(!RedisSentinelClient.isNotMaster(.error("ERR unknown command")))
        #expect(!RedisSentinelClient.isNotMaster(.string(Array("READONLY".utf8))))
        #expect(RedisSentinelClient.role(.array([.string(Array("master".utf8)), .integer(0), .array([])])) == "master")
        #expect(RedisSentinelClient.role(.status("OK")) == nil)
    }
}
