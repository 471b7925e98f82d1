/// The seam between job handling and payload building: one recipient's notification, fully
/// resolved (language chosen, templates rendered, TTL computed, msgID signed). Payload builders
/// turn it into a ``ProviderRequest``; they never look at the job again.
public struct NotificationContent: Sendable, Equatable {
    public var jobID: String
    public var appID: String
    public var campaignID: String
    public var variant: String?
    public var userID: String?
    public var subscriptionID: String
    /// The signed message id (docs/reference/msgid.md), carried in every payload.
    public var msgID: String
    /// The language actually chosen (`pt` for a `pt-BR` recipient when only `pt` exists).
    public var language: String

    public var title: String?
    public var subtitle: String?
    public var body: String?
    /// The launch / click URL.
    public var url: String?
    public var imageURL: String?
    /// At most 3, ids unique (validated with the job).
    public var actions: [NotificationAction]
    /// The job's `data`, a flat string map, in the job's order.
    public var data: [KeyValue]

    public var priority: DeliveryPriority
    /// Seconds the provider should keep the message: min(`ttlSeconds`, `expiresAt` − now);
    /// nil leaves the provider's default. 0 means "now or never".
    public var ttlSeconds: Int?
    /// `expiresAt` as Unix seconds, when the job has one (APNs `apns-expiration`).
    public var expiresAtUnix: Int?
    public var collapseID: String?

    public var ios: IOSOptions
    public var android: AndroidOptions
    public var web: WebOptions
    /// The msgId of a payload that several recipients share (Huawei batches, docs/providers.md): signed
    /// over the app, campaign, variant and platform with no user and an empty subscription
    /// (``MsgIDFields/batch(appID:campaignID:platform:variant:)``). Nil for per-recipient payloads.
    public var batchMsgID: String? = nil
    /// The replace key (``ReplaceKey``, docs/payloads.md "Replace key"): the job's `collapseId`, else derived from the
    /// msgId the payload carries (``batchMsgID`` when set). ``PreparedJob`` fills it; nil: the
    /// payload builders derive it (``resolvedReplaceKey``).
    public var replaceKey: String? = nil

    public init(jobID: String, appID: String, campaignID: String, variant: String? = nil, userID: String? = nil,
                subscriptionID: String, msgID: String, language: String, title: String? = nil,
                subtitle: String? = nil, body: String? = nil, url: String? = nil, imageURL: String? = nil,
                actions: [NotificationAction] = [], data: [KeyValue] = [], priority: DeliveryPriority = .high,
                ttlSeconds: Int? = nil, expiresAtUnix: Int? = nil, collapseID: String? = nil,
                ios: IOSOptions = IOSOptions(), android: AndroidOptions = AndroidOptions(), web: WebOptions = WebOptions()) {
        self.jobID = jobID; self.appID = appID; self.campaignID = campaignID; self.variant = variant
        self.userID = userID; self.subscriptionID = subscriptionID; self.msgID = msgID; self.language = language
        self.title = title; self.subtitle = subtitle; self.body = body; self.url = url; self.imageURL = imageURL
        self.actions = actions; self.data = data; self.priority = priority; self.ttlSeconds = ttlSeconds
        self.expiresAtUnix = expiresAtUnix; self.collapseID = collapseID
        self.ios = ios; self.android = android; self.web = web
    }
}

extension NotificationContent {
    /// The replace key the request carries: ``replaceKey`` when set, else the job's
    /// `collapseId`, else derived from the payload's msgId (``batchMsgID`` when set).
    public var resolvedReplaceKey: String {
        if let replaceKey { return replaceKey }
        return ReplaceKey.key(collapseID: collapseID, msgID: batchMsgID ?? msgID)
    }

    /// Whether the replace key is the same for every recipient of the job (a `collapseId`, or a
    /// Huawei batch's): it then travels with the job's shared headers; otherwise it is the
    /// recipient's own (``ProviderRequest/recipientHeaders``).
    public var hasSharedReplaceKey: Bool {
        if let collapseID, !collapseID.isEmpty { return true }
        return batchMsgID != nil
    }
}

/// An ordered string pair (JSON object member order is kept for readable payloads).
public struct KeyValue: Sendable, Equatable, Hashable {
    public var key: String
    public var value: String
    public init(_ key: String, _ value: String) { self.key = key; self.value = value }
}

/// An action button (docs/reference/job.md `actions`), title already rendered.
public struct NotificationAction: Sendable, Equatable {
    public var id: String
    public var title: String
    public var url: String?
    public init(id: String, title: String, url: String? = nil) { self.id = id; self.title = title; self.url = url }
}

/// Job `priority` (docs/reference/job.md).
public enum DeliveryPriority: String, Sendable, Equatable {
    case high
    case normal
}

