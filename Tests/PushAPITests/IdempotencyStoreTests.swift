import Foundation
import PushAPI
import PushRedis
import PushTestSupport
import Testing

/// ``IdempotencyStore`` against a real redis-server: claim, replay, reuse with another body,
/// in progress, release, per-caller keys, TTLs, Redis away.
@Suite("API idempotency keys (Redis)", .serialized)
struct IdempotencyStoreTests {
    @Test("claim → complete → replay; another body is refused; a pending key is in use; a released key is free again")
    func lifecycle() throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let client = try RedisClient(url: redis.url)
        defer { client.close() }
        let store = IdempotencyStore(redis: client, ttlMs: 86_400_000, pendingTTLMs: 60_000)
        let body = Array(#"{"jobId":"a"}"#.utf8)
        let print = IdempotencyStore.fingerprint(body)
        #expect(print.count == 64)
        #expect(print != IdempotencyStore.fingerprint(body + [0x20]))

        #expect(try store.claim(tokenID: "t1", key: "k-1", fingerprint: print).get() == .claimed)
        // A second request with the same key while the first runs.
        guard case .failure(let busy) = store.claim(tokenID: "t1", key: "k-1", fingerprint: print) else { Issue.record("claimed twice"); return }
        #expect(busy.status == 409 && busy.code == "idempotency_key_in_use" && busy.headers.contains { $0.0 == "Retry-After" })
        guard case .failure(let other) = store.claim(tokenID: "t1", key: "k-1", fingerprint: "0" + print.dropFirst()) else {
            Issue.record("claimed with another body"); return
        }
        #expect(other.status == 422 && other.code == "idempotency_key_reused")

        let answer = Array(#"{"jobs":1,"jobIds":["a"],"note":"é \"quoted\""}"#.utf8) + [0x0A]
        try store.complete(tokenID: "t1", key: "k-1", fingerprint: print, status: 202, body: answer)
        #expect(try store.claim(tokenID: "t1", key: "k-1", fingerprint: print).get() == .replay(status: 202, body: answer))
        guard case .failure(let reused) = store.claim(tokenID: "t1", key: "k-1", fingerprint: IdempotencyStore.fingerprint([1])) else {
            Issue.record("replayed for another body"); return
        }
        #expect(reused.code == "idempotency_key_reused")

        // Another caller's key of the same name is another key.
        #expect(try store.claim(tokenID: "t2", key: "k-1", fingerprint: print).get() == .claimed)
        try store.release(tokenID: "t2", key: "k-1")
        #expect(try store.claim(tokenID: "t2", key: "k-1", fingerprint: IdempotencyStore.fingerprint([2])).get() == .claimed)

        // TTLs: the finished answer is kept for ttlMs, the pending marker for pendingTTLMs.
        let ttls = try client.pipeline([["PTTL", .string(RedisKeys.apiIdempotency(tokenID: "t1", key: "k-1"))],
                                        ["PTTL", .string(RedisKeys.apiIdempotency(tokenID: "t2", key: "k-1"))]])
        #expect((ttls[0].integerValue ?? 0) > 86_000_000)
        #expect((ttls[1].integerValue ?? 0) > 50_000 && (ttls[1].integerValue ?? 0) <= 60_000)
    }

    @Test("keys with Redis key syntax stay one key each (escaped); key format: 1…255 visible ASCII")
    func keys() throws {
        #expect(RedisKeys.apiIdempotency(tokenID: "t", key: "a:b{c}") != RedisKeys.apiIdempotency(tokenID: "t:a", key: "b{c}"))
        #expect(RedisKeys.apiIdempotency(tokenID: "abc", key: "k").hasPrefix("pw:api:idem:abc:"))
        for valid in ["k", "550e8400-e29b-41d4-a716-446655440000", String(repeating: "~", count: 255), "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}"] {
            #expect(IdempotencyStore.isValidKey(valid), "\(valid)")
        }
        for invalid in ["", " ", "a b", String(repeating: "k", count: 256), "é", "tab\tkey", "new\nline", "\u{7F}"] {
            #expect(!IdempotencyStore.isValidKey(invalid), "\(invalid)")
        }
    }

    @Test("a stored value that is not ours reads as in use (never replayed, never a crash); Redis away is 503 redis_unavailable")
    func foreignValuesAndOutage() throws {
        let redis = try RedisServer()
        let client = try RedisClient(url: redis.url, timeout: .milliseconds(500))
        defer { client.close() }
        let store = IdempotencyStore(redis: client, ttlMs: 60_000)
        for (index, value) in ["garbage", #"{"state":"done"}"#, #"{"state":"done","fingerprint":"f"}"#, "[]"].enumerated() {
            _ = try client.pipeline([["SET", .string(RedisKeys.apiIdempotency(tokenID: "t", key: "k\(index)")), .string(value)]])
            let result = store.claim(tokenID: "t", key: "k\(index)", fingerprint: "f")
            guard case .failure(let error) = result else { Issue.record("\(value): \(result)"); continue }
            #expect(error.code == "idempotency_key_in_use", "\(value)")
        }
        _ = try client.pipeline([["SET", .string(RedisKeys.apiIdempotency(tokenID: "t", key: "list")), "x"], ["DEL", .string(RedisKeys.apiIdempotency(tokenID: "t", key: "list"))], ["RPUSH", .string(RedisKeys.apiIdempotency(tokenID: "t", key: "list")), "x"]])
        guard case .failure(let wrongType) = store.claim(tokenID: "t", key: "list", fingerprint: "f") else { Issue.record("claimed a list"); return }
        #expect(wrongType.status == 500 && wrongType.code == "internal")

        redis.stop()
        guard case .failure(let away) = store.claim(tokenID: "t", key: "z", fingerprint: "f") else { Issue.record("claimed without Redis"); return }
        #expect(away.status == 503 && away.code == "redis_unavailable")
        #expect(throws: RedisError.self) { try store.release(tokenID: "t", key: "z") }
    }
}
