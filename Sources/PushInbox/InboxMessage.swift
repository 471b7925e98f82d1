import Foundation
import PushCore
import PushEncoding

/// What the inbox keeps of one accepted request (docs/sandbox.md "Inbox"): the request as the
/// provider saw it, the `authorization` header redacted, the body as JSON text (for Web Push
/// the decrypted plaintext).
package struct InboxRecord: Sendable {
    /// Increasing from 1 in the order messages were accepted; the page's and `/api/press`'s id.
    var id: Int
    /// When the sandbox accepted it, milliseconds since 1970 (UTC).
    var receivedAtMilliseconds: Int64
    /// `ios`, `android` or `web`.
    var platform: String
    var method: String
    var path: String
    /// Lower-case names, in request order; `authorization` keeps only its scheme.
    var headers: [(name: String, value: String)]
    /// The body as JSON text (APNs, FCM: the request body; Web Push: the decrypted plaintext,
    /// or a JSON string when it was not JSON, `null` when there was none).
    var body: [UInt8]
    /// Web Push: the encrypted body's size in bytes.
    var encryptedBytes: Int?

    package init(id: Int = 0, receivedAtMilliseconds: Int64 = 0, platform: String, method: String = "POST", path: String,
                 headers: [(name: String, value: String)], body: [UInt8], encryptedBytes: Int? = nil) {
        self.id = id
        self.receivedAtMilliseconds = receivedAtMilliseconds
        self.platform = platform
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.encryptedBytes = encryptedBytes
    }

    /// Header value that replaces credentials: the scheme, then this.
    static let redacted = "<redacted>"

    /// `value` of an `authorization` header without its credentials (`bearer <redacted>`).
    package static func redactAuthorization(_ value: String) -> String {
        let scheme = value.prefix { $0 != " " }
        return scheme.isEmpty || scheme.count == value.count ? redacted : "\(scheme) \(redacted)"
    }
}

/// The decoded msgId (docs/reference/msgid.md): its fields, and whether its signature verifies under the
/// keys the sandbox was given (nil when it has none: shown as unverified).
struct InboxMsgID: Sendable, Equatable {
    var keyID: String
    var fields: MsgIDFields
    var isValid: Bool?
}

/// An action button as a platform shows it; `url` is where a press leads (docs/payloads.md "The SDK's normalized press": the
/// button's own URL, else the notification's).
struct InboxButton: Sendable, Equatable {
    var id: String
    var title: String
    var url: String?
}

/// An ActivityKit push as the Lock Screen's Live Activity shows it (docs/providers.md "Live Activities"): the event, the
/// dynamic state as key/values, the dates. Values are shown as sent: strings as they are,
/// anything else as its JSON text.
struct InboxLiveActivity: Sendable, Equatable {
    /// `start`, `update` or `end`.
    var event: String
    var attributesType: String?
    var attributes: [KeyValue] = []
    var contentState: [KeyValue] = []
    /// RFC 3339 UTC, from the Unix seconds in the payload.
    var timestamp: String?
    var staleDate: String?
    var dismissalDate: String?
    var relevanceScore: String?
    /// `input-push-token: 1`: the started activity reports its update token.
    var requestsPushToken = false
}

/// One surface drawing one notification: the iOS banner, the Android notification, or a
/// browser's Web notification (Chrome/Edge, Firefox, Safari draw the same payload differently).
struct InboxDisplay: Sendable, Equatable {
    /// `ios`, `android`, `chrome`, `firefox`, `safari`.
    var surface: String
    /// A human label: "iOS", "Android", "Chrome / Edge", "Firefox", "Safari".
    var label: String
    /// Not shown to the user: an iOS background push, an FCM data message with no text.
    var isSilent = false
    var appName: String?
    var title: String?
    var subtitle: String?
    var body: String?
    /// iOS client-side localization (the SDK's contract, docs/payloads.md): `KEY` and its arguments, drawn by the app.
    var titleLocalization: String?
    var bodyLocalization: String?
    /// The big picture / attachment.
    var imageURL: String?
    /// The large icon (Android) or the notification icon (Web).
    var iconURL: String?
    /// Android's small icon resource name, Web's monochrome badge URL.
    var smallIcon: String?
    /// CSS colour (`#RRGGBB` or `#RRGGBBAA`) from Android's ARGB accent colour.
    var accentColor: String?
    /// The app-icon badge: `3` (set) or `+1` (increase).
    var badge: String?
    var sound: String?
    /// iOS `thread-id`, Android group key, Web `tag`.
    var group: String?
    var groupMessage: String?
    var channel: String?
    var category: String?
    var interruptionLevel: String?
    /// The buttons this surface shows, in order.
    var buttons: [InboxButton] = []
    /// Buttons the payload carries that this surface does not show.
    var hiddenButtons: [InboxButton] = []
    /// Facts worth knowing about this drawing ("image attached by the service extension").
    var notes: [String] = []
    /// Set for an ActivityKit push: drawn as a Live Activity, not as a banner.
    var liveActivity: InboxLiveActivity?
}

