import Foundation

/// Decodes and validates a fan-out job v1 (DESIGN §3) from Kafka message bytes.
///
/// Whole-job rules (DESIGN §15 "Job vs recipient errors") throw a ``JobValidationError``
/// naming the first offending path. Recipient problems never throw: recipients are decoded
/// leniently and rejected one by one when resolved. Unknown members are ignored; `null` counts
/// as absent for optional members.
public enum JobDecoder {
    /// Maximum total bytes of `data` keys + values (FCM's limit on a data message's payload).
    public static let maxDataBytes = 2048
    /// Maximum `collapseId` bytes (APNs `apns-collapse-id`).
    public static let maxCollapseIDBytes = 64
    /// Maximum web `topic` characters (RFC 8030 §5.4).
    public static let maxTopicLength = 32
    /// Maximum actions per language.
    public static let maxActions = 3

    public static func decode(_ bytes: [UInt8], maxBytes: Int = JSONParser.defaultMaxBytes) throws(JobValidationError) -> FanOutJob {
        let document: JSONValue
        do {
            document = try JSONParser.parse(bytes, maxBytes: maxBytes)
        } catch {
            throw JobValidationError(path: "$", reason: "invalid JSON: \(error)")
        }
        return try decode(document)
    }

    public static func decode(_ document: JSONValue) throws(JobValidationError) -> FanOutJob {
        guard case .object(let rootObject) = document else {
            throw JobValidationError(path: "$", reason: "expected an object, got \(document.typeName)")
        }
        let root = JobMembers(rootObject, path: "$")

        guard let version = try root.int("schemaVersion") else { throw root.error("schemaVersion", "required") }
        guard version == 1 else { throw root.error("schemaVersion", "unsupported version \(version), expected 1") }
        let jobID = try root.requiredString("jobId")
        let appID = try root.requiredString("appId")
        guard isValidAppID(appID) else {
            throw root.error("appId", "must match [A-Za-z0-9._-]+ and not be \".\" or \"..\"")
        }
        let campaignID = try root.requiredString("campaignId")
        let variant = try root.string("variant")
        let createdAt = try root.date("createdAt")
        let expiresAt = try root.date("expiresAt")
        let priority: DeliveryPriority
        switch try root.string("priority") {
        case nil: priority = .high
        case let text?:
            guard let known = DeliveryPriority(rawValue: text) else { throw root.error("priority", "must be \"high\" or \"normal\"") }
            priority = known
        }
        let ttlSeconds = try root.int("ttlSeconds", in: 0...Int(Int32.max))
        let collapseIDText = try root.string("collapseId")
        let collapseID = collapseIDText?.isEmpty == true ? nil : collapseIDText
        if let collapseID, collapseID.utf8.count > maxCollapseIDBytes {
            throw root.error("collapseId", "longer than \(maxCollapseIDBytes) bytes")
        }
        // It travels as the `apns-collapse-id` header: control characters (CR, LF, NUL …) would
        // split or end the header (RFC 9110 §5.5 field values), so the job is invalid as a whole.
        if let collapseID, collapseID.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
            throw root.error("collapseId", "must not contain control characters")
        }
        let throttlePerMinute = try root.int("throttlePerMinute", in: 1...Int(Int32.max))
        let attempt = try root.int("attempt", in: 0...10_000) ?? 0
        let notBefore = try root.date("notBefore")

        guard let contentMembers = try root.object("content") else { throw root.error("content", "required") }
        let content = try decodeContent(contentMembers)
        let data = try decodeData(root.object("data"))
        let ios = try decodeIOS(root.object("ios"))
        let android = try decodeAndroid(root.object("android"))
        let web = try decodeWeb(root.object("web"))

        if let defaultContent = content.defaultContent {
            let hasText = [defaultContent.title, defaultContent.subtitle, defaultContent.body]
                .contains { !($0 ?? "").isEmpty }
            // A Live Activity update or end may carry no alert; a start needs one (DESIGN §16).
            if !hasText && ios.locKey == nil && ios.titleLocKey == nil && !ios.contentAvailable && ios.liveActivity == nil {
                throw JobValidationError(path: JobMembers.path(contentMembers.path + ".languages", content.defaultLanguage),
                                         reason: "no text: needs a title or body, ios.locKey/titleLocKey, or ios.contentAvailable")
            }
            if ios.liveActivity?.event == .start, !hasText, ios.locKey == nil, ios.titleLocKey == nil {
                throw JobValidationError(path: "$.ios.liveActivity.event",
                                         reason: "start needs alert text: a title or body in the default language, or ios.locKey/titleLocKey")
            }
        }

