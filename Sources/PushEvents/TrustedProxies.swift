#if canImport(Glibc)
import Glibc
import PushWorker
#endif

/// An IPv4 or IPv6 address as bytes (4 or 16); IPv4-mapped IPv6 (`::ffff:a.b.c.d`) is IPv4.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init?(_ text: Substring) { self.init(String(text)) }

    public init?(_ text: String) {
        var text = text
        if text.hasPrefix("[") && text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        if let percent = text.firstIndex(of: "%") { text = String(text[..<percent]) }   // zone id
        guard !text.isEmpty, text.utf8.count < 64 else { return nil }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = withUnsafeBytes(of: v4.s_addr) { Array($0) }
            return
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let raw = withUnsafeBytes(of: v6) { Array($0) }
        if raw[0..<10].allSatisfy({ $0 == 0 }) && raw[10] == 0xFF && raw[11] == 0xFF {
            bytes = Array(raw[12..<16])
        } else {
            bytes = raw
        }
    }

    /// The canonical text (`inet_ntop`): what rate limiting and `ipHash` see.
    public var description: String {
        var buffer = [CChar](repeating: 0, count: 64)
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        let ok = bytes.withUnsafeBytes { raw in inet_ntop(family, raw.baseAddress, &buffer, 64) != nil }
        guard ok else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// `EVENT_TRUSTED_PROXIES`: comma-separated IPs and CIDRs (`10.0.0.0/8, 127.0.0.1, fd00::/8`)
/// of the reverse proxies / load balancers whose `X-Forwarded-For` is believed. Empty (the
/// default) ⇒ the header is ignored and the socket's peer is the client.
public struct TrustedProxies: Sendable {
    struct Network: Sendable { var address: [UInt8]; var prefix: Int }
    let networks: [Network]

    public static let none = TrustedProxies(networks: [])

    init(networks: [Network]) { self.networks = networks }

    /// Parses the list; throws naming the first bad entry.
    public init(parsing text: String) throws(TrustedProxiesError) {
        var networks: [Network] = []
        for raw in text.split(separator: ",") {
            let entry = raw.trimmingSpaces()
            if entry.isEmpty { continue }
            let parts = entry.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            guard let address = IPAddress(parts[0]) else { throw TrustedProxiesError(entry: String(entry)) }
            let bits = address.bytes.count * 8
            var prefix = bits
            if parts.count == 2 {
                guard let value = Int(parts[1]), value >= 0, value <= bits else { throw TrustedProxiesError(entry: String(entry)) }
                // `::ffff:10.0.0.0/104` style prefixes on mapped addresses count from the IPv4 part.
                prefix = value
            }
            networks.append(Network(address: address.bytes, prefix: prefix))
        }
        self.networks = networks
    }

    public var isEmpty: Bool { networks.isEmpty }

    public func contains(_ address: IPAddress) -> Bool {
        networks.contains { network in
            guard network.address.count == address.bytes.count else { return false }
            var remaining = network.prefix
            var index = 0
            while remaining > 0 {
                let mask: UInt8 = remaining >= 8 ? 0xFF : ~(0xFF >> UInt8(remaining))
                if network.address[index] & mask != address.bytes[index] & mask { return false }
                remaining -= 8
                index += 1
            }
            return true
        }
    }

    /// The client's address: the peer, unless the peer is a trusted proxy, in which case
    /// `X-Forwarded-For` is walked from the right (the hop nearest to us) skipping trusted
    /// proxies; the first untrusted address is the client. A malformed entry stops the walk at
    /// the last address known good (a client can prepend anything; only what trusted hops
    /// appended counts).
    public func clientAddress(peer: String, forwardedFor: String?) -> String {
        guard !networks.isEmpty, let forwardedFor, let peerAddress = IPAddress(peer), contains(peerAddress) else { return peer }
        var client = peer
        for raw in forwardedFor.split(separator: ",").reversed() {
            guard let hop = IPAddress(raw.trimmingSpaces()) else { return client }
            client = hop.description
            if !contains(hop) { return client }
        }
        return client
    }
}

/// An `EVENT_TRUSTED_PROXIES` entry that is not an IP or CIDR.
public struct TrustedProxiesError: Error, Sendable, CustomStringConvertible {
    public let entry: String
    public var description: String { "EVENT_TRUSTED_PROXIES: '\(entry)' is not an IP address or CIDR" }
}

extension Substring {
    fileprivate func trimmingSpaces() -> Substring {
        var result = self
        while result.first == " " || result.first == "\t" { result.removeFirst() }
        while result.last == " " || result.last == "\t" { result.removeLast() }
        return result
    }
}
