import Foundation
import PushEncoding

/// Which delivery results (docs/reference/records.md) a summary counts.
public struct ResultFilter: Sendable, Equatable {
    /// The job, and its `enqueue --batch` batches (`<jobId>:0000`, …).
    public var jobID: String?
    public var campaignID: String?
    public var appID: String?

    public init(jobID: String? = nil, campaignID: String? = nil, appID: String? = nil) {
        self.jobID = jobID; self.campaignID = campaignID; self.appID = appID
    }

    public func matches(jobID job: String?, campaignID campaign: String?, appID app: String?) -> Bool {
        if let jobID {
            guard let job, job == jobID || (job.hasPrefix(jobID) && job.utf8.dropFirst(jobID.utf8.count).first == UInt8(ascii: ":")) else {
                return false
            }
        }
        if let campaignID, campaign != campaignID { return false }
        if let appID, app != appID { return false }
        return true
    }
}

/// Counts of delivery results by status, reason and platform (`pushworker inspect results`,
/// `inspect stats`). Pure: fed one `push.results.v1` value at a time.
public struct ResultSummary: Sendable {
    public struct Key: Sendable, Hashable {
        public var status: String
        public var reason: String?
        public var platform: String
    }

    public let filter: ResultFilter
    /// Values read.
    public private(set) var scanned = 0
    /// Values that are not a result (not JSON, no status): counted, otherwise ignored.
    public private(set) var unreadable = 0
    /// Results that passed the filter.
    public private(set) var matched = 0
    public private(set) var counts: [Key: Int] = [:]
    /// Matched results by variant ("" without one) and status.
    public private(set) var variants: [String: [String: Int]] = [:]
    /// Apps seen among the matched results.
    public private(set) var apps: Set<String> = []
    /// The earliest and latest `at` of the matched results (RFC 3339 text, compared as text:
    /// the worker writes them all in UTC with milliseconds).
    public private(set) var firstAt: String?
    public private(set) var lastAt: String?

    public init(filter: ResultFilter) { self.filter = filter }

    /// Counts one message value; returns the result when it matched (for `--all`).
    @discardableResult
    public mutating func add(_ value: [UInt8]) -> JSONValue? {
        add(parsed: try? JSONParser.parse(value, maxDepth: 8))
    }

    /// Counts one parsed value (nil: not JSON); returns it when it matched.
    @discardableResult
    public mutating func add(parsed: JSONValue?) -> JSONValue? {
        scanned += 1
        guard let result = parsed, let status = result["status"]?.stringValue else {
            unreadable += 1
            return nil
        }
        let app = result["appId"]?.stringValue
        guard filter.matches(jobID: result["jobId"]?.stringValue, campaignID: result["campaignId"]?.stringValue, appID: app) else { return nil }
        matched += 1
        counts[Key(status: status, reason: result["reason"]?.stringValue, platform: result["platform"]?.stringValue ?? ""), default: 0] += 1
        variants[result["variant"]?.stringValue ?? "", default: [:]][status, default: 0] += 1
        if let app { apps.insert(app) }
        if let at = result["at"]?.stringValue {
            if firstAt.map({ at < $0 }) ?? true { firstAt = at }
            if lastAt.map({ at > $0 }) ?? true { lastAt = at }
        }
        return result
    }

    /// Results by status, every status of docs/reference/records.md present (0 when none).
    public var byStatus: [(status: String, count: Int)] {
        var totals: [String: Int] = [:]
        for (key, count) in counts { totals[key.status, default: 0] += count }
        let known = DeliveryStatus.allCases.map(\.rawValue)
        return known.map { ($0, totals[$0] ?? 0) } + totals.keys.filter { !known.contains($0) }.sorted().map { ($0, totals[$0] ?? 0) }
    }

    /// `status  reason  ios  android  web  total` rows, most frequent first, then a total row.
    public func table() -> [String] {
        let platforms = ["ios", "android", "web"] + Set(counts.keys.map(\.platform)).subtracting(["ios", "android", "web"]).sorted()
        var groups: [String: [String: Int]] = [:]  // "status\u{0}reason" → platform → count
        for (key, count) in counts { groups["\(key.status)\u{0}\(key.reason ?? "")", default: [:]][key.platform, default: 0] += count }
        func order(_ status: String) -> Int { DeliveryStatus.allCases.map(\.rawValue).firstIndex(of: status) ?? 99 }
        let sorted = groups.sorted { a, b in
            let (sa, sb) = (a.key.split(separator: "\u{0}", omittingEmptySubsequences: false), b.key.split(separator: "\u{0}", omittingEmptySubsequences: false))
            if order(String(sa[0])) != order(String(sb[0])) { return order(String(sa[0])) < order(String(sb[0])) }
            let (ta, tb) = (a.value.values.reduce(0, +), b.value.values.reduce(0, +))
            return ta != tb ? ta > tb : a.key < b.key
        }
        var rows = [["STATUS", "REASON"] + platforms.map { $0.uppercased() } + ["TOTAL"]]
        for (key, byPlatform) in sorted {
            let parts = key.split(separator: "\u{0}", omittingEmptySubsequences: false).map(String.init)
            rows.append([parts[0], parts.count > 1 && !parts[1].isEmpty ? parts[1] : "-"] + platforms.map { "\(byPlatform[$0] ?? 0)" }
                        + ["\(byPlatform.values.reduce(0, +))"])
        }
        var totals: [String: Int] = [:]
        for (key, count) in counts { totals[key.platform, default: 0] += count }
        rows.append(["total", ""] + platforms.map { "\(totals[$0] ?? 0)" } + ["\(matched)"])
        return Self.aligned(rows)
    }

    /// The summary as one JSON object.
    public func json(topic: String) -> String {
        JSONWriter.object { w in
            w.member("topic", topic)
            w.member("scanned", scanned)
            w.member("unreadable", unreadable)
            w.member("matched", matched)
            w.member("byStatus") { o in for entry in byStatus { o.member(entry.status, entry.count) } }
            w.key("byReason")
            w.beginArray()
            for (key, count) in counts.sorted(by: { ($0.value, $1.key.status, $1.key.reason ?? "") > ($1.value, $0.key.status, $0.key.reason ?? "") }) {
                w.beginObject()
                w.member("status", key.status)
                w.member("reason", orNull: key.reason)
                w.member("platform", key.platform)
                w.member("count", count)
                w.endObject()
            }
            w.endArray()
            w.member("firstAt", orNull: firstAt)
            w.member("lastAt", orNull: lastAt)
        }.text
    }

    /// Columns padded to their widest cell (the last one unpadded).
    public static func aligned(_ rows: [[String]]) -> [String] {
        guard let first = rows.first else { return [] }
        let widths = (0..<first.count).map { column in rows.map { column < $0.count ? $0[column].count : 0 }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
    }
}