/// The job's `ios` block (docs/reference/job.md).
public struct IOSOptions: Sendable, Equatable {
    public enum BadgeMode: String, Sendable, Equatable { case set, increase }
    public struct Badge: Sendable, Equatable {
        public var mode: BadgeMode
        public var value: Int
        public init(mode: BadgeMode, value: Int) { self.mode = mode; self.value = value }
    }
    public var sound: String?
    public var badge: Badge?
    public var threadID: String?
    public var category: String?
    /// `passive`, `active`, `time-sensitive`, `critical`.
    public var interruptionLevel: String?
    /// 0...1.
    public var relevanceScore: Double?
    public var contentAvailable: Bool
    public var mutableContent: Bool
    public var locKey: String?
    public var locArgs: [String]
    public var titleLocKey: String?
    public var titleLocArgs: [String]
    /// `ios.liveActivity` (docs/reference/job.md): set ⇒ the request is an ActivityKit push, not a notification.
    public var liveActivity: LiveActivity?
    public init(sound: String? = nil, badge: Badge? = nil, threadID: String? = nil, category: String? = nil,
                interruptionLevel: String? = nil, relevanceScore: Double? = nil, contentAvailable: Bool = false,
                mutableContent: Bool = false, locKey: String? = nil, locArgs: [String] = [], titleLocKey: String? = nil,
                titleLocArgs: [String] = [], liveActivity: LiveActivity? = nil) {
        self.sound = sound; self.badge = badge; self.threadID = threadID; self.category = category
        self.interruptionLevel = interruptionLevel; self.relevanceScore = relevanceScore
        self.contentAvailable = contentAvailable; self.mutableContent = mutableContent
        self.locKey = locKey; self.locArgs = locArgs; self.titleLocKey = titleLocKey; self.titleLocArgs = titleLocArgs
        self.liveActivity = liveActivity
    }
}

/// The job's `android` block (docs/reference/job.md; the SDK's OSNotification fields, docs/payloads.md).
public struct AndroidOptions: Sendable, Equatable {
    public var channelID: String?
    /// Display priority -2...2 (not the FCM delivery priority).
    public var priority: Int?
    public var smallIcon: String?
    public var largeIcon: String?
    /// ARGB hex, e.g. `FF2196F3`.
    public var accentColor: String?
    public var ledColor: String?
    /// Lock-screen visibility -1...1.
    public var visibility: Int?
    public var groupKey: String?
    public var groupMessage: String?
    public var sound: String?
    /// Huawei `android.category` (`IM`, `VOIP`, `SUBSCRIPTION`, `TRAVEL`, `HEALTH`, `WORK`,
    /// `ACCOUNT`, `EXPRESS`, `FINANCE`, `DEVICE_REMINDER`, `MAIL`, `PLAY_VOICE`, `MARKETING`), sent
    /// verbatim; FCM payloads ignore it (docs/providers.md).
    public var category: String?
    /// Huawei `android.collapse_key` −1…100: −1 keeps every offline message (Huawei's default), 0
    /// only the latest, 1…100 one per group. FCM payloads ignore it (docs/providers.md).
    public var collapseKey: Int?
    public init(channelID: String? = nil, priority: Int? = nil, smallIcon: String? = nil, largeIcon: String? = nil,
                accentColor: String? = nil, ledColor: String? = nil, visibility: Int? = nil, groupKey: String? = nil,
                groupMessage: String? = nil, sound: String? = nil, category: String? = nil, collapseKey: Int? = nil) {
        self.channelID = channelID; self.priority = priority; self.smallIcon = smallIcon; self.largeIcon = largeIcon
        self.accentColor = accentColor; self.ledColor = ledColor; self.visibility = visibility
        self.groupKey = groupKey; self.groupMessage = groupMessage; self.sound = sound
        self.category = category; self.collapseKey = collapseKey
    }
}

/// The job's `web` block (docs/reference/job.md).
public struct WebOptions: Sendable, Equatable {
    public var iconURL: String?
    public var badgeURL: String?
    public var requireInteraction: Bool
    /// `very-low`, `low`, `normal`, `high` (RFC 8030 §5.3); nil derives from priority.
    public var urgency: String?
    /// RFC 8030 §5.4 topic, ≤ 32 base64url characters.
    public var topic: String?
    public init(iconURL: String? = nil, badgeURL: String? = nil, requireInteraction: Bool = false,
                urgency: String? = nil, topic: String? = nil) {
        self.iconURL = iconURL; self.badgeURL = badgeURL; self.requireInteraction = requireInteraction
        self.urgency = urgency; self.topic = topic
    }
}

/// Where one notification goes, already validated (token format, endpoint allow-list).
public enum DeliveryTarget: Sendable, Equatable {
    case apns(deviceToken: String)
    case fcm(registrationToken: String)
    case webPush(WebPushSubscription)
    /// An FCM topic or condition (docs/reference/job.md): one request that FCM fans out.
    case fcmAudience(FCMAudience)
    /// A Huawei Push Kit token; sent in a batch with others sharing the payload (docs/providers.md).
    case huawei(token: String)
}

/// A browser push subscription (W3C Push API `PushSubscription.toJSON()`), keys decoded.
public struct WebPushSubscription: Sendable, Equatable {
    public var endpoint: String
    /// The user agent's P-256 public key, uncompressed (65 bytes).
    public var p256dh: [UInt8]
    /// The 16-byte authentication secret.
    public var auth: [UInt8]
    public var browser: Browser
    public init(endpoint: String, p256dh: [UInt8], auth: [UInt8], browser: Browser) {
        self.endpoint = endpoint; self.p256dh = p256dh; self.auth = auth; self.browser = browser
    }
}

/// Browsers differ in how many action buttons they show (docs/payloads.md).
public enum Browser: String, Sendable, Equatable, CaseIterable {
    case chrome, edge, firefox, safari
}
