/// The seed nodes and credentials of a Redis Cluster, parsed from
/// `redis+cluster://[[user]:password@]host[:port][,host[:port]…]` (default port 6379; IPv6 as
/// `[::1]:7000`; user and password percent-decoded, sent as `AUTH` to every node), or
/// `rediss+cluster://…`: the same over TLS to every node (``tls``).
///
/// A seed is only where the client first reads the slot map: any one reachable seed is enough,
/// the map names the other nodes. A cluster has only database 0, so a `/N` path is refused.
public struct RedisClusterEndpoint: Sendable, Equatable, CustomStringConvertible {
    /// The URL scheme of a cluster.
    public static let scheme = "redis+cluster://"
    /// The URL scheme of a cluster over TLS.
    public static let tlsScheme = "rediss+cluster://"
    static let schemes = [scheme, tlsScheme]

    /// Where the slot map is read first (TCP addresses), in the URL's order.
    public var seeds: [RedisClusterNode]
    public var username: String?
    public var password: String?
    /// TLS settings (`rediss+cluster://`), for every node; nil: plain TCP.
    public var tls: RedisTLS?

    public init(seeds: [RedisClusterNode], username: String? = nil, password: String? = nil, tls: RedisTLS? = nil) {
        self.seeds = seeds
        self.username = username
        self.password = password
        self.tls = tls
    }

    public init(url: String) throws(RedisError) {
        let parsed = try RedisEndpoint.afterScheme(url, scheme: Self.scheme, tlsScheme: Self.tlsScheme, kind: "a cluster URL")
        let isTLS = parsed.isTLS
        var rest = parsed.rest
        if let slash = rest.firstIndex(of: "/") {
            let path = rest[rest.index(after: slash)...]
            guard path.isEmpty else {
                throw RedisEndpoint.invalid("a Redis Cluster has only database 0: remove /\(path) from the cluster URL")
            }
            rest = rest[..<slash]
        }
        let (username, password, hosts) = try RedisEndpoint.splitCredentials(rest)
        var seeds: [RedisClusterNode] = []
        for seed in hosts.split(separator: ",", omittingEmptySubsequences: false) {
            guard !seed.isEmpty else { throw RedisEndpoint.invalid("an empty seed in the node list") }
            guard case .tcp(let host, let port) = try RedisEndpoint.parseHostPort(seed) else { continue }
            seeds.append(RedisClusterNode(host: host, port: port))
        }
        guard !seeds.isEmpty else { throw RedisEndpoint.invalid("no seed node") }
        self.init(seeds: seeds, username: username, password: password, tls: isTLS ? RedisTLS() : nil)
    }

    /// The URL without the password.
    public var description: String {
        var text = tls == nil ? Self.scheme : Self.tlsScheme
        if password != nil { text += "\(username ?? ""):***@" }
        return text + seeds.map(\.description).joined(separator: ",")
    }
}