        guard let recipientValues = try root.array("recipients") else { throw root.error("recipients", "required") }
        var recipients: [Recipient] = []
        recipients.reserveCapacity(recipientValues.count)
        for (position, value) in recipientValues.enumerated() {
            guard case .object(let object) = value else {
                throw JobValidationError(path: "$.recipients[\(position)]", reason: "expected an object, got \(value.typeName)")
            }
            recipients.append(decodeRecipient(object, source: value))
        }

        return FanOutJob(schemaVersion: version, jobID: jobID, appID: appID, campaignID: campaignID, variant: variant,
                         createdAt: createdAt, expiresAt: expiresAt, priority: priority, ttlSeconds: ttlSeconds,
                         collapseID: collapseID, throttlePerMinute: throttlePerMinute, content: content, data: data,
                         ios: ios, android: android, web: web, recipients: recipients, attempt: attempt,
                         notBefore: notBefore, document: document)
    }

    /// `[A-Za-z0-9._-]+`, not `.` or `..` (it names a folder under the credentials directory).
    public static func isValidAppID(_ appID: String) -> Bool {
        guard !appID.isEmpty, appID != ".", appID != ".." else { return false }
        return appID.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"): true
            default: false
            }
        }
    }

    /// Whether `key` collides with a payload key or an FCM-reserved one (DESIGN §15).
    public static func reservedDataKeyReason(_ key: String) -> String? {
        if key.isEmpty { return "empty key" }
        if key == "url" || key == "aps" || key == "custom" || key.hasPrefix("a:") || key.hasPrefix("on.") {
            return "key collides with a payload key (url, a:*, aps, custom, on.*)"
        }
        if key == "from" || key == "message_type" || key == "collapse_key" || key.hasPrefix("google.") || key.hasPrefix("gcm.") {
            return "key is reserved by FCM (from, message_type, collapse_key, google.*, gcm.*)"
        }
        return nil
    }

    // MARK: - Parts

    private static func decodeContent(_ content: JobMembers) throws(JobValidationError) -> JobContent {
        let defaultLanguage = try content.requiredString("defaultLanguage")
        guard let languages = try content.object("languages") else { throw content.error("languages", "required") }
        var decoded: [LocalizedContent] = []
        var seenTags: Set<String> = []
        for member in languages.object.members {
            let path = JobMembers.path(languages.path, member.key)
            guard !member.key.isEmpty else { throw JobValidationError(path: path, reason: "empty language tag") }
            guard seenTags.insert(member.key.lowercased()).inserted else {
                throw JobValidationError(path: path, reason: "duplicate language tag (tags match case-insensitively)")
            }
            guard case .object(let object) = member.value else {
                throw JobValidationError(path: path, reason: "expected an object, got \(member.value.typeName)")
            }
            decoded.append(try decodeLanguage(JobMembers(object, path: path), tag: member.key))
        }
        guard seenTags.contains(defaultLanguage.lowercased()) else {
            throw content.error("defaultLanguage", "\"\(defaultLanguage)\" is not in content.languages")
        }
        return JobContent(defaultLanguage: defaultLanguage, languages: decoded)
    }

    private static func decodeLanguage(_ language: JobMembers, tag: String) throws(JobValidationError) -> LocalizedContent {
        var actions: [NotificationAction]?
        if let actionValues = try language.array("actions") {
            let actionsPath = JobMembers.path(language.path, "actions")
            guard actionValues.count <= maxActions else {
                throw JobValidationError(path: actionsPath, reason: "more than \(maxActions) actions")
            }
            var list: [NotificationAction] = []
            for (position, value) in actionValues.enumerated() {
                let path = "\(actionsPath)[\(position)]"
                guard case .object(let object) = value else {
                    throw JobValidationError(path: path, reason: "expected an object, got \(value.typeName)")
                }
                let action = JobMembers(object, path: path)
                let id = try action.requiredString("id")
                if list.contains(where: { $0.id == id }) { throw action.error("id", "duplicate action id \"\(id)\"") }
                guard let title = try action.string("title") else { throw action.error("title", "required") }
                list.append(NotificationAction(id: id, title: title, url: try action.string("url")))
            }
            actions = list
        }
        return LocalizedContent(language: tag, title: try language.string("title"), subtitle: try language.string("subtitle"),
                                body: try language.string("body"), url: try language.string("url"),
                                imageURL: try language.string("imageURL"), actions: actions)
    }

    private static func decodeData(_ data: JobMembers?) throws(JobValidationError) -> [KeyValue] {
        guard let data else { return [] }
        var pairs: [KeyValue] = []
        pairs.reserveCapacity(data.object.count)
        var totalBytes = 0
        for member in data.object.members {
            let path = JobMembers.path(data.path, member.key)
            if let reason = reservedDataKeyReason(member.key) { throw JobValidationError(path: path, reason: reason) }
            guard case .string(let value) = member.value else {
                throw JobValidationError(path: path, reason: "data values must be strings, got \(member.value.typeName)")
            }
            totalBytes += member.key.utf8.count + value.utf8.count
            pairs.append(KeyValue(member.key, value))
        }
        guard totalBytes <= maxDataBytes else {
            throw JobValidationError(path: data.path, reason: "keys + values are \(totalBytes) bytes, over \(maxDataBytes)")
        }
        return pairs
    }

    private static func decodeIOS(_ ios: JobMembers?) throws(JobValidationError) -> IOSOptions {
        guard let ios else { return IOSOptions() }
        var options = IOSOptions()
        options.sound = try ios.string("sound")
        switch ios.object.members.first(where: { $0.key == "badge" })?.value {
        case nil, .null?: break
        case .number?:
            options.badge = IOSOptions.Badge(mode: .set, value: try ios.int("badge", in: 0...Int(Int32.max)) ?? 0)
        case .object(let object)?:
            let badge = JobMembers(object, path: JobMembers.path(ios.path, "badge"))
            let modeText = try badge.string("mode") ?? "set"
            guard let mode = IOSOptions.BadgeMode(rawValue: modeText) else {
                throw badge.error("mode", "must be \"set\" or \"increase\"")
            }
            guard let value = try badge.int("value", in: Int(Int32.min)...Int(Int32.max)) else { throw badge.error("value", "required") }
            if mode == .set && value < 0 { throw badge.error("value", "must be ≥ 0 when mode is \"set\"") }
            options.badge = IOSOptions.Badge(mode: mode, value: value)
        case let other?:
            throw ios.error("badge", "expected an object or a number, got \(other.typeName)")
        }
        options.threadID = try ios.string("threadId")
        options.category = try ios.string("category")
        if let level = try ios.string("interruptionLevel") {
            guard ["passive", "active", "time-sensitive", "critical"].contains(level) else {
                throw ios.error("interruptionLevel", "must be passive, active, time-sensitive or critical")
            }
            options.interruptionLevel = level
        }
        if let score = try ios.double("relevanceScore") {
            guard score >= 0 && score <= 1 else { throw ios.error("relevanceScore", "must be between 0 and 1") }
            options.relevanceScore = score
        }
        options.contentAvailable = try ios.bool("contentAvailable") ?? false
        options.mutableContent = try ios.bool("mutableContent") ?? false
        options.locKey = try ios.string("locKey")
        options.locArgs = try ios.stringArray("locArgs") ?? []
        options.titleLocKey = try ios.string("titleLocKey")
        options.titleLocArgs = try ios.stringArray("titleLocArgs") ?? []
        options.liveActivity = try decodeLiveActivity(ios.object("liveActivity"))
        return options
    }

    /// The members `ios.liveActivity` knows (DESIGN §16); `ios` itself gains `liveActivity`.
    static let liveActivityFields = ["event", "contentState", "attributesType", "attributes", "staleDate", "dismissalDate",
                                     "relevanceScore", "inputPushToken", "timestamp"]
    /// Latest date accepted as Unix seconds (9999-12-31T23:59:59Z).
    static let maxUnixSeconds = 253_402_300_799

    /// `ios.liveActivity`: every problem is a job error (a bad section would fail every recipient).
    private static func decodeLiveActivity(_ section: JobMembers?) throws(JobValidationError) -> LiveActivity? {
        guard let section else { return nil }
        guard let eventText = try section.string("event") else { throw section.error("event", "required") }
        guard let event = LiveActivity.Event(rawValue: eventText) else { throw section.error("event", "must be start, update or end") }
        // Apple: content-state is the activity's state for every event, the final one for end.
        guard let contentState = try section.object("contentState") else { throw section.error("contentState", "required") }
        var activity = LiveActivity(event: event, contentState: contentState.object)
        activity.attributesType = try section.string("attributesType")
        activity.attributes = try section.object("attributes")?.object
        if event == .start {
            guard let type = activity.attributesType, !type.isEmpty else { throw section.error("attributesType", "required for start") }
            guard activity.attributes != nil else { throw section.error("attributes", "required for start") }
        }
        activity.staleDate = try unixSeconds(section, "staleDate")
        activity.dismissalDate = try unixSeconds(section, "dismissalDate")
        if activity.dismissalDate != nil && event != .end { throw section.error("dismissalDate", "only for end") }
        if let score = try section.double("relevanceScore") {
            guard score.isFinite, score >= 0 else { throw section.error("relevanceScore", "must be a number ≥ 0") }
            activity.relevanceScore = score
        }
        activity.inputPushToken = try section.bool("inputPushToken") ?? false
        if activity.inputPushToken && event != .start { throw section.error("inputPushToken", "only for start") }
        activity.timestamp = try unixSeconds(section, "timestamp")
        return activity
    }

    /// A date as an RFC 3339 string or Unix seconds (a number), as whole Unix seconds.
    private static func unixSeconds(_ members: JobMembers, _ key: String) throws(JobValidationError) -> Int? {
        let seconds: Double
        switch members.object[key] {
        case nil, .null?: return nil
        case .string(let text)?:
            guard let date = RFC3339Timestamp.parse(text) else { throw members.error(key, "not an RFC 3339 date-time or Unix seconds") }
            seconds = date.timeIntervalSince1970
        case .number(let number)?:
            seconds = number.double
        case let other?:
            throw members.error(key, "expected an RFC 3339 string or Unix seconds, got \(other.typeName)")
        }
        guard seconds.isFinite, seconds >= 0, seconds <= Double(maxUnixSeconds) else {
            throw members.error(key, "must be between 1970 and 9999")
        }
        return Int(seconds.rounded(.down))
    }

    private static func decodeAndroid(_ android: JobMembers?) throws(JobValidationError) -> AndroidOptions {
        guard let android else { return AndroidOptions() }
        var options = AndroidOptions()
        options.channelID = try android.string("channelId")
        options.priority = try android.int("priority", in: -2...2)
        options.smallIcon = try android.string("smallIcon")
        options.largeIcon = try android.string("largeIcon")
        options.accentColor = try android.string("accentColor")
        options.ledColor = try android.string("ledColor")
        options.visibility = try android.int("visibility", in: -1...1)
        options.groupKey = try android.string("groupKey")
        options.groupMessage = try android.string("groupMessage")
        options.sound = try android.string("sound")
        return options
    }

    private static func decodeWeb(_ web: JobMembers?) throws(JobValidationError) -> WebOptions {
        guard let web else { return WebOptions() }
        var options = WebOptions()
        options.iconURL = try web.string("iconURL")
        options.badgeURL = try web.string("badgeURL")
        options.requireInteraction = try web.bool("requireInteraction") ?? false
        if let urgency = try web.string("urgency") {
            guard ["very-low", "low", "normal", "high"].contains(urgency) else {
                throw web.error("urgency", "must be very-low, low, normal or high")
            }
            options.urgency = urgency
        }
        if let topic = try web.string("topic") {
            guard !topic.isEmpty, topic.unicodeScalars.count <= maxTopicLength else {
                throw web.error("topic", "must be 1 to \(maxTopicLength) characters")
            }
            guard topic.utf8.allSatisfy(Base64URL.isAlphabetByte) else {
                throw web.error("topic", "must use only the base64url alphabet [A-Za-z0-9_-]")
            }
            options.topic = topic
        }
        return options
    }

    /// Lenient: wrong types count as absent, nothing throws.
    static func decodeRecipient(_ object: JSONObject, source: JSONValue) -> Recipient {
        var subscription: Recipient.Subscription?
        if case .object(let subscriptionObject)? = object["subscription"] {
            let keys = subscriptionObject["keys"]
            subscription = Recipient.Subscription(endpoint: subscriptionObject["endpoint"]?.stringValue,
                                                  p256dh: keys?["p256dh"]?.stringValue, auth: keys?["auth"]?.stringValue)
        }
        var properties: [String: String] = [:]
        if case .object(let propertyObject)? = object["properties"] {
            properties.reserveCapacity(propertyObject.count)
            for member in propertyObject.members {
                if let text = scalarText(member.value) { properties[member.key] = text }
            }
        }
        return Recipient(userID: object["userId"].flatMap(scalarText),
                         subscriptionID: object["subscriptionId"].flatMap(scalarText) ?? "",
                         platformName: object["platform"]?.stringValue, token: object["token"]?.stringValue,
                         language: object["language"]?.stringValue, browser: object["browser"]?.stringValue,
                         subscription: subscription, properties: properties,
                         tokenUpdatedAt: object["tokenUpdatedAt"]?.stringValue.flatMap(RFC3339Timestamp.parse),
                         source: source)
    }

    /// Strings as they are, numbers as their literal, booleans as `true`/`false`; else nil.
    private static func scalarText(_ value: JSONValue) -> String? {
        switch value {
        case .string(let text): text
        case .number(let number): number.literal
        case .bool(let flag): flag ? "true" : "false"
        default: nil
        }
    }
}

