/// One HTTP request for a provider, as built by a payload builder (docs/payloads.md).
///
/// It carries no credentials: the transport adds `authorization` (APNs provider JWT, FCM OAuth
/// bearer, Web Push VAPID) and, for Web Push, encrypts `body` (the plaintext JSON) per RFC 8291
/// and adds `content-encoding: aes128gcm`.
public struct ProviderRequest: Sendable, Equatable {
    public var platform: Platform
    public var method: String
    /// The full URL, e.g. `https://api.push.apple.com/3/device/<token>`.
    public var url: String
    /// Header names in lower case, in a stable order: the same for every recipient of a job that
    /// shares its options (the transport lays them out once per job).
    public var headers: [KeyValue]
    /// Headers whose value is this recipient's own (lower case): the derived replace key in APNs
    /// `apns-collapse-id` or Web Push `topic` (docs/payloads.md "Replace key"). Sent beside ``headers``; empty for
    /// most requests of jobs with a `collapseId`.
    public var recipientHeaders: [KeyValue] = []
    /// The body bytes (Web Push: the plaintext before encryption).
    public var body: [UInt8]
    /// For Web Push: the subscription whose keys encrypt `body`.
    public var webPush: WebPushSubscription?
    /// For Huawei: the recipient's token. `body` is then the request without `message.token`,
    /// shared by every recipient of a batch; ``HMSBatching/body(shared:tokens:)`` writes the
    /// batch's tokens in (docs/providers.md).
    public var hmsToken: String? = nil
    /// The texts cut to fit the provider's budget (`title`, `subtitle`, `body`; docs/payloads.md
    /// Budgets), for `render`. Empty when nothing was cut.
    public var truncatedFields: [String] = []

    public init(platform: Platform, method: String = "POST", url: String, headers: [KeyValue], body: [UInt8],
                webPush: WebPushSubscription? = nil) {
        self.platform = platform; self.method = method; self.url = url; self.headers = headers; self.body = body
        self.webPush = webPush
    }

    /// The value of header `name` (lower case), if present, in ``headers`` or ``recipientHeaders``.
    public func header(_ name: String) -> String? {
        headers.first { $0.key == name }?.value ?? recipientHeaders.first { $0.key == name }?.value
    }

    /// Every header the request is sent with: ``headers``, then ``recipientHeaders``.
    public var allHeaders: [KeyValue] { recipientHeaders.isEmpty ? headers : headers + recipientHeaders }
}

/// Per-app facts payload builders need from the credentials folder (no secrets).
public struct AppProfile: Sendable, Equatable {
    public struct APNS: Sendable, Equatable {
        /// How the app authenticates to APNs (docs/providers.md).
        public enum Authentication: String, Sendable, Equatable {
            /// A provider token (ES256 JWT) in every request's `authorization` header.
            case token
            /// A TLS client certificate on the connection; no `authorization` header. Apple
            /// supports no Live Activity pushes over it (`unsupported_auth`, docs/reference/job.md).
            case certificate
        }
        /// The app's bundle id, sent as `apns-topic`.
        public var topic: String
        /// Default `https://api.push.apple.com`.
        public var endpoint: String
        /// Default `.token`.
        public var authentication: Authentication
        public init(topic: String, endpoint: String = "https://api.push.apple.com", authentication: Authentication = .token) {
            self.topic = topic; self.endpoint = endpoint; self.authentication = authentication
        }
    }
    public struct FCM: Sendable, Equatable {
        public var projectID: String
        /// Default `https://fcm.googleapis.com`.
        public var endpoint: String
        public init(projectID: String, endpoint: String = "https://fcm.googleapis.com") { self.projectID = projectID; self.endpoint = endpoint }
    }
    /// `hms.json` (docs/providers.md), without the client secret.
    public struct HMS: Sendable, Equatable {
        /// The id in the send path `/v1/<id>/messages:send`: `appId` when `hms.json` has one, else
        /// `clientId` (Huawei's CN reference names the OAuth 2.0 client id, the EN one `[appid]`;
        /// for an app the two are the same number; Huawei's Push Kit documentation).
        public var pathID: String
        /// Default `https://push-api.cloud.huawei.com`.
        public var endpoint: String
        /// The app's entry activity (full class name) for `android.notification.badge.class`, which
        /// Huawei requires with a badge; nil: no badge is sent (the SDK keys still carry it).
        public var badgeClass: String?
        public init(pathID: String, endpoint: String = "https://push-api.cloud.huawei.com", badgeClass: String? = nil) {
            self.pathID = pathID; self.endpoint = endpoint; self.badgeClass = badgeClass
        }
    }
    /// nil ⇒ no APNs credentials: iOS recipients are `rejected`/`no_credentials`.
    public var apns: APNS?
    public var fcm: FCM?
    /// nil ⇒ no `hms.json`: Huawei recipients are `rejected`/`no_credentials`.
    public var hms: HMS? = nil
    /// Whether VAPID keys exist for the app.
    public var hasWebPush: Bool
    /// `app.json` `additionalDataAtRoot`: APNs `data` keys at the payload root instead of `custom.a`.
    public var additionalDataAtRoot: Bool

    public init(apns: APNS?, fcm: FCM?, hasWebPush: Bool, additionalDataAtRoot: Bool = false) {
        self.apns = apns; self.fcm = fcm; self.hasWebPush = hasWebPush; self.additionalDataAtRoot = additionalDataAtRoot
    }

    /// `render` without a credentials folder: production endpoints and `<unknown>` placeholders.
    public static let placeholder: AppProfile = {
        var profile = AppProfile(apns: APNS(topic: "<unknown>"), fcm: FCM(projectID: "<unknown>"), hasWebPush: true)
        profile.hms = HMS(pathID: "<unknown>")
        return profile
    }()
}
