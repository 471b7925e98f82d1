import PushCore
import PushEncoding
import PushRedis

/// `Idempotency-Key` on `POST /v1/jobs` (docs/reference/api.md "Idempotency"), kept in Redis so
/// that every replica of the API agrees.
///
/// A request with a key first claims it: `SET NX` of a pending marker holding the SHA-256 of the
/// body (``pendingTTLMs``: a replica that dies mid-request frees the key by itself). Then:
/// - claimed: the request runs; a 202 answer replaces the marker (kept ``ttlMs``); any other
///   answer deletes it, so the same key can be retried once the problem is fixed;
/// - the key holds a finished answer for the same body: that answer again (``Claim/replay``);
/// - the same body is still running elsewhere: 409 `idempotency_key_in_use`;
/// - another body: 422 `idempotency_key_reused`.
/// Keys are per caller (``RedisKeys/apiIdempotency(tokenID:key:)``): two tokens never share one.
public struct IdempotencyStore: Sendable {
    public let redis: any RedisPipelining
    /// How long a finished answer is kept (`PUSHWORKER_API_IDEMPOTENCY_TTL_SECONDS`).
    public let ttlMs: Int64
    /// How long a pending marker lives: more than a request can take.
    public let pendingTTLMs: Int64

    public init(redis: any RedisPipelining, ttlMs: Int64, pendingTTLMs: Int64 = 120_000) {
        self.redis = redis; self.ttlMs = max(1000, ttlMs); self.pendingTTLMs = max(1000, pendingTTLMs)
    }

    /// What a key says about a request.
    public enum Claim: Sendable, Equatable {
        /// The key was free: it is now this request's.
        case claimed
        /// The same request was answered before: send this again.
        case replay(status: Int, body: [UInt8])
    }

    /// 1…255 visible ASCII characters (`!` to `~`).
    public static func isValidKey(_ key: String) -> Bool {
        !key.isEmpty && key.utf8.count <= 255 && key.utf8.allSatisfy { $0 >= 0x21 && $0 <= 0x7E }
    }

    /// The body's fingerprint: SHA-256, hex.
    public static func fingerprint(_ body: [UInt8]) -> String {
        let hex = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(64)
        for byte in SHA256.hash(body) { out.append(hex[Int(byte >> 4)]); out.append(hex[Int(byte & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }

    /// Claims `key` for a request whose body has `fingerprint`, or says why not.
    public func claim(tokenID: String, key: String, fingerprint: String) -> Result<Claim, APIError> {
        let name = RedisKeys.apiIdempotency(tokenID: tokenID, key: key)
        let pending = Self.record(state: "pending", fingerprint: fingerprint, status: nil, body: nil)
        let replies: [RedisReply]
        do {
            replies = try redis.pipeline([["SET", .string(name), .bytes(pending), "NX", "PX", .int(pendingTTLMs)], ["GET", .string(name)]])
        } catch {
            return .failure(.redisUnavailable(error.message))
        }
        guard replies.count == 2 else { return .failure(.internalError("Redis answered \(replies.count) replies, expected 2")) }
        if let message = replies.compactMap(\.errorMessage).first { return .failure(.internalError("Redis refused: \(message)")) }
        if replies[0].text == "OK" { return .success(.claimed) }
        guard case .string(let stored) = replies[1], let record = Self.parse(stored) else {
            // Gone between SET and GET (it expired): the caller may retry at once.
            return .failure(.idempotencyKeyInUse())
        }
        guard record.fingerprint == fingerprint else { return .failure(.idempotencyKeyReused()) }
        guard record.state == "done", let status = record.status, let body = record.body else { return .failure(.idempotencyKeyInUse()) }
        return .success(.replay(status: status, body: Array(body.utf8)))
    }

    /// Keeps the answer of a claimed key (``ttlMs``). Throws when Redis is away: the answer was
    /// given anyway, and the key frees itself with its pending marker.
    public func complete(tokenID: String, key: String, fingerprint: String, status: Int, body: [UInt8]) throws(RedisError) {
        let name = RedisKeys.apiIdempotency(tokenID: tokenID, key: key)
        let done = Self.record(state: "done", fingerprint: fingerprint, status: status, body: String(decoding: body, as: UTF8.self))
        let replies = try redis.pipeline([["SET", .string(name), .bytes(done), "PX", .int(ttlMs)]])
        if let message = replies.first?.errorMessage { throw RedisError(message) }
    }

    /// Frees a claimed key (the request was not accepted).
    public func release(tokenID: String, key: String) throws(RedisError) {
        _ = try redis.pipeline([["DEL", .string(RedisKeys.apiIdempotency(tokenID: tokenID, key: key))]])
    }

    struct Record: Equatable {
        var state: String
        var fingerprint: String
        var status: Int?
        var body: String?
    }

    /// `{"state","fingerprint","status"?,"body"?}`.
    static func record(state: String, fingerprint: String, status: Int?, body: String?) -> [UInt8] {
        JSONWriter.object(capacity: 128 + (body?.utf8.count ?? 0)) { w in
            w.member("state", state)
            w.member("fingerprint", fingerprint)
            if let status { w.member("status", status) }
            w.member("body", ifPresent: body)
        }.bytes
    }

    static func parse(_ bytes: [UInt8]) -> Record? {
        guard let object = (try? JSONParser.parse(bytes, maxBytes: max(bytes.count, 1)))?.objectValue,
              let state = object["state"]?.stringValue, let fingerprint = object["fingerprint"]?.stringValue else { return nil }
        let status: Int? = if case .number(let number)? = object["status"] { number.intValue } else { nil }
        return Record(state: state, fingerprint: fingerprint, status: status, body: object["body"]?.stringValue)
    }
}
