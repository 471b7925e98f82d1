/// One HTTP request for a provider, as built by a payload builder (DESIGN §5).
///
/// It carries no credentials: the transport adds `authorization` (APNs provider JWT, FCM OAuth
/// bearer, Web Push VAPID) and, for Web Push, encrypts `body` (the plaintext JSON) per RFC 8291
/// and adds `content-encoding: aes128gcm`.
public struct ProviderRequest: Sendable, Equatable {
    public var platform: Platform
    public var method: String
    /// The full URL, e.g. `https://api.push.apple.com/3/device/<token>`.
    public var url: String
    /// Header names in lower case, in a stable order.
    public var headers: [KeyValue]
    /// The body bytes (Web Push: the plaintext before encryption).
    public var body: [UInt8]
    /// For Web Push: the subscription whose keys encrypt `body`.
    public var webPush: WebPushSubscription?
    /// The texts cut to fit the provider's budget (`title`, `subtitle`, `body`; DESIGN §5
    /// Budgets), for `render`. Empty when nothing was cut.
    public var truncatedFields: [String] = []

    public init(platform: Platform, method: String = "POST", url: String, headers: [KeyValue], body: [UInt8],
                webPush: WebPushSubscription? = nil) {
        self.platform = platform; self.method = method; self.url = url; self.headers = headers; self.body = body
        self.webPush = webPush
    }

    /// The value of header `name` (lower case), if present.
    public func header(_ name: String) -> String? { headers.first { $0.key == name }?.value }
}

/// Per-app facts payload builders need from the credentials folder (no secrets).
public struct AppProfile: Sendable, Equatable {
    public struct APNS: Sendable, Equatable {
        /// The app's bundle id, sent as `apns-topic`.
        public var topic: String
        /// Default `https://api.push.apple.com`.
        public var endpoint: String
        public init(topic: String, endpoint: String = "https://api.push.apple.com") { self.topic = topic; self.endpoint = endpoint }
    }
    public struct FCM: Sendable, Equatable {
        public var projectID: String
        /// Default `https://fcm.googleapis.com`.
        public var endpoint: String
        public init(projectID: String, endpoint: String = "https://fcm.googleapis.com") { self.projectID = projectID; self.endpoint = endpoint }
    }
    /// nil ⇒ no APNs credentials: iOS recipients are `rejected`/`no_credentials`.
    public var apns: APNS?
    public var fcm: FCM?
    /// Whether VAPID keys exist for the app.
    public var hasWebPush: Bool
    /// `app.json` `additionalDataAtRoot`: APNs `data` keys at the payload root instead of `custom.a`.
    public var additionalDataAtRoot: Bool

    public init(apns: APNS?, fcm: FCM?, hasWebPush: Bool, additionalDataAtRoot: Bool = false) {
        self.apns = apns; self.fcm = fcm; self.hasWebPush = hasWebPush; self.additionalDataAtRoot = additionalDataAtRoot
    }

    /// `render` without a credentials folder: production endpoints and `<unknown>` placeholders.
    public static let placeholder = AppProfile(apns: APNS(topic: "<unknown>"), fcm: FCM(projectID: "<unknown>"), hasWebPush: true)
}
