import Foundation
import PushCore
import PushEncoding
import PushProviders

/// Draws an accepted request the way the device would (docs/payloads.md "Where each SDK field travels"):
/// pure, request in, ``InboxMessage`` out. Texts are shown exactly as sent (a text
/// the worker cut to fit its budget keeps its "…"; nothing is cut again here).
///
/// Per surface (docs/sandbox.md "Inbox"):
///
/// | surface | buttons shown | image | icon |
/// |---|---|---|---|
/// | iOS | `custom.b`, up to 4, when `mutable-content` lets the SDK's extension register the category | `custom.m` with `mutable-content` | the app's |
/// | Android | `on.actions`, up to 3 | `on.imageURL` | `on.largeIcon`, small icon `on.smallIcon` |
/// | Chrome / Edge | `actions`, up to 2 (`Notification.maxActions`) | `image` | `icon` |
/// | Firefox | none | none | `icon` |
/// | Safari | none | none | the site's |
enum InboxDrawing {
    static let iosMaximumButtons = 4
    static let androidMaximumButtons = 3
    static let chromeMaximumButtons = 2

    /// - Parameter keyring: the msgId keys (`--msgid-keys`, `PUSHWORKER_MSGID_KEYS`); without
    ///   them a msgId is decoded but not verified.
    static func draw(_ record: InboxRecord, keyring: MsgIDKeyring?) -> InboxMessage {
        var message = InboxMessage(record: record)
        guard let payload = JSONValue.parse(record.body), payload.objectValue != nil else {
            message.problem = "the body is not a JSON object"
            message.token = token(record, payload: nil)
            return message
        }
        switch record.platform {
        case "ios": drawAPNS(payload, into: &message)
        case "android": drawFCM(payload, into: &message)
        case "web": drawWebPush(payload, into: &message)
        case "huawei": drawHMS(payload, into: &message)
        default: message.problem = "unknown platform"
        }
        message.token = token(record, payload: payload)
        if let msgID = message.msgID, let decoded = MsgID.decode(msgID) {
            let isValid = keyring.map { MsgID.verify(msgID, keyring: $0) != nil }
            message.decodedMsgID = InboxMsgID(keyID: decoded.keyID, fields: decoded.fields, isValid: isValid)
            message.app = decoded.fields.appID
            if message.campaign == nil { message.campaign = decoded.fields.campaignID }
        }
        if message.app == nil { message.app = fallbackApp(record) }
        return message
    }

    // MARK: APNs

    private static func drawAPNS(_ payload: JSONValue, into message: inout InboxMessage) {
        if message.record.header("apns-push-type") == LiveActivity.pushType {
            return drawLiveActivity(payload, into: &message)
        }
        let aps = payload["aps"]
        let custom = payload["custom"]
        message.msgID = custom?["i"]?.stringValue
        message.campaign = custom?["c"]?.stringValue
        message.language = custom?["l"]?.stringValue
        message.url = custom?["u"]?.stringValue
        if let data = custom?["a"]?.objectValue?.members {
            message.data = stringPairs(data)
        } else if let members = payload.objectValue?.members {
            // additionalDataAtRoot (docs/payloads.md "Where each SDK field travels"): the root keys other than aps and custom.
            message.data = stringPairs(members.filter { $0.key != "aps" && $0.key != "custom" })
        }

        var display = InboxDisplay(surface: "ios", label: "iOS")
        display.appName = message.record.header("apns-topic")
        let alert = aps?["alert"]
        if let text = alert?.stringValue {
            display.body = text
        } else if let alert {
            display.title = alert["title"]?.stringValue
            display.subtitle = alert["subtitle"]?.stringValue
            display.body = alert["body"]?.stringValue
            display.titleLocalization = localization(alert["title-loc-key"], alert["title-loc-args"])
            display.bodyLocalization = localization(alert["loc-key"], alert["loc-args"])
        }
        if let badge = aps?["badge"]?.numberValue {
            display.badge = integerText(badge)
        } else if let increment = custom?["bi"]?.numberValue {
            display.badge = "+" + integerText(increment)
        }
        display.sound = soundName(aps?["sound"])
        display.group = aps?["thread-id"]?.stringValue
        display.category = aps?["category"]?.stringValue
        display.interruptionLevel = aps?["interruption-level"]?.stringValue
        let isMutable = aps?["mutable-content"]?.numberValue == 1
        let hasAlert = alert != nil
        let contentAvailable = aps?["content-available"]?.numberValue == 1
        if !hasAlert && display.sound == nil && display.badge == nil {
            display.isSilent = true
            display.notes.append(contentAvailable ? "background push: the app is woken, nothing is shown" : "nothing to show (no alert, sound or badge)")
        }
        if let image = custom?["m"]?.stringValue {
            if isMutable {
                display.imageURL = image
                display.notes.append("image attached by the SDK's notification service extension")
            } else {
                display.notes.append("image not attached: needs mutable-content")
            }
        }
        let buttons = (custom?["b"]?.arrayValue ?? []).compactMap { item -> InboxButton? in
            guard let id = item["i"]?.stringValue, let title = item["n"]?.stringValue else { return nil }
            return InboxButton(id: id, title: title, url: item["u"]?.stringValue ?? message.url)
        }
        if !buttons.isEmpty {
            if isMutable {
                display.buttons = Array(buttons.prefix(iosMaximumButtons))
                display.hiddenButtons = Array(buttons.dropFirst(iosMaximumButtons))
            } else {
                display.hiddenButtons = buttons
                display.notes.append("buttons not shown: the SDK registers their category in its extension, which needs mutable-content")
            }
        } else if let category = display.category {
            display.notes.append("category \(category): its buttons are registered by the app, not carried in the payload")
        }
        if display.isSilent { display.buttons = [] }
        message.displays = [display]
    }

