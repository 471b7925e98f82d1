/// The parts of an absolute `scheme://host[:port]/…` URL that decide where a request goes: the
/// one parser of Web Push endpoints (docs/security.md): one parser decides the host for the
/// allow-list, the guard and libcurl. The planner matches ``host`` against the allow-list,
/// the address guard resolves the same ``host``, and the transport should connect to nothing
/// else (see docs/security.md).
///
/// Refuses, instead of guessing, everything two URL parsers could read differently: user info
/// (`https://fcm.googleapis.com@evil/`), control characters, spaces and non-ASCII bytes,
/// percent-encoded or empty hosts, bad ports, and hosts that are IPv4 addresses to some parsers
/// only (`2130706433`, `0x7f.1`, `127.1`, `010.0.0.1`: a name whose last label is a number).
public struct EndpointURL: Sendable, Equatable {
    /// Lower case (`https`).
    public var scheme: String
    /// Lower case; an IPv6 literal without its brackets; a trailing dot kept as given.
    public var host: String
    /// The explicit port, if any (1…65535).
    public var port: Int?

    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count <= RecipientTargeting.maximumEndpointLength,
              bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
        // scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) (RFC 3986 §3.1), then "://".
        var index = 0
        while index < bytes.count, EndpointURL.isSchemeByte(bytes[index], first: index == 0) { index += 1 }
        guard index > 0, index + 3 <= bytes.count, bytes[index] == UInt8(ascii: ":"),
              bytes[index + 1] == UInt8(ascii: "/"), bytes[index + 2] == UInt8(ascii: "/") else { return nil }
        let scheme = String(decoding: bytes[0..<index], as: UTF8.self).lowercased()
        let authorityStart = index + 3
        var authorityEnd = authorityStart
        while authorityEnd < bytes.count, bytes[authorityEnd] != UInt8(ascii: "/"), bytes[authorityEnd] != UInt8(ascii: "\\"),
              bytes[authorityEnd] != UInt8(ascii: "?"), bytes[authorityEnd] != UInt8(ascii: "#") { authorityEnd += 1 }
        // A backslash ends the authority for WHATWG parsers, not for RFC 3986 ones: refuse it.
        guard authorityEnd == bytes.count || bytes[authorityEnd] != UInt8(ascii: "\\") else { return nil }
        let authority = bytes[authorityStart..<authorityEnd]
        guard !authority.isEmpty, !authority.contains(UInt8(ascii: "@")) else { return nil }
        var hostRange: Range<Int>
        var portStart: Int?
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            hostRange = (authorityStart + 1)..<close
            if close + 1 < authorityEnd {
                guard bytes[close + 1] == UInt8(ascii: ":") else { return nil }
                portStart = close + 2
            }
            let literal = String(decoding: bytes[hostRange], as: UTF8.self)
            guard !literal.contains("%"), IPAddress.parseIPv6(Substring(literal)) != nil else { return nil }
        } else {
            let colon = authority.firstIndex(of: UInt8(ascii: ":"))
            hostRange = authorityStart..<(colon ?? authorityEnd)
            portStart = colon.map { $0 + 1 }
            guard bytes[hostRange].allSatisfy(EndpointURL.isHostByte) else { return nil }
        }
        guard !hostRange.isEmpty else { return nil }
        if let portStart {
            let digits = bytes[portStart..<authorityEnd]
            guard !digits.isEmpty, digits.count <= 5, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  let port = Int(String(decoding: digits, as: UTF8.self)), (1...65535).contains(port) else { return nil }
            self.port = port
        }
        self.scheme = scheme
        self.host = String(decoding: bytes[hostRange], as: UTF8.self).lowercased()
        if authority.first != UInt8(ascii: "["), IPAddress.parseIPv4(Substring(host)) == nil,
           EndpointURL.endsInNumber(host) { return nil }
    }

    /// `scheme://host[:port]` (the origin, RFC 6454), IPv6 hosts in brackets.
    public var origin: String {
        let hostPart = host.contains(":") ? "[\(host)]" : host
        return port.map { "\(scheme)://\(hostPart):\($0)" } ?? "\(scheme)://\(hostPart)"
    }

    /// Whether the last label of `host` (a trailing dot ignored) is a number, decimal or
    /// `0x` hexadecimal: WHATWG URL parsers and libcurl then read the whole host as an IPv4
    /// address (`127.1`, `2130706433`, `0x7f000001`), which a name comparison would not.
    static func endsInNumber(_ host: String) -> Bool {
        // Bytes read in place: `split` + `lowercased` would allocate an array and strings for
        // every Web Push recipient. ASCII case folding only: a host that reaches here is
        // ASCII (``isHostByte``), and no other character lower-cases to `x` or a hex digit.
        let bytes = host.utf8.span
        var end = bytes.count
        if end > 0, bytes[end - 1] == UInt8(ascii: ".") { end -= 1 }
        var start = end
        while start > 0, bytes[start - 1] != UInt8(ascii: ".") { start -= 1 }
        guard start < end else { return false }
        var allDigits = true
        for index in start..<end where !(bytes[index] >= 0x30 && bytes[index] <= 0x39) {
            allDigits = false
            break
        }
        if allDigits { return true }
        guard end - start >= 2, bytes[start] == UInt8(ascii: "0"), bytes[start + 1] | 0x20 == UInt8(ascii: "x") else { return false }
        for index in (start + 2)..<end {
            let byte = bytes[index]
            let folded = byte | 0x20
            guard (byte >= 0x30 && byte <= 0x39) || (folded >= 0x61 && folded <= 0x66) else { return false }
        }
        return true
    }

    static func isSchemeByte(_ byte: UInt8, first: Bool) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"): true
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."): !first
        default: false
        }
    }

    static func isHostByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"): true
        default: false
        }
    }
}