/// Typed, path-aware access to one JSON object's members.
struct JobMembers {
    let object: JSONObject
    let path: String

    init(_ object: JSONObject, path: String) { self.object = object; self.path = path }

    /// `parent.key`, or `parent["key"]` when the key is not a plain name.
    static func path(_ parent: String, _ key: String) -> String {
        let isPlain = !key.isEmpty && key.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"): true
            default: false
            }
        }
        return isPlain ? "\(parent).\(key)" : "\(parent)[\(JSONValue.string(key).jsonString())]"
    }

    func error(_ key: String, _ reason: String) -> JobValidationError {
        JobValidationError(path: JobMembers.path(path, key), reason: reason)
    }

    private func present(_ key: String) -> JSONValue? {
        guard let value = object[key], !value.isNull else { return nil }
        return value
    }

    private func typeError(_ key: String, _ expected: String, _ value: JSONValue) -> JobValidationError {
        error(key, "expected \(expected), got \(value.typeName)")
    }

    func string(_ key: String) throws(JobValidationError) -> String? {
        guard let value = present(key) else { return nil }
        guard case .string(let text) = value else { throw typeError(key, "a string", value) }
        return text
    }

    func requiredString(_ key: String) throws(JobValidationError) -> String {
        guard let text = try string(key) else { throw error(key, "required") }
        guard !text.isEmpty else { throw error(key, "must not be empty") }
        return text
    }

    func int(_ key: String, in range: ClosedRange<Int>? = nil) throws(JobValidationError) -> Int? {
        guard let value = present(key) else { return nil }
        guard case .number(let number) = value else { throw typeError(key, "an integer", value) }
        guard let integer = number.intValue else { throw error(key, "expected an integer, got \(number.literal)") }
        if let range, !range.contains(integer) {
            throw error(key, "must be between \(range.lowerBound) and \(range.upperBound)")
        }
        return integer
    }

    func double(_ key: String) throws(JobValidationError) -> Double? {
        guard let value = present(key) else { return nil }
        guard case .number(let number) = value else { throw typeError(key, "a number", value) }
        return number.double
    }

    func bool(_ key: String) throws(JobValidationError) -> Bool? {
        guard let value = present(key) else { return nil }
        guard case .bool(let flag) = value else { throw typeError(key, "a boolean", value) }
        return flag
    }

    func date(_ key: String) throws(JobValidationError) -> Date? {
        guard let text = try string(key) else { return nil }
        guard let date = RFC3339Timestamp.parse(text) else { throw error(key, "not an RFC 3339 date-time") }
        return date
    }

    func array(_ key: String) throws(JobValidationError) -> [JSONValue]? {
        guard let value = present(key) else { return nil }
        guard case .array(let elements) = value else { throw typeError(key, "an array", value) }
        return elements
    }

    func stringArray(_ key: String) throws(JobValidationError) -> [String]? {
        guard let elements = try array(key) else { return nil }
        var strings: [String] = []
        for (position, element) in elements.enumerated() {
            guard case .string(let text) = element else {
                throw JobValidationError(path: "\(JobMembers.path(path, key))[\(position)]",
                                         reason: "expected a string, got \(element.typeName)")
            }
            strings.append(text)
        }
        return strings
    }

    func object(_ key: String) throws(JobValidationError) -> JobMembers? {
        guard let value = present(key) else { return nil }
        guard case .object(let object) = value else { throw typeError(key, "an object", value) }
        return JobMembers(object, path: JobMembers.path(path, key))
    }
}
