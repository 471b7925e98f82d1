import PushEncoding
/// The job's `ios.liveActivity` (docs/reference/job.md): an ActivityKit push that starts, updates or ends
/// a Live Activity instead of showing a notification.
///
/// Apple: "Starting and updating Live Activities with ActivityKit push notifications".
/// `recipient.token` is the push-to-start
/// token for ``Event/start`` and the activity's own push token for ``Event/update`` and
/// ``Event/end``; both are APNs hex tokens, so targeting is unchanged.
public struct LiveActivity: Sendable, Equatable {
    /// `aps.event`.
    public enum Event: String, Sendable, Equatable, CaseIterable {
        /// Push-to-start (iOS 17.2+): needs `attributes-type`, `attributes` and an alert.
        case start
        case update
        /// Send the final state; `dismissal-date` decides how long it stays on the Lock Screen.
        case end
    }

    public var event: Event
    /// The app's `ContentState` as a JSON object, sent verbatim as `aps.content-state`. It must
    /// decode with the app's default `Decodable` strategy; it is never truncated (a payload that
    /// cannot fit is `rejected`/`payload_too_large`).
    public var contentState: JSONObject
    /// The `ActivityAttributes` type name (`start` only, required there).
    public var attributesType: String?
    /// The static attributes (`start` only, required there).
    public var attributes: JSONObject?
    /// Unix seconds after which the system marks the activity stale.
    public var staleDate: Int?
    /// Unix seconds at which an ended activity leaves the Lock Screen (`end` only).
    public var dismissalDate: Int?
    /// Orders the app's concurrent activities (relative values, e.g. 100 and 50; the highest
    /// gets the Dynamic Island). Not the notification `relevance-score` (0…1).
    public var relevanceScore: Double?
    /// `start` only: `input-push-token: 1` asks the system for the new activity's update token
    /// (iOS 18+).
    public var inputPushToken: Bool
    /// Unix seconds of this state (the device keeps the newest); nil ⇒ the job's `createdAt`,
    /// else the time of sending (``PreparedJob``).
    public var timestamp: Int?

    public init(event: Event, contentState: JSONObject, attributesType: String? = nil, attributes: JSONObject? = nil,
                staleDate: Int? = nil, dismissalDate: Int? = nil, relevanceScore: Double? = nil,
                inputPushToken: Bool = false, timestamp: Int? = nil) {
        self.event = event; self.contentState = contentState; self.attributesType = attributesType
        self.attributes = attributes; self.staleDate = staleDate; self.dismissalDate = dismissalDate
        self.relevanceScore = relevanceScore; self.inputPushToken = inputPushToken; self.timestamp = timestamp
    }

    /// `apns-push-type` of every Live Activity request.
    public static let pushType = "liveactivity"
    /// Appended to the app's bundle id to form the `apns-topic` (`com.example.app.push-type.liveactivity`).
    public static let topicSuffix = ".push-type.liveactivity"
}
