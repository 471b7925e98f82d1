import Foundation
import PushEncoding

/// A fan-out job v1 (contract: docs/reference/job.md) as decoded and validated by ``JobDecoder``.
///
/// Properties are read-only outside the module: the job is what upstream sent, and
/// ``encoded(recipients:attempt:notBefore:)`` writes that document back out.
public struct FanOutJob: Sendable, Equatable {
    /// Always 1 for this version.
    public internal(set) var schemaVersion: Int
    public internal(set) var jobID: String
    /// `[A-Za-z0-9._-]+`, never `.` or `..` (it names a credentials folder).
    public internal(set) var appID: String
    public internal(set) var campaignID: String
    public internal(set) var variant: String?
    public internal(set) var createdAt: Date?
    /// Past this instant every recipient is `expired` and nothing is sent.
    public internal(set) var expiresAt: Date?
    /// Default: `.high`.
    public internal(set) var priority: DeliveryPriority
    /// Seconds; 0 means "now or never". Nil leaves the provider default (bounded by `expiresAt`).
    public internal(set) var ttlSeconds: Int?
    /// ≤ 64 bytes (APNs `apns-collapse-id` limit).
    public internal(set) var collapseID: String?
    /// Campaign pace held by the fleet-wide Redis throttle (docs/reference/redis.md); a campaign
    /// control's throttle wins over it (docs/campaigns.md).
    public internal(set) var throttlePerMinute: Int?
    public internal(set) var content: JobContent
    /// Flat string map, in document order; keys + values ≤ 2048 bytes.
    public internal(set) var data: [KeyValue]
    public internal(set) var ios: IOSOptions
    public internal(set) var android: AndroidOptions
    public internal(set) var web: WebOptions
    public internal(set) var recipients: [Recipient]
    /// Attempts already made (retry jobs, docs/reference/job.md); 0 for a fresh job.
    public internal(set) var attempt: Int
    /// Retry jobs: not to be attempted before this instant.
    public internal(set) var notBefore: Date?
    /// The campaign's deadline: a recipient not sent by then is `expired` (reason
    /// `send_by_passed`); a campaign control's deadline wins over it (docs/campaigns.md).
    public internal(set) var sendBy: Date? = nil
    /// The frequency-cap category its recipients are counted in (docs/caps.md); nil: not counted.
    public internal(set) var capCategory: String? = nil
    /// The document as received with `recipients` an empty array in its place: what
    /// ``encoded(recipients:attempt:notBefore:)`` writes back around the recipients. The
    /// recipients' own JSON stays with each ``Recipient`` (``Recipient/source``), as bytes of the
    /// message when decoded from bytes: a held job keeps no tree of its recipients.
    var head: JSONValue
    /// An FCM topic or condition instead of `recipients` (docs/reference/job.md); `recipients` is then
    /// empty and the audience is the job's one recipient (``FCMAudience/recipient``).
    public internal(set) var audience: FCMAudience? = nil
    /// The job's lane (docs/lanes.md): `transactional` or `bulk` (the default).
    public internal(set) var lane: JobLane = .bulk
    /// Local-time delivery (docs/local-time.md): the job's quiet hours, its local send time, and
    /// the IANA zone of recipients that name none (else UTC).
    public internal(set) var quietHours: QuietHours? = nil
    public internal(set) var sendAtLocal: ClockTime? = nil
    public internal(set) var timezone: String? = nil

    /// How many recipients the job plans and has results for: its `recipients`, or the one
    /// audience of an audience job.
    public var plannedCount: Int { audience == nil ? recipients.count : 1 }

    /// This job without its recipient list (an audience job's audience stays): what a worker
    /// keeps once each recipient's plan holds its own ``Recipient``. ``encoded(recipients:attempt:notBefore:)``
    /// writes the same bytes for the same recipients; ``plannedCount`` and ``document`` no longer
    /// count or show the dropped list.
    package var withoutRecipients: FanOutJob {
        var job = self
        job.recipients = []
        return job
    }

    /// The document as received (its recipients parsed again from their bytes; for the CLI,
    /// not the worker's path).
    public var document: JSONValue {
        guard audience == nil, case .object(var root) = head, root["recipients"] != nil else { return head }
        root["recipients"] = .array(recipients.map(\.json))
        return .object(root)
    }