/// One accepted notification as the inbox page and `GET /api/messages` show it.
struct InboxMessage: Sendable {
    var record: InboxRecord
    var app: String?
    var campaign: String?
    /// The APNs device token, FCM registration token or Web Push subscription id.
    var token: String?
    /// An FCM topic or condition message's audience (docs/providers.md "FCM topics and conditions"): `topic news`,
    /// `condition 'a' in topics && 'b' in topics`; nil for a message to one device.
    var audience: String?
    /// The language the texts were chosen in (`custom.l`, `on.language`, `lang`).
    var language: String?
    var msgID: String?
    var decodedMsgID: InboxMsgID?
    /// The notification's deep link (a body press opens it).
    var url: String?
    /// The campaign's `data` as the SDK hands it to the app.
    var data: [(key: String, value: String)] = []
    /// iOS and Android: one; Web: one per browser family.
    var displays: [InboxDisplay] = []
    /// The body did not parse as the platform's payload: shown raw only.
    var problem: String?

    var id: Int { record.id }
    var platform: String { record.platform }

    /// Whether the message passes `filter`.
    func matches(_ filter: InboxFilter) -> Bool {
        if let platform = filter.platform, platform != record.platform { return false }
        if let app = filter.app, app != self.app { return false }
        if let campaign = filter.campaign, campaign != self.campaign { return false }
        if let token = filter.token {
            guard let own = self.token ?? audience, own.contains(token) else { return false }
        }
        if let query = filter.query, !searchableTexts.contains(where: { InboxFilter.contains($0, query) }) { return false }
        return true
    }

    /// What `?q=` searches: every surface's title, subtitle and body (and loc keys), the app,
    /// campaign, language, token or audience, the msgId and its user and subscription, the deep link.
    var searchableTexts: [String] {
        var texts: [String] = []
        for display in displays {
            for text in [display.title, display.subtitle, display.body, display.titleLocalization, display.bodyLocalization] {
                if let text { texts.append(text) }
            }
        }
        for text in [app, campaign, language, token, audience, msgID, url, decodedMsgID?.fields.userID, decodedMsgID?.fields.subscriptionID] {
            if let text { texts.append(text) }
        }
        return texts
    }

    /// The JSON object of `GET /api/messages` and of the `message` server-sent event.
    func json() -> [UInt8] {
        var json = JSONWriter(capacity: 2048 + record.body.count * 2)
        json.beginObject()
        json.member("id", id)
        json.member("receivedAt", RFC3339Timestamp.format(Date(milliseconds: record.receivedAtMilliseconds), milliseconds: true))
        json.member("platform", platform)
        json.member("app", orNull: app)
        json.member("campaign", orNull: campaign)
        json.member("token", orNull: token)
        json.member("audience", orNull: audience)
        json.member("language", orNull: language)
        json.member("msgId", orNull: msgID)
        json.key("msgIdFields")
        if let decoded = decodedMsgID {
            json.beginObject()
            json.member("keyId", decoded.keyID)
            json.member("appId", decoded.fields.appID)
            json.member("campaignId", decoded.fields.campaignID)
            json.member("userId", orNull: decoded.fields.userID)
            json.member("subscriptionId", decoded.fields.subscriptionID)
            json.member("platform", decoded.fields.platform)
            json.member("variant", orNull: decoded.fields.variant)
            json.key("valid")
            if let valid = decoded.isValid { json.bool(valid) } else { json.null() }
            json.endObject()
        } else {
            json.null()
        }
        json.member("url", orNull: url)
        json.key("data")
        json.beginObject()
        for pair in data { json.member(pair.key, pair.value) }
        json.endObject()
        json.key("displays")
        json.beginArray()
        for display in displays { display.write(to: &json) }
        json.endArray()
        json.member("problem", orNull: problem)
        json.key("request")
        json.beginObject()
        json.member("method", record.method)
        json.member("path", record.path)
        json.key("headers")
        json.beginArray()
        for header in record.headers {
            json.beginArray()
            json.string(header.name)
            json.string(header.value)
            json.endArray()
        }
        json.endArray()
        // The body as text: the page pretty-prints it; a string keeps the event stream one line.
        json.member("body", String(decoding: record.body, as: UTF8.self))
        if let encrypted = record.encryptedBytes { json.member("encryptedBytes", encrypted) }
        json.endObject()
        json.endObject()
        return json.bytes
    }
}