    // MARK: Live Activities

    /// An ActivityKit push (docs/providers.md "Live Activities"): the activity's card with its state, not a banner.
    private static func drawLiveActivity(_ payload: JSONValue, into message: inout InboxMessage) {
        let aps = payload["aps"]
        let custom = payload["custom"]
        message.msgID = custom?["i"]?.stringValue
        message.campaign = custom?["c"]?.stringValue
        message.language = custom?["l"]?.stringValue
        var display = InboxDisplay(surface: "ios", label: "iOS Live Activity")
        display.appName = message.record.header("apns-topic").map(APNSTopic.bundleID)
        let event = aps?["event"]?.stringValue ?? "?"
        var activity = InboxLiveActivity(event: event)
        activity.attributesType = aps?["attributes-type"]?.stringValue
        activity.attributes = displayPairs(aps?["attributes"]?.objectValue?.members ?? [])
        activity.contentState = displayPairs(aps?["content-state"]?.objectValue?.members ?? [])
        activity.timestamp = aps?["timestamp"]?.numberValue.flatMap(dateText)
        activity.staleDate = aps?["stale-date"]?.numberValue.flatMap(dateText)
        activity.dismissalDate = aps?["dismissal-date"]?.numberValue.flatMap(dateText)
        activity.relevanceScore = aps?["relevance-score"]?.numberValue.map(integerText)
        activity.requestsPushToken = aps?["input-push-token"]?.numberValue == 1
        // Title and body: strings, or {"loc-key","loc-args"} objects the app localizes.
        if let alert = aps?["alert"] {
            display.title = alert["title"]?.stringValue
            display.body = alert["body"]?.stringValue
            display.titleLocalization = localization(alert["title"]?["loc-key"], alert["title"]?["loc-args"])
            display.bodyLocalization = localization(alert["body"]?["loc-key"], alert["body"]?["loc-args"])
            display.sound = soundName(alert["sound"])
            display.notes.append("alert: lights the screen and shows the expanded presentation")
        }
        switch event {
        case "start": display.notes.append("push-to-start: a new \(activity.attributesType ?? "activity") starts (iOS 17.2+)")
        case "end":
            display.notes.append(activity.dismissalDate.map { "ended: leaves the Lock Screen at \($0)" }
                                 ?? "ended: stays on the Lock Screen up to 4 hours (no dismissal-date)")
        default: break
        }
        if activity.requestsPushToken { display.notes.append("asks for the new activity's update token (input-push-token)") }
        if let stale = activity.staleDate { display.notes.append("shown as out of date after \(stale)") }
        display.liveActivity = activity
        message.displays = [display]
    }

