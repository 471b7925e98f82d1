/// The members of a fan-out job (docs/reference/job.md), one table per JSON object: the single list of
/// known fields.
///
/// ``JobDecoder`` reads members only through these tables (its accessors take a table's case,
/// never a string), so every field it reads is a known field, and ``JobLint`` reports any other
/// member as unknown (`render`/`send`/`enqueue` warnings; the worker ignores unknown members,
/// forward compatibility, docs/reference/job.md).
///
/// **Adding a field**: add a case to its object's table — with its ``shape`` when it holds an
/// object, an array of objects, or a map of them (then add that object's table here too) — and
/// read it in `JobDecoder`. A field the decoder does not read can still be listed (it is then
/// accepted silently, e.g. `subscription.expirationTime`). For example:
/// - `ios.liveActivity{…}` (docs/reference/job.md): `case liveActivity` in ``IOSField`` with
///   `.object(LiveActivityField.schema)`, and a `LiveActivityField` table for its members;
/// - `audience` (docs/reference/job.md): `case audience` in ``JobField`` with `.object(AudienceField.schema)`;
/// - a `huawei` options section: `case huawei` in ``JobField`` with its table. A new platform
///   *value* (`"platform": "huawei"`) needs no table change.
///
/// ``JobFieldTable/aliases`` lists names people write by mistake (other services' names,
/// APNs/FCM wire names) and the field they meant: the did-you-mean of the warnings.
public protocol JobFieldTable: CaseIterable, Sendable, Hashable, RawRepresentable where RawValue == String {
    /// The object's path pattern in messages and tests (`$.content.languages.<tag>`).
    static var objectName: String { get }
    /// Mistaken names (compared case-insensitively, ignoring `_` and `-`) → the field meant.
    static var aliases: [String: Self] { get }
    /// What the member holds, for ``JobLint``'s walk into nested objects. Default: `.value`.
    var shape: JobFieldShape { get }
}

extension JobFieldTable {
    public static var aliases: [String: Self] { [:] }
    public var shape: JobFieldShape { .value }

    /// The table as data (names, shapes, aliases), for ``JobLint``.
    public static var schema: JobObjectSchema {
        JobObjectSchema(name: objectName,
                        fields: allCases.map { (name: $0.rawValue, shape: $0.shape) },
                        aliases: aliases.mapValues(\.rawValue))
    }
}

/// One object's known members, as data.
public struct JobObjectSchema: Sendable {
    public var name: String
    /// In declaration order.
    public var fields: [(name: String, shape: JobFieldShape)]
    /// Mistaken name → the field meant.
    public var aliases: [String: String]

    public func shape(of name: String) -> JobFieldShape? { fields.first { $0.name == name }?.shape }
}

/// What a member holds. ``JobLint`` checks the members of nested objects only where the value
/// really is an object (or an array of them): a type error is the decoder's to report.
public indirect enum JobFieldShape: Sendable {
    /// A scalar, a list of scalars, or a value whose members are not checked.
    case value
    /// Any member names (`data`, recipient `properties`).
    case freeform
    /// An object with these members.
    case object(JobObjectSchema)
    /// An array of objects with these members (`recipients`, `actions`).
    case objects(JobObjectSchema)
    /// An object whose member names are free (language tags) and whose values are such objects.
    case map(JobObjectSchema)
}

/// The job itself (`$`).
public enum JobField: String, JobFieldTable {
    case schemaVersion, jobId, appId, campaignId, variant, createdAt, expiresAt, priority, ttlSeconds, collapseId
    case throttlePerMinute, content, data, ios, android, web, recipients
    /// The campaign's deadline (docs/campaigns.md).
    case sendBy
    /// The frequency-cap category (docs/caps.md).
    case capCategory
    /// Retry jobs (docs/reference/job.md).
    case attempt, notBefore
    /// An FCM topic or condition instead of `recipients` (docs/reference/job.md).
    case audience
    /// The job's lane (docs/lanes.md).
    case lane
    /// Local-time delivery (docs/local-time.md).
    case quietHours, sendAtLocal, timezone

    public static let objectName = "$"
    public static let aliases: [String: JobField] = [
        "id": .jobId, "app": .appId, "application": .appId, "campaign": .campaignId, "schema": .schemaVersion,
        "version": .schemaVersion, "ttl": .ttlSeconds, "timeToLive": .ttlSeconds, "expiry": .expiresAt, "expires": .expiresAt,
        "expiration": .expiresAt, "expireAt": .expiresAt, "validUntil": .expiresAt, "collapseKey": .collapseId, "collapse": .collapseId,
        "throttle": .throttlePerMinute, "rateLimit": .throttlePerMinute, "deadline": .sendBy, "sendBefore": .sendBy, "message": .content, "notification": .content,
        "contents": .content, "payload": .data, "customData": .data, "additionalData": .data, "extra": .data,
        "apns": .ios, "apple": .ios, "fcm": .android, "gcm": .android, "webpush": .web, "browser": .web,
        "to": .recipients, "targets": .recipients, "devices": .recipients, "users": .recipients, "subscribers": .recipients,
        "topic": .audience, "topics": .audience, "condition": .audience, "segment": .audience, "segments": .audience,
    ]
    public var shape: JobFieldShape {
        switch self {
        case .content: .object(ContentField.schema)
        case .data: .freeform
        case .ios: .object(IOSField.schema)
        case .android: .object(AndroidField.schema)
        case .web: .object(WebField.schema)
        case .recipients: .objects(RecipientField.schema)
        case .audience: .object(AudienceField.schema)
        case .quietHours: .object(QuietHoursField.schema)
        default: .value
        }
    }
}

