/// The address ranges a Web Push connection must never reach (docs/security.md,
/// "End users' subscriptions"): everything that is not a globally reachable unicast address, from the IANA
/// IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890) plus multicast and the reserved
/// blocks. The raw value is the range in CIDR notation, for logs.
///
/// The one classifier of the code base: ``IPAddress/specialRange`` decides, and the Web Push
/// guard, the allow-list and the transport's connect-time check all ask it.
public enum SpecialAddressRange: String, Sendable, CaseIterable {
    // IPv4
    case thisNetwork = "0.0.0.0/8"                 // RFC 791 "this host on this network"; 0.0.0.0 reaches the local host
    case privateUse10 = "10.0.0.0/8"               // RFC 1918
    case sharedAddressSpace = "100.64.0.0/10"      // RFC 6598 carrier-grade NAT
    case loopbackIPv4 = "127.0.0.0/8"              // RFC 1122
    case linkLocalIPv4 = "169.254.0.0/16"          // RFC 3927 (cloud metadata services live here)
    case privateUse172 = "172.16.0.0/12"           // RFC 1918
    case ietfProtocolIPv4 = "192.0.0.0/24"         // RFC 6890 IETF protocol assignments
    case documentation192 = "192.0.2.0/24"         // RFC 5737 TEST-NET-1
    case relay6to4 = "192.88.99.0/24"              // RFC 7526 deprecated 6to4 relay anycast
    case privateUse192 = "192.168.0.0/16"          // RFC 1918
    case benchmarking = "198.18.0.0/15"            // RFC 2544
    case documentation198 = "198.51.100.0/24"      // RFC 5737 TEST-NET-2
    case documentation203 = "203.0.113.0/24"       // RFC 5737 TEST-NET-3
    case multicastIPv4 = "224.0.0.0/4"             // RFC 5771
    case reservedIPv4 = "240.0.0.0/4"              // RFC 1112 reserved for future use
    case broadcast = "255.255.255.255/32"          // RFC 919 limited broadcast
    // IPv6
    case unspecified = "::/128"                    // RFC 4291
    case loopbackIPv6 = "::1/128"                  // RFC 4291
    case reservedIPv6 = "::/8"                     // RFC 4291 reserved (IPv4-compatible ::/96 included; mapped is IPv4)
    case nat64LocalUse = "64:ff9b:1::/48"          // RFC 8215 local-use NAT64
    case discardOnly = "100::/64"                  // RFC 6666
    case ietfProtocolIPv6 = "2001::/23"            // RFC 2928 (Teredo 2001::/32, ORCHID, benchmarking 2001:2::/48)
    case documentationIPv6 = "2001:db8::/32"       // RFC 3849
    case documentation3fff = "3fff::/20"           // RFC 9637
    case notGlobalUnicast = "!2000::/3"            // IANA allocates global unicast only from 2000::/3
    case uniqueLocal = "fc00::/7"                  // RFC 4193
    case linkLocalIPv6 = "fe80::/10"               // RFC 4291
    case siteLocal = "fec0::/10"                   // RFC 3879 deprecated site-local
    case multicastIPv6 = "ff00::/8"                // RFC 4291

    /// Whether the range is IPv4 (its members are 4-byte addresses).
    public var isIPv4: Bool { !rawValue.contains(":") }
}

/// How an IPv6 address carries an IPv4 address that is the real destination.
public enum EmbeddedIPv4: String, Sendable {
    /// `64:ff9b::/96` (RFC 6052): a NAT64 gateway connects to the last 32 bits.
    case nat64 = "64:ff9b::/96"
    /// `2002::/16` (RFC 3056): a 6to4 relay delivers to bits 16–47.
    case sixToFour = "2002::/16"
}