    /// Members for display: strings as they are, other values as compact JSON.
    static func displayPairs(_ members: [(key: String, value: JSONValue)]) -> [KeyValue] {
        members.map { KeyValue($0.key, $0.value.stringValue ?? $0.value.jsonString()) }
    }

    static func dateText(_ seconds: Double) -> String? {
        guard seconds.isFinite, seconds >= 0, seconds < 253_402_300_800 else { return nil }
        return RFC3339Timestamp.format(Date(timeIntervalSince1970: seconds.rounded(.down)))
    }

    // MARK: FCM

    // MARK: Huawei

    /// A Huawei Push Kit batch (docs/providers.md "Huawei Push Kit"): drawn from the SDK keys in `message.data` (a JSON
    /// object's text), as the Android SDK would; one card for the batch's tokens.
    private static func drawHMS(_ payload: JSONValue, into message: inout InboxMessage) {
        let data = payload["message"]?["data"]?.stringValue.flatMap { JSONValue.parse(Array($0.utf8)) }
        drawFCM(.object(JSONObject([(key: "message", value: .object(JSONObject([(key: "data", value: data ?? .null)])))])), into: &message)
        let tokens = payload["message"]?["token"]?.arrayValue?.count ?? 0
        for index in message.displays.indices {
            message.displays[index].label = "Huawei"
            if tokens > 1 { message.displays[index].notes.append("one request for \(tokens) devices") }
        }
    }

    private static func drawFCM(_ payload: JSONValue, into message: inout InboxMessage) {
        guard let data = payload["message"]?["data"]?.objectValue?.members else {
            if payload["message"]?["notification"] != nil {
                message.problem = "a notification message: drawn by the system, not by the SDK (pushworker sends data messages)"
            }
            message.displays = [InboxDisplay(surface: "android", label: "Android", isSilent: true,
                                             notes: ["no message.data: nothing for the SDK to draw"])]
            return
        }
        var sdk: [String: String] = [:]
        for (key, value) in data {
            guard let text = value.stringValue else { continue }
            if key.hasPrefix("on.") {
                sdk[key] = text
            } else {
                message.data.append((key: key, value: text))
            }
        }
        message.msgID = sdk[FCMDataKey.msgID]
        message.campaign = sdk[FCMDataKey.campaignID]
        message.language = sdk[FCMDataKey.language]
        message.url = sdk[FCMDataKey.url]

        var display = InboxDisplay(surface: "android", label: "Android")
        display.title = sdk[FCMDataKey.title]
        display.subtitle = sdk[FCMDataKey.subtitle]
        display.body = sdk[FCMDataKey.body]
        display.imageURL = sdk[FCMDataKey.imageURL]
        display.iconURL = sdk[FCMDataKey.largeIcon]
        display.smallIcon = sdk[FCMDataKey.smallIcon]
        display.accentColor = sdk[FCMDataKey.accentColor].flatMap(cssColor(argb:))
        display.sound = sdk[FCMDataKey.sound]
        display.group = sdk[FCMDataKey.groupKey]
        display.groupMessage = sdk[FCMDataKey.groupMessage]
        display.channel = sdk[FCMDataKey.channelID]
        if let badge = sdk[FCMDataKey.badge] {
            display.badge = badge
        } else if let increment = sdk[FCMDataKey.badgeIncrement] {
            display.badge = "+" + increment
        }
        if display.title == nil && display.body == nil {
            display.isSilent = true
            display.notes.append("data only: the SDK hands it to the app without drawing")
        }
        if let accent = sdk[FCMDataKey.accentColor], display.accentColor == nil {
            display.notes.append("accent colour \(accent) is not ARGB hex")
        }
        if let visibility = sdk[FCMDataKey.visibility] {
            display.notes.append("lock screen: " + (["1": "public", "0": "private", "-1": "secret"][visibility] ?? visibility))
        }
        if let priority = sdk[FCMDataKey.displayPriority] { display.notes.append("display priority \(priority)") }
        if let collapse = sdk[FCMDataKey.collapseID] { display.notes.append("replaces a shown notification with collapse id \(collapse)") }
        // docs/providers.md "FCM topics and conditions": one request, fanned out by FCM to every subscribed device.
        if let topic = payload["message"]?["topic"]?.stringValue {
            message.audience = "topic " + topic
            display.notes.append("topic message: every device subscribed to \(topic) shows it")
        } else if let condition = payload["message"]?["condition"]?.stringValue {
            message.audience = "condition " + condition
            display.notes.append("condition message: every device whose topics satisfy \(condition) shows it")
        }
        var buttons: [InboxButton] = []
        if let actions = sdk[FCMDataKey.actions] {
            if let list = JSONValue.parse(actions)?.arrayValue {
                buttons = list.compactMap { item in
                    guard let id = item["id"]?.stringValue, let title = item["title"]?.stringValue else { return nil }
                    return InboxButton(id: id, title: title, url: item["url"]?.stringValue ?? message.url)
                }
            } else {
                display.notes.append("on.actions is not a JSON array: no buttons")
            }
        }
        if !display.isSilent {
            display.buttons = Array(buttons.prefix(androidMaximumButtons))
            display.hiddenButtons = Array(buttons.dropFirst(androidMaximumButtons))
        } else {
            display.hiddenButtons = buttons
        }
        message.displays = [display]
    }

