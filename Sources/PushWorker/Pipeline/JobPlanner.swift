import Foundation
import Synchronization
import PushCore
import PushCrypto
import PushProviders

/// One recipient of a job, planned: its request, or why there is none. Shared by `render`,
/// `send` and the worker, so the three can never disagree about a payload.
public struct PlannedRecipient: Sendable {
    public enum State: Sendable {
        case ready(ProviderRequest)
        case rejected(reason: String)
        case expired
    }
    public var recipient: Recipient
    public var platform: String
    public var language: String?
    public var msgID: String?
    /// Hash of the token or endpoint (logs, Redis, `push.tokens.v1`): never the token itself.
    public var tokenHash: String
    public var state: State
}

/// Plans every recipient of a job: language, templates, msgId, target validation, payload.
public struct JobPlanner: Sendable {
    public var keyring: MsgIDKeyring
    public var webPushPolicy: WebPushPolicy

    /// The keyring's HMACs run on libcrypto's SHA-256 blocks (the CPU's SHA extensions): the
    /// same msgIds, without PushCore's portable block compression on every recipient's path.
    public init(keyring: MsgIDKeyring, webPushPolicy: WebPushPolicy) {
        self.keyring = keyring.using(sha256Engine: TokenHash.sha256Engine)
        self.webPushPolicy = webPushPolicy
    }

    /// `profile` nil ⇒ the app has no credentials at all (every recipient `no_credentials`).
    /// An audience job (docs/payloads.md) has one plan: its audience.
    public func plan(_ job: FanOutJob, profile: AppProfile?, now: Date) -> [PlannedRecipient] {
        var plans: [PlannedRecipient] = []
        plans.reserveCapacity(job.plannedCount)
        plan(job, profile: profile, now: now) { plans.append($0) }
        return plans
    }

    /// The same plans handed to `body` one by one, in recipient order, each owned by it.
    public func plan(_ job: FanOutJob, profile: AppProfile?, now: Date, _ body: (consuming PlannedRecipient) -> Void) {
        if let audience = job.audience {
            let prepared = PreparedJob(job: job, context: RenderContext(now: now, keyring: keyring, webPushPolicy: webPushPolicy))
            body(plan(audience.recipient, tokenHash: TokenHash.of(audience), resolution: prepared.resolve(audience),
                      profile: profile, issuedAt: Int(now.timeIntervalSince1970)))
            return
        }
        let plan = prepare(job, profile: profile, now: now)
        for recipient in job.recipients {
            let start = plan.start(recipient)
            let state: PlannedRecipient.State
            switch start.state {
            case .expired: state = .expired
            case .rejected(let reason): state = .rejected(reason: reason)
            case .ready(.built(let request)): state = .ready(request)
            case .ready(.pending(let target, let languageIndex)):
                switch plan.build(recipient, msgID: start.msgID ?? "", target: target, languageIndex: languageIndex) {
                case .success(let request): state = .ready(request)
                case .failure(let rejection): state = .rejected(reason: rejection.reason)
                }
            }
            body(PlannedRecipient(recipient: recipient, platform: recipient.platformLabel, language: start.language, msgID: start.msgID,
                                  tokenHash: start.tokenHash, state: state))
        }
    }

    /// A job's planning in two steps (``JobPlan``): what each recipient will become, at once;
    /// its request, when it is about to be sent. Not for audience jobs (one plan each, built by
    /// ``plan(_:profile:now:_:)``).
    public func prepare(_ job: FanOutJob, profile: AppProfile?, now: Date) -> JobPlan {
        // The plan outlives the loop over the recipients (it builds each request when claimed):
        // it keeps no copy of their list.
        JobPlan(prepared: PreparedJob(job: job, context: RenderContext(now: now, keyring: keyring, webPushPolicy: webPushPolicy)).withoutRecipients,
                profile: profile, issuedAt: Int(now.timeIntervalSince1970), webPushPolicy: webPushPolicy)
    }

