/// Which Web Push endpoints may be contacted (docs/security.md).
///
/// Subscriptions are user-controlled URLs, so only `https` endpoints whose host is a known push
/// service, or listed in `PUSHWORKER_WEBPUSH_ALLOWED_HOSTS`, are used. Hosts are matched by
/// name: an entry is exact (`push.example.com`) or a suffix (`.example.com`, subdomains only).
/// An IP literal (`127.0.0.1`, `::1`) is accepted as an exact entry, for development against a
/// local push service: an IP-literal host is allowed only when listed exactly (suffixes never
/// match addresses). Entries are parsed by ``parseEntry(_:)``; configuration refuses what it
/// cannot parse. DNS answers are the address guard's and the transport's business: they refuse
/// an address for which ``IPAddress/isPrivate`` holds unless ``isListedExplicitly(host:)``.
public struct WebPushPolicy: Sendable, Equatable {
    /// The push services of Chrome (FCM), Firefox (Mozilla autopush), Safari (Apple) and Edge (WNS).
    public static let builtInHosts: [String] = [
        "fcm.googleapis.com", "updates.push.services.mozilla.com", "push.services.mozilla.com",
        "web.push.apple.com", ".notify.windows.com", ".push.apple.com",
    ]

    /// The built-in hosts only.
    public static let standard = WebPushPolicy(extraAllowedHosts: [])

    /// The extra entries, normalized by ``parseEntry(_:)`` (lower case, no trailing dot, IP
    /// literals in canonical form); entries it refuses are left out.
    public let extraAllowedHosts: [String]
    private let exactHosts: Set<String>
    private let explicitHosts: Set<String>
    private let suffixes: [String]

