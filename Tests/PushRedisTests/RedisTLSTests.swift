import Foundation
import PushCore
import PushTestSupport
import Testing
@testable import PushRedis

/// `rediss://` and `rediss+cluster://` against Debian's redis-server with `--tls-port` and
/// `--port 0` (docs/redis.md "TLS"), with the test CA of ``RedisTLSFiles``.
@Suite("Redis over TLS (rediss://, rediss+cluster://)")
struct RedisTLSTests {
    let files: RedisTLSFiles

    init() throws { files = try RedisTLSFiles.shared() }

    /// A TLS endpoint for 127.0.0.1 (or `host`) at `port`.
    func endpoint(_ port: UInt16, host: String = "127.0.0.1", ca: String?, certificate: Bool = false, user: String? = nil,
                  password: String? = nil) -> RedisEndpoint {
        RedisEndpoint(address: .tcp(host: host, port: Int(port)), username: user, password: password,
                      tls: RedisTLS(caFile: ca, certificateFile: certificate ? files.clientCertificate : nil,
                                    keyFile: certificate ? files.clientKey : nil))
    }

    /// The message of the error `body` throws (a connection error), or "".
    func failure(_ body: () throws -> Void) -> String {
        do { try body() } catch let error as RedisError {
            #expect(error.isConnectionError, "\(error)")
            return error.description
        } catch { return "\(error)" }
        return ""
    }

    @Test("the store's operations over TLS: claims and records of 2,000 recipients, a 1 MiB value, 5,000 commands in one pipeline")
    func storeOverTLS() throws {
        let server = try RedisServer(tls: .init(files: files))
        let client = try RedisClient(endpoint: endpoint(server.port, ca: files.caFile))
        let store = DeliveryStateStore(client: client)
        try store.preloadScripts()
        let items = (0..<2000).map {
            DeliveryStateStore.ClaimItem(appID: "app", campaignID: "cmp", key: DedupKey(msgID: "m\($0)"), owner: "o1", platform: "ios", tokenHash: "h\($0)")
        }
        #expect(try store.claim(items, nowMs: 1_000, leaseMs: 30_000).replies == Array(repeating: .claimed, count: 2000))
        try store.record(items.map { .init(appID: $0.appID, campaignID: $0.campaignID, key: $0.key, owner: $0.owner, sentRetentionMs: 3_600_000) })
        let again = items.map { DeliveryStateStore.ClaimItem(appID: $0.appID, campaignID: $0.campaignID, key: $0.key, owner: "o2", platform: "ios", tokenHash: $0.tokenHash) }
        #expect(try store.claim(again, nowMs: 2_000, leaseMs: 30_000).replies == Array(repeating: .alreadySent, count: 2000))
        #expect(try store.acquire(count: 5, from: [.init(key: "pw:{app}:tb:apns", ratePerSecond: 100, burst: 10)], nowMs: 1_000).granted == 5)

        let big = [UInt8](repeating: 0x61, count: 1 << 20)
        let replies = try client.pipeline([["SET", "big", .bytes(big)], ["GET", "big"]])
        #expect(replies == [.status("OK"), .string(big)])
        let many = try client.pipeline((0..<5000).map { ["INCR", .string("n\($0 % 7)")] })
        #expect(many.count == 5000 && many.last == .integer(715))
        #expect(client.ping())
    }

    @Test("another CA or the system store: refused, naming PUSHWORKER_REDIS_CA_FILE; nothing is sent")
    func untrusted() throws {
        let server = try RedisServer(tls: .init(files: files))
        let other = failure { _ = try RedisClient(endpoint: endpoint(server.port, ca: files.otherCAFile)).pipeline([["SET", "k", "v"]]) }
        #expect(other.contains("is not signed by a CA of \(files.otherCAFile)"), "\(other)")
        #expect(other.contains("set PUSHWORKER_REDIS_CA_FILE to the CA that signed the server certificate"), "\(other)")
        let system = failure { _ = try RedisClient(endpoint: endpoint(server.port, ca: nil)).pipeline([["PING"]]) }
        #expect(system.contains("is not signed by a CA of the system store"), "\(system)")
        let check = try RedisClient(endpoint: endpoint(server.port, ca: files.caFile))
        #expect(try check.pipeline([["EXISTS", "k"]]) == [.integer(0)])
    }