extension InboxDisplay {
    func write(to json: inout JSONWriter) {
        json.beginObject()
        json.member("surface", surface)
        json.member("label", label)
        json.member("silent", isSilent)
        json.member("appName", orNull: appName)
        json.member("title", orNull: title)
        json.member("subtitle", orNull: subtitle)
        json.member("body", orNull: body)
        json.member("titleLocalization", orNull: titleLocalization)
        json.member("bodyLocalization", orNull: bodyLocalization)
        json.member("image", orNull: imageURL)
        json.member("icon", orNull: iconURL)
        json.member("smallIcon", orNull: smallIcon)
        json.member("accentColor", orNull: accentColor)
        json.member("badge", orNull: badge)
        json.member("sound", orNull: sound)
        json.member("group", orNull: group)
        json.member("groupMessage", orNull: groupMessage)
        json.member("channel", orNull: channel)
        json.member("category", orNull: category)
        json.member("interruptionLevel", orNull: interruptionLevel)
        for (name, buttons) in [("buttons", buttons), ("hiddenButtons", hiddenButtons)] {
            json.key(name)
            json.beginArray()
            for button in buttons {
                json.beginObject()
                json.member("id", button.id)
                json.member("title", button.title)
                json.member("url", orNull: button.url)
                json.endObject()
            }
            json.endArray()
        }
        json.member("notes", strings: notes)
        json.key("liveActivity")
        if let activity = liveActivity {
            json.beginObject()
            json.member("event", activity.event)
            json.member("attributesType", orNull: activity.attributesType)
            for (name, pairs) in [("attributes", activity.attributes), ("contentState", activity.contentState)] {
                json.key(name)
                json.beginArray()
                for pair in pairs {
                    json.beginArray()
                    json.string(pair.key)
                    json.string(pair.value)
                    json.endArray()
                }
                json.endArray()
            }
            json.member("timestamp", orNull: activity.timestamp)
            json.member("staleDate", orNull: activity.staleDate)
            json.member("dismissalDate", orNull: activity.dismissalDate)
            json.member("relevanceScore", orNull: activity.relevanceScore)
            json.member("requestsPushToken", activity.requestsPushToken)
            json.endObject()
        } else {
            json.null()
        }
        json.endObject()
    }
}

/// `?platform=&app=&campaign=&token=&q=` of `GET /api/messages` (token matches as a substring of the
/// token, or of the audience of a topic or condition message; `q` as a case-insensitive
/// substring of any of the message's ``InboxMessage/searchableTexts``).
struct InboxFilter: Sendable, Equatable {
    var platform: String?
    var app: String?
    var campaign: String?
    var token: String?
    /// Lower-cased, trimmed; nil when empty.
    var query: String?

    /// Characters `q` may have (longer: 400).
    static let maximumQueryLength = 200

    init(platform: String? = nil, app: String? = nil, campaign: String? = nil, token: String? = nil, query: String? = nil) {
        func value(_ text: String?) -> String? { text.flatMap { $0.isEmpty ? nil : $0 } }
        self.platform = value(platform); self.app = value(app); self.campaign = value(campaign); self.token = value(token)
        self.query = value(query?.trimmingCharacters(in: .whitespacesAndNewlines).lowercased())
    }

    /// Whether `text` contains `query` (already lower-cased), ignoring case.
    static func contains(_ text: String, _ query: String) -> Bool { text.lowercased().contains(query) }
}

extension Date {
    init(milliseconds: Int64) { self.init(timeIntervalSince1970: Double(milliseconds) / 1000) }
}
