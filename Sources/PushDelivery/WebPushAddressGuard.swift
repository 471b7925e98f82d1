import Foundation
import PushCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The address half of the Web Push SSRF guard (docs/security.md "Web Push").
///
/// Subscription endpoints are user-controlled URLs. ``WebPushPolicy`` matches host *names*
/// (the planner refuses a name that is not allow-listed); this guard resolves an allowed name
/// (the ``EndpointURL/host`` of the endpoint: the same parser as the allow-list's) before the
/// request is handed to the transport and refuses it when any of its addresses is private,
/// loopback, link-local, reserved, … (``IPAddress/specialRange``, the one classifier), unless
/// the host is listed explicitly in `PUSHWORKER_WEBPUSH_ALLOWED_HOSTS`
/// (``WebPushPolicy/isListedExplicitly(host:)``). Verdicts are cached per host for
/// ``cacheSeconds`` (default 60 s); resolution failures are not cached. An answer that is not
/// an address at all refuses the host (fail closed).
///
/// Resolution runs on a private dispatch queue (`getaddrinfo` blocks), never on the caller's
/// thread unless the verdict is cached. curl resolves the name again when it connects, so a DNS
/// answer that changes within that window (rebinding) is not caught here: the Deliverer also
/// checks the address libcurl actually connects to, against the same classifier
/// (``Deliverer/publicAddressesOnly``, docs/security.md).
public final class WebPushAddressGuard: Sendable {
    /// What the guard decided for a host.
    public enum Verdict: Sendable, Equatable {
        case allowed
        /// Resolves to a private/loopback address and is not listed explicitly: `endpoint_not_allowed`.
        case refused(address: String)
        /// The name did not resolve (transient: the recipient is retried).
        case unresolvable
    }

    public typealias Resolver = @Sendable (String) -> [String]?

    /// How long a verdict is reused, in seconds. Default: 60.
    public let cacheSeconds: Double
    let policy: WebPushPolicy
    private let resolver: Resolver
    private let clock: @Sendable () -> Double
    private let cache = Mutex<[String: (verdict: Verdict, at: Double)]>([:])
    private let queue = DispatchQueue(label: "pushworker.webpush-resolver", attributes: .concurrent)

    /// - Parameters:
    ///   - resolver: host → its addresses as text (nil when it does not resolve). Default: `getaddrinfo`.
    ///   - clock: Unix time in seconds.
    public init(policy: WebPushPolicy, cacheSeconds: Double = 60, resolver: @escaping Resolver = WebPushAddressGuard.systemResolve,
                clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.policy = policy
        self.cacheSeconds = cacheSeconds
        self.resolver = resolver
        self.clock = clock
    }

    /// The verdict for `host`, immediately when it needs no resolution or is cached, otherwise
    /// from the resolver queue.
    public func check(host: String, completion: @escaping @Sendable (Verdict) -> Void) {
        if let verdict = quickVerdict(host) { return completion(verdict) }
        queue.async { [self] in completion(resolveVerdict(host)) }
    }

    /// The verdict for `host`, resolving on the calling thread (blocks; tests and tools).
    public func verdict(host: String) -> Verdict {
        quickVerdict(host) ?? resolveVerdict(host)
    }

    private func quickVerdict(_ host: String) -> Verdict? {
        if policy.isListedExplicitly(host: host) { return .allowed }
        if let address = IPAddress(host) {
            return address.isPrivate ? .refused(address: host) : .allowed
        }
        let now = clock()
        return cache.withLock { cache in
            guard let entry = cache[host.lowercased()], now - entry.at < cacheSeconds, now >= entry.at else { return nil }
            return entry.verdict
        }
    }

    private func resolveVerdict(_ host: String) -> Verdict {
        let name = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        guard let addresses = resolver(name), !addresses.isEmpty else { return .unresolvable }
        let verdict: Verdict = addresses.first(where: { IPAddress($0)?.isPrivate ?? true }).map { .refused(address: $0) } ?? .allowed
        let now = clock()
        cache.withLock { cache in
            if cache.count > 10_000 { cache.removeAll() }
            cache[host.lowercased()] = (verdict, now)
        }
        return verdict
    }

    /// Every address `host` resolves to (`getaddrinfo`, TCP, IPv4 and IPv6), as text; nil on failure.
    public static func systemResolve(_ host: String) -> [String]? {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return nil }
        defer { freeaddrinfo(first) }
        var addresses: [String] = []
        var node: UnsafeMutablePointer<addrinfo>? = first
        while let current = node {
            if let address = current.pointee.ai_addr, let text = numericText(address, family: current.pointee.ai_family) {
                addresses.append(text)
            }
            node = current.pointee.ai_next
        }
        return addresses
    }

    private static func numericText(_ address: UnsafeMutablePointer<sockaddr>, family: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let converted: UnsafePointer<CChar>?
        switch family {
        case AF_INET:
            converted = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                var raw = pointer.pointee.sin_addr
                return inet_ntop(AF_INET, &raw, &buffer, socklen_t(buffer.count))
            }
        case AF_INET6:
            converted = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                var raw = pointer.pointee.sin6_addr
                return inet_ntop(AF_INET6, &raw, &buffer, socklen_t(buffer.count))
            }
        default:
            return nil
        }
        guard converted != nil, let end = buffer.firstIndex(of: 0) else { return nil }
        return String(decoding: buffer[..<end].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
