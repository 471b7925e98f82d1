import PushEncoding
import PushCore
/// The texts truncation may cut (docs/payloads.md "Budgets and truncation"), cut in the order body → subtitle → title.
public struct NotificationText: Sendable, Equatable {
    public var title: String?
    public var subtitle: String?
    public var body: String?

    public init(title: String?, subtitle: String?, body: String?) {
        self.title = title; self.subtitle = subtitle; self.body = body
    }

    /// The names of the fields that differ from `original` (the ones the fitter cut).
    public func changedFields(from original: NotificationText) -> [String] {
        var names: [String] = []
        if title != original.title { names.append("title") }
        if subtitle != original.subtitle { names.append("subtitle") }
        if body != original.body { names.append("body") }
        return names
    }

    /// The content's texts, empty strings as absent. `content` is borrowed: an initializer's
    /// parameter is consumed by default, which made every call copy the whole content (~25
    /// references retained, then released) to read three strings.
    public init(_ content: borrowing NotificationContent) {
        title = content.title.flatMap { $0.isEmpty ? nil : $0 }
        subtitle = content.subtitle.flatMap { $0.isEmpty ? nil : $0 }
        body = content.body.flatMap { $0.isEmpty ? nil : $0 }
    }
}

/// One size limit a payload must respect, and how a text's bytes count towards it.
public struct PayloadBudget: Sendable, Equatable {
    public enum Measure: Sendable, Equatable {
        /// The text counts as it appears inside a JSON string (escapes included).
        case jsonEscaped
        /// The text counts as raw UTF-8 (FCM: keys + values of `message.data`).
        case utf8
    }
    /// Bytes, inclusive.
    public var limit: Int
    public var measure: Measure
    public init(limit: Int, measure: Measure) { self.limit = limit; self.measure = measure }
}

/// Shrinks the texts of a payload until it fits its budgets (docs/payloads.md, §15 Budgets measure).
///
/// The body is cut first, then the subtitle, then the title, each at a grapheme-cluster
/// (`Character`) boundary with "…" appended; a field may shrink to "…" alone before the next is
/// cut. The longest fitting prefix is found by binary search over prefix sums of the
/// characters' byte costs, so the payload is rendered once per field, not once per character.
public enum NotificationTextFitter {
    /// U+2026 HORIZONTAL ELLIPSIS, 3 bytes in UTF-8 and in JSON.
    public static let ellipsis = "…"
    private static let ellipsisCost = 3

    /// Returns the texts, cut as little as possible so that `sizes` fits every budget, or nil
    /// when even every text cut to "…" does not fit.
    ///
    /// - Parameter sizes: the payload's size in each budget (same order as `budgets`) when
    ///   rendered with the given texts. Each present text must appear once in the payload,
    ///   so that a size is a fixed part plus the text's cost under the budget's measure.
    public static func fit(_ text: NotificationText, budgets: [PayloadBudget],
                           sizes: (NotificationText) -> [Int]) -> NotificationText? {
        func fits(_ measured: [Int]) -> Bool {
            zip(measured, budgets).allSatisfy { $0.0 <= $0.1.limit }
        }
        if fits(sizes(text)) { return text }
        var current = text
        for field in [\NotificationText.body, \.subtitle, \.title] {
            guard let value = current[keyPath: field], !value.isEmpty else { continue }
            // A text no longer than "…" gains nothing from being cut: leave it, cut the next.
            if value.utf8.count <= ellipsisCost && JSONWriter.escapedCount(value) <= ellipsisCost { continue }
            var probe = current
            probe[keyPath: field] = ""
            let base = sizes(probe)
            // Room for the kept characters in each measure; characters past it can never fit,
            // so they are not even segmented (the work is bounded by the budget, not the text).
            var roomUTF8 = Int.max
            var roomEscaped = Int.max
            for (index, budget) in budgets.enumerated() {
                let room = budget.limit - base[index] - ellipsisCost
                if budget.measure == .utf8 { roomUTF8 = min(roomUTF8, room) } else { roomEscaped = min(roomEscaped, room) }
            }
            guard roomUTF8 >= 0 && roomEscaped >= 0 else {
                current[keyPath: field] = ellipsis
                continue
            }
            let costs = CharacterCosts(value, roomUTF8: roomUTF8, roomEscaped: roomEscaped)
            func fitsPrefix(_ k: Int) -> Bool { costs.utf8[k] <= roomUTF8 && costs.escaped[k] <= roomEscaped }
            // Binary search for the largest k whose first k characters + "…" fit.
            var low = 0 // fits
            var high = costs.count
            if fitsPrefix(high) { low = high }
            while high - low > 1 {
                let middle = low + (high - low) / 2
                if fitsPrefix(middle) { low = middle } else { high = middle }
            }
            current[keyPath: field] = String(value[..<costs.ends[low]]) + ellipsis
            return current
        }
        return nil
    }
}

/// Prefix sums of a string's per-character byte costs, up to the first character that
/// overflows the room (inclusive) or the end of the string.
private struct CharacterCosts {
    /// `utf8[k]`: UTF-8 bytes of the first k characters.
    var utf8: [Int] = [0]
    /// `escaped[k]`: bytes of the first k characters inside a JSON string.
    var escaped: [Int] = [0]
    /// `ends[k]`: the index after the first k characters.
    var ends: [String.Index]
    var count: Int { ends.count - 1 }

    init(_ value: String, roomUTF8: Int, roomEscaped: Int) {
        ends = [value.startIndex]
        var rawTotal = 0
        var escapedTotal = 0
        var index = value.startIndex
        while index < value.endIndex && rawTotal <= roomUTF8 && escapedTotal <= roomEscaped {
            let next = value.index(after: index)
            for byte in value.utf8[index..<next] {
                rawTotal += 1
                escapedTotal += JSONWriter.escapedCount(byte)
            }
            utf8.append(rawTotal)
            escaped.append(escapedTotal)
            ends.append(next)
            index = next
        }
    }
}