    @Test("a certificate for localhost reached as 127.0.0.1: refused, naming the names it lists; reached as localhost: accepted")
    func wrongHost() throws {
        let server = try RedisServer(tls: .init(files: files, certificate: (files.localhostOnlyCertificate, files.localhostOnlyKey)))
        let byAddress = failure { _ = try RedisClient(endpoint: endpoint(server.port, ca: files.caFile)).pipeline([["PING"]]) }
        #expect(byAddress.contains("is for localhost, not 127.0.0.1: connect by a name it lists"), "\(byAddress)")
        let byName = try RedisClient(endpoint: endpoint(server.port, host: "localhost", ca: files.caFile))
        #expect(try byName.pipeline([["PING"]]) == [.status("PONG")])
    }

    @Test("tls-auth-clients yes: with the client certificate it works; without, refused naming PUSHWORKER_REDIS_CERT_FILE")
    func clientCertificate() throws {
        let server = try RedisServer(tls: .init(files: files, requireClientCertificate: true))
        let with = try RedisClient(endpoint: endpoint(server.port, ca: files.caFile, certificate: true))
        #expect(try with.pipeline([["SET", "k", "v"], ["GET", "k"]]) == [.status("OK"), .string(Array("v".utf8))])
        let without = failure { _ = try RedisClient(endpoint: endpoint(server.port, ca: files.caFile)).pipeline([["GET", "k"]]) }
        #expect(without.contains("the server requires a client certificate: set PUSHWORKER_REDIS_CERT_FILE and PUSHWORKER_REDIS_KEY_FILE"), "\(without)")
    }

