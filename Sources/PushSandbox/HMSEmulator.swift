import PushCore
import PushCrypto
import PushEncoding

/// Huawei Push Kit emulation (docs/providers.md "Huawei Push Kit"): the OAuth 2.0
/// client-credentials grant at `/oauth2/v3/token` and `POST /v1/<clientId>/messages:send` with
/// Huawei's answer `{"code","msg","requestId"}` and its result codes.
///
/// | answer | when |
/// |---|---|
/// | 200 `80000000` | every token delivered |
/// | 200 `80100000` | some tokens illegal (`dead…` or in `--unregistered-share`, or malformed): `msg` is `{"success","failure","illegal_tokens"}` as JSON text |
/// | 400 `80300007` | every token illegal |
/// | 400 `80300008` | the body without its tokens exceeds 4096 bytes |
/// | 400 `80300010` | more tokens than `hmsTokenLimit` (1000) |
/// | 400 `80100001`/`80100003`/`80100013` | invalid parameters, message structure, `collapse_key` |
/// | 401 `80200001` | no, unknown or foreign access token (issued to another client id) |
/// | 401 `80200003` | the access token expired |
/// | 500 `81000001`, 502, 503 | `errorShare`/`throttleShare` faults; 503 is Huawei's flow control |
///
/// `hmsAnswers` (faults) queues answers for the next sends: any code, or 502/503.
extension SandboxRouter {
    static let hmsTokenPath = "/oauth2/v3/token"
    /// Huawei's access tokens last an hour ([H3]).
    static let hmsAccessTokenLifetime = 3600
    /// The body without the tokens ([H1]).
    static let hmsMaximumPayload = 4096
    static let hmsCategories: Set<String> = ["IM", "VOIP", "SUBSCRIPTION", "TRAVEL", "HEALTH", "WORK", "ACCOUNT", "EXPRESS",
                                             "FINANCE", "DEVICE_REMINDER", "MAIL", "PLAY_VOICE", "MARKETING"]
    /// `android.ttl` at most 15 days ([H1]).
    static let hmsMaximumTTL = 1_296_000
    static let hmsTokenProjectPrefix = "hms:"

    // MARK: token endpoint

    /// `grant_type=client_credentials&client_id=…&client_secret=…` ([H3]). Errors in Huawei's
    /// OAuth shape `{"error","sub_error","error_description"}` (the numbers are the sandbox's).
    func handleHMSToken(_ request: SandboxRequest) -> SandboxResponse {
        state.countTokenRequest()
        func grantError(_ status: Int, _ error: Int, _ subError: Int, _ description: String) -> SandboxResponse {
            .json(status, JSONWriter.object { w in
                w.member("error", error); w.member("sub_error", subError); w.member("error_description", description)
            }.text, isProviderResponse: false)
        }
        guard request.method == "POST" else { return grantError(405, 1101, 20000, "POST required") }
        let form = Self.parseForm(request.body)
        guard let grantType = form["grant_type"] else { return grantError(400, 1102, 20001, "missing required parameter: grant_type") }
        guard grantType == "client_credentials" else { return grantError(400, 1101, 20003, "unsupported grant_type: \(grantType)") }
        guard let clientID = form["client_id"], !clientID.isEmpty else { return grantError(400, 1102, 20001, "missing required parameter: client_id") }
        guard let secret = form["client_secret"], !secret.isEmpty else {
            return grantError(400, 1102, 20001, "missing required parameter: client_secret")
        }
        guard let client = trust.hmsClients[clientID] else { return grantError(400, 1101, 20002, "invalid client: unknown client_id") }
        guard client.clientSecret == secret else { return grantError(400, 1101, 20152, "invalid client secret") }
        let accessToken = "CgB6e3x9sandbox" + Base64URL.encode(SecureRandom.bytes(24))
        state.issueAccessToken(accessToken, project: Self.hmsTokenProjectPrefix + clientID,
                               expiresAt: Int(clock()) + Self.hmsAccessTokenLifetime)
        return .json(200, "{\"access_token\":\"\(accessToken)\",\"expires_in\":\(Self.hmsAccessTokenLifetime),\"token_type\":\"Bearer\"}",
                     isProviderResponse: false)
    }

