import PushCore

/// One job's request for every recipient who shares a language and a target kind (APNs, FCM
/// token, Huawei, Web Push per browser), built once by ``PayloadBuilder`` itself and spliced per
/// recipient: only the msgId, the token (APNs URL, FCM `message.token`, Web Push endpoint,
/// Huawei `hmsToken`), personalized texts and the recipient's derived replace key (docs/payloads.md "Replace key":
/// FCM `collapse_key` and `on.tag`, the Web Push `tag` in the body; APNs `apns-collapse-id` and
/// Web Push `topic` in ``ProviderRequest/recipientHeaders``) are written per recipient, the rest
/// of the payload is not built again. The shared ``ProviderRequest/headers`` never hold a
/// per-recipient value: the template refuses unless both builds have the same ones.
///
/// ``PayloadBuilder`` stays the single source of the layout: the template is its output for two
/// pairs of marker values of different lengths, cut at the first pair's markers and accepted
/// only when splicing the second pair in gives the second build byte for byte (so a marker that
/// also occurs in the job's own data, or a value the layout depends on, refuses the template),
/// with identical headers and nothing truncated. The size rules are then checked on the
/// spliced result (``request(msgID:target:)``): a recipient whose msgId or token would push the
/// payload over a budget gets nil, and the caller builds it in full (and truncates) as before.
/// Only for contents whose texts are the same for all those recipients (no personalization):
/// the caller decides that.
public struct PayloadTemplate: Sendable, Equatable {
    enum Part: Sendable, Equatable {
        case bytes([UInt8])
        case msgID
        case token
        /// A personalized text: 0 title, 1 subtitle, 2 body.
        case text(Int)
        /// The recipient's replace key (``NotificationContent/replaceKey``), derived from its msgId.
        case replaceKey
    }

    /// A per-recipient header: its name, and its value cut at the markers.
    struct HeaderTemplate: Sendable, Equatable {
        let name: String
        let value: [Part]
    }