    /// The JSON of this job with `recipients` replaced and, when given, `attempt` and
    /// `notBefore` (RFC 3339 UTC) set: how a retry job for a subset of recipients is published,
    /// and how `enqueue --batch` splits a job. Every other member is written back as received.
    /// An audience job (docs/reference/job.md) keeps its `audience` and gets no `recipients` whatever
    /// `recipients` holds (its one recipient is the audience).
    /// `without`: top-level members left out (a retry job past its local send time drops `sendAtLocal`).
    public func encoded(recipients: [Recipient], attempt: Int? = nil, notBefore: Date? = nil, without: [String] = []) -> [UInt8] {
        var root = head.objectValue ?? JSONObject()
        for name in without where root[name] != nil { root[name] = nil }
        if audience == nil { root["recipients"] = .array(recipients.map(\.json)) }
        if let attempt { root["attempt"] = .number(JSONNumber(attempt)) }
        if let notBefore {
            let hasFraction = notBefore.timeIntervalSince1970.rounded(.down) != notBefore.timeIntervalSince1970
            root["notBefore"] = .string(RFC3339Timestamp.format(notBefore, milliseconds: hasFraction))
        }
        return JSONValue.object(root).jsonBytes()
    }
}

/// The job's `content`: per-language texts, one of which is the default.
public struct JobContent: Sendable, Equatable {
    /// A tag present in `languages` (matched case-insensitively).
    public var defaultLanguage: String
    /// In document order.
    public var languages: [LocalizedContent]

    public init(defaultLanguage: String, languages: [LocalizedContent]) {
        self.defaultLanguage = defaultLanguage; self.languages = languages
    }

    /// The default language's entry.
    public var defaultContent: LocalizedContent? {
        let wanted = defaultLanguage.lowercased()
        return languages.first { $0.language.lowercased() == wanted }
    }
}

/// One language's texts. Title, subtitle, body and action titles are templates
/// (``Template``); a field that is nil falls back to the default language's.
public struct LocalizedContent: Sendable, Equatable {
    /// The tag as written in the job (`en`, `pt-BR`).
    public var language: String
    public var title: String?
    public var subtitle: String?
    public var body: String?
    public var url: String?
    public var imageURL: String?
    /// Nil when the language has no `actions` member (then the default language's apply).
    public var actions: [NotificationAction]?

    public init(language: String, title: String? = nil, subtitle: String? = nil, body: String? = nil,
                url: String? = nil, imageURL: String? = nil, actions: [NotificationAction]? = nil) {
        self.language = language; self.title = title; self.subtitle = subtitle; self.body = body
        self.url = url; self.imageURL = imageURL; self.actions = actions
    }
}

/// One entry of `recipients` (docs/reference/job.md). Decoded leniently: a problem here never fails the job,
/// it rejects only this recipient when it is resolved (``RecipientTargeting``).
public struct Recipient: Sendable, Equatable {
    /// Where the recipient's JSON as received is kept.
    /// Equal when the JSON is: bytes and a tree of the same value are equal.
    enum Source: Sendable, Equatable {
        /// The bytes of the message it came in: a slice sharing the message's one buffer,
        /// parsed again only when a retry job or the CLI writes it out.
        case bytes(ArraySlice<UInt8>)
        /// The tree, for a job decoded from a document (the CLI) or a recipient given one.
        case tree(JSONValue)

        var value: JSONValue? {
            switch self {
            case .tree(let value): value
            // The bytes parsed once already (as part of the job), so this parse succeeds.
            case .bytes(let bytes): try? JSONParser.parse(Array(bytes))
            }
        }

        static func == (lhs: Source, rhs: Source) -> Bool { lhs.value == rhs.value }
    }

    /// A browser push subscription as sent (keys still base64url text).
    public struct Subscription: Sendable, Equatable {
        public var endpoint: String?
        public var p256dh: String?
        public var auth: String?
        public init(endpoint: String?, p256dh: String?, auth: String?) {
            self.endpoint = endpoint; self.p256dh = p256dh; self.auth = auth
        }
    }

    public var userID: String?
    /// Empty when missing (the recipient is then rejected, but still gets a result line).
    public var subscriptionID: String
    /// `platform` exactly as given.
    public var platformName: String?
    /// `platformName` recognised (case-insensitively), else nil (`unknown_platform`).
    public var platform: Platform?
    public var token: String?
    /// A BCP 47 tag (`pt-BR`); `_` is read as `-`.
    public var language: String?
    /// `chrome`, `edge`, `firefox`, `safari`, as given.
    public var browser: String?
    public var subscription: Subscription?
    /// Template variables. Numbers and booleans are kept as their JSON text; other values are ignored.
    public var properties: [String: String]
    /// When the token was (re-)registered (docs/reference/records.md); nil when absent or unreadable.
    public var tokenUpdatedAt: Date?
    /// The recipient's IANA time zone (`Europe/Paris`), as given; checked only by a job with
    /// local-time rules (docs/local-time.md).
    public var timezone: String? = nil
    /// The recipient's JSON as received, written back verbatim in retry jobs.
    public var source: JSONValue? {
        get { sourceStorage?.value }
        set { sourceStorage = newValue.map(Source.tree) }
    }
    var sourceStorage: Source?

