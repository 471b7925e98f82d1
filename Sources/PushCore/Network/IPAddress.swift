/// An IPv4 or IPv6 address as its bytes (4 or 16), parsed and printed without the C library.
///
/// An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, RFC 4291 §2.5.5.2) *is* that IPv4 address:
/// it is stored as 4 bytes, so rate limiting, trusted-proxy matching and the private-range
/// check (``specialRange``) see one address whichever form a peer, a header or a resolver used.
///
/// Parsing is strict: IPv4 is dotted decimal with four parts and no leading zeros (`010.0.0.1`
/// is octal to some parsers, `127.1` and `2130706433` are IPv4 to others: all refused, so no two
/// parsers can disagree about which address a text names); IPv6 is RFC 4291 §2.2 text, with an
/// optional embedded IPv4 tail, optional brackets and an optional zone id (`%eth0`, dropped).
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// 4 bytes (IPv4, including IPv4-mapped IPv6) or 16 bytes (IPv6), network order.
    public let bytes: [UInt8]

    /// The address of `bytes`: 4 bytes are IPv4, 16 bytes IPv6 (an IPv4-mapped one becomes its
    /// IPv4 address); nil for any other count. For socket addresses (`sin_addr`, `sin6_addr`).
    public init?(bytes: [UInt8]) {
        switch bytes.count {
        case 4: self.bytes = bytes
        case 16: self.bytes = IPAddress.isMapped(bytes) ? Array(bytes[12..<16]) : bytes
        default: return nil
        }
    }

    /// Parses `192.0.2.1`, `2001:db8::1`, `[2001:db8::1]`, `fe80::1%eth0`, `::ffff:192.0.2.1`.
    public init?(_ text: some StringProtocol) {
        var text = Substring(text)
        if text.first == "[" && text.last == "]" { text = text.dropFirst().dropLast() }
        guard !text.isEmpty, text.utf8.count <= 64 else { return nil }
        // Every IPv6 text has a ':' (parseIPv6 refuses any other): a host name (the Web Push
        // allow-list asks twice per recipient) skips its Foundation substring search.
        guard text.utf8.contains(UInt8(ascii: ":")) else {
            guard let v4 = IPAddress.parseIPv4(text) else { return nil }
            bytes = v4
            return
        }
        if let v4 = IPAddress.parseIPv4(text) {
            bytes = v4
        } else if let v6 = IPAddress.parseIPv6(text) {
            bytes = IPAddress.isMapped(v6) ? Array(v6[12..<16]) : v6
        } else {
            return nil
        }
    }

    public var isIPv4: Bool { bytes.count == 4 }

    /// The canonical text: dotted decimal, or RFC 5952 (lower case, no leading zeros, the longest
    /// run of two or more zero groups as `::`, the first of equal runs).
    public var description: String {
        if isIPv4 { return "\(bytes[0]).\(bytes[1]).\(bytes[2]).\(bytes[3])" }
        var groups: [UInt16] = []
        for index in stride(from: 0, to: 16, by: 2) { groups.append(UInt16(bytes[index]) << 8 | UInt16(bytes[index + 1])) }
        var best = (start: -1, length: 0)
        var index = 0
        while index < 8 {
            guard groups[index] == 0 else { index += 1; continue }
            var end = index
            while end < 8 && groups[end] == 0 { end += 1 }
            if end - index > best.length { best = (index, end - index) }
            index = end
        }
        func hex(_ range: Range<Int>) -> String { groups[range].map { String($0, radix: 16) }.joined(separator: ":") }
        guard best.length >= 2 else { return hex(0..<8) }
        return hex(0..<best.start) + "::" + hex((best.start + best.length)..<8)
    }

    /// The address with every bit after the first `length` cleared (`2001:db8:1:2::/64` of
    /// `2001:db8:1:2:3:4:5:6` for 64). `length` is clamped to 0…(bits of the family).
    public func masked(prefixLength length: Int) -> IPAddress {
        var masked = bytes
        var remaining = max(0, min(length, bytes.count * 8))
        for index in masked.indices {
            if remaining >= 8 { remaining -= 8; continue }
            masked[index] &= remaining == 0 ? 0 : ~(0xFF >> UInt8(remaining))
            remaining = 0
        }
        return IPAddress(storing: masked)
    }

    /// Whether the first `length` bits of `self` and `other` are equal (same family only).
    public func hasPrefix(_ other: IPAddress, length: Int) -> Bool {
        guard bytes.count == other.bytes.count else { return false }
        var remaining = max(0, min(length, bytes.count * 8))
        var index = 0
        while remaining > 0 {
            let mask: UInt8 = remaining >= 8 ? 0xFF : ~(0xFF >> UInt8(remaining))
            if bytes[index] & mask != other.bytes[index] & mask { return false }
            remaining -= 8
            index += 1
        }
        return true
    }

    private init(storing bytes: [UInt8]) { self.bytes = bytes }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
    }

    private static func isMapped(_ bytes: [UInt8]) -> Bool {
        bytes.count == 16 && bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
    }

    // MARK: - Parsing

    /// Strict dotted decimal: four parts of 1–3 digits, each ≤ 255, no leading zero. One pass
    /// over the bytes, no substrings: the Web Push allow-list and address guard parse an IP
    /// literal endpoint's host several times per recipient.
    static func parseIPv4(_ text: Substring) -> [UInt8]? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(4)
        var value = 0, digits = 0
        for byte in text.utf8 {
            if byte == UInt8(ascii: ".") {
                guard digits > 0, bytes.count < 3 else { return nil }
                bytes.append(UInt8(value))
                value = 0
                digits = 0
            } else if byte >= 0x30 && byte <= 0x39 {
                // A second digit after a leading 0 ("01", "00") is refused, as are 4 digits.
                guard digits == 0 || value != 0, digits < 3 else { return nil }
                value = value * 10 + Int(byte - 0x30)
                guard value <= 255 else { return nil }
                digits += 1
            } else {
                return nil
            }
        }
        guard digits > 0, bytes.count == 3 else { return nil }
        bytes.append(UInt8(value))
        return bytes
    }

    /// RFC 4291 §2.2 text (an IPv4 tail allowed, a `%zone` dropped) as 16 bytes.
    static func parseIPv6(_ text: Substring) -> [UInt8]? {
        guard text.contains(":") else { return nil }
        var address = text
        if let percent = address.firstIndex(of: "%") {
            guard address.index(after: percent) < address.endIndex else { return nil }
            address = address[..<percent]
        }
        var tail: [UInt8] = []
        if let lastColon = address.lastIndex(of: ":"), address[address.index(after: lastColon)...].contains(".") {
            guard let v4 = parseIPv4(address[address.index(after: lastColon)...]) else { return nil }
            tail = v4
            address = address[...lastColon]
            if address.hasSuffix(":") && !address.hasSuffix("::") { address = address.dropLast() }
        }
        var halves = [address]
        if let gap = address.firstRange(of: "::") {
            let rest = address[gap.upperBound...]
            guard rest.firstRange(of: "::") == nil else { return nil }
            halves = [address[..<gap.lowerBound], rest]
        }
        func groups(_ part: Substring) -> [UInt8]? {
            guard !part.isEmpty else { return [] }
            var bytes: [UInt8] = []
            for group in part.split(separator: ":", omittingEmptySubsequences: false) {
                guard !group.isEmpty, group.utf8.count <= 4, group.utf8.allSatisfy(isHexDigit),
                      let value = UInt16(group, radix: 16) else { return nil }
                bytes.append(UInt8(value >> 8))
                bytes.append(UInt8(value & 0xFF))
            }
            return bytes
        }
        guard let head = groups(halves[0]) else { return nil }
        if halves.count == 2 {
            guard let rest = groups(halves[1]) else { return nil }
            let known = head.count + rest.count + tail.count
            guard known <= 14 else { return nil }
            return head + [UInt8](repeating: 0, count: 16 - known) + rest + tail
        }
        guard head.count + tail.count == 16 else { return nil }
        return head + tail
    }
}