    /// - Parameter extraAllowedHosts: entries added to ``builtInHosts``: exact names, `.suffix`
    ///   entries, or IP literals (see ``parseEntry(_:)``; empty and refused entries are ignored).
    public init(extraAllowedHosts: [String]) {
        let extras = extraAllowedHosts.compactMap { entry -> String? in
            guard case .success(let normalized) = WebPushPolicy.parseEntry(entry) else { return nil }
            return normalized
        }
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

    /// Whether an endpoint on `host` (an ``EndpointURL/host``) may be contacted.
    public func allows(host: String) -> Bool {
        let name = WebPushPolicy.normalizeHost(host)
        guard !name.isEmpty else { return false }
        if WebPushPolicy.mayBeIPAddress(name), IPAddress(name) != nil { return explicitHosts.contains(name) }
        if exactHosts.contains(name) { return true }
        return suffixes.contains { name.hasSuffix($0) && name.utf8.count > $0.utf8.count }
    }

    /// Whether `host` is named exactly in the extra entries (so private addresses are accepted for it).
    public func isListedExplicitly(host: String) -> Bool {
        explicitHosts.contains(WebPushPolicy.normalizeHost(host))
    }

    /// IPv4 `a.b.c.d` or IPv6 (with or without brackets).
    public static func isIPAddress(_ host: String) -> Bool {
        IPAddress(host) != nil
    }

    // MARK: - Entries

    /// Why a `PUSHWORKER_WEBPUSH_ALLOWED_HOSTS` entry is refused; the description says what to
    /// write instead.
    public enum EntryError: Error, Sendable, Equatable, CustomStringConvertible {
        case empty
        /// `https://push.example.com/`: a URL, not a host.
        case url(entry: String, host: String?)
        /// `*.example.com` or `push*.example.com`.
        case wildcard(entry: String)
        /// `push.example.com:443` or `[::1]:8443`: the allow-list matches hosts, on any port.
        case port(entry: String)
        /// `push.example.com/path`, or a CIDR range `10.0.0.0/8`.
        case path(entry: String)
        /// `127.1`, `2130706433`, `010.0.0.1`: IPv4 to some parsers, a name to others.
        case numeric(entry: String)
        /// Anything else that is not a host name (bad characters, empty or long labels).
        case notHostName(entry: String)

        public var description: String {
            switch self {
            case .empty: "empty entry"
            case .url(let entry, let host):
                "'\(entry)' is a URL; list its host name" + (host.map { " (\($0))" } ?? "")
            case .wildcard(let entry):
                "'\(entry)': wildcards are not supported; '.example.com' allows every subdomain of example.com"
            case .port(let entry): "'\(entry)': an entry is a host name without a port (it allows every port)"
            case .path(let entry): "'\(entry)': an entry is a host name (no path, no CIDR range)"
            case .numeric(let entry): "'\(entry)' is not a dotted-decimal IPv4 address nor a host name"
            case .notHostName(let entry):
                "'\(entry)' is not a host name (letters, digits, '-' and '_' in dot-separated labels of 1–63, at most 253 in all)"
            }
        }
    }

    /// Parses one allow-list entry into its normalized form: `push.example.com` (exact),
    /// `.example.com` (subdomains), or an IP literal `127.0.0.1` / `::1` (brackets allowed,
    /// stored canonical). Case and one trailing dot are ignored; surrounding spaces are trimmed.
    public static func parseEntry(_ entry: some StringProtocol) -> Result<String, EntryError> {
        var text = Substring(entry)
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        let original = String(text)
        guard !text.isEmpty else { return .failure(.empty) }
        if text.contains("://") { return .failure(.url(entry: original, host: EndpointURL(original)?.host)) }
        if text.contains("*") { return .failure(.wildcard(entry: original)) }
        if text.first == "[" {
            guard let close = text.firstIndex(of: "]") else { return .failure(.notHostName(entry: original)) }
            let rest = text[text.index(after: close)...]
            if rest.first == ":" { return .failure(.port(entry: original)) }
            guard rest.isEmpty, let address = IPAddress(text[...close]) else {
                return .failure(.notHostName(entry: original))
            }
            return .success(address.description)
        }
        if let address = IPAddress(text) { return .success(address.description) }
        if text.contains("/") { return .failure(.path(entry: original)) }
        if text.contains(":") { return .failure(.port(entry: original)) }
        var name = text.lowercased()[...]
        let isSuffix = name.hasPrefix(".")
        if isSuffix { name = name.dropFirst() }
        if name.hasSuffix(".") { name = name.dropLast() }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        guard !name.isEmpty, name.utf8.count <= 253, labels.allSatisfy(isLabel) else { return .failure(.notHostName(entry: original)) }
        if EndpointURL.endsInNumber(String(name)) { return .failure(.numeric(entry: original)) }
        return .success((isSuffix ? "." : "") + name)
    }

    /// A DNS label as hosts use it: 1–63 of `[a-z0-9_-]`, not starting or ending with `-`.
    private static func isLabel(_ label: Substring) -> Bool {
        guard (1...63).contains(label.utf8.count), label.utf8.first != UInt8(ascii: "-"), label.utf8.last != UInt8(ascii: "-") else {
            return false
        }
        return label.utf8.allSatisfy { byte in
            (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
    }

    /// A host as compared: lower case, no brackets, no trailing dots, IP literals canonical.
    /// False when `text` cannot parse as an ``IPAddress``: no `:` (every IPv6 text has one)
    /// nor `[`, and a byte other than a digit or `.` (IPv4 is only those). Read in place: the
    /// allow-list asks twice per Web Push recipient, and a host name is the common case.
    static func mayBeIPAddress(_ text: String) -> Bool {
        let bytes = text.utf8.span
        var onlyDigitsAndDots = true
        for index in bytes.indices {
            let byte = bytes[index]
            if byte == UInt8(ascii: ":") || byte == UInt8(ascii: "[") { return true }
            if !((byte >= 0x30 && byte <= 0x39) || byte == UInt8(ascii: ".")) { onlyDigitsAndDots = false }
        }
        return onlyDigitsAndDots
    }

    /// ASCII with no upper-case letter: `lowercased()` would return it unchanged.
    static func isLowercaseASCII(_ text: String) -> Bool {
        let bytes = text.utf8.span
        for index in bytes.indices where bytes[index] >= 0x80 || (bytes[index] >= 0x41 && bytes[index] <= 0x5A) { return false }
        return true
    }

    static func normalizeHost(_ host: String) -> String {
        if mayBeIPAddress(host), let address = IPAddress(host) { return address.description }
        var name = isLowercaseASCII(host) ? host : host.lowercased()
        while name.hasSuffix(".") { name.removeLast() }
        return name
    }
}