    /// `resolution` is consumed: its content moves into the payload builder's argument instead of
    /// being copied out of the enum (a `NotificationContent` is ~25 references to retain and
    /// release, once per recipient).
    private func plan(_ recipient: Recipient, tokenHash: String, resolution: consuming RecipientResolution, profile: AppProfile?,
                      issuedAt: Int) -> PlannedRecipient {
        // Built once at the end from `let`s: a `var` plan mutated per case would be copied
        // whole, retaining and releasing every field per recipient.
        let language: String?, msgID: String?, state: PlannedRecipient.State
        switch consume resolution {
        case .expired(let expiredMsgID):
            (language, msgID, state) = (nil, expiredMsgID, .expired)
        case .rejected(let reason, let rejectedLanguage, let rejectedMsgID):
            (language, msgID, state) = (rejectedLanguage, rejectedMsgID, .rejected(reason: reason))
        case .ready(let content, let target):
            language = content.language
            msgID = content.msgID
            if let profile {
                switch PayloadBuilder.build(content, target: target, profile: profile, issuedAtUnix: issuedAt) {
                case .success(let request): state = .ready(request)
                case .failure(let error): state = .rejected(reason: error.reason)
                }
            } else {
                state = .rejected(reason: "no_credentials")
            }
        }
        return PlannedRecipient(recipient: recipient, platform: recipient.platformLabel, language: language, msgID: msgID,
                                tokenHash: tokenHash, state: state)
    }
}

/// One job's planning, split so that a request is built only when it is about to be sent: a
/// job's memory then follows the worker's in-flight window, not the job's size
/// (docs/performance.md "Memory"). ``start(_:)`` decides what a recipient becomes (msgId, token
/// hash, language, target; expired or rejected at once); ``build(_:msgID:target:languageIndex:)``
/// builds the request of a ready one — through the job's payload templates when its texts allow.
///
/// Thread safety: immutable but for the templates, behind a lock.
public final class JobPlan: Sendable {
    /// What a recipient becomes.
    public enum State: Sendable {
        case ready(Ready)
        case rejected(reason: String)
        case expired
    }

    /// A recipient that will be sent: its request, or what it is built from.
    public enum Ready: Sendable {
        case built(ProviderRequest)
        case pending(target: DeliveryTarget, languageIndex: Int)
    }

    public struct Start: Sendable {
        public var msgID: String?
        /// Hash of the token or endpoint: never the token itself.
        public var tokenHash: String
        public var language: String?
        public var state: State
    }

    /// Why a build failed: the result's `rejected` reason.
    public struct Rejection: Error, Sendable {
        public var reason: String
    }

    let prepared: PreparedJob
    let profile: AppProfile?
    let issuedAt: Int
    let webPushPolicy: WebPushPolicy
    private let templates: Mutex<TemplateCache>

    init(prepared: PreparedJob, profile: AppProfile?, issuedAt: Int, webPushPolicy: WebPushPolicy) {
        self.prepared = prepared
        self.profile = profile
        self.issuedAt = issuedAt
        self.webPushPolicy = webPushPolicy
        templates = Mutex(TemplateCache(languageCount: prepared.job.content.languages.count))
    }

    public func start(_ recipient: Recipient) -> Start {
        let tokenHash = TokenHash.of(recipient)
        let msgID = prepared.msgID(for: recipient)
        if prepared.isExpired { return Start(msgID: msgID, tokenHash: tokenHash, language: nil, state: .expired) }
        let languageIndex = prepared.languageIndex(for: recipient)
        let language = prepared.languageTag(at: languageIndex)
        switch RecipientTargeting.target(for: recipient, policy: webPushPolicy) {
        case .failure(let rejection):
            return Start(msgID: msgID, tokenHash: tokenHash, language: language, state: .rejected(reason: rejection.reason))
        case .success(let target):
            guard profile != nil else {
                return Start(msgID: msgID, tokenHash: tokenHash, language: language, state: .rejected(reason: "no_credentials"))
            }
            return Start(msgID: msgID, tokenHash: tokenHash, language: language, state: .ready(.pending(target: target, languageIndex: languageIndex)))
        }
    }

    /// The request of a recipient ``start(_:)`` found ready. A recipient whose texts are constant
    /// takes the template path (the job's request for its language and target kind, its msgId,
    /// token and replace key spliced in).
    public func build(_ recipient: Recipient, msgID: String, target: DeliveryTarget, languageIndex: Int) -> Result<ProviderRequest, Rejection> {
        guard let profile else { return .failure(Rejection(reason: "no_credentials")) }
        // `self.prepared` is read in place: a copy of the prepared job retains each of its fields.
        if let fields = prepared.personalizedTexts(languageIndex: languageIndex) {
            let rendered = prepared.render(fields, for: recipient, languageIndex: languageIndex)
            let texts = NotificationText(title: rendered.title, subtitle: rendered.subtitle, body: rendered.body)
            let request = templates.withLock { templates in
                templates.request(msgID: msgID, target: target, texts: texts, languageIndex: languageIndex,
                                  engine: TokenHash.sha256Engine, make: {
                    var personalized: PayloadTemplate.Texts = []
                    if fields.title { personalized.insert(.title) }
                    if fields.subtitle { personalized.insert(.subtitle) }
                    if fields.body { personalized.insert(.body) }
                    return PayloadTemplate.make(self.prepared.content(for: recipient, msgID: msgID, languageIndex: languageIndex, target: target),
                                                personalized: personalized, target: target, profile: profile, issuedAtUnix: self.issuedAt)
                })
            }
            if let request { return .success(request) }
        }
        let content = prepared.content(for: recipient, msgID: msgID, languageIndex: languageIndex, target: target)
        switch PayloadBuilder.build(content, target: target, profile: profile, issuedAtUnix: issuedAt) {
        case .success(let request): return .success(request)
        case .failure(let error): return .failure(Rejection(reason: error.reason))
        }
    }
}

