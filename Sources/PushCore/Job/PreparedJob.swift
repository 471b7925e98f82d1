import Foundation

/// What resolving a job needs besides the job: the clock reading, msgID keys and the Web Push
/// allow-list. `now` is injected so tests and `render` are reproducible.
public struct RenderContext: Sendable {
    public var now: Date
    public var keyring: MsgIDKeyring
    public var webPushPolicy: WebPushPolicy

    public init(now: Date, keyring: MsgIDKeyring, webPushPolicy: WebPushPolicy = .standard) {
        self.now = now; self.keyring = keyring; self.webPushPolicy = webPushPolicy
    }
}

/// Which of a language's texts have placeholders (``PreparedJob/personalizedTexts(languageIndex:)``).
public struct PersonalizedTexts: Sendable, Equatable {
    public var title: Bool
    public var subtitle: Bool
    public var body: Bool
    public init(title: Bool, subtitle: Bool, body: Bool) { self.title = title; self.subtitle = subtitle; self.body = body }
}

/// One recipient's outcome before any provider is contacted.
public enum RecipientResolution: Sendable, Equatable {
    /// Ready for a payload builder.
    case ready(NotificationContent, DeliveryTarget)
    /// `reason` is a ``RecipientRejection`` reason; `language` the language that would have been
    /// used; `msgID` signed from the recipient's fields so the result line still carries one.
    case rejected(reason: String, language: String?, msgID: String?)
    /// The job's `expiresAt` has passed (docs/reference/job.md): nothing is sent.
    case expired(msgID: String?)

    /// The msgID, whatever the outcome.
    public var msgID: String? {
        switch self {
        case .ready(let content, _): content.msgID
        case .rejected(_, _, let msgID): msgID
        case .expired(let msgID): msgID
        }
    }
}

/// A job with every per-job decision taken once (templates parsed per language with per-field
/// fallback, TTL, data list, options), so ``resolve(_:)`` is the cheap per-recipient step:
/// language choice, template rendering, msgID signing and target validation.
public struct PreparedJob: Sendable {
    public private(set) var job: FanOutJob
    public let context: RenderContext
    /// True when `expiresAt` ≤ `context.now`.
    public let isExpired: Bool
    /// min(`ttlSeconds`, `expiresAt` − now) in whole seconds; nil when the job has neither.
    public let ttlSeconds: Int?

    /// The msgId Huawei payloads carry: one payload serves a batch of recipients (docs/providers.md).
    private let hmsBatchMsgID: String
    /// The replace key of Huawei payloads: the job's `collapseId`, else derived from
    /// ``hmsBatchMsgID``, so every member of a batch shares it (docs/providers.md, docs/payloads.md "Replace key").
    private let hmsReplaceKey: String
    private let selector: LanguageSelector
    /// The selector's answer for each distinct `language` the recipients ask for, looked up once
    /// per job: recipients repeat a handful of tags, and a tag that is not in the job exactly
    /// (`en-GB` for `en`) costs the selector a lower-casing and a walk down its prefixes.
    private let languageIndexByRequest: [String: Int]
    private let languages: [PreparedLanguage]
    /// Per language: which texts have a placeholder (rendered per recipient), or nil when a
    /// button title has one (the planner's payload templates then do not apply).
    private let personalizedTexts: [PersonalizedTexts?]
    private let base: NotificationContent

    private struct PreparedAction: Sendable {
        var id: String
        var title: Template
        var url: String?
    }

    private struct PreparedLanguage: Sendable {
        var tag: String
        var title: Template?
        var subtitle: Template?
        var body: Template?
        var url: String?
        var imageURL: String?
        var actions: [PreparedAction]
    }

    /// This prepared job without the job's recipient list, for a holder that keeps the
    /// recipients itself (a worker's processing): a 4 MiB job's list is ~7 MB of values.
    package var withoutRecipients: PreparedJob {
        var prepared = self
        prepared.job.recipients = []
        return prepared
    }

