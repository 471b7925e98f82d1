import PushEncoding
import PushCore
/// Huawei batches (docs/providers.md "Huawei Push Kit"): recipients whose shared request bodies are byte-identical (same
/// language, same rendered texts after personalization, same options) go out as one request of
/// up to 1000 tokens. Pure: the worker, `send` and `render` batch the same way.
public enum HMSBatching {
    /// Tokens per request ([H1]: "≤1000 tokens per request"; more is 80300010).
    public static let maxTokens = 1000

    /// Positions of `bodies` grouped by identical bytes, each group in input order and cut into
    /// chunks of at most `limit`; groups ordered by their first position.
    public static func group(_ bodies: [[UInt8]], limit: Int = maxTokens) -> [[Int]] {
        let limit = max(1, limit)
        var groups: [[Int]] = []
        var open: [[UInt8]: Int] = [:] // body → index of its group still filling
        for (position, body) in bodies.enumerated() {
            if let index = open[body], groups[index].count < limit {
                groups[index].append(position)
            } else {
                open[body] = groups.count
                groups.append([position])
            }
        }
        return groups
    }

    /// The request body for `tokens`: `shared` (an ``HMSPayloadBuilder`` body, which ends with the
    /// `message` object and the root closing) with `"token":[…]` as the last member of
    /// `message`. Nil when `shared` is not such a body or `tokens` is empty.
    public static func body(shared: [UInt8], tokens: [String]) -> [UInt8]? {
        guard !tokens.isEmpty, shared.count >= 4, shared[shared.count - 1] == UInt8(ascii: "}"),
              shared[shared.count - 2] == UInt8(ascii: "}") else { return nil }
        var tokenArray = JSONWriter(capacity: tokens.count * 160 + 16)
        tokenArray.beginArray()
        for token in tokens { tokenArray.string(token) }
        tokenArray.endArray()
        var bytes = [UInt8]()
        bytes.reserveCapacity(shared.count + tokenArray.bytes.count + 12)
        bytes.append(contentsOf: shared[..<(shared.count - 2)])
        // `message` has members already (`data`, `android`), so the token member follows a comma.
        bytes.append(contentsOf: #","token":"#.utf8)
        bytes.append(contentsOf: tokenArray.bytes)
        bytes.append(contentsOf: [UInt8(ascii: "}"), UInt8(ascii: "}")])
        return bytes
    }
}