    @Test("an ACL user over TLS (rediss://user:pass@…) with the rules docs/redis.md gives: the store's operations work, other keys are refused, a wrong password is refused without showing it")
    func aclUser() throws {
        let server = try RedisServer(tls: .init(files: files), extra: [
            "--user", "pusher", "on", ">s3cret", "~pw:*", "+@read", "+@write", "+@scripting", "+@transaction", "-@dangerous", "+ping", "+select", "+time", "+role",
            "+cluster|shards", "+cluster|slots",
        ])
        let url = "rediss://pusher:s3cret@127.0.0.1:\(server.port)/2"
        var target = try RedisTarget(url: url)
        target.tls = RedisTLS(caFile: files.caFile)
        let client = try target.makeClient()
        let store = DeliveryStateStore(client: client)
        try store.preloadScripts()
        let items = (0..<50).map {
            DeliveryStateStore.ClaimItem(appID: "app", campaignID: "cmp", key: DedupKey(msgID: "m\($0)"), owner: "o1", platform: "ios", tokenHash: "h\($0)")
        }
        #expect(try store.claim(items, leaseMs: 30_000, unansweredLimit: 2, backoffs: [(appID: "app", provider: "apns")]).replies
                == Array(repeating: .claimed, count: 50))
        try store.record(items.map { .init(appID: $0.appID, campaignID: $0.campaignID, key: $0.key, owner: $0.owner, sentRetentionMs: 3_600_000) },
                         invalid: [(appID: "app", platform: "ios", tokenHash: "h1", invalidSinceMs: 1)])
        try store.setBackoff(appID: "app", provider: "apns", milliseconds: 1000)
        #expect(try store.acquire(count: 1, from: [.init(key: RedisKeys.providerBucket(appID: "app", provider: "apns"), ratePerSecond: 1, burst: 1)]).granted == 1)
        #expect(try client.pipeline([["SET", "other", "x"]])[0].errorMessage?.hasPrefix("NOPERM") == true)
        #expect(client.description == "rediss://pusher:***@127.0.0.1:\(server.port)/2")
        target.password = "wrong"
        let refused = failure { _ = try target.makeClient().pipeline([["PING"]]) }
        #expect(refused.contains("WRONGPASS") && !refused.contains("wrong") && !refused.contains("s3cret"), "\(refused)")
    }

    @Test("scheme and port disagree: TLS to a plain port and plain to a TLS port fail with a connection error that says so")
    func mismatchedPorts() throws {
        let tlsServer = try RedisServer(tls: .init(files: files))
        let plainServer = try RedisServer()
        let tlsToPlain = failure { _ = try RedisClient(endpoint: endpoint(plainServer.port, ca: files.caFile), timeout: .milliseconds(500)).pipeline([["PING"]]) }
        #expect(tlsToPlain.contains("TLS port") || tlsToPlain.contains("does not speak TLS"), "\(tlsToPlain)")
        let plainToTLS = failure { _ = try RedisClient(url: "redis://127.0.0.1:\(tlsServer.port)", timeout: .milliseconds(500)).pipeline([["PING"]]) }
        #expect(!plainToTLS.isEmpty)
    }

    @Test("unreadable or mismatched TLS files fail when the client is made, naming the file; a unix socket cannot take TLS")
    func badFiles() {
        let missing = #expect(throws: RedisError.self) {
            try RedisClient(endpoint: RedisEndpoint(address: .tcp(host: "h", port: 1), tls: RedisTLS(caFile: "/nonexistent/ca.pem")))
        }
        #expect(missing?.description.contains("/nonexistent/ca.pem") == true && missing?.isConnectionError == false)
        let mismatched = #expect(throws: RedisError.self) {
            try RedisClusterClient(endpoint: RedisClusterEndpoint(seeds: [RedisClusterNode(host: "h", port: 1)],
                                                                  tls: RedisTLS(caFile: files.caFile, certificateFile: files.clientCertificate, keyFile: files.serverKey)))
        }
        #expect(mismatched?.description.contains("does not belong to the certificate") == true)
        #expect(throws: RedisError.self) { try RedisClient(endpoint: RedisEndpoint(address: .unix(path: "/tmp/s"), tls: RedisTLS())) }
    }

    @Test("rediss+cluster:// on a TLS-only 3 + 3 cluster (tls-cluster, tls-replication): the map's tls-ports, claims and records on every master")
    func cluster() throws {
        let cluster = try RedisClusterServer(masters: 3, replicasPerMaster: 1, tls: files)
        defer { cluster.stop() }
        var target = try RedisTarget(url: cluster.url)
        target.tls = RedisTLS(caFile: files.caFile)
        guard case .cluster(let endpoint) = target else { throw TestSupportError("not a cluster target") }
        let client = try RedisClusterClient(endpoint: endpoint)
        #expect(client.description.hasPrefix("rediss+cluster://127.0.0.1:"))
        let store = DeliveryStateStore(client: client)
        #expect(store.keysMustShareSlot)
        try store.preloadScripts()
        let items = (0..<600).map {
            DeliveryStateStore.ClaimItem(appID: "app", campaignID: "cmp", key: DedupKey(msgID: "m\($0)"), owner: "o1", platform: "ios", tokenHash: "h\($0)")
        }
        #expect(try store.claim(items, nowMs: 1_000, leaseMs: 30_000).replies == Array(repeating: .claimed, count: 600))
        try store.record(items.map { .init(appID: $0.appID, campaignID: $0.campaignID, key: $0.key, owner: $0.owner, sentRetentionMs: 3_600_000) })
        let map = try #require(client.slotMap())
        #expect(Set(map.masters.map { UInt16($0.port) }) == Set(try cluster.masterPorts()), "the TLS ports, as announced")
        #expect(client.nodeStats().filter { $0.isMaster && $0.roundTrips > 0 }.count == 3)
        #expect(client.checkHealth().isHealthy)
    }
}

@Suite("Redis URLs: rediss://, rediss+cluster://, redis+sentinel://, rediss+sentinel://")
struct RedisURLTests {
    @Test("valid URLs", arguments: [
        ("rediss://h:6380", RedisTarget.standalone(RedisEndpoint(address: .tcp(host: "h", port: 6380), tls: RedisTLS()))),
        ("rediss://u:p%40ss@cache.example:6380/3", .standalone(RedisEndpoint(address: .tcp(host: "cache.example", port: 6380), username: "u",
                                                                               password: "p@ss", database: 3, tls: RedisTLS()))),
        ("rediss+cluster://:pw@a:7000,b", .cluster(RedisClusterEndpoint(seeds: [RedisClusterNode(host: "a", port: 7000), RedisClusterNode(host: "b", port: 6379)],
                                                                         password: "pw", tls: RedisTLS()))),
        ("redis+sentinel://s1:26380,s2/mymaster", .sentinel(RedisSentinelEndpoint(sentinels: [.tcp(host: "s1", port: 26380), .tcp(host: "s2", port: 26379)],
                                                                                   masterName: "mymaster"))),
        ("rediss+sentinel://app:pw@[::1]:5000/my%2Dmaster/2", .sentinel(RedisSentinelEndpoint(sentinels: [.tcp(host: "::1", port: 5000)], masterName: "my-master",
                                                                                                username: "app", password: "pw", database: 2, tls: RedisTLS()))),
        ("redis+sentinel://s/m/", .sentinel(RedisSentinelEndpoint(sentinels: [.tcp(host: "s", port: 26379)], masterName: "m"))),
    ])
    func valid(url: String, expected: RedisTarget) throws {
        #expect(try RedisTarget(url: url) == expected)
    }

