import PushCore
import PushEvents
import PushRedis
import PushEncoding

/// `inspect stats`: a campaign's deliveries (from the results topic) beside its tracking
/// counters (Redis: `RedisKeys.eventCounters` / `eventUniques`, written by `pushworker events`).
struct CampaignStats {
    /// Event type → (count, distinct msgIds) for the campaign, or for one variant.
    struct Tracking: Equatable {
        var counts: [String: Int64] = [:]
        var uniques: [String: Int64] = [:]
    }

    static let types = TrackingEventType.allCases.map(\.rawValue)

    /// The Redis pipeline that reads an app's counters of `campaign` and of each of `variants`:
    /// per scope one `HGETALL` of the counters hash and one `PFCOUNT` per event type.
    static func commands(appID: String, campaignID: String, variants: [String]) -> [[RedisArgument]] {
        var commands: [[RedisArgument]] = [["HGETALL", .string(RedisKeys.eventCounters(appID: appID, campaignID: campaignID))]]
        for type in types { commands.append(["PFCOUNT", .string(RedisKeys.eventUniques(appID: appID, campaignID: campaignID, type: type))]) }
        for variant in variants {
            commands.append(["HGETALL", .string(RedisKeys.eventVariantCounters(appID: appID, campaignID: campaignID, variant: variant))])
            for type in types {
                commands.append(["PFCOUNT", .string(RedisKeys.eventVariantUniques(appID: appID, campaignID: campaignID, variant: variant, type: type))])
            }
        }
        return commands
    }

    /// The replies of ``commands(appID:campaignID:variants:)``: the campaign's, then each variant's.
    static func parse(_ replies: [RedisReply], variants: [String]) throws(InspectError) -> (campaign: Tracking, variants: [String: Tracking]) {
        let scope = 1 + types.count
        guard replies.count == scope * (1 + variants.count) else { throw InspectError("Redis answered \(replies.count) replies, expected \(scope * (1 + variants.count))") }
        if let error = replies.compactMap(\.errorMessage).first { throw InspectError("Redis refused a read: \(error)") }
        func tracking(_ offset: Int) -> Tracking {
            var result = Tracking()
            if case .array(let pairs) = replies[offset] {
                var index = 0
                while index + 1 < pairs.count {
                    if let field = pairs[index].text, let value = pairs[index + 1].integerValue { result.counts[field] = value }
                    index += 2
                }
            }
            for (position, type) in types.enumerated() { result.uniques[type] = replies[offset + 1 + position].integerValue ?? 0 }
            return result
        }
        var byVariant: [String: Tracking] = [:]
        for (position, variant) in variants.enumerated() { byVariant[variant] = tracking(scope * (position + 1)) }
        return (tracking(0), byVariant)
    }

    /// Text lines: deliveries by status, then tracking by type with rates over the sent.
    static func lines(campaignID: String, appID: String, summary: ResultSummary, topic: String,
                      tracking: (campaign: Tracking, variants: [String: Tracking])?, trackingNote: String?) -> [String] {
        var lines = ["campaign \(campaignID) of app \(appID)"]
        let statuses = summary.byStatus
        let sent = statuses.first { $0.status == "sent" }?.count ?? 0
        lines.append("deliveries (\(topic), \(summary.matched) results): " + statuses.map { "\($0.status) \($0.count)" }.joined(separator: " · "))
        if summary.matched > 0, let first = summary.firstAt, let last = summary.lastAt { lines.append("  first \(first), last \(last)") }
        guard let tracking else {
            lines.append("tracking: \(trackingNote ?? "not read")")
            return lines
        }
        lines.append("tracking (Redis \(RedisKeys.eventCounters(appID: appID, campaignID: campaignID))):")
        var rows = [["EVENT", "COUNT", "UNIQUE", "UNIQUE/SENT"]]
        for type in types {
            let unique = tracking.campaign.uniques[type] ?? 0
            rows.append([type, "\(tracking.campaign.counts[type] ?? 0)", "\(unique)", rate(unique, sent)])
        }
        lines += ResultSummary.aligned(rows).map { "  " + $0 }
        let variants = summary.variants.keys.filter { !$0.isEmpty }.sorted()
        for variant in variants {
            let byStatus = summary.variants[variant] ?? [:]
            let variantSent = byStatus["sent"] ?? 0
            let events = types.map { type in
                "\(type) \(tracking.variants[variant]?.uniques[type] ?? 0)/\(tracking.variants[variant]?.counts[type] ?? 0)"
            }.joined(separator: " · ")
            lines.append("variant \(variant): sent \(variantSent) of \(byStatus.values.reduce(0, +)) · unique/all \(events)")
        }
        return lines
    }

    /// `12.5 %`, or `-` without a denominator.
    static func rate(_ part: Int64, _ whole: Int) -> String {
        guard whole > 0 else { return "-" }
        let permille = (Double(part) * 1000 / Double(whole)).rounded()
        return "\(Int(permille) / 10).\(Int(permille) % 10) %"
    }

    static func json(campaignID: String, appID: String, summary: ResultSummary, topic: String,
                     tracking: (campaign: Tracking, variants: [String: Tracking])?) -> String {
        func write(_ tracking: Tracking, _ w: inout JSONWriter) {
            w.beginObject()
            for type in types {
                w.member(type) { o in
                    o.member("count", Int(tracking.counts[type] ?? 0))
                    o.member("unique", Int(tracking.uniques[type] ?? 0))
                }
            }
            w.endObject()
        }
        return JSONWriter.object { w in
            w.member("campaignId", campaignID)
            w.member("appId", appID)
            w.member("topic", topic)
            w.member("results", summary.matched)
            w.member("byStatus") { o in for entry in summary.byStatus { o.member(entry.status, entry.count) } }
            w.member("variants") { o in
                for variant in summary.variants.keys.sorted() where !variant.isEmpty {
                    o.member(variant) { v in
                        v.member("byStatus") { s in for (status, count) in (summary.variants[variant] ?? [:]).sorted(by: { $0.key < $1.key }) { s.member(status, count) } }
                        if let tracking = tracking?.variants[variant] { v.key("tracking"); write(tracking, &v) }
                    }
                }
            }
            w.key("tracking")
            if let tracking { write(tracking.campaign, &w) } else { w.null() }
        }.text
    }
}

/// A failure of an `inspect` command, for stderr.
struct InspectError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
