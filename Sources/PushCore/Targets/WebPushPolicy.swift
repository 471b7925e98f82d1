/// Which Web Push endpoints may be contacted (DESIGN §7, §15 Web Push allow-list).
///
/// Subscriptions are user-controlled URLs, so only `https` endpoints whose host is a known push
/// service, or listed in `PUSHWORKER_WEBPUSH_ALLOWED_HOSTS`, are used. Hosts are matched by
/// name: an entry is exact (`push.example.com`) or a suffix (`.example.com`, subdomains only).
/// An IP-literal host is allowed only when listed exactly (suffixes never match addresses).
/// DNS answers are the transport's business: it should refuse a connection to an address for
/// which ``isPrivateOrLoopbackAddress(_:)`` holds unless ``isListedExplicitly(host:)``.
public struct WebPushPolicy: Sendable, Equatable {
    /// The push services of Chrome (FCM), Firefox (Mozilla autopush), Safari (Apple) and Edge (WNS).
    public static let builtInHosts: [String] = [
        "fcm.googleapis.com", "updates.push.services.mozilla.com", "push.services.mozilla.com",
        "web.push.apple.com", ".notify.windows.com", ".push.apple.com",
    ]

    /// The built-in hosts only.
    public static let standard = WebPushPolicy(extraAllowedHosts: [])

    /// The extra entries as given (normalized: lower case, no trailing dot, no port).
    public let extraAllowedHosts: [String]
    private let exactHosts: Set<String>
    private let explicitHosts: Set<String>
    private let suffixes: [String]

    /// - Parameter extraAllowedHosts: entries added to ``builtInHosts``; exact names, `.suffix`
    ///   entries, or IP addresses (`127.0.0.1`, `::1` or `[::1]`; a `:port` is ignored).
    public init(extraAllowedHosts: [String]) {
        let extras = extraAllowedHosts.map(WebPushPolicy.normalizeEntry).filter { !$0.isEmpty && $0 != "." }
        self.extraAllowedHosts = extras
        var exact: Set<String> = []
        var suffixes: [String] = []
        for entry in WebPushPolicy.builtInHosts + extras {
            if entry.hasPrefix(".") { suffixes.append(entry) } else { exact.insert(entry) }
        }
        self.exactHosts = exact
        self.explicitHosts = Set(extras.filter { !$0.hasPrefix(".") })
        self.suffixes = suffixes
    }

    /// Whether an endpoint on `host` may be contacted.
    public func allows(host: String) -> Bool {
        let name = WebPushPolicy.normalizeHost(host)
        guard !name.isEmpty else { return false }
        if WebPushPolicy.isIPAddress(name) { return explicitHosts.contains(name) }
        if exactHosts.contains(name) { return true }
        return suffixes.contains { name.hasSuffix($0) && name.utf8.count > $0.utf8.count }
    }

    /// Whether `host` is named exactly in the extra entries (so private addresses are accepted for it).
    public func isListedExplicitly(host: String) -> Bool {
        explicitHosts.contains(WebPushPolicy.normalizeHost(host))
    }

    /// IPv4 `a.b.c.d` or IPv6 (with or without brackets).
    public static func isIPAddress(_ host: String) -> Bool {
        let name = normalizeHost(host)
        return ipv4Bytes(name) != nil || ipv6Bytes(name) != nil
    }

    /// True for loopback, private, link-local, unspecified, CGNAT (100.64/10), multicast and
    /// reserved addresses, IPv4 or IPv6 (incl. IPv4-mapped `::ffff:a.b.c.d`); false for names.
    public static func isPrivateOrLoopbackAddress(_ address: String) -> Bool {
        let name = normalizeHost(address)
        if let v4 = ipv4Bytes(name) { return isPrivateIPv4(v4) }
        guard let v6 = ipv6Bytes(name) else { return false }
        if v6[0..<10].allSatisfy({ $0 == 0 }) && v6[10] == 0xFF && v6[11] == 0xFF { return isPrivateIPv4(Array(v6[12...])) }
        if v6[0..<15].allSatisfy({ $0 == 0 }) { return true } // :: and ::1
        if v6[0] & 0xFE == 0xFC { return true } // fc00::/7 unique local
        if v6[0] == 0xFE && v6[1] & 0xC0 == 0x80 { return true } // fe80::/10 link-local
        if v6[0] == 0xFF { return true } // multicast
        return false
    }

    // MARK: - Parsing

    static func normalizeHost(_ host: String) -> String {
        var name = host.lowercased()
        if name.hasPrefix("[") && name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        while name.hasSuffix(".") { name.removeLast() }
        return name
    }

    static func normalizeEntry(_ entry: String) -> String {
        var text = entry.trimmingCharacters(in: " \t")
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            text = String(text[text.index(after: text.startIndex)..<close])
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            text = String(text[..<colon])
        }
        return normalizeHost(text)
    }

    private static func isPrivateIPv4(_ bytes: [UInt8]) -> Bool {
        switch (bytes[0], bytes[1]) {
        case (0, _), (10, _), (127, _): return true
        case (100, 64...127): return true
        case (169, 254): return true
        case (172, 16...31): return true
        case (192, 168): return true
        case (192, 0) where bytes[2] == 0: return true
        case (198, 18...19): return true
        case (224..., _): return true
        default: return false
        }
    }

    static func ipv4Bytes(_ text: String) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 3, part.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  let value = UInt8(part) else { return nil }
            bytes.append(value)
        }
        return bytes
    }

    static func ipv6Bytes(_ text: String) -> [UInt8]? {
        guard text.contains(":"), text.utf8.count <= 45 else { return nil }
        var address = Substring(text)
        if let percent = address.firstIndex(of: "%") { address = address[..<percent] } // zone id
        var tail: [UInt8] = []
        if let lastColon = address.lastIndex(of: ":"), address[address.index(after: lastColon)...].contains(".") {
            guard let v4 = ipv4Bytes(String(address[address.index(after: lastColon)...])) else { return nil }
            tail = v4
            address = address[...lastColon]
            if address.hasSuffix(":") && !address.hasSuffix("::") { address = address.dropLast() }
        }
        var halves = [String(address)]
        if let gap = address.firstRange(of: "::") {
            let rest = address[gap.upperBound...]
            guard rest.firstRange(of: "::") == nil else { return nil }
            halves = [String(address[..<gap.lowerBound]), String(rest)]
        }
        func groups(_ part: String) -> [UInt8]? {
            guard !part.isEmpty else { return [] }
            var bytes: [UInt8] = []
            for group in part.split(separator: ":", omittingEmptySubsequences: false) {
                guard !group.isEmpty, group.count <= 4, let value = UInt16(group, radix: 16) else { return nil }
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

extension String {
    fileprivate func trimmingCharacters(in characters: String) -> String {
        var result = Substring(self)
        while let first = result.first, characters.contains(first) { result.removeFirst() }
        while let last = result.last, characters.contains(last) { result.removeLast() }
        return String(result)
    }
}
