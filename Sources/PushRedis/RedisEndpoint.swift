/// Where and how to connect: parsed from a URL.
///
/// Accepted forms:
/// - `redis://[[user]:password@]host[:port][/db]` (default port 6379, db 0; IPv6 as `[::1]`;
///   user and password percent-decoded; a user needs Redis 6 ACLs)
/// - `unix:///path/to/redis.sock[?db=N&password=P]`
///
/// `rediss://` is refused: hiredis 0.14.1 has no TLS. The password never appears in `description`.
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

    public init(address: Address, username: String? = nil, password: String? = nil, database: Int = 0) {
        self.address = address
        self.username = username
        self.password = password
        self.database = database
    }

    public init(url: String) throws(RedisError) {
        let bad = { (why: String) in RedisError("invalid Redis URL (\(why))") }
        if url.hasPrefix("rediss://") { throw bad("TLS is not supported by hiredis 0.14.1") }
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
        guard url.hasPrefix("redis://") else { throw bad("the scheme must be redis:// or unix://") }
        var rest = Substring(url.dropFirst("redis://".count))
        var path: Substring = ""
        if let slash = rest.firstIndex(of: "/") {
            path = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        }
        var username: String?
        var password: String?
        if let at = rest.lastIndex(of: "@") {
            let userInfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            guard let colon = userInfo.firstIndex(of: ":") else { throw bad("credentials must be user:password or :password") }
            let user = userInfo[..<colon], secret = userInfo[userInfo.index(after: colon)...]
            guard let decodedUser = Self.percentDecode(user), let decodedSecret = Self.percentDecode(secret) else {
                throw bad("bad percent-encoding")
            }
            username = decodedUser.isEmpty ? nil : decodedUser
            password = decodedSecret
        }
        var host: Substring
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw bad("unterminated IPv6 address") }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw bad("garbage after the IPv6 address") }
                portText = after.dropFirst()
            }
        } else if let colon = rest.firstIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
        }
        guard !host.isEmpty else { throw bad("no host") }
        guard !host.contains(where: { $0 == "/" || $0 == "?" || $0 == "#" || $0.isWhitespace }) else { throw bad("bad host") }
        var port = 6379
        if let portText {
            guard let number = Int(portText), (1...65535).contains(number) else { throw bad("the port must be 1…65535") }
            port = number
        }
        var database = 0
        if !path.isEmpty {
            guard let number = Int(path), number >= 0 else { throw bad("the path must be a database number") }
            database = number
        }
        self.init(address: .tcp(host: String(host), port: port), username: username, password: password, database: database)
    }

    public var description: String {
        var text = address.description
        if password != nil { text = "\(username ?? ""):***@" + text }
        if database != 0 { text += "/\(database)" }
        return text
    }

    private static func percentDecode(_ text: Substring) -> String? {
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