    // MARK: messages:send

    /// Huawei's answer body.
    func hmsAnswer(_ code: String, _ msg: String) -> String {
        JSONWriter.object { w in
            w.member("code", code); w.member("msg", msg); w.member("requestId", "\(Int(clock() * 1000))\(random.next() % 1_000_000)")
        }.text
    }

    func handleHMSSend(_ request: SandboxRequest) -> SandboxResponse {
        func reply(_ status: Int, _ code: String, _ msg: String) -> SandboxResponse {
            finish(.json(status, hmsAnswer(code, msg)), platform: "huawei", request: request, msgID: nil, bodyJSON: nil)
        }
        func invalid(_ msg: String) -> SandboxResponse { reply(400, "80100001", msg) }
        let path = request.pathWithoutQuery
        let pathID = String(path.dropFirst("/v1/".count).dropLast("/messages:send".count))
        guard !pathID.isEmpty, !pathID.contains("/") else { return reply(404, "80100001", "no such resource") }
        guard request.method == "POST" else { return reply(405, "80100001", "POST required") }

        var bearer: String?
        if !configuration.isAuthDisabled {
            let authError = "Oauth authentication error"
            guard let authorization = request.header("authorization") else { return reply(401, "80200001", authError) }
            let parts = authorization.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "bearer", let issued = state.accessToken(String(parts[1])),
                  issued.project.hasPrefix(Self.hmsTokenProjectPrefix) else {
                return reply(401, "80200001", authError)
            }
            guard Double(issued.expiresAt) > clock() else { return reply(401, "80200003", "Access token expired") }
            // The path names the app the token was issued for: its client id or app id.
            let client = trust.hmsClients[String(issued.project.dropFirst(Self.hmsTokenProjectPrefix.count))]
            guard let client, pathID == client.clientID || pathID == client.pathID else { return reply(401, "80200001", authError) }
            bearer = String(parts[1])
        }
        if let queued = state.takeHMSAnswer(scope: faultScope) {
            switch queued {
            case "502": return finish(.text(502, "Bad Gateway\n").provider, platform: "huawei", request: request, msgID: nil, bodyJSON: nil)
            case "503":
                return finish(SandboxResponse(status: 503, headers: [retryAfterHeader()], body: Array("Service Unavailable\n".utf8)),
                              platform: "huawei", request: request, msgID: nil, bodyJSON: nil)
            case "80200001", "80200003":
                if let bearer { state.revokeAccessToken(bearer) }
                return reply(401, queued, queued == "80200003" ? "Access token expired" : "Oauth authentication error")
            case "81000001": return reply(500, queued, "Internal error")
            default: return reply(400, queued, "answer queued by the sandbox's hmsAnswers fault")
            }
        }

        guard !request.isBodyTruncated, let body = JSONValue.parse(request.body), let message = body["message"],
              message.objectValue != nil else { return reply(400, "80100003", "Invalid message structure") }
        guard let tokenArray = message["token"] else {
            if message["topic"] != nil || message["condition"] != nil { return invalid("the sandbox accepts token targets only") }
            return reply(400, "80100003", "Invalid message structure: no token")
        }
        guard let items = tokenArray.arrayValue, !items.isEmpty else { return reply(400, "80100003", "Invalid message structure: token") }
        let tokens = items.compactMap(\.stringValue)
        guard tokens.count == items.count else { return reply(400, "80100003", "Invalid message structure: token") }
        guard tokens.count <= faults.hmsTokenLimit else { return reply(400, "80300010", "The number of tokens exceeds the limit") }
        guard Set(tokens).count == tokens.count else { return invalid("duplicate tokens") }
        // The body's size without its tokens ([H1]): what `"token":[…]` and its comma take away.
        var tokenJSON = JSONWriter(capacity: 64)
        tokenJSON.beginArray()
        for token in tokens { tokenJSON.string(token) }
        tokenJSON.endArray()
        let withoutTokens = request.bodyLength - tokenJSON.bytes.count - #","token":"#.utf8.count
        guard withoutTokens <= Self.hmsMaximumPayload else {
            return reply(400, "80300008", "The message body size exceeds the default value")
        }
        var msgID: String?
        if let data = message["data"] {
            guard let text = data.stringValue else { return reply(400, "80100003", "Invalid message structure: data must be a string") }
            msgID = JSONValue.parse(Array(text.utf8))?["on.msgId"]?.stringValue
        }
        if let android = message["android"] {
            if let problem = Self.hmsAndroidProblem(android) { return reply(400, problem.code, problem.msg) }
        }
        switch drawFault() {
        case .throttled:
            return finish(SandboxResponse(status: 503, headers: [retryAfterHeader()], body: Array("Service Unavailable\n".utf8)),
                          platform: "huawei", request: request, msgID: nil, bodyJSON: nil)
        case .internalError: return reply(500, "81000001", "Internal error")
        case .unavailable: return finish(.text(502, "Bad Gateway\n").provider, platform: "huawei", request: request, msgID: nil, bodyJSON: nil)
        case nil: break
        }
        let illegal = tokens.filter { !RecipientTargeting.isHMSToken($0) || isUnregistered($0[...]) }
        guard illegal.count < tokens.count else { return reply(400, "80300007", "All the tokens are invalid") }
        // `validate_only`: checked like a send, never delivered nor recorded ([H1]).
        if body["validate_only"] == .bool(true) { return .json(200, hmsAnswer("80000000", "Success")) }
        let delivered = illegal.isEmpty ? tokens : tokens.filter { !illegal.contains($0) }
        let answer: String
        if illegal.isEmpty {
            answer = hmsAnswer("80000000", "Success")
        } else {
            let msg = JSONWriter.object { w in
                w.member("success", delivered.count); w.member("failure", illegal.count); w.member("illegal_tokens", strings: illegal)
            }.text
            answer = hmsAnswer("80100000", msg)
        }
        return finish(.json(200, answer), platform: "huawei", request: request, msgID: msgID,
                      bodyJSON: Self.recordBody(request.body, parsed: body), deliveries: delivered)
    }

