/// "Did you mean …?" for a mistyped command, subcommand, option or setting name: the closest
/// known word by edit distance, when it is close enough to be a typo.
public enum Suggestion {
    /// The candidate closest to `word` (Damerau–Levenshtein: insertions, deletions,
    /// substitutions and swaps of two neighbours each cost 1; case is ignored), or nil when
    /// none is within ``threshold(for:)``. Ties go to the earlier candidate in sorted order, so
    /// the answer does not depend on the order `candidates` come in.
    public static func closest<S: Sequence>(to word: String, in candidates: S) -> String? where S.Element == String {
        guard !word.isEmpty else { return nil }
        let limit = threshold(for: word)
        var best: (candidate: String, distance: Int)?
        for candidate in candidates.sorted() where candidate != word && !candidate.isEmpty {
            let distance = Self.distance(word.lowercased(), candidate.lowercased())
            guard distance <= limit else { continue }
            if best == nil || distance < best!.distance { best = (candidate, distance) }
        }
        return best?.candidate
    }

    /// The known variable closest to `name`, both sharing `prefix` (`PUSHWORKER_`, `EVENT_`):
    /// the prefix is left out of the comparison, so `PUSHWORKER_FOO` is not "close" to
    /// `PUSHWORKER_LOG` just because the two share eleven characters.
    public static func closestVariable<S: Sequence>(to name: String, prefix: String, in known: S) -> String? where S.Element == String {
        guard name.hasPrefix(prefix) else { return nil }
        let stripped = known.filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
        return closest(to: String(name.dropFirst(prefix.count)), in: stripped).map { prefix + $0 }
    }

    /// How many edits still look like a typo of `word`: 1 for up to 4 characters, 2 up to 8,
    /// 3 beyond (a long variable name may be missing a whole short word's worth of letters
    /// less often than it has a slip or two).
    public static func threshold(for word: String) -> Int {
        switch word.count {
        case ...4: 1
        case ...8: 2
        default: 3
        }
    }

    /// The optimal-string-alignment Damerau–Levenshtein distance between `a` and `b`, by
    /// character. Inputs longer than 256 characters are compared by their first 256 (a name
    /// is never that long; this bounds the work for hostile input).
    public static func distance(_ a: String, _ b: String) -> Int {
        let x = Array(a.prefix(256)), y = Array(b.prefix(256))
        if x.isEmpty { return y.count }
        if y.isEmpty { return x.count }
        let width = y.count + 1
        var previous2 = [Int](repeating: 0, count: width)
        var previous = Array(0...y.count)
        var current = [Int](repeating: 0, count: width)
        for i in 1...x.count {
            current[0] = i
            for j in 1...y.count {
                let cost = x[i - 1] == y[j - 1] ? 0 : 1
                var value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, x[i - 1] == y[j - 2], x[i - 2] == y[j - 1] {
                    value = min(value, previous2[j - 2] + 1)
                }
                current[j] = value
            }
            (previous2, previous, current) = (previous, current, previous2)
        }
        return previous[y.count]
    }
}
