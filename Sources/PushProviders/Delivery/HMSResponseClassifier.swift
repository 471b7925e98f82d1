import PushEncoding
import PushCore
/// Huawei Push Kit answers, one outcome per token of the batch (docs/providers.md). Pure and
/// table-tested.
///
/// Huawei answers `{"code","msg","requestId"}` (all strings, [H1]); the code decides, whatever the
/// HTTP status (Huawei's own Go demo reads the code and ignores the status, [H4]), except 502/503,
/// which may come from a gateway with no such body. Codes (docs/providers.md):
///
/// | code / status | outcome |
/// |---|---|
/// | 80000000 | every token `sent` (`providerMessageId` = `requestId`) |
/// | 80100000 | tokens in `msg`'s `illegal_tokens` `invalid_token`, the rest `sent` |
/// | 80300007 | every token `invalid_token` |
/// | 80300008 | every token `rejected`/`payload_too_large` |
/// | 80300010 | ``Verdict/split(reason:)``: too many tokens, nothing sent |
/// | 80200001, 80200003 | `authExpired`: the access token is refreshed once and the batch re-sent ([H4]) |
/// | 81000001, HTTP 502/503 | retry with backoff (503 is Huawei's flow control) |
/// | any other code | `rejected` with the code as reason |
///
/// A 2xx whose body names no code is `sent`: a batch Huawei may have accepted is never sent again.
public enum HMSResponseClassifier {
    public enum Verdict: Sendable, Equatable {
        /// One outcome per token, in the request's order.
        case outcomes([ProviderOutcome])
        /// 80300010: Huawei refused the number of tokens and sent nothing; send the halves.
        case split(reason: String)
    }

    public static let success = "80000000"
    public static let partialFailure = "80100000"
    public static let allTokensInvalid = "80300007"
    public static let payloadTooLarge = "80300008"
    public static let tooManyTokens = "80300010"
    /// "OAuth authentication error" (no token, or one of another client id) and "access token expired".
    public static let authCodes: Set<String> = ["80200001", "80200003"]
    public static let internalError = "81000001"

    /// The verdict for a request that carried `tokens`.
    public static func classify(status: Int, header: (String) -> String?, body: [UInt8], tokens: [String],
                                nowUnix: Double) -> Verdict {
        let object = answer(body)
        let code = object?["code"].flatMap(codeText)
        let requestID = object?["requestId"]?.stringValue
        let retryAfter = RetryAfter.seconds(header("retry-after"), nowUnix: nowUnix)
        let nowMs = Int64(nowUnix * 1000)
        func all(_ outcome: ProviderOutcome) -> Verdict { .outcomes(Array(repeating: outcome, count: tokens.count)) }

        if status == 502 || status == 503 {
            // 502: "connection issue: retry later"; 503: flow control, "spread sends, stay within
            // the app's QPS quota" ([H1], [H5]): the whole app waits.
            return all(.retry(reason: code ?? "http_\(status)", retryAfterSeconds: retryAfter, scope: .provider))
        }
        guard let code else {
            if (200..<300).contains(status) { return all(.sent(providerMessageID: requestID)) }
            if status == 401 { return all(.authExpired(reason: "http_401")) }
            if (500..<600).contains(status) { return all(.retry(reason: "http_\(status)", retryAfterSeconds: retryAfter, scope: .provider)) }
            return all(.rejected(reason: "http_\(status)"))
        }
        switch code {
        case success:
            return all(.sent(providerMessageID: requestID))
        case partialFailure:
            // `msg` is a JSON object's text: {"success":3,"failure":1,"illegal_tokens":[…]} ([H1]).
            // Without a readable list nobody can tell which failed: all count as sent (a batch
            // Huawei accepted is never sent again).
            let illegal = Set(illegalTokens(object?["msg"]?.stringValue))
            return .outcomes(tokens.map { token in
                illegal.contains(token) ? .invalidToken(reason: code, invalidSinceMs: nowMs) : .sent(providerMessageID: requestID)
            })
        case allTokensInvalid:
            return all(.invalidToken(reason: code, invalidSinceMs: nowMs))
        case payloadTooLarge:
            return all(.rejected(reason: PayloadError.payloadTooLarge.reason))
        case tooManyTokens:
            return .split(reason: code)
        case _ where authCodes.contains(code):
            return all(.authExpired(reason: code))
        case internalError:
            // "Contact support" says Huawei ([H1]); treated as transient with the bounded retry of
            // every provider (docs/providers.md).
            return all(.retry(reason: code, retryAfterSeconds: retryAfter, scope: .provider))
        default:
            return all(.rejected(reason: code))
        }
    }

    /// The outcome of a request with one token (``ResponseClassifier``'s per-recipient view): an
    /// illegal token in an 80100000 answer is that token; 80300010 cannot be split further.
    public static func classify(status: Int, header: (String) -> String?, body: [UInt8], nowUnix: Double) -> ProviderOutcome {
        let token = illegalTokens(answer(body)?["msg"]?.stringValue).first ?? ""
        switch classify(status: status, header: header, body: body, tokens: [token], nowUnix: nowUnix) {
        case .outcomes(let outcomes): return outcomes.first ?? .rejected(reason: "http_\(status)")
        case .split(let reason): return .rejected(reason: reason)
        }
    }

    /// Answers up to 1 MiB: an 80100000 answer lists up to 1000 illegal tokens (~150 KB), more
    /// than ``ProviderJSON``'s 64 KiB.
    static let maxAnswerBytes = 1 << 20

    static func answer(_ body: [UInt8]) -> JSONValue? {
        guard !body.isEmpty, body.count <= maxAnswerBytes, body.first == UInt8(ascii: "{") else { return nil }
        return try? JSONParser.parse(body, maxDepth: 8, maxBytes: maxAnswerBytes)
    }

    /// `code` is a string in Huawei's answers; a number is read as its digits.
    static func codeText(_ value: JSONValue) -> String? {
        if let text = value.stringValue { return text.isEmpty ? nil : text }
        if case .number(let number) = value, let integer = number.intValue { return String(integer) }
        return nil
    }

    /// `illegal_tokens` of the JSON text `msg` (empty when it is not such an object).
    static func illegalTokens(_ msg: String?) -> [String] {
        guard let msg, let object = answer(Array(msg.utf8)) else { return [] }
        return (object["illegal_tokens"]?.arrayValue ?? []).compactMap(\.stringValue)
    }
}