/// `$.quietHours` (docs/local-time.md).
public enum QuietHoursField: String, JobFieldTable {
    case start, end

    public static let objectName = "$.quietHours"
    public static let aliases: [String: QuietHoursField] = ["from": .start, "begin": .start, "to": .end, "until": .end]
}

/// `$.audience` (docs/reference/job.md): exactly one of its members.
public enum AudienceField: String, JobFieldTable {
    case topic, condition

    public static let objectName = "$.audience"
    public static let aliases: [String: AudienceField] = [
        "name": .topic, "topicName": .topic, "to": .topic, "expression": .condition, "filter": .condition, "conditions": .condition,
    ]
}

/// `$.content`.
public enum ContentField: String, JobFieldTable {
    case defaultLanguage, languages

    public static let objectName = "$.content"
    public static let aliases: [String: ContentField] = [
        "language": .defaultLanguage, "default": .defaultLanguage, "defaultLocale": .defaultLanguage, "fallbackLanguage": .defaultLanguage,
        "locales": .languages, "translations": .languages, "localizations": .languages, "texts": .languages,
    ]
    public var shape: JobFieldShape { self == .languages ? .map(LanguageField.schema) : .value }
}

/// `$.content.languages.<tag>`: one language's texts.
public enum LanguageField: String, JobFieldTable {
    case title, subtitle, body, url, imageURL, actions

    public static let objectName = "$.content.languages.<tag>"
    public static let aliases: [String: LanguageField] = [
        "message": .body, "text": .body, "alert": .body, "content": .body, "contents": .body, "description": .body,
        "heading": .title, "headings": .title, "headline": .title, "subject": .title, "subheading": .subtitle,
        "image": .imageURL, "picture": .imageURL, "bigPicture": .imageURL, "attachment": .imageURL, "media": .imageURL,
        "link": .url, "launchURL": .url, "clickAction": .url, "clickURL": .url, "deepLink": .url, "href": .url,
        "buttons": .actions, "actionButtons": .actions,
    ]
    public var shape: JobFieldShape { self == .actions ? .objects(ActionField.schema) : .value }
}

/// `$.content.languages.<tag>.actions[i]`: one button.
public enum ActionField: String, JobFieldTable {
    case id, title, url

    public static let objectName = "$.content.languages.<tag>.actions[i]"
    public static let aliases: [String: ActionField] = [
        "action": .id, "identifier": .id, "key": .id, "label": .title, "text": .title, "name": .title,
        "link": .url, "launchURL": .url, "deepLink": .url, "href": .url,
    ]
}

/// `$.ios`.
public enum IOSField: String, JobFieldTable {
    case sound, badge, threadId, category, interruptionLevel, relevanceScore, contentAvailable, mutableContent
    case locKey, locArgs, titleLocKey, titleLocArgs, liveActivity

    public static let objectName = "$.ios"
    public static let aliases: [String: IOSField] = [
        "badgeCount": .badge, "thread": .threadId, "threadIdentifier": .threadId, "interruption": .interruptionLevel,
        "relevance": .relevanceScore, "silent": .contentAvailable, "background": .contentAvailable,
        "mutable": .mutableContent, "categoryId": .category, "categoryIdentifier": .category,
        "bodyLocKey": .locKey, "bodyLocArgs": .locArgs, "locKeyArgs": .locArgs,
        "activity": .liveActivity, "liveActivities": .liveActivity,
    ]
    public var shape: JobFieldShape {
        switch self {
        case .badge: .object(BadgeField.schema)
        case .liveActivity: .object(LiveActivityField.schema)
        default: .value
        }
    }
}

/// `$.ios.liveActivity` (docs/reference/job.md).
public enum LiveActivityField: String, JobFieldTable {
    case event, contentState, attributesType, attributes, staleDate, dismissalDate, relevanceScore, inputPushToken, timestamp

    public static let objectName = "$.ios.liveActivity"
    public static let aliases: [String: LiveActivityField] = [
        "state": .contentState, "type": .attributesType, "stale": .staleDate, "dismissal": .dismissalDate,
        "relevance": .relevanceScore, "pushToken": .inputPushToken, "input-push": .inputPushToken,
    ]
    public var shape: JobFieldShape {
        switch self {
        case .contentState, .attributes: .freeform
        default: .value
        }
    }
}

/// `$.ios.badge` when it is an object (a number sets the badge).
public enum BadgeField: String, JobFieldTable {
    case mode, value

