/// A master watched by Redis Sentinel, parsed from
/// `redis+sentinel://[[user]:password@]host[:port][,host[:port]…]/<master-name>[/db]` (default
/// port 26379; IPv6 as `[::1]:26379`; user, password and master name percent-decoded), or
/// `rediss+sentinel://…`: the same over TLS, to the Sentinels and to the master (``tls``).
///
/// The hosts are Sentinels: the client asks them where the master named `<master-name>` is
/// (`SENTINEL get-master-addr-by-name`), so one that answers is enough (list them all). The user
/// and password are the master's: sent as `AUTH` to it, never to a Sentinel. Sentinels that
/// require a password of their own (`requirepass` in sentinel.conf) get ``sentinelPassword``
/// (`PUSHWORKER_REDIS_SENTINEL_PASSWORD`), with ``sentinelUsername`` when set. A query or a
/// fragment is refused.
public struct RedisSentinelEndpoint: Sendable, Equatable, CustomStringConvertible {
    /// The URL scheme of a Sentinel-managed master.
    public static let scheme = "redis+sentinel://"
    /// The same over TLS.
    public static let tlsScheme = "rediss+sentinel://"
    static let schemes = [scheme, tlsScheme]
    /// Sentinel's port when the URL names none.
    public static let defaultPort = 26379

    /// The Sentinels, in the URL's order (TCP addresses).
    public var sentinels: [RedisEndpoint.Address]
    /// The name the Sentinels monitor the master by (`sentinel monitor <name> …`).
    public var masterName: String
    /// The master's ACL user (Redis 6); nil: the default user.
    public var username: String?
    /// The master's password.
    public var password: String?
    /// The database selected on the master. Default: 0.
    public var database: Int
    /// The Sentinels' own password; nil: they get no `AUTH`.
    public var sentinelPassword: String?
    /// The Sentinels' ACL user (Redis 6.2), with ``sentinelPassword``.
    public var sentinelUsername: String?
    /// TLS settings (`rediss+sentinel://`), for the Sentinels and the master; nil: plain TCP.
    public var tls: RedisTLS?

    public init(sentinels: [RedisEndpoint.Address], masterName: String, username: String? = nil, password: String? = nil,
                database: Int = 0, sentinelPassword: String? = nil, sentinelUsername: String? = nil, tls: RedisTLS? = nil) {
        self.sentinels = sentinels
        self.masterName = masterName
        self.username = username
        self.password = password
        self.database = database
        self.sentinelPassword = sentinelPassword
        self.sentinelUsername = sentinelUsername
        self.tls = tls
    }

    public init(url: String) throws(RedisError) {
        let parsed = try RedisEndpoint.afterScheme(url, scheme: Self.scheme, tlsScheme: Self.tlsScheme, kind: "a Sentinel URL")
        let isTLS = parsed.isTLS
        var rest = parsed.rest
        let usage = "name the master after the Sentinels: \(Self.scheme)host:26379,…/<master-name>[/db]"
        guard let slash = rest.firstIndex(of: "/") else { throw RedisEndpoint.invalid(usage) }
        let path = rest[rest.index(after: slash)...].split(separator: "/", omittingEmptySubsequences: false)
        rest = rest[..<slash]
        guard let first = path.first, !first.isEmpty else { throw RedisEndpoint.invalid(usage) }
        guard let name = RedisEndpoint.percentDecode(first), !name.contains(where: { $0.isWhitespace || $0.isNewline }) else {
            throw RedisEndpoint.invalid("bad master name")
        }
        guard path.count <= 2 else { throw RedisEndpoint.invalid("the path must be /<master-name>[/db]") }
        var database = 0
        if path.count > 1, !path[1].isEmpty {
            guard let number = Int(path[1]), number >= 0 else { throw RedisEndpoint.invalid("the database after the master name must be a non-negative integer") }
            database = number
        }
        let (username, password, hosts) = try RedisEndpoint.splitCredentials(rest)
        var sentinels: [RedisEndpoint.Address] = []
        for host in hosts.split(separator: ",", omittingEmptySubsequences: false) {
            guard !host.isEmpty else { throw RedisEndpoint.invalid("an empty host in the Sentinel list") }
            sentinels.append(try RedisEndpoint.parseHostPort(host, defaultPort: Self.defaultPort))
        }
        guard !sentinels.isEmpty else { throw RedisEndpoint.invalid("no Sentinel") }
        self.init(sentinels: sentinels, masterName: name, username: username, password: password, database: database,
                  tls: isTLS ? RedisTLS() : nil)
    }

    /// The URL without the passwords.
    public var description: String {
        var text = tls == nil ? Self.scheme : Self.tlsScheme
        if password != nil { text += "\(username ?? ""):***@" }
        text += sentinels.map(\.description).joined(separator: ",") + "/" + masterName
        if database != 0 { text += "/\(database)" }
        return text
    }
}