/// The payload templates of one job's planning, by language and target kind, each built on first
/// use (nil: that language and kind have none, and every such recipient is built in full).
struct TemplateCache {
    private enum Slot {
        case unbuilt
        case built(PayloadTemplate?)
    }
    private var slots: [Slot]
    private static let kinds = 3 + Browser.allCases.count

    init(languageCount: Int) {
        slots = Array(repeating: .unbuilt, count: max(languageCount, 1) * Self.kinds)
    }

    static func kindIndex(_ target: DeliveryTarget) -> Int? {
        switch target {
        case .apns: 0
        case .fcm: 1
        case .huawei: 2
        case .webPush(let subscription): 3 + (Browser.allCases.firstIndex(of: subscription.browser) ?? 0)
        case .fcmAudience: nil
        }
    }

    /// `engine`: the SHA-256 blocks of the recipient's derived replace key, when the template
    /// splices one (``PayloadTemplate/request(msgID:target:texts:replaceKey:engine:)``).
    mutating func request(msgID: String, target: DeliveryTarget, texts: NotificationText, languageIndex: Int,
                          engine: (any SHA256BlockEngine)? = nil, make: () -> PayloadTemplate?) -> ProviderRequest? {
        guard let kind = Self.kindIndex(target) else { return nil }
        let index = languageIndex * Self.kinds + kind
        guard slots.indices.contains(index) else { return nil }
        if case .built(let template) = slots[index] { return template?.request(msgID: msgID, target: target, texts: texts, engine: engine) }
        let template = make()
        slots[index] = .built(template)
        return template?.request(msgID: msgID, target: target, texts: texts, engine: engine)
    }
}

/// Tokens are never logged or stored in clear: SHA-256, hex, first 32 characters.
public enum TokenHash {
    public static func of(_ recipient: Recipient) -> String {
        of(recipient.token ?? recipient.subscription?.endpoint ?? "")
    }

    /// An audience's "token" (docs/payloads.md): never a device's, so no dead-token record matches it.
    public static func of(_ audience: FCMAudience) -> String {
        of("fcm-\(audience.kind):" + audience.identity)
    }

    /// libcrypto's block function (SHA-NI where the CPU has it) under PushCore's SHA-256.
    static let sha256Engine: any SHA256BlockEngine = LibcryptoSHA256Blocks()

    public static func of(_ token: String) -> String {
        // PushCore's SHA-256 hashes the string's bytes in place (no copy), its blocks compressed
        // by libcrypto: this runs once per recipient.
        let digest = SHA256.inlineHash(utf8: token, engine: sha256Engine)
        let hex: InlineArray<16, UInt8> = [0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66]
        // Written straight into the string's storage: no byte array first (one allocation
        // per recipient fewer).
        return String(unsafeUninitializedCapacity: 32) { out in
            for index in 0..<16 {
                out[index * 2] = hex[Int(digest[index] >> 4)]
                out[index * 2 + 1] = hex[Int(digest[index] & 0x0f)]
            }
            return 32
        }
    }
}

extension JobPlanner {
    /// The Huawei batches of a planned job, as the worker forms them when the recipients are
    /// claimed together (`render`, `send`): positions in `plans` of ready Huawei recipients,
    /// grouped by identical shared bodies, at most 1000 each, in job order.
    public static func hmsBatches(_ plans: [PlannedRecipient]) -> [[Int]] {
        var positions: [Int] = []
        var bodies: [[UInt8]] = []
        for (position, plan) in plans.enumerated() {
            guard case .ready(let request) = plan.state, request.platform == .huawei else { continue }
            positions.append(position)
            bodies.append(request.body)
        }
        return HMSBatching.group(bodies).map { $0.map { positions[$0] } }
    }
}
