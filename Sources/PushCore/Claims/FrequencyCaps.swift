/// Frequency caps (docs/caps.md): how many notifications of one category a user receives within
/// sliding windows, counted per `appId` + `userId` + category in Redis and decided with the claim.

/// One cap: at most `count` notifications within the last `windowMs` milliseconds.
public struct CapRule: Sendable, Hashable {
    public var count: Int
    public var windowMs: Int64

    public init(count: Int, windowMs: Int64) {
        self.count = count; self.windowMs = windowMs
    }
}

/// The caps of every category (`PUSHWORKER_CAPS`, e.g. `marketing=3/1d,marketing=1/1h`).
public struct FrequencyCaps: Sendable, Equatable {
    /// Category → its caps, shortest window first. A category without caps is not counted.
    public private(set) var rules: [String: [CapRule]]

    public init(rules: [String: [CapRule]] = [:]) {
        self.rules = rules.mapValues { $0.sorted { ($0.windowMs, $0.count) < ($1.windowMs, $1.count) } }
    }

    /// No caps at all.
    public var isEmpty: Bool { rules.isEmpty }

    /// The largest count a cap may name.
    public static let maximumCount = 1_000_000
    /// The longest window a cap may name: 366 days.
    public static let maximumWindowMs: Int64 = 366 * 86_400_000

    /// A problem with a `PUSHWORKER_CAPS` value, naming the bad item.
    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
    }

    /// Parses `category=count/window[,…]`; a window is a whole number with the unit `s`, `m`, `h`
    /// or `d`. Blank text is no caps. Every item must be valid: the first bad one is named.
    public init(parsing text: String) throws(ParseError) {
        var rules: [String: [CapRule]] = [:]
        for rawItem in text.split(separator: ",", omittingEmptySubsequences: false) {
            let item = rawItem.trimmingWhitespace()
            if item.isEmpty {
                if text.trimmingWhitespace().isEmpty { continue }
                throw ParseError(description: "an empty item (two commas, or a comma at an end)")
            }
            let (category, rule) = try Self.parseItem(item)
            if rules[category]?.contains(rule) == true { continue }
            rules[category, default: []].append(rule)
        }
        self.init(rules: rules)
    }

    private static func parseItem(_ item: String) throws(ParseError) -> (String, CapRule) {
        let bad = { (why: String) in ParseError(description: "'\(item.prefix(80))': \(why)") }
        let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { throw bad("expected category=count/window, e.g. marketing=3/1d") }
        let category = String(parts[0]).trimmingWhitespace()
        guard isValidCategory(category) else { throw bad("the category must match [A-Za-z0-9._-]{1,64}") }
        let limit = parts[1].split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard limit.count == 2 else { throw bad("expected count/window, e.g. 3/1d") }
        guard let count = Int(String(limit[0]).trimmingWhitespace()), count >= 1, count <= maximumCount else {
            throw bad("the count must be a whole number from 1 to \(maximumCount)")
        }
        guard let windowMs = parseWindow(String(limit[1]).trimmingWhitespace()) else {
            throw bad("the window must be a whole number with s, m, h or d (e.g. 90s, 15m, 1h, 7d), at most 366d")
        }
        return (category, CapRule(count: count, windowMs: windowMs))
    }

    /// `90s`, `15m`, `1h`, `7d` in milliseconds; nil when malformed, zero or over the maximum.
    static func parseWindow(_ text: String) -> Int64? {
        guard let unit = text.last, text.count >= 2, text.utf8.dropLast().allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              text.count <= 12, let number = Int64(text.dropLast()), number > 0 else { return nil }
        let scale: Int64
        switch unit {
        case "s": scale = 1000
        case "m": scale = 60_000
        case "h": scale = 3_600_000
        case "d": scale = 86_400_000
        default: return nil
        }
        let (ms, overflow) = number.multipliedReportingOverflow(by: scale)
        return overflow || ms > maximumWindowMs ? nil : ms
    }

    /// `[A-Za-z0-9._-]{1,64}`: a job's `capCategory` and a category of `PUSHWORKER_CAPS`.
    public static func isValidCategory(_ category: String) -> Bool {
        let bytes = category.utf8
        guard !bytes.isEmpty, bytes.count <= 64 else { return false }
        return bytes.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x2E || byte == 0x5F || byte == 0x2D
        }
    }

    /// The caps of `category`, nil when it has none (its jobs are not counted).
    public func rules(for category: String?) -> [CapRule]? {
        guard let category, let found = rules[category], !found.isEmpty else { return nil }
        return found
    }

    /// The canonical text (`config check` prints it): categories in order, shortest window first.
    public var text: String {
        rules.keys.sorted().flatMap { category in
            (rules[category] ?? []).map { "\(category)=\($0.count)/\(Self.windowText($0.windowMs))" }
        }.joined(separator: ",")
    }

    static func windowText(_ ms: Int64) -> String {
        if ms % 86_400_000 == 0 { return "\(ms / 86_400_000)d" }
        if ms % 3_600_000 == 0 { return "\(ms / 3_600_000)h" }
        if ms % 60_000 == 0 { return "\(ms / 60_000)m" }
        return "\(ms / 1000)s"
    }

    /// The caps as the cap scripts read them: `count:windowMs` pairs joined by `,`.
    public static func scriptArgument(_ rules: [CapRule]) -> String {
        rules.map { "\($0.count):\($0.windowMs)" }.joined(separator: ",")
    }
}

extension StringProtocol {
    fileprivate func trimmingWhitespace() -> String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return String(slice)
    }
}