    // MARK: Web Push

    private static func drawWebPush(_ payload: JSONValue, into message: inout InboxMessage) {
        message.msgID = payload["msgId"]?.stringValue
        message.campaign = payload["campaignId"]?.stringValue
        message.language = payload["lang"]?.stringValue
        var buttonURLs: [String: String] = [:]
        for (key, value) in payload["data"]?.objectValue?.members ?? [] {
            guard let text = value.stringValue else { continue }
            if key == "url" {
                message.url = text
            } else if key.hasPrefix("a:") {
                buttonURLs[String(key.dropFirst(2))] = text
            } else {
                message.data.append((key: key, value: text))
            }
        }
        let buttons = (payload["actions"]?.arrayValue ?? []).compactMap { item -> InboxButton? in
            guard let id = item["action"]?.stringValue, let title = item["title"]?.stringValue else { return nil }
            return InboxButton(id: id, title: title, url: buttonURLs[id] ?? message.url)
        }
        var base = InboxDisplay(surface: "chrome", label: "Chrome / Edge")
        base.title = payload["title"]?.stringValue
        base.body = payload["body"]?.stringValue
        base.group = payload["tag"]?.stringValue
        if base.title == nil { base.notes.append("no title: the service worker has nothing to show") }
        if payload["requireInteraction"] == .bool(true) { base.notes.append("stays on screen until pressed (requireInteraction)") }

        var chrome = base
        chrome.iconURL = payload["icon"]?.stringValue
        chrome.imageURL = payload["image"]?.stringValue
        chrome.smallIcon = payload["badge"]?.stringValue
        chrome.buttons = Array(buttons.prefix(chromeMaximumButtons))
        chrome.hiddenButtons = Array(buttons.dropFirst(chromeMaximumButtons))

        var firefox = base
        firefox.surface = "firefox"
        firefox.label = "Firefox"
        firefox.iconURL = payload["icon"]?.stringValue
        firefox.hiddenButtons = buttons
        if payload["image"] != nil { firefox.notes.append("Firefox shows no image") }
        if !buttons.isEmpty { firefox.notes.append("Firefox shows no action buttons") }

        var safari = base
        safari.surface = "safari"
        safari.label = "Safari"
        safari.hiddenButtons = buttons
        safari.notes.append("Safari shows the site's icon, no image and no action buttons")

        message.displays = [chrome, firefox, safari]
        let record = message.record
        // A subscription endpoint may name its browser (`/wp/<id>?browser=safari`, docs/sandbox.md):
        // that browser's drawing comes first (the tab the page opens on), marked as the one subscribed.
        if let browser = record.queryValue("browser").map(webSurface),
           let index = message.displays.firstIndex(where: { $0.surface == browser }) {
            var subscribed = message.displays.remove(at: index)
            subscribed.notes.insert("the subscription is \(subscribed.label)'s (endpoint ?browser=)", at: 0)
            message.displays.insert(subscribed, at: 0)
        }
    }