    /// What Huawei would refuse in `message.android` ([H1]); nil when it is fine.
    static func hmsAndroidProblem(_ android: JSONValue) -> (code: String, msg: String)? {
        guard android.objectValue != nil else { return ("80100003", "Invalid message structure: android") }
        if let collapseKey = android["collapse_key"] {
            guard case .number(let number) = collapseKey, let value = number.intValue, (-1...100).contains(value) else {
                return ("80100013", "collapse_key must be in interval [-1 - 100]")
            }
        }
        if let urgency = android["urgency"], urgency.stringValue != "HIGH" && urgency.stringValue != "NORMAL" {
            return ("80100001", "urgency must be HIGH or NORMAL")
        }
        if let category = android["category"], !hmsCategories.contains(category.stringValue ?? "") {
            return ("80100001", "category is not one of Huawei's")
        }
        if let ttl = android["ttl"] {
            let text = ttl.stringValue ?? ""
            let digits = text.dropLast()
            guard text.hasSuffix("s"), !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
                  let seconds = Int(digits), seconds <= hmsMaximumTTL else { return ("80100001", "ttl must be \"<seconds>s\", at most 1296000s") }
        }
        if let notification = android["notification"] {
            guard notification.objectValue != nil else { return ("80100003", "Invalid message structure: android.notification") }
            guard let click = notification["click_action"], case .number(let number)? = click["type"], let type = number.intValue,
                  (1...3).contains(type) else { return ("80100001", "click_action is mandatory: click_action.type 1, 2 or 3") }
            if type == 2 {
                guard let url = click["url"]?.stringValue, url.lowercased().hasPrefix("https://") else {
                    return ("80100001", "click_action.url must be an https URL when type is 2")
                }
            }
            if let buttons = notification["buttons"], (buttons.arrayValue?.count ?? 4) > 3 {
                return ("80100001", "at most 3 buttons")
            }
            if let image = notification["image"], !(image.stringValue ?? "").lowercased().hasPrefix("https://") {
                return ("80100001", "image must be an https URL")
            }
        }
        return nil
    }
}

extension SandboxResponse {
    /// The same response, subject to the injected latency like every provider answer.
    var provider: SandboxResponse {
        var response = self
        response.isProviderResponse = true
        return response
    }
}
