import PushCore

/// `EVENT_TRUSTED_PROXIES`: comma-separated IPs and CIDRs (`10.0.0.0/8, 127.0.0.1, fd00::/8`)
/// of the reverse proxies / load balancers whose `X-Forwarded-For` is believed. Empty (the
/// default) ⇒ the header is ignored and the socket's peer is the client.
public struct TrustedProxies: Sendable {
    struct Network: Sendable { var address: IPAddress; var prefix: Int }
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
                // `::ffff:10.0.0.0/104`: an IPv4-mapped range is that IPv4 range (/8 here).
                let isMapped = address.isIPv4 && parts[0].contains(":")
                guard !parts[1].isEmpty, parts[1].utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let value = Int(parts[1]),
                      value <= (isMapped ? 128 : bits), !isMapped || value >= 96 else { throw TrustedProxiesError(entry: String(entry)) }
                prefix = isMapped ? value - 96 : value
            }
            networks.append(Network(address: address, prefix: prefix))
        }
        self.networks = networks
    }

    public var isEmpty: Bool { networks.isEmpty }

    public func contains(_ address: IPAddress) -> Bool {
        networks.contains { address.hasPrefix($0.address, length: $0.prefix) }
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