    public init(userID: String? = nil, subscriptionID: String, platformName: String?, token: String? = nil,
                language: String? = nil, browser: String? = nil, subscription: Subscription? = nil,
                properties: [String: String] = [:], tokenUpdatedAt: Date? = nil, source: JSONValue? = nil) {
        self.userID = userID; self.subscriptionID = subscriptionID; self.platformName = platformName
        self.platform = platformName.flatMap(Self.platform(named:))
        self.token = token; self.language = language; self.browser = browser; self.subscription = subscription
        self.properties = properties; self.tokenUpdatedAt = tokenUpdatedAt; self.sourceStorage = source.map(Source.tree)
    }

    /// The decoder's: the recipient's JSON kept as `sourceStorage`.
    init(userID: String?, subscriptionID: String, platformName: String?, token: String?, language: String?, browser: String?,
         subscription: Subscription?, properties: [String: String], tokenUpdatedAt: Date?, sourceStorage: Source) {
        self.userID = userID; self.subscriptionID = subscriptionID; self.platformName = platformName
        self.platform = platformName.flatMap(Self.platform(named:))
        self.token = token; self.language = language; self.browser = browser; self.subscription = subscription
        self.properties = properties; self.tokenUpdatedAt = tokenUpdatedAt; self.sourceStorage = sourceStorage
    }

    /// The platform `name` means, case-insensitively. A name already lower case (the usual
    /// `ios`, `android`) needs no lower-casing.
    static func platform(named name: String) -> Platform? {
        Platform(rawValue: name) ?? Platform(rawValue: name.lowercased())
    }

    /// The platform text used in msgIDs and results: the known platform's name, else as given.
    public var platformLabel: String { platform?.rawValue ?? platformName ?? "" }

    /// The recipient as JSON: `source` when it was decoded, else built from the properties.
    public var json: JSONValue {
        if let source { return source }
        var object = JSONObject()
        if let userID { object["userId"] = .string(userID) }
        object["subscriptionId"] = .string(subscriptionID)
        if let platformName { object["platform"] = .string(platformName) }
        if let token { object["token"] = .string(token) }
        if let language { object["language"] = .string(language) }
        if let browser { object["browser"] = .string(browser) }
        if let subscription {
            var keys = JSONObject()
            if let p256dh = subscription.p256dh { keys["p256dh"] = .string(p256dh) }
            if let auth = subscription.auth { keys["auth"] = .string(auth) }
            var subscriptionObject = JSONObject()
            if let endpoint = subscription.endpoint { subscriptionObject["endpoint"] = .string(endpoint) }
            subscriptionObject["keys"] = .object(keys)
            object["subscription"] = .object(subscriptionObject)
        }
        if !properties.isEmpty {
            object["properties"] = .object(JSONObject(properties.sorted { $0.key < $1.key }
                .map { (key: $0.key, value: JSONValue.string($0.value)) }))
        }
        if let timezone { object["timezone"] = .string(timezone) }
        if let tokenUpdatedAt { object["tokenUpdatedAt"] = .string(RFC3339Timestamp.format(tokenUpdatedAt, milliseconds: true)) }
        return .object(object)
    }
}

/// One whole-job problem: where (a JSON path) and why.
public struct JobProblem: Sendable, Equatable, CustomStringConvertible {
    /// Where, as a JSON path: `$.content.languages.en.actions[1].id`.
    public var path: String
    public var reason: String

    public init(path: String, reason: String) { self.path = path; self.reason = reason }

    public var description: String { "\(path): \(reason)" }
}

/// Why a job is invalid as a whole (docs/reference/job.md): it goes to the DLQ
/// (``description`` is its `error` header), `render`/`send`/`enqueue` exit 65 listing
/// ``problems``. The decoder reports every problem of the job at once, in document order;
/// ``path`` and ``reason`` are the first one's.
public struct JobValidationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The first problem's path.
    public var path: String
    /// The first problem's reason.
    public var reason: String
    /// Every problem kept, in document order, the first one included (at least one).
    public var problems: [JobProblem]
    /// Problems found beyond those kept (a job with thousands of broken recipients).
    public var omitted: Int

    public init(path: String, reason: String) {
        self.init(problems: [JobProblem(path: path, reason: reason)])
    }

    /// `problems` must not be empty (an empty list reads as one problem at `$`).
    public init(problems: [JobProblem], omitted: Int = 0) {
        let first = problems.first ?? JobProblem(path: "$", reason: "invalid job")
        self.path = first.path
        self.reason = first.reason
        self.problems = problems.isEmpty ? [first] : problems
        self.omitted = omitted
    }

    /// `path: reason` of every problem, joined by `; ` (one line: the DLQ `error` header).
    public var description: String {
        let text = problems.map(\.description).joined(separator: "; ")
        return omitted > 0 ? text + "; and \(omitted) more" : text
    }

    /// One line per problem (`render`/`send`/`enqueue` on stderr).
    public var lines: [String] {
        problems.map(\.description) + (omitted > 0 ? ["… and \(omitted) more problems"] : [])
    }
}
