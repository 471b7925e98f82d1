/// Where and how to connect: parsed from a URL.
///
/// Accepted forms:
/// - `redis://[[user]:password@]host[:port][/db]` (default port 6379, db 0; IPv6 as `[::1]`;
///   user and password percent-decoded; a user needs Redis 6 ACLs)
/// - `rediss://…`: the same over TLS (``tls`` set; its files come from the configuration)
/// - `unix:///path/to/redis.sock[?db=N&password=P]`
///
/// The password never appears in `description`. A cluster's URL (`redis+cluster://…`) is a
/// ``RedisClusterEndpoint``, a Sentinel's (`redis+sentinel://…`) a ``RedisSentinelEndpoint``;
/// ``RedisTarget`` parses them all.
public struct RedisEndpoint: Sendable, Equatable, CustomStringConvertible {
    /// A TCP host and port, or a unix socket path.
    public enum Address: Sendable, Equatable, CustomStringConvertible {
        case tcp(host: String, port: Int)
        case unix(path: String)

        public var description: String {
            switch self {
            case .tcp(let host, let port): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
            case .unix(let path): "unix:\(path)"
            }
        }
    }

    public var address: Address
    public var username: String?
    public var password: String?
    /// The logical database selected after connecting. Default: 0.
    public var database: Int
    /// TLS settings (`rediss://`); nil: plain TCP or a unix socket.
    public var tls: RedisTLS?

    public init(address: Address, username: String? = nil, password: String? = nil, database: Int = 0, tls: RedisTLS? = nil) {
        self.address = address
        self.username = username
        self.password = password
        self.database = database
        self.tls = tls
    }

    public init(url: String) throws(RedisError) {
        let bad = { (why: String) in Self.invalid(why) }
        if url.hasPrefix("unix://") {
            var rest = Substring(url.dropFirst("unix://".count))
            var query: Substring = ""
            if let mark = rest.firstIndex(of: "?") {
                query = rest[rest.index(after: mark)...]
                rest = rest[..<mark]
            }
            guard rest.hasPrefix("/"), rest.count > 1 else { throw bad("a unix socket needs an absolute path") }
            guard let path = Self.percentDecode(rest) else { throw bad("bad percent-encoding") }
            var password: String?
            var database = 0
            for pair in query.split(separator: "&") where !pair.isEmpty {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = parts[0], value = parts.count > 1 ? parts[1] : ""
                switch name {
                case "db":
                    guard let number = Int(value), number >= 0 else { throw bad("db must be a non-negative integer") }
                    database = number
                case "password":
                    guard let decoded = Self.percentDecode(value) else { throw bad("bad percent-encoding") }
                    password = decoded
                default: throw bad("unknown parameter \(name)")
                }
            }
            self.init(address: .unix(path: path), password: password, database: database)
            return
        }
        if RedisClusterEndpoint.schemes.contains(where: url.hasPrefix) {
            throw bad("\(RedisClusterEndpoint.scheme) names a cluster: use RedisTarget or RedisClusterEndpoint")
        }
        if RedisSentinelEndpoint.schemes.contains(where: url.hasPrefix) {
            throw bad("\(RedisSentinelEndpoint.scheme) names Sentinels: use RedisTarget or RedisSentinelEndpoint")
        }
        let isTLS = url.hasPrefix("rediss://")
        guard isTLS || url.hasPrefix("redis://") else { throw bad("the scheme must be \(Self.schemeList)") }
        var rest = Substring(url.dropFirst(isTLS ? "rediss://".count : "redis://".count))
        var path: Substring = ""
        if let slash = rest.firstIndex(of: "/") {
            path = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        }
        let (username, password, hostPort) = try Self.splitCredentials(rest)
        let address = try Self.parseHostPort(hostPort)
        var database = 0
        if !path.isEmpty {
            guard let number = Int(path), number >= 0 else { throw bad("the path must be a database number") }
            database = number
        }
        self.init(address: address, username: username, password: password, database: database, tls: isTLS ? RedisTLS() : nil)
    }

    /// Every scheme `PUSHWORKER_REDIS_URL` accepts, for error messages.
    static let schemeList = "redis://, rediss://, unix://, redis+cluster://, rediss+cluster://, redis+sentinel:// or rediss+sentinel://"

    /// `[[user]:password@]rest` → (user, password, rest); both percent-decoded; an empty user is none.
    static func splitCredentials(_ text: Substring) throws(RedisError) -> (username: String?, password: String?, rest: Substring) {
        guard let at = text.lastIndex(of: "@") else { return (nil, nil, text) }
        let userInfo = text[..<at]
        guard let colon = userInfo.firstIndex(of: ":") else { throw invalid("credentials must be user:password or :password") }
        let user = userInfo[..<colon], secret = userInfo[userInfo.index(after: colon)...]
        guard let decodedUser = percentDecode(user), let decodedSecret = percentDecode(secret) else {
            throw invalid("bad percent-encoding")
        }
        return (decodedUser.isEmpty ? nil : decodedUser, decodedSecret, text[text.index(after: at)...])
    }

    /// `host[:port]` or `[v6][:port]` (default port 6379, or `defaultPort`).
    static func parseHostPort(_ text: Substring, defaultPort: Int = 6379) throws(RedisError) -> Address {
        var host: Substring
        var portText: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw invalid("unterminated IPv6 address") }
            host = text[text.index(after: text.startIndex)..<close]
            let after = text[text.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw invalid("garbage after the IPv6 address") }
                portText = after.dropFirst()
            }
        } else if let colon = text.firstIndex(of: ":") {
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        } else {
            host = text
        }
        guard !host.isEmpty else { throw invalid("no host") }
        guard !host.contains(where: { $0 == "/" || $0 == "?" || $0 == "#" || $0 == "," || $0 == "@" || $0.isWhitespace }) else {
            throw invalid("bad host")
        }
        var port = defaultPort
        if let portText {
            guard let number = Int(portText), (1...65535).contains(number) else { throw invalid("the port must be 1…65535") }
            port = number
        }
        return .tcp(host: String(host), port: port)
    }

    static func invalid(_ why: String) -> RedisError { RedisError("invalid Redis URL (\(why))") }

    /// What follows the scheme of a Cluster or Sentinel URL (`scheme` or `tlsScheme`), and
    /// whether it is the TLS one; such URLs take no `?` or `#` part. `kind` names the URL in the
    /// errors ("a cluster URL").
    static func afterScheme(_ url: String, scheme: String, tlsScheme: String, kind: String) throws(RedisError) -> (isTLS: Bool, rest: Substring) {
        let isTLS = url.hasPrefix(tlsScheme)
        guard isTLS || url.hasPrefix(scheme) else { throw invalid("\(kind) starts with \(scheme) or \(tlsScheme)") }
        let rest = Substring(url.dropFirst(isTLS ? tlsScheme.count : scheme.count))
        if let mark = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { throw invalid("\(kind) takes no \(rest[mark]) part") }
        return (isTLS, rest)
    }

    /// The address with the user (never the password), the database when not 0, and `rediss://`
    /// in front for TLS.
    public var description: String {
        var text = address.description
        if password != nil { text = "\(username ?? ""):***@" + text }
        if database != 0 { text += "/\(database)" }
        return tls == nil ? text : "rediss://" + text
    }

    static func percentDecode(_ text: Substring) -> String? {
        guard text.contains("%") else { return String(text) }
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