    /// The texts that differ per recipient (rendered from templates with placeholders).
    public struct Texts: OptionSet, Sendable, Equatable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        public static let title = Texts(rawValue: 1)
        public static let subtitle = Texts(rawValue: 2)
        public static let body = Texts(rawValue: 4)
    }

    /// How the spliced request's size is checked: the same rule the builder applies before it
    /// truncates (docs/payloads.md "Budgets and truncation").
    enum Budget: Sendable, Equatable {
        /// The body ≤ `limit` bytes (APNs, Web Push plaintext).
        case body(limit: Int)
        /// FCM: body ≤ ``FCMPayloadBuilder/maxPayloadBytes`` and `message.data` keys + values ≤
        /// `dataLimit`, the data holding `dataFixed` bytes plus the msgId and personalized texts
        /// once each (every one of them is written in `message.data`, the token is not) and the
        /// replace key `replaceKeysInData` times (`on.tag`; `android.collapse_key` is outside it).
        case fcm(dataFixed: Int, dataLimit: Int, replaceKeysInData: Int)
        /// Nothing per recipient in the body (Huawei's shared body): the build's check holds.
        case none
    }

    /// The marker pairs: ASCII that JSON writes as is, DEL-delimited (no job text carries
    /// it in practice; one that does only costs the template).
    static let markers = (msgID: ("\u{7F}m\u{7F}", "\u{7F}mm2\u{7F}"), token: ("\u{7F}t\u{7F}", "\u{7F}tt2\u{7F}"),
                          replaceKey: ("\u{7F}r\u{7F}", "\u{7F}rr2\u{7F}"))
    /// Title, subtitle, body.
    static let textMarkers = (["\u{7F}1\u{7F}", "\u{7F}2\u{7F}", "\u{7F}3\u{7F}"], ["\u{7F}11x\u{7F}", "\u{7F}22x\u{7F}", "\u{7F}33x\u{7F}"])

    let base: ProviderRequest
    let body: [Part]
    let url: [Part]
    let recipientHeaders: [HeaderTemplate]
    let budget: Budget
    let kind: Kind
    /// Whether a part is the recipient's replace key, derived from its msgId by
    /// ``request(msgID:target:texts:replaceKey:engine:)`` (a job without a `collapseId`, except
    /// Huawei's shared bodies).
    public let hasReplaceKey: Bool

    enum Kind: Sendable, Equatable { case apns, fcm, webPush(Browser), huawei }

    /// The template for `content`'s recipients on `target`'s kind, or nil when this content gets
    /// none (a Live Activity, an FCM audience, a build that fails or truncates, a layout that
    /// does not splice). `content.msgID`, the target's token and the `personalized` texts are
    /// ignored (each recipient brings its own), and so is `content.replaceKey` unless the job shares
    /// one (``NotificationContent/hasSharedReplaceKey``: a `collapseId`, a Huawei batch's key).
    public static func make(_ content: NotificationContent, personalized: Texts = [], target: DeliveryTarget, profile: AppProfile,
                            issuedAtUnix: Int) -> PayloadTemplate? {
        guard content.ios.liveActivity == nil, let kind = kind(of: target) else { return nil }
        var first = content, second = content
        first.msgID = markers.msgID.0
        second.msgID = markers.msgID.1
        let marksReplaceKey = !content.hasSharedReplaceKey
        if marksReplaceKey {
            first.replaceKey = markers.replaceKey.0
            second.replaceKey = markers.replaceKey.1
        }
        for (index, field) in [Texts.title, .subtitle, .body].enumerated() where personalized.contains(field) {
            set(index, textMarkers.0[index], in: &first)
            set(index, textMarkers.1[index], in: &second)
        }
        let firstTarget = marked(target, markers.token.0), secondTarget = marked(target, markers.token.1)
        guard case .success(let one) = PayloadBuilder.build(first, target: firstTarget, profile: profile, issuedAtUnix: issuedAtUnix),
              case .success(let two) = PayloadBuilder.build(second, target: secondTarget, profile: profile, issuedAtUnix: issuedAtUnix),
              one.truncatedFields.isEmpty, two.truncatedFields.isEmpty,
              one.headers == two.headers, one.platform == two.platform, one.method == two.method else { return nil }
        let body = split(one.body), url = split(Array(one.url.utf8))
        let secondTexts = NotificationText(title: textMarkers.1[0], subtitle: textMarkers.1[1], body: textMarkers.1[2])
        let (msgID, token, replaceKey) = (markers.msgID.1, markers.token.1, markers.replaceKey.1)
        guard splice(body, msgID: msgID, token: token, texts: secondTexts, replaceKey: replaceKey) == two.body,
              splice(url, msgID: msgID, token: token, texts: secondTexts, replaceKey: replaceKey) == Array(two.url.utf8),
              !url.contains(where: isText) else { return nil }
        // Each per-recipient header: the same name in both builds, its value spliced back.
        guard one.recipientHeaders.count == two.recipientHeaders.count else { return nil }
        var recipientHeaders: [HeaderTemplate] = []
        for (header, secondHeader) in zip(one.recipientHeaders, two.recipientHeaders) {
            let value = split(Array(header.value.utf8))
            guard header.key == secondHeader.key, !value.contains(where: isText),
                  spliceString(value, msgID: msgID, token: token, texts: secondTexts, replaceKey: replaceKey) == secondHeader.value
            else { return nil }
            recipientHeaders.append(HeaderTemplate(name: header.key, value: value))
        }
        let budget: Budget
        switch kind {
        case .apns: budget = .body(limit: APNSPayloadBuilder.maxPayloadBytes)
        case .webPush: budget = .body(limit: WebPushPayloadBuilder.maxPlaintextBytes)
        case .huawei:
            // The shared body holds neither the msgId nor the token: nothing to check per recipient.
            guard body.allSatisfy(isBytes), url.allSatisfy(isBytes) else { return nil }
            budget = .none
        case .fcm:
            let actions = FCMPayloadBuilder.actionsJSON(first.actions)
            let dataOne = FCMPayloadBuilder.payload(first, target: .token(markers.token.0), text: NotificationText(first),
                                                    actionsJSON: actions).dataBytes
            let dataTwo = FCMPayloadBuilder.payload(second, target: .token(markers.token.1), text: NotificationText(second),
                                                    actionsJSON: actions).dataBytes
            // The msgId and each personalized text count once in `message.data`, the token not at
            // all, the replace key once (`on.tag`; its other copy, `collapse_key`, is not data).
            var inData = [markers.msgID]
            for part in body { if case .text(let index) = part { inData.append((textMarkers.0[index], textMarkers.1[index])) } }
            let replaceKeysInData = marksReplaceKey ? 1 : 0
            if marksReplaceKey { inData.append(markers.replaceKey) }
            guard body.filter({ $0 == .msgID }).count == 1,
                  dataTwo - dataOne == inData.reduce(0, { $0 + $1.1.utf8.count - $1.0.utf8.count }) else { return nil }
            budget = .fcm(dataFixed: dataOne - inData.reduce(0, { $0 + $1.0.utf8.count }), dataLimit: FCMPayloadBuilder.maxPayloadBytes,
                          replaceKeysInData: replaceKeysInData)
        }
        var base = one
        base.body = []
        base.url = ""
        base.recipientHeaders = []
        base.webPush = nil
        base.hmsToken = nil
        let hasReplaceKey = body.contains(.replaceKey) || url.contains(.replaceKey) || recipientHeaders.contains { $0.value.contains(.replaceKey) }
        return PayloadTemplate(base: base, body: body, url: url, recipientHeaders: recipientHeaders, budget: budget, kind: kind,
                               hasReplaceKey: hasReplaceKey)
    }

    private static func isText(_ part: Part) -> Bool {
        if case .text = part { true } else { false }
    }

    private static func set(_ index: Int, _ value: String, in content: inout NotificationContent) {
        switch index {
        case 0: content.title = value
        case 1: content.subtitle = value
        default: content.body = value
        }
    }

    /// A personalized text the template can take as it is: non-empty (an empty text is left
    /// out of the payload, which changes its layout) and with nothing JSON escapes (so it is
    /// the same bytes at any nesting, e.g. inside Huawei's data string, and counts the same in
    /// every budget's measure).
    static func splicable(_ text: String?) -> Bool {
        guard let text, !text.isEmpty else { return false }
        // Read in place, branch-free (as JSONWriter's scan): iterating `String.UTF8View` pays
        // its index bookkeeping on every byte.
        let bytes = text.utf8.span
        var special: UInt8 = 0
        for index in bytes.indices {
            let byte = bytes[index]
            special |= (byte < 0x20 ? 1 : 0) | (byte == 0x22 ? 1 : 0) | (byte == 0x5C ? 1 : 0)
        }
        return special == 0
    }

    /// The request for one recipient: `msgID`, `target`'s token and its replace key spliced in,
    /// or nil when the target is of another kind or the result exceeds a budget (the caller then
    /// builds it in full, truncating as the builder does).
    /// `texts`: the recipient's rendered personalized texts (the others are not read).
    /// `replaceKey`: the recipient's replace key when the caller has it; nil: derived here from
    /// `msgID` (``ReplaceKey/derive(msgID:engine:)``, its blocks on `engine`), as the builder would
    /// (a template splices a replace key only when it is derived from the msgId).
    public func request(msgID: String, target: DeliveryTarget, texts: NotificationText = NotificationText(title: nil, subtitle: nil, body: nil),
                        replaceKey: String? = nil, engine: (any SHA256BlockEngine)? = nil) -> ProviderRequest? {
        guard let token = Self.token(of: target), Self.kind(of: target) == kind else { return nil }
        var textBytes = 0
        for part in body {
            guard case .text(let index) = part else { continue }
            let text = Self.text(index, of: texts)
            guard Self.splicable(text) else { return nil }
            textBytes += text?.utf8.count ?? 0
        }
        let key = hasReplaceKey ? replaceKey ?? ReplaceKey.derive(msgID: msgID, engine: engine) : ""
        let body = Self.splice(self.body, msgID: msgID, token: token, texts: texts, replaceKey: key)
        switch budget {
        case .body(let limit):
            guard body.count <= limit else { return nil }
        case .fcm(let dataFixed, let dataLimit, let replaceKeysInData):
            guard body.count <= FCMPayloadBuilder.maxPayloadBytes,
                  dataFixed + msgID.utf8.count + textBytes + replaceKeysInData * key.utf8.count <= dataLimit else { return nil }
        case .none: break
        }
        var request = base
        request.body = body
        request.url = url == [.token] ? token : Self.spliceString(url, msgID: msgID, token: token, texts: texts, replaceKey: key)
        if !recipientHeaders.isEmpty {
            request.recipientHeaders = recipientHeaders.map { header in
                KeyValue(header.name, header.value == [.replaceKey]
                         ? key : Self.spliceString(header.value, msgID: msgID, token: token, texts: texts, replaceKey: key))
            }
        }
        switch target {
        case .webPush(let subscription): request.webPush = subscription
        case .huawei(let hmsToken): request.hmsToken = hmsToken
        default: break
        }
        return request
    }

    /// Which template a target uses; nil for FCM audiences (one request per job anyway).
    static func kind(of target: DeliveryTarget) -> Kind? {
        switch target {
        case .apns: .apns
        case .fcm: .fcm
        case .webPush(let subscription): .webPush(subscription.browser)
        case .huawei: .huawei
        case .fcmAudience: nil
        }
    }

    static func token(of target: DeliveryTarget) -> String? {
        switch target {
        case .apns(let token), .fcm(let token), .huawei(let token): token
        case .webPush(let subscription): subscription.endpoint
        case .fcmAudience: nil
        }
    }

    static func marked(_ target: DeliveryTarget, _ marker: String) -> DeliveryTarget {
        switch target {
        case .apns: .apns(deviceToken: marker)
        case .fcm: .fcm(registrationToken: marker)
        case .huawei: .huawei(token: marker)
        case .webPush(let subscription):
            .webPush(WebPushSubscription(endpoint: marker, p256dh: subscription.p256dh, auth: subscription.auth,
                                         browser: subscription.browser))
        case .fcmAudience: target
        }
    }

    private static func isBytes(_ part: Part) -> Bool {
        if case .bytes = part { true } else { false }
    }

    static func text(_ index: Int, of texts: NotificationText) -> String? {
        switch index {
        case 0: texts.title
        case 1: texts.subtitle
        default: texts.body
        }
    }

    /// `bytes` cut at every occurrence of the first markers.
    static func split(_ bytes: [UInt8]) -> [Part] {
        var slots: [([UInt8], Part)] = [(Array(markers.msgID.0.utf8), .msgID), (Array(markers.token.0.utf8), .token),
                                        (Array(markers.replaceKey.0.utf8), .replaceKey)]
        for (index, marker) in textMarkers.0.enumerated() { slots.append((Array(marker.utf8), .text(index))) }
        var parts: [Part] = []
        var literal: [UInt8] = []
        var index = 0
        scan: while index < bytes.count {
            if bytes[index] == 0x7F {
                for (marker, part) in slots
                where index + marker.count <= bytes.count && bytes[index..<index + marker.count].elementsEqual(marker) {
                    if !literal.isEmpty { parts.append(.bytes(literal)); literal = [] }
                    parts.append(part)
                    index += marker.count
                    continue scan
                }
            }
            literal.append(bytes[index])
            index += 1
        }
        if !literal.isEmpty { parts.append(.bytes(literal)) }
        return parts
    }

    static func splice(_ parts: [Part], msgID: String, token: String, texts: NotificationText, replaceKey: String) -> [UInt8] {
        let count = length(parts, msgID: msgID, token: token, texts: texts, replaceKey: replaceKey)
        var out: [UInt8] = []
        out.reserveCapacity(count)
        for part in parts {
            switch part {
            case .bytes(let bytes): out.append(contentsOf: bytes)
            case .msgID: append(msgID, to: &out)
            case .token: append(token, to: &out)
            case .text(let index): if let value = text(index, of: texts) { append(value, to: &out) }
            case .replaceKey: append(replaceKey, to: &out)
            }
        }
        return out
    }

    /// The bytes ``splice(_:msgID:token:texts:replaceKey:)`` writes.
    static func length(_ parts: [Part], msgID: String, token: String, texts: NotificationText, replaceKey: String) -> Int {
        var count = 0
        for part in parts {
            switch part {
            case .bytes(let bytes): count &+= bytes.count
            case .msgID: count &+= msgID.utf8.count
            case .token: count &+= token.utf8.count
            case .text(let index): count &+= text(index, of: texts)?.utf8.count ?? 0
            case .replaceKey: count &+= replaceKey.utf8.count
            }
        }
        return count
    }

    /// ``splice(_:msgID:token:texts:replaceKey:)`` written straight into a string (the URL, a
    /// header value: one allocation, not a byte array and then a string).
    static func spliceString(_ parts: [Part], msgID: String, token: String, texts: NotificationText, replaceKey: String) -> String {
        let count = length(parts, msgID: msgID, token: token, texts: texts, replaceKey: replaceKey)
        return String(unsafeUninitializedCapacity: count) { out in
            var used = 0
            func put(_ bytes: UnsafeBufferPointer<UInt8>) {
                for byte in bytes { out[used] = byte; used += 1 }
            }
            func put(_ value: String) {
                var value = value
                value.withUTF8 { put($0) }
            }
            for part in parts {
                switch part {
                case .bytes(let bytes): bytes.withUnsafeBufferPointer { put($0) }
                case .msgID: put(msgID)
                case .token: put(token)
                case .text(let index): if let value = text(index, of: texts) { put(value) }
                case .replaceKey: put(replaceKey)
                }
            }
            return used
        }
    }

    /// The string's bytes read in place (`utf8.span`), as JSONWriter does: appending a
    /// `String.UTF8View` goes through the generic sequence path.
    private static func append(_ value: String, to out: inout [UInt8]) {
        let utf8 = value.utf8.span
        out.append(addingCapacity: utf8.count) { span in
            for index in utf8.indices { span.append(utf8[index]) }
        }
    }
}
