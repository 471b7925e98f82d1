/// Chooses a recipient's language among a job's (docs/reference/job.md): the exact tag, then shorter
/// prefixes of it (RFC 4647 §3.4 lookup: `zh-Hant-TW` → `zh-Hant` → `zh`, so `pt-BR` → `pt`),
/// then the default language. Tags match case-insensitively and `_` is read as `-`.
public struct LanguageSelector: Sendable {
    private var indexByTag: [String: Int] = [:]
    /// Index of the default language in the list given to `init`.
    public let defaultIndex: Int

    /// - Parameters:
    ///   - languages: the job's language tags, in order.
    ///   - defaultLanguage: one of them (case-insensitively); if absent, index 0 is the default.
    public init(languages: [String], defaultLanguage: String) {
        for (index, tag) in languages.enumerated() {
            let normalized = LanguageSelector.normalize(tag)
            if indexByTag[normalized] == nil { indexByTag[normalized] = index }
            if indexByTag[tag] == nil { indexByTag[tag] = index }
        }
        defaultIndex = indexByTag[LanguageSelector.normalize(defaultLanguage)] ?? 0
    }

    /// The index of the language to use for `requested` (nil or unknown ⇒ the default).
    public func index(for requested: String?) -> Int {
        guard let requested, !requested.isEmpty else { return defaultIndex }
        if let exact = indexByTag[requested] { return exact }
        var candidate = LanguageSelector.normalize(requested)
        while true {
            if let found = indexByTag[candidate] { return found }
            guard let dash = candidate.lastIndex(of: "-") else { return defaultIndex }
            candidate = String(candidate[..<dash])
            // RFC 4647 §3.4: also drop a single-letter/digit singleton left at the end.
            if let last = candidate.lastIndex(of: "-"), candidate.distance(from: last, to: candidate.endIndex) == 2 {
                candidate = String(candidate[..<last])
            }
        }
    }

    static func normalize(_ tag: String) -> String {
        tag.lowercased().replacingUnderscores()
    }
}

extension String {
    fileprivate func replacingUnderscores() -> String {
        guard utf8.contains(UInt8(ascii: "_")) else { return self }
        return String(decoding: utf8.map { $0 == UInt8(ascii: "_") ? UInt8(ascii: "-") : $0 }, as: UTF8.self)
    }
}