    public init(job: FanOutJob, context: RenderContext) {
        self.job = job
        self.context = context
        let tags = job.content.languages.map(\.language)
        let selector = LanguageSelector(languages: tags, defaultLanguage: job.content.defaultLanguage)
        self.selector = selector
        var languageIndexByRequest: [String: Int] = [:]
        for recipient in job.recipients {
            guard let requested = recipient.language, languageIndexByRequest[requested] == nil else { continue }
            languageIndexByRequest[requested] = selector.index(for: requested)
        }
        self.languageIndexByRequest = languageIndexByRequest
        let fallback = job.content.languages.indices.contains(selector.defaultIndex)
            ? job.content.languages[selector.defaultIndex] : LocalizedContent(language: job.content.defaultLanguage)
        let entries = job.content.languages.isEmpty ? [fallback] : job.content.languages
        languages = entries.map { language in
            let actions = (language.actions ?? fallback.actions ?? []).map {
                PreparedAction(id: $0.id, title: Template($0.title), url: $0.url)
            }
            return PreparedLanguage(tag: language.language,
                                    title: (language.title ?? fallback.title).map(Template.init),
                                    subtitle: (language.subtitle ?? fallback.subtitle).map(Template.init),
                                    body: (language.body ?? fallback.body).map(Template.init),
                                    url: language.url ?? fallback.url, imageURL: language.imageURL ?? fallback.imageURL,
                                    actions: actions)
        }
        personalizedTexts = languages.map { language in
            guard language.actions.allSatisfy(\.title.isConstant) else { return nil }
            return PersonalizedTexts(title: !(language.title?.isConstant ?? true), subtitle: !(language.subtitle?.isConstant ?? true),
                                     body: !(language.body?.isConstant ?? true))
        }

        var ttl = job.ttlSeconds
        var expired = false
        var expiresAtUnix: Int?
        if let expiresAt = job.expiresAt {
            let remaining = expiresAt.timeIntervalSince(context.now)
            expired = remaining <= 0
            let remainingSeconds = expired ? 0 : Int(min(remaining, Double(Int32.max)).rounded(.down))
            ttl = min(ttl ?? remainingSeconds, remainingSeconds)
            let unix = expiresAt.timeIntervalSince1970
            if unix.isFinite, abs(unix) < 1e15 { expiresAtUnix = Int(unix.rounded(.down)) }
        }
        isExpired = expired
        ttlSeconds = ttl
        // A Live Activity state without its own timestamp is dated by the job's createdAt: the
        // device keeps the state with the newest timestamp, so a retried update sent later must
        // not pass for newer than an update created after it (docs/payloads.md; Apple: "timestamp").
        var ios = job.ios
        if ios.liveActivity?.timestamp == nil, let createdAt = job.createdAt?.timeIntervalSince1970,
           createdAt.isFinite, createdAt >= 0, createdAt < 253_402_300_800 {
            ios.liveActivity?.timestamp = Int(createdAt.rounded(.down))
        }
        hmsBatchMsgID = MsgID.sign(MsgIDFields.batch(appID: job.appID, campaignID: job.campaignID, platform: Platform.huawei.rawValue,
                                                     variant: job.variant), keyring: context.keyring)
        hmsReplaceKey = ReplaceKey.key(collapseID: job.collapseID, msgID: hmsBatchMsgID, engine: context.keyring.sha256Engine)
        base = NotificationContent(jobID: job.jobID, appID: job.appID, campaignID: job.campaignID, variant: job.variant,
                                   subscriptionID: "", msgID: "", language: "", data: job.data, priority: job.priority,
                                   ttlSeconds: ttl, expiresAtUnix: expiresAtUnix, collapseID: job.collapseID,
                                   ios: ios, android: job.android, web: job.web)
    }

    /// The signed msgID for `recipient` in this job.
    public func msgID(for recipient: Recipient) -> String {
        MsgID.sign(MsgIDFields(appID: job.appID, campaignID: job.campaignID, userID: recipient.userID,
                               subscriptionID: recipient.subscriptionID, platform: recipient.platformLabel,
                               variant: job.variant), keyring: context.keyring)
    }

    /// The replace key of the request to `target` carrying `msgID` (docs/payloads.md "Replace key"): the job's
    /// `collapseId`, else ``ReplaceKey/derive(msgID:engine:)`` of `msgID` (of the batch msgId for
    /// Huawei, whose payload a batch shares). The hash runs on the keyring's block engine.
    public func replaceKey(msgID: String, target: DeliveryTarget) -> String {
        if case .huawei = target { return hmsReplaceKey }
        return ReplaceKey.key(collapseID: job.collapseID, msgID: msgID, engine: context.keyring.sha256Engine)
    }