    /// The Web surface of a `browser` name: `edge` draws as Chrome; anything unknown is nil.
    static func webSurface(_ browser: String) -> String {
        switch browser.lowercased() {
        case "chrome", "edge": "chrome"
        case "firefox": "firefox"
        case "safari": "safari"
        default: ""
        }
    }

    // MARK: Helpers

    /// The recipient's address: the APNs device token, FCM `message.token`, the Web Push subscription id.
    static func token(_ record: InboxRecord, payload: JSONValue?) -> String? {
        let path = record.pathWithoutQuery
        switch record.platform {
        case "ios": return path.hasPrefix("/3/device/") ? String(path.dropFirst("/3/device/".count)) : nil
        case "android": return payload?["message"]?["token"]?.stringValue
        case "huawei": return payload?["message"]?["token"]?.arrayValue?.first?.stringValue
        case "web": return path.hasPrefix("/wp/") ? String(path.dropFirst("/wp/".count)) : nil
        default: return nil
        }
    }

    /// The app when the msgId does not name it: the APNs topic, the FCM project.
    static func fallbackApp(_ record: InboxRecord) -> String? {
        switch record.platform {
        case "ios": return record.header("apns-topic").map(APNSTopic.bundleID)
        case "android":
            let parts = record.pathWithoutQuery.split(separator: "/")
            guard parts.count >= 3, parts[1] == "projects" else { return nil }
            let project = parts[2]
            return project.hasPrefix("sandbox-") ? String(project.dropFirst("sandbox-".count)) : String(project)
        default: return nil
        }
    }

    static func localization(_ key: JSONValue?, _ arguments: JSONValue?) -> String? {
        guard let key = key?.stringValue else { return nil }
        let values = (arguments?.arrayValue ?? []).compactMap(\.stringValue)
        return values.isEmpty ? key : "\(key) \(values.map { "“\($0)”" }.joined(separator: ", "))"
    }

    /// `aps.sound`: a name, or the critical-alert dictionary `{name, critical, volume}`.
    static func soundName(_ sound: JSONValue?) -> String? {
        if let name = sound?.stringValue { return name }
        if let name = sound?["name"]?.stringValue { return sound?["critical"]?.numberValue == 1 ? "\(name) (critical)" : name }
        return nil
    }

    static func integerText(_ number: Double) -> String {
        number.rounded() == number && abs(number) < 1e15 ? String(Int(number)) : String(number)
    }

    /// `AARRGGBB` (or `RRGGBB`, optional `#`) → `#RRGGBB` / `#RRGGBBAA`; nil if not hex.
    static func cssColor(argb: String) -> String? {
        var hex = Substring(argb)
        if hex.hasPrefix("#") { hex = hex.dropFirst() }
        guard hex.count == 8 || hex.count == 6, hex.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x46).contains($0) || (0x61...0x66).contains($0) }) else {
            return nil
        }
        let text = hex.uppercased()
        if text.count == 6 { return "#" + text }
        let alpha = text.prefix(2), rgb = text.dropFirst(2)
        return alpha == "FF" ? "#\(rgb)" : "#\(rgb)\(alpha)"
    }

    static func stringPairs(_ members: [(key: String, value: JSONValue)]) -> [(key: String, value: String)] {
        members.compactMap { key, value in value.stringValue.map { (key: key, value: $0) } }
    }
}

/// Topic helpers shared with the APNs emulator.
package enum APNSTopic {
    /// `com.example.app.push-type.liveactivity` → `com.example.app`.
    package static func bundleID(_ topic: String) -> String {
        topic.hasSuffix(LiveActivity.topicSuffix) ? String(topic.dropLast(LiveActivity.topicSuffix.count)) : topic
    }
}

extension InboxRecord {
    /// The first value of header `name` (lower-case).
    func header(_ name: String) -> String? {
        for header in headers where header.name == name { return header.value }
        return nil
    }

    var pathWithoutQuery: Substring {
        if let mark = path.firstIndex(of: "?") { return path[..<mark] }
        return path[...]
    }

    /// The value of `name=` in the path's query (as sent, not percent-decoded), or nil.
    func queryValue(_ name: String) -> String? {
        guard let mark = path.firstIndex(of: "?") else { return nil }
        for pair in path[path.index(after: mark)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.count == 2, parts[0] == name { return String(parts[1]) }
        }
        return nil
    }
}