    public static let objectName = "$.ios.badge"
    public static let aliases: [String: BadgeField] = ["count": .value, "number": .value, "type": .mode, "kind": .mode]
}

/// `$.android`.
public enum AndroidField: String, JobFieldTable {
    case channelId, priority, smallIcon, largeIcon, accentColor, ledColor, visibility, groupKey, groupMessage, sound
    /// Huawei Push Kit only (docs/providers.md): `android.category`, `android.collapse_key`.
    case category, collapseKey

    public static let objectName = "$.android"
    public static let aliases: [String: AndroidField] = [
        "channel": .channelId, "androidChannelId": .channelId, "notificationChannel": .channelId, "icon": .smallIcon,
        "color": .accentColor, "colour": .accentColor, "iconColor": .accentColor, "led": .ledColor, "lightColor": .ledColor,
        "group": .groupKey, "tag": .groupKey, "summary": .groupMessage, "groupSummary": .groupMessage,
        "image": .largeIcon, "lockscreenVisibility": .visibility, "notificationPriority": .priority,
    ]
}

/// `$.web`.
public enum WebField: String, JobFieldTable {
    case iconURL, badgeURL, requireInteraction, urgency, topic

    public static let objectName = "$.web"
    public static let aliases: [String: WebField] = [
        "icon": .iconURL, "badge": .badgeURL, "sticky": .requireInteraction, "persistent": .requireInteraction,
        "priority": .urgency, "tag": .topic, "collapseKey": .topic,
    ]
}

/// `$.recipients[i]`: one device or browser.
public enum RecipientField: String, JobFieldTable {
    case userId, subscriptionId, platform, token, language, browser, subscription, properties, tokenUpdatedAt
    /// Local-time delivery (docs/local-time.md).
    case timezone

    public static let objectName = "$.recipients[i]"
    public static let aliases: [String: RecipientField] = [
        "deviceToken": .token, "pushToken": .token, "registrationId": .token, "registrationToken": .token, "fcmToken": .token,
        "apnsToken": .token, "apnToken": .token, "device": .token, "playerId": .subscriptionId, "id": .subscriptionId,
        "user": .userId, "uid": .userId, "externalId": .userId, "externalUserId": .userId,
        "lang": .language, "locale": .language, "os": .platform, "deviceType": .platform, "type": .platform,
        "pushSubscription": .subscription, "webPushSubscription": .subscription,
        "vars": .properties, "variables": .properties, "attributes": .properties, "tags": .properties, "data": .properties,
        "personalization": .properties, "tokenUpdated": .tokenUpdatedAt, "registeredAt": .tokenUpdatedAt,
        "tz": .timezone, "zone": .timezone,
    ]
    public var shape: JobFieldShape {
        switch self {
        case .subscription: .object(SubscriptionField.schema)
        case .properties: .freeform
        default: .value
        }
    }
}

extension RecipientField {
    /// The field named `name` — `RecipientField(rawValue:)` — by its length first: one string
    /// comparison per member instead of one per field (JobDecoder reads every recipient's
    /// members this way).
    public static func named(_ name: String) -> RecipientField? {
        // A new case must be added here too (JSONParserReferenceTests checks every case).
        let candidate: RecipientField
        switch name.utf8.count {
        case 5: candidate = .token
        case 6: candidate = .userId
        case 7: candidate = .browser
        case 8:
            if name == RecipientField.platform.rawValue { return .platform }
            if name == RecipientField.timezone.rawValue { return .timezone }
            candidate = .language
        case 10: candidate = .properties
        case 12: candidate = .subscription
        case 14: if name == RecipientField.subscriptionId.rawValue { return .subscriptionId }; candidate = .tokenUpdatedAt
        default: return nil
        }
        return name == candidate.rawValue ? candidate : nil
    }

    /// One bit per field (a set of the fields seen).
    var bit: UInt16 {
        switch self {
        case .userId: 1 << 0
        case .subscriptionId: 1 << 1
        case .platform: 1 << 2
        case .token: 1 << 3
        case .language: 1 << 4
        case .browser: 1 << 5
        case .subscription: 1 << 6
        case .properties: 1 << 7
        case .tokenUpdatedAt: 1 << 8
        case .timezone: 1 << 9
        }
    }
}

/// `$.recipients[i].subscription`: a browser's `PushSubscription.toJSON()`.
public enum SubscriptionField: String, JobFieldTable {
    case endpoint, keys
    /// Part of the browser's JSON; not used.
    case expirationTime

    public static let objectName = "$.recipients[i].subscription"
    public static let aliases: [String: SubscriptionField] = ["url": .endpoint, "endpointURL": .endpoint]
    public var shape: JobFieldShape { self == .keys ? .object(SubscriptionKeysField.schema) : .value }
}

/// `$.recipients[i].subscription.keys`.
public enum SubscriptionKeysField: String, JobFieldTable {
    case p256dh, auth

    public static let objectName = "$.recipients[i].subscription.keys"
    public static let aliases: [String: SubscriptionKeysField] = [
        "p256": .p256dh, "publicKey": .p256dh, "public": .p256dh, "authSecret": .auth, "secret": .auth,
    ]
}