    /// The language tag (as written in the job) chosen for `recipient`.
    public func language(for recipient: Recipient) -> String {
        languages[languageIndex(for: recipient.language)].tag
    }

    /// The index of `recipient`'s language (``languageTag(at:)``, ``hasConstantTexts(languageIndex:)``).
    public func languageIndex(for recipient: Recipient) -> Int {
        languageIndex(for: recipient.language)
    }

    public func languageTag(at index: Int) -> String { languages[index].tag }

    /// Which of language `languageIndex`'s texts differ per recipient; nil when a button title
    /// does (every recipient's content then differs beyond its texts).
    public func personalizedTexts(languageIndex: Int) -> PersonalizedTexts? { personalizedTexts[languageIndex] }

    /// `recipient`'s title, subtitle and body in language `languageIndex`, rendered only where
    /// `fields` says (nil elsewhere).
    public func render(_ fields: PersonalizedTexts, for recipient: Recipient, languageIndex: Int)
        -> (title: String?, subtitle: String?, body: String?) {
        let language = languages[languageIndex]
        let properties = recipient.properties
        return (fields.title ? language.title?.render(properties) : nil, fields.subtitle ? language.subtitle?.render(properties) : nil,
                fields.body ? language.body?.render(properties) : nil)
    }

    /// The content ``resolve(_:)`` gives a ready recipient, from its parts already computed
    /// (`msgID` from ``msgID(for:)``, `target` validated by ``RecipientTargeting``).
    public func content(for recipient: Recipient, msgID: String, languageIndex: Int, target: DeliveryTarget) -> NotificationContent {
        var content = base
        fill(&content, for: recipient, msgID: msgID, in: languages[languageIndex], target: target)
        return content
    }

    private func languageIndex(for requested: String?) -> Int {
        if let requested, let index = languageIndexByRequest[requested] { return index }
        return selector.index(for: requested)
    }

    public func resolve(_ recipient: Recipient) -> RecipientResolution {
        let msgID = msgID(for: recipient)
        if isExpired { return .expired(msgID: msgID) }
        let language = languages[languageIndex(for: recipient.language)]
        let target: DeliveryTarget
        switch RecipientTargeting.target(for: recipient, policy: context.webPushPolicy) {
        case .success(let found): target = found
        case .failure(let rejection): return .rejected(reason: rejection.reason, language: language.tag, msgID: msgID)
        }
        var content = base
        fill(&content, for: recipient, msgID: msgID, in: language, target: target)
        return .ready(content, target)
    }

    /// The audience of an audience job (docs/reference/job.md) as its one recipient: the default language,
    /// templates rendered once with no properties (a `default:` applies, any other variable
    /// renders empty: docs/reference/job.md), the msgId signed over the audience's identity.
    public func resolve(_ audience: FCMAudience) -> RecipientResolution {
        let recipient = audience.recipient
        let msgID = msgID(for: recipient)
        if isExpired { return .expired(msgID: msgID) }
        let target = DeliveryTarget.fcmAudience(audience)
        var content = base
        fill(&content, for: recipient, msgID: msgID, in: languages[selector.index(for: nil)], target: target)
        return .ready(content, target)
    }

    /// Fills `content` (a copy of `base`) in place for `recipient`: a returned local was copied
    /// once more into the result (~25 references retained and released per recipient).
    private func fill(_ content: inout NotificationContent, for recipient: Recipient, msgID: String, in language: PreparedLanguage,
                      target: DeliveryTarget) {
        let properties = recipient.properties
        content.userID = recipient.userID
        content.subscriptionID = recipient.subscriptionID
        content.msgID = msgID
        content.language = language.tag
        if case .huawei = target { content.batchMsgID = hmsBatchMsgID }
        content.replaceKey = replaceKey(msgID: msgID, target: target)
        content.title = language.title?.render(properties)
        content.subtitle = language.subtitle?.render(properties)
        content.body = language.body?.render(properties)
        content.url = language.url
        content.imageURL = language.imageURL
        if !language.actions.isEmpty {
            content.actions = language.actions.map {
                NotificationAction(id: $0.id, title: $0.title.render(properties), url: $0.url)
            }
        }
    }
}