extension IPAddress {
    /// The special range this address is in, nil for a globally reachable unicast address.
    /// NAT64 (`64:ff9b::/96`) and 6to4 (`2002::/16`) addresses are classified by the IPv4
    /// address they lead to (``embeddedIPv4``); IPv4-mapped ones are IPv4 already.
    public var specialRange: SpecialAddressRange? {
        if let embedded = embeddedIPv4?.0 { return embedded.specialRange }
        return isIPv4 ? Self.classifyIPv4(bytes) : Self.classifyIPv6(bytes)
    }

    /// True when a connection to this address could reach something private, local or
    /// reserved (``specialRange`` is not nil).
    public var isPrivate: Bool { specialRange != nil }

    /// Whether `text` is an address (``IPAddress/init(_:)``) that ``isPrivate``. A text that is
    /// not an address is not private (a name is the resolver's business); to fail closed on
    /// unreadable input, parse first.
    public static func isPrivate(_ text: some StringProtocol) -> Bool {
        IPAddress(text)?.isPrivate ?? false
    }

    /// The IPv4 address a NAT64 or 6to4 address leads to, and how.
    public var embeddedIPv4: (IPAddress, EmbeddedIPv4)? {
        guard bytes.count == 16 else { return nil }
        if bytes[0] == 0x00, bytes[1] == 0x64, bytes[2] == 0xFF, bytes[3] == 0x9B, bytes[4..<12].allSatisfy({ $0 == 0 }),
           let v4 = IPAddress(bytes: Array(bytes[12..<16])) {
            return (v4, .nat64)
        }
        if bytes[0] == 0x20, bytes[1] == 0x02, let v4 = IPAddress(bytes: Array(bytes[2..<6])) {
            return (v4, .sixToFour)
        }
        return nil
    }

    private static func classifyIPv4(_ b: [UInt8]) -> SpecialAddressRange? {
        switch (b[0], b[1], b[2]) {
        case (0, _, _): return .thisNetwork
        case (10, _, _): return .privateUse10
        case (100, 64...127, _): return .sharedAddressSpace
        case (127, _, _): return .loopbackIPv4
        case (169, 254, _): return .linkLocalIPv4
        case (172, 16...31, _): return .privateUse172
        case (192, 0, 0): return .ietfProtocolIPv4
        case (192, 0, 2): return .documentation192
        case (192, 88, 99): return .relay6to4
        case (192, 168, _): return .privateUse192
        case (198, 18...19, _): return .benchmarking
        case (198, 51, 100): return .documentation198
        case (203, 0, 113): return .documentation203
        case (224...239, _, _): return .multicastIPv4
        case (255, 255, 255) where b[3] == 255: return .broadcast
        case (240...255, _, _): return .reservedIPv4
        default: return nil
        }
    }

    private static func classifyIPv6(_ b: [UInt8]) -> SpecialAddressRange? {
        if b.allSatisfy({ $0 == 0 }) { return .unspecified }
        if b[0..<15].allSatisfy({ $0 == 0 }) && b[15] == 1 { return .loopbackIPv6 }
        if b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xFF && b[3] == 0x9B && b[4] == 0x00 && b[5] == 0x01 { return .nat64LocalUse }
        if b[0] == 0x00 { return .reservedIPv6 }
        if b[0] == 0x01 && b[1] == 0x00 && b[2..<8].allSatisfy({ $0 == 0 }) { return .discardOnly }
        if b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0D && b[3] == 0xB8 { return .documentationIPv6 }
        if b[0] == 0x20 && b[1] == 0x01 && b[2] & 0xFE == 0x00 { return .ietfProtocolIPv6 }
        if b[0] == 0x3F && b[1] == 0xFF && b[2] & 0xF0 == 0x00 { return .documentation3fff }
        if b[0] & 0xE0 == 0x20 { return nil }  // 2000::/3, global unicast
        if b[0] & 0xFE == 0xFC { return .uniqueLocal }
        if b[0] == 0xFE && b[1] & 0xC0 == 0x80 { return .linkLocalIPv6 }
        if b[0] == 0xFE && b[1] & 0xC0 == 0xC0 { return .siteLocal }
        if b[0] == 0xFF { return .multicastIPv6 }
        return .notGlobalUnicast
    }
}
