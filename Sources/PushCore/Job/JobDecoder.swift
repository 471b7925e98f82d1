import Foundation
import PushEncoding

/// Decodes and validates a fan-out job v1 (docs/reference/job.md) from Kafka message bytes.
///
/// Whole-job rules (docs/reference/job.md) make the job invalid: decoding goes
/// on past a problem, so the ``JobValidationError`` thrown lists every problem of the job at
/// once, each with its JSON path, in document order (the first one is its `path`/`reason`).
/// Recipient problems never throw: recipients are decoded leniently and rejected one by one
/// when resolved. Members are read through the field tables of `JobFields.swift`; unknown
/// members are ignored (``JobLint`` reports them for the CLI); `null` counts as absent for
/// optional members.
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
        let parsed: (value: JSONValue, elementRanges: [Range<Int>])
        do {
            parsed = try JSONParser.parse(bytes, elementRangesOf: JobField.recipients.rawValue, maxBytes: maxBytes)
        } catch {
            throw JobValidationError(path: "$", reason: "invalid JSON: \(error)")
        }
        // Each recipient keeps its bytes of the message (one buffer shared by all), not its tree,
        // so a held job costs little more than its message (docs/performance.md "Memory").
        return try decode(parsed.value, recipientBytes: parsed.elementRanges.isEmpty ? nil : (bytes, parsed.elementRanges))
    }

    /// A retry message's `notBefore`, read without decoding the job (the poll only needs to know
    /// when it is due; the job is decoded once, when it is processed). Nil when absent or unreadable.
    public static func notBefore(_ bytes: [UInt8]) -> Date? {
        guard let parsed = try? JSONParser.parse(bytes, elementRangesOf: JobField.recipients.rawValue),
              case .object(let root) = parsed.value, case .string(let text)? = root["notBefore"] else { return nil }
        return RFC3339Timestamp.parse(text)
    }

    public static func decode(_ document: JSONValue) throws(JobValidationError) -> FanOutJob {
        try decode(document, recipientBytes: nil)
    }

    /// `recipientBytes`: the message and the byte range of each element of its `recipients`,
    /// kept as each recipient's ``Recipient/source`` instead of the element's tree.
    static func decode(_ document: JSONValue, recipientBytes: (message: [UInt8], ranges: [Range<Int>])?) throws(JobValidationError) -> FanOutJob {
        guard case .object(let rootObject) = document else {
            throw JobValidationError(path: "$", reason: "expected an object, got \(document.typeName)")
        }
        let problems = JobProblems()
        let root = JobMembers<JobField>(rootObject, path: "$", problems: problems)

        let version = root.required(.schemaVersion) { root.int($0) }
        if let version, version != 1 {
            // Another version is another format: its other members mean nothing to this decoder.
            root.report(.schemaVersion, "unsupported version \(version), expected 1")
            throw problems.error()
        }
        let jobID = root.requiredString(.jobId)
        let appID = root.requiredString(.appId)
        if let appID, !isValidAppID(appID) {
            root.report(.appId, "must match [A-Za-z0-9._-]+ and not be \".\" or \"..\"")
        }
        let campaignID = root.requiredString(.campaignId)
        let variant = root.string(.variant)
        let createdAt = root.date(.createdAt)
        let expiresAt = root.date(.expiresAt)
        var priority = DeliveryPriority.high
        if let text = root.string(.priority) {
            if let known = DeliveryPriority(rawValue: text) { priority = known } else { root.report(.priority, "must be \"high\" or \"normal\"") }
        }
        let ttlSeconds = root.int(.ttlSeconds, in: 0...Int(Int32.max))
        let collapseIDText = root.string(.collapseId)
        let collapseID = collapseIDText?.isEmpty == true ? nil : collapseIDText
        if let collapseID, collapseID.utf8.count > maxCollapseIDBytes {
            root.report(.collapseId, "longer than \(maxCollapseIDBytes) bytes")
        }
        // It travels as the `apns-collapse-id` header: control characters (CR, LF, NUL …) would
        // split or end the header (RFC 9110 §5.5 field values), so the job is invalid as a whole.
        if let collapseID, collapseID.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
            root.report(.collapseId, "must not contain control characters")
        }
        let throttlePerMinute = root.int(.throttlePerMinute, in: 1...Int(Int32.max))
        let attempt = root.int(.attempt, in: 0...10_000) ?? 0
        let notBefore = root.date(.notBefore)
        let sendBy = root.date(.sendBy)
        let capCategory = root.string(.capCategory)
        if let capCategory, !FrequencyCaps.isValidCategory(capCategory) { root.report(.capCategory, "must match [A-Za-z0-9._-]{1,64}") }
        var lane = JobLane.bulk
        if let text = root.string(.lane) {
            if let known = JobLane(rawValue: text) { lane = known } else { root.report(.lane, "must be \"transactional\" or \"bulk\"") }
        }
        let local = decodeLocalTime(root)

        let contentMembers = root.required(.content) { root.object($0, ContentField.self) }
        let content = contentMembers.map(decodeContent)
        let data = decodeData(root.freeform(.data), problems: problems)
        let ios = decodeIOS(root.object(.ios, IOSField.self))
        let android = decodeAndroid(root.object(.android, AndroidField.self))
        let web = decodeWeb(root.object(.web, WebField.self))

        if let content, let contentMembers, let defaultContent = content.defaultContent {
            let hasText = [defaultContent.title, defaultContent.subtitle, defaultContent.body]
                .contains { !($0 ?? "").isEmpty }
            // A Live Activity update or end may carry no alert; a start needs one (docs/reference/job.md).
            if !hasText && ios.locKey == nil && ios.titleLocKey == nil && !ios.contentAvailable && ios.liveActivity == nil {
                problems.add(path: JobMembers<ContentField>.path(contentMembers.path(.languages), defaultContent.language),
                             reason: "no text: needs a title or body, ios.locKey/titleLocKey, or ios.contentAvailable")
            }
            if ios.liveActivity?.event == .start, !hasText, ios.locKey == nil, ios.titleLocKey == nil {
                problems.add(path: "$.ios.liveActivity.event",
                             reason: "start needs alert text: a title or body in the default language, or ios.locKey/titleLocKey")
            }
        }

        // docs/reference/job.md: exactly one of `recipients` and `audience`.
        let audience = decodeAudience(root)
        let hasAudience = hasAudience(root)
        if hasAudience && root.value(.recipients) != nil {
            root.report(.recipients, "a job has recipients or an audience, not both")
        }
        var recipients: [Recipient] = []
        if !hasAudience, let recipientValues = root.required(.recipients, { root.array($0) }) {
            recipients.reserveCapacity(recipientValues.count)
            let message = recipientBytes?.message ?? []
            let ranges = recipientBytes?.ranges.count == recipientValues.count ? recipientBytes?.ranges ?? [] : []
            for (position, value) in recipientValues.enumerated() {
                guard case .object(let object) = value else {
                    problems.add(path: "$.recipients[\(position)]", reason: "expected an object, got \(value.typeName)")
                    continue
                }
                recipients.append(decodeRecipient(object, source: ranges.isEmpty ? .tree(value) : .bytes(message[ranges[position]])))
            }
        }
        // The job keeps its document without the recipients' trees (`recipients` an empty array
        // in its place, so a retry job writes its members back in the order received).
        var head = rootObject
        if !hasAudience, head[JobField.recipients.rawValue] != nil { head[JobField.recipients.rawValue] = .array([]) }

        guard problems.isEmpty, let jobID, let appID, let campaignID, let content, let version else { throw problems.error() }
        var job = FanOutJob(schemaVersion: version, jobID: jobID, appID: appID, campaignID: campaignID, variant: variant,
                         createdAt: createdAt, expiresAt: expiresAt, priority: priority, ttlSeconds: ttlSeconds,
                         collapseID: collapseID, throttlePerMinute: throttlePerMinute, content: content, data: data,
                         ios: ios, android: android, web: web, recipients: recipients, attempt: attempt,
                         notBefore: notBefore, head: .object(head))
        job.audience = audience
        job.sendBy = sendBy
        job.capCategory = capCategory
        job.lane = lane
        (job.quietHours, job.sendAtLocal, job.timezone) = local
        return job
    }

    /// `quietHours`, `sendAtLocal` and `timezone` (docs/local-time.md): a bad one is a job error.
    private static func decodeLocalTime(_ root: JobMembers<JobField>) -> (QuietHours?, ClockTime?, String?) {
        var quietHours: QuietHours?
        if let section = root.object(.quietHours, QuietHoursField.self) {
            func time(_ field: QuietHoursField) -> ClockTime? {
                guard let text = section.required(field, section.string) else { return nil }
                guard let time = ClockTime(parsing: text) else { section.report(field, "must be HH:MM (00:00 to 23:59)"); return nil }
                return time
            }
            let start = time(.start), end = time(.end)
            if let start, let end {
                quietHours = QuietHours(start: start, end: end)
                if quietHours == nil { section.report(.end, "must differ from start") }
            }
        }
        var sendAtLocal: ClockTime?
        if let text = root.string(.sendAtLocal) {
            sendAtLocal = ClockTime(parsing: text)
            if sendAtLocal == nil { root.report(.sendAtLocal, "must be HH:MM (00:00 to 23:59)") }
        }
        let timezone = root.string(.timezone)
        if let timezone, TimeZone(identifier: timezone) == nil { root.report(.timezone, "not an IANA time zone name (e.g. Europe/Paris)") }
        return (quietHours, sendAtLocal, timezone)
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

    /// Whether `key` collides with a payload key or an FCM-reserved one (docs/reference/job.md, `data`).
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

    private static func decodeContent(_ content: JobMembers<ContentField>) -> JobContent {
        let defaultLanguage = content.requiredString(.defaultLanguage)
        var decoded: [LocalizedContent] = []
        var seenTags: Set<String> = []
        if let languages = content.required(.languages, { content.object($0, LanguageField.self) }) {
            for member in languages.object.members {
                let path = JobMembers<LanguageField>.path(languages.path, member.key)
                guard !member.key.isEmpty else { languages.problems.add(path: path, reason: "empty language tag"); continue }
                guard seenTags.insert(member.key.lowercased()).inserted else {
                    languages.problems.add(path: path, reason: "duplicate language tag (tags match case-insensitively)")
                    continue
                }
                guard case .object(let object) = member.value else {
                    languages.problems.add(path: path, reason: "expected an object, got \(member.value.typeName)")
                    continue
                }
                decoded.append(decodeLanguage(JobMembers(object, path: path, problems: languages.problems), tag: member.key))
            }
            if let defaultLanguage, !seenTags.contains(defaultLanguage.lowercased()) {
                content.report(.defaultLanguage, "\"\(defaultLanguage)\" is not in content.languages")
            }
        }
        return JobContent(defaultLanguage: defaultLanguage ?? "", languages: decoded)
    }

    private static func decodeLanguage(_ language: JobMembers<LanguageField>, tag: String) -> LocalizedContent {
        var actions: [NotificationAction]?
        if let actionValues = language.array(.actions) {
            let actionsPath = language.path(.actions)
            if actionValues.count > maxActions {
                language.report(.actions, "more than \(maxActions) actions")
            }
            var list: [NotificationAction] = []
            for (position, value) in actionValues.enumerated() {
                let path = "\(actionsPath)[\(position)]"
                guard case .object(let object) = value else {
                    language.problems.add(path: path, reason: "expected an object, got \(value.typeName)")
                    continue
                }
                let action = JobMembers<ActionField>(object, path: path, problems: language.problems)
                let id = action.requiredString(.id)
                if let id, list.contains(where: { $0.id == id }) { action.report(.id, "duplicate action id \"\(id)\"") }
                let title = action.required(.title) { action.string($0) }
                let url = action.string(.url)
                if let id, let title { list.append(NotificationAction(id: id, title: title, url: url)) }
            }
            actions = list
        }
        return LocalizedContent(language: tag, title: language.string(.title), subtitle: language.string(.subtitle),
                                body: language.string(.body), url: language.string(.url),
                                imageURL: language.string(.imageURL), actions: actions)
    }

    private static func decodeData(_ data: (object: JSONObject, path: String)?, problems: JobProblems) -> [KeyValue] {
        guard let data else { return [] }
        var pairs: [KeyValue] = []
        pairs.reserveCapacity(data.object.count)
        var totalBytes = 0
        for member in data.object.members {
            let path = JobPath.member(data.path, member.key)
            if let reason = reservedDataKeyReason(member.key) { problems.add(path: path, reason: reason); continue }
            guard case .string(let value) = member.value else {
                problems.add(path: path, reason: "data values must be strings, got \(member.value.typeName)")
                continue
            }
            totalBytes += member.key.utf8.count + value.utf8.count
            pairs.append(KeyValue(member.key, value))
        }
        if totalBytes > maxDataBytes {
            problems.add(path: data.path, reason: "keys + values are \(totalBytes) bytes, over \(maxDataBytes)")
        }
        return pairs
    }

    private static func decodeIOS(_ ios: JobMembers<IOSField>?) -> IOSOptions {
        guard let ios else { return IOSOptions() }
        var options = IOSOptions()
        options.sound = ios.string(.sound)
        switch ios.value(.badge) {
        case nil: break
        case .number?:
            if let value = ios.int(.badge, in: 0...Int(Int32.max)) { options.badge = IOSOptions.Badge(mode: .set, value: value) }
        case .object(let object)?:
            let badge = JobMembers<BadgeField>(object, path: ios.path(.badge), problems: ios.problems)
            let modeText = badge.string(.mode) ?? "set"
            let mode = IOSOptions.BadgeMode(rawValue: modeText)
            if mode == nil { badge.report(.mode, "must be \"set\" or \"increase\"") }
            if let value = badge.required(.value, { badge.int($0, in: Int(Int32.min)...Int(Int32.max)) }), let mode {
                if mode == .set && value < 0 { badge.report(.value, "must be ≥ 0 when mode is \"set\"") }
                else { options.badge = IOSOptions.Badge(mode: mode, value: value) }
            }
        case let other?:
            ios.report(.badge, "expected an object or a number, got \(other.typeName)")
        }
        options.threadID = ios.string(.threadId)
        options.category = ios.string(.category)
        if let level = ios.string(.interruptionLevel) {
            if ["passive", "active", "time-sensitive", "critical"].contains(level) { options.interruptionLevel = level }
            else { ios.report(.interruptionLevel, "must be passive, active, time-sensitive or critical") }
        }
        if let score = ios.double(.relevanceScore) {
            if score >= 0 && score <= 1 { options.relevanceScore = score } else { ios.report(.relevanceScore, "must be between 0 and 1") }
        }
        options.contentAvailable = ios.bool(.contentAvailable) ?? false
        options.mutableContent = ios.bool(.mutableContent) ?? false
        options.locKey = ios.string(.locKey)
        options.locArgs = ios.stringArray(.locArgs) ?? []
        options.titleLocKey = ios.string(.titleLocKey)
        options.titleLocArgs = ios.stringArray(.titleLocArgs) ?? []
        options.liveActivity = decodeLiveActivity(ios.object(.liveActivity, LiveActivityField.self))
        return options
    }

    /// Latest date accepted as Unix seconds (9999-12-31T23:59:59Z).
    static let maxUnixSeconds = 253_402_300_799

    /// `ios.liveActivity` (docs/reference/job.md): every problem is a job error (a bad section would fail
    /// every recipient).
    private static func decodeLiveActivity(_ section: JobMembers<LiveActivityField>?) -> LiveActivity? {
        guard let section else { return nil }
        let eventText = section.required(.event, section.string)
        let event = eventText.flatMap(LiveActivity.Event.init(rawValue:))
        if eventText != nil && event == nil { section.report(.event, "must be start, update or end") }
        // Apple: content-state is the activity's state for every event, the final one for end.
        let contentState = section.required(.contentState, section.freeform)
        let attributesType = section.string(.attributesType)
        let attributes = section.freeform(.attributes)?.object
        if event == .start {
            if (attributesType ?? "").isEmpty { section.report(.attributesType, "required for start") }
            if attributes == nil { section.report(.attributes, "required for start") }
        }
        let staleDate = unixSeconds(section, .staleDate)
        let dismissalDate = unixSeconds(section, .dismissalDate)
        if dismissalDate != nil, let event, event != .end { section.report(.dismissalDate, "only for end") }
        var relevanceScore: Double?
        if let score = section.double(.relevanceScore) {
            if score.isFinite && score >= 0 { relevanceScore = score } else { section.report(.relevanceScore, "must be a number ≥ 0") }
        }
        let inputPushToken = section.bool(.inputPushToken) ?? false
        if inputPushToken, let event, event != .start { section.report(.inputPushToken, "only for start") }
        let timestamp = unixSeconds(section, .timestamp)
        guard let event, let contentState else { return nil }
        var activity = LiveActivity(event: event, contentState: contentState.object)
        activity.attributesType = attributesType
        activity.attributes = attributes
        activity.staleDate = staleDate
        activity.dismissalDate = dismissalDate
        activity.relevanceScore = relevanceScore
        activity.inputPushToken = inputPushToken
        activity.timestamp = timestamp
        return activity
    }

    /// A date as an RFC 3339 string or Unix seconds (a number), as whole Unix seconds.
    private static func unixSeconds<Field>(_ members: JobMembers<Field>, _ field: Field) -> Int? {
        let seconds: Double
        switch members.value(field) {
        case nil: return nil
        case .string(let text)?:
            guard let date = RFC3339Timestamp.parse(text) else {
                members.report(field, "not an RFC 3339 date-time or Unix seconds"); return nil
            }
            seconds = date.timeIntervalSince1970
        case .number(let number)?:
            seconds = number.double
        case let other?:
            members.report(field, "expected an RFC 3339 string or Unix seconds, got \(other.typeName)"); return nil
        }
        guard seconds.isFinite, seconds >= 0, seconds <= Double(maxUnixSeconds) else {
            members.report(field, "must be between 1970 and 9999"); return nil
        }
        return Int(seconds.rounded(.down))
    }

    private static func decodeAndroid(_ android: JobMembers<AndroidField>?) -> AndroidOptions {
        guard let android else { return AndroidOptions() }
        var options = AndroidOptions()
        options.channelID = android.string(.channelId)
        options.priority = android.int(.priority, in: -2...2)
        options.smallIcon = android.string(.smallIcon)
        options.largeIcon = android.string(.largeIcon)
        options.accentColor = android.string(.accentColor)
        options.ledColor = android.string(.ledColor)
        options.visibility = android.int(.visibility, in: -1...1)
        options.groupKey = android.string(.groupKey)
        options.groupMessage = android.string(.groupMessage)
        options.sound = android.string(.sound)
        options.category = android.string(.category)
        // Huawei: "collapse_key must be in interval [-1 - 100]" (Push Kit server demo, H4).
        options.collapseKey = android.int(.collapseKey, in: -1...100)
        return options
    }

    private static func decodeWeb(_ web: JobMembers<WebField>?) -> WebOptions {
        guard let web else { return WebOptions() }
        var options = WebOptions()
        options.iconURL = web.string(.iconURL)
        options.badgeURL = web.string(.badgeURL)
        options.requireInteraction = web.bool(.requireInteraction) ?? false
        if let urgency = web.string(.urgency) {
            if ["very-low", "low", "normal", "high"].contains(urgency) { options.urgency = urgency }
            else { web.report(.urgency, "must be very-low, low, normal or high") }
        }
        if let topic = web.string(.topic) {
            if topic.isEmpty || topic.unicodeScalars.count > maxTopicLength {
                web.report(.topic, "must be 1 to \(maxTopicLength) characters")
            } else if !topic.utf8.allSatisfy(Base64URL.isAlphabetByte) {
                web.report(.topic, "must use only the base64url alphabet [A-Za-z0-9_-]")
            } else {
                options.topic = topic
            }
        }
        return options
    }

    /// Lenient: wrong types count as absent, nothing throws. One pass over the members, each
    /// read into its field at once; the first member of a name counts, as `object[name]` reads
    /// it (the parser refuses duplicates, a document built in code may have them).
    static func decodeRecipient(_ object: JSONObject, source: Recipient.Source) -> Recipient {
        var userID: String?, subscriptionID: String?, platformName: String?, token: String?
        var language: String?, browser: String?, subscription: Recipient.Subscription?
        var properties: [String: String] = [:]
        var tokenUpdatedAt: Date?
        var timezone: String?
        var seen: UInt16 = 0
        let members = object.members
        for index in members.indices {  // (by index: no copy of each member)
            guard let field = RecipientField.named(members[index].key) else { continue }
            let bit = field.bit
            guard seen & bit == 0 else { continue }
            seen |= bit
            switch field {
            case .userId: userID = scalarText(members[index].value)
            case .subscriptionId: subscriptionID = scalarText(members[index].value)
            case .platform: platformName = members[index].value.stringValue
            case .token: token = members[index].value.stringValue
            case .language: language = members[index].value.stringValue
            case .browser: browser = members[index].value.stringValue
            case .subscription:
                guard case .object(let subscriptionObject) = members[index].value else { continue }
                let keys = subscriptionObject[SubscriptionField.keys.rawValue]
                subscription = Recipient.Subscription(endpoint: subscriptionObject[SubscriptionField.endpoint.rawValue]?.stringValue,
                                                      p256dh: keys?[SubscriptionKeysField.p256dh.rawValue]?.stringValue,
                                                      auth: keys?[SubscriptionKeysField.auth.rawValue]?.stringValue)
            case .properties:
                guard case .object(let propertyObject) = members[index].value else { continue }
                // Built at its size in one allocation (`reserveCapacity` on the empty dictionary
                // runs the stdlib's unspecialized generic entry, once per recipient).
                var collected = [String: String](minimumCapacity: propertyObject.count)
                for property in propertyObject.members {
                    if let text = scalarText(property.value) { collected[property.key] = text }
                }
                properties = collected
            case .tokenUpdatedAt: tokenUpdatedAt = members[index].value.stringValue.flatMap(RFC3339Timestamp.parse)
            case .timezone: timezone = members[index].value.stringValue
            }
        }
        var recipient = Recipient(userID: userID, subscriptionID: subscriptionID ?? "", platformName: platformName, token: token,
                         language: language, browser: browser, subscription: subscription, properties: properties,
                         tokenUpdatedAt: tokenUpdatedAt, sourceStorage: source)
        recipient.timezone = timezone
        return recipient
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

/// The problems found while decoding one job, in document order. Local to one decode.
final class JobProblems {
    /// At most this many are kept; the rest are only counted (a job of a million broken
    /// recipients must not make a million-line message).
    static let kept = 50
    private(set) var problems: [JobProblem] = []
    private(set) var omitted = 0

    var isEmpty: Bool { problems.isEmpty }

    func add(path: String, reason: String) {
        if problems.count < Self.kept { problems.append(JobProblem(path: path, reason: reason)) } else { omitted += 1 }
    }

    func error() -> JobValidationError {
        JobValidationError(problems: problems, omitted: omitted)
    }
}

/// Typed, path-aware access to one JSON object's members, by its field table. Problems are
/// reported to `problems` and the accessor returns nil, so decoding goes on.
struct JobMembers<Field: JobFieldTable> {
    let object: JSONObject
    let path: String
    let problems: JobProblems

    init(_ object: JSONObject, path: String, problems: JobProblems) {
        self.object = object; self.path = path; self.problems = problems
    }

    /// `parent.key`, or `parent["key"]` when the key is not a plain name.
    static func path(_ parent: String, _ key: String) -> String { JobPath.member(parent, key) }

    func path(_ field: Field) -> String { JobPath.member(path, field.rawValue) }

    func report(_ field: Field, _ reason: String) { problems.add(path: path(field), reason: reason) }

    /// The member, `null` counting as absent.
    func value(_ field: Field) -> JSONValue? {
        guard let value = object[field.rawValue], !value.isNull else { return nil }
        return value
    }

    /// `read(field)`, after reporting "required" when the member is absent (a present member of
    /// the wrong type is reported by `read` itself).
    func required<T>(_ field: Field, _ read: (Field) -> T?) -> T? {
        guard value(field) != nil else { report(field, "required"); return nil }
        return read(field)
    }

    private func reportType(_ field: Field, _ expected: String, _ value: JSONValue) {
        report(field, "expected \(expected), got \(value.typeName)")
    }

    func string(_ field: Field) -> String? {
        guard let value = value(field) else { return nil }
        guard case .string(let text) = value else { reportType(field, "a string", value); return nil }
        return text
    }

    /// Required and not empty.
    func requiredString(_ field: Field) -> String? {
        guard let text = required(field, string) else { return nil }
        guard !text.isEmpty else { report(field, "must not be empty"); return nil }
        return text
    }

    func int(_ field: Field, in range: ClosedRange<Int>? = nil) -> Int? {
        guard let value = value(field) else { return nil }
        guard case .number(let number) = value else { reportType(field, "an integer", value); return nil }
        guard let integer = number.intValue else { report(field, "expected an integer, got \(number.literal)"); return nil }
        if let range, !range.contains(integer) {
            report(field, "must be between \(range.lowerBound) and \(range.upperBound)")
            return nil
        }
        return integer
    }

    func double(_ field: Field) -> Double? {
        guard let value = value(field) else { return nil }
        guard case .number(let number) = value else { reportType(field, "a number", value); return nil }
        return number.double
    }

    func bool(_ field: Field) -> Bool? {
        guard let value = value(field) else { return nil }
        guard case .bool(let flag) = value else { reportType(field, "a boolean", value); return nil }
        return flag
    }

    func date(_ field: Field) -> Date? {
        guard let text = string(field) else { return nil }
        guard let date = RFC3339Timestamp.parse(text) else { report(field, "not an RFC 3339 date-time"); return nil }
        return date
    }

    func array(_ field: Field) -> [JSONValue]? {
        guard let value = value(field) else { return nil }
        guard case .array(let elements) = value else { reportType(field, "an array", value); return nil }
        return elements
    }

    func stringArray(_ field: Field) -> [String]? {
        guard let elements = array(field) else { return nil }
        var strings: [String] = []
        for (position, element) in elements.enumerated() {
            guard case .string(let text) = element else {
                problems.add(path: "\(path(field))[\(position)]", reason: "expected a string, got \(element.typeName)")
                continue
            }
            strings.append(text)
        }
        return strings
    }

    /// The member as an object whose member names are free (`data`).
    func freeform(_ field: Field) -> (object: JSONObject, path: String)? {
        guard let value = value(field) else { return nil }
        guard case .object(let object) = value else { reportType(field, "an object", value); return nil }
        return (object, path(field))
    }

    /// The member as an object read with the table `Child`.
    func object<Child: JobFieldTable>(_ field: Field, _ child: Child.Type) -> JobMembers<Child>? {
        guard let value = value(field) else { return nil }
        guard case .object(let object) = value else { reportType(field, "an object", value); return nil }
        return JobMembers<Child>(object, path: path(field), problems: problems)
    }
}

/// JSON paths as the messages write them: `$.content.languages.en.title`, `$.data["a:buy"]`,
/// `$.recipients[3].token`.
public enum JobPath {
    /// `parent.key`, or `parent["key"]` when the key is not a plain name.
    public static func member(_ parent: String, _ key: String) -> String {
        let isPlain = !key.isEmpty && key.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"): true
            default: false
            }
        }
        return isPlain ? "\(parent).\(key)" : "\(parent)[\(JSONValue.string(key).jsonString())]"
    }

    public static func element(_ parent: String, _ index: Int) -> String { "\(parent)[\(index)]" }
}