    @Test("bad URLs throw a clear RedisError that is not a connection error and never shows the password", arguments: [
        ("redis+sentinel://s1,s2", "name the master"), ("redis+sentinel://s1/", "name the master"), ("redis+sentinel:///m", "empty host"),
        ("redis+sentinel://s1,,s2/m", "empty host"), ("redis+sentinel://s1/m/x", "non-negative integer"), ("redis+sentinel://s1/m/1/2", "/<master-name>[/db]"),
        ("redis+sentinel://s1/m?x=1", "takes no ?"), ("redis+sentinel://s1/my%20master", "bad master name"), ("redis+sentinel://:secret@s1:0/m", "1…65535"), ("rediss+sentinel://user@s/m", "credentials"),
        ("rediss+cluster://h/1", "only database 0"), ("rediss://:secret@", "no host"), ("rediss://h:x", "1…65535"), ("redis+other://h", "the scheme must be"),
    ])
    func invalid(url: String, says: String) {
        let error = #expect(throws: RedisError.self) { try RedisTarget(url: url) }
        #expect(error?.isConnectionError == false)
        #expect(error?.description.contains(says) == true, "\(error.map { "\($0)" } ?? "no error")")
        #expect(error?.description.contains("secret") == false)
    }

    @Test("descriptions name the scheme and never the password")
    func descriptions() throws {
        #expect(try RedisTarget(url: "rediss://u:pw@h:6380").description == "rediss://u:***@h:6380")
        #expect(try RedisTarget(url: "rediss+cluster://:pw@a,b:7000").description == "rediss+cluster://:***@a:6379,b:7000")
        #expect(try RedisTarget(url: "rediss+sentinel://u:pw@s1,s2:1/m/4").description == "rediss+sentinel://u:***@s1:26379,s2:1/m/4")
        #expect(try RedisTarget(url: "redis://h").usesTLS == false)
    }

    @Test("a TLS cluster's CLUSTER SHARDS: the tls-port is used, the plain port (if any) is not")
    func shardsTLSPort() throws {
        func bulk(_ text: String) -> RedisReply { .string(Array(text.utf8)) }
        let node: [RedisReply] = [bulk("id"), bulk("abc"), bulk("port"), .integer(7000), bulk("tls-port"), .integer(7100), bulk("ip"), bulk("10.0.0.1"),
                                  bulk("endpoint"), bulk("node-0.cache.example"), bulk("role"), bulk("master"), bulk("health"), bulk("online")]
        let reply = RedisReply.array([.array([bulk("slots"), .array([.integer(0), .integer(16383)]), bulk("nodes"), .array([.array(node)])])])
        #expect(try RedisClusterSlotMap.parse(clusterShards: reply, answeredBy: "x", tls: true).masters == [RedisClusterNode(host: "node-0.cache.example", port: 7100)])
        #expect(try RedisClusterSlotMap.parse(clusterShards: reply, answeredBy: "x").masters == [RedisClusterNode(host: "node-0.cache.example", port: 7000)])
        let tlsOnly = RedisReply.array([.array([bulk("slots"), .array([.integer(0), .integer(16383)]), bulk("nodes"),
                                                .array([.array(Array(node[0...1]) + Array(node[4...]))])])])
        #expect(try RedisClusterSlotMap.parse(clusterShards: tlsOnly, answeredBy: "x", tls: true).masters.map(\.port) == [7100])
    }
}
