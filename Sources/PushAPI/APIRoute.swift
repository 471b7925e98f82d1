import PushCore

/// One campaign named by a request path: `/v1/campaigns/{app}/{campaign}`.
public struct CampaignPath: Sendable, Equatable {
    public var appID: String
    public var campaignID: String
    public init(appID: String, campaignID: String) { self.appID = appID; self.campaignID = campaignID }

    /// Longest campaign id a path may name, in UTF-8 bytes.
    public static let maximumCampaignBytes = 256
    /// Longest app id, in UTF-8 bytes (it names a folder: file systems stop at 255).
    public static let maximumAppBytes = 255

    /// `app` as a job's `appId` (`[A-Za-z0-9._-]+`, not `.`/`..`, at most 255 bytes), `campaign`
    /// 1…256 bytes; the error names the one that is not (400 `invalid_path`).
    public static func validated(app: String, campaign: String) -> Result<CampaignPath, APIError> {
        guard JobDecoder.isValidAppID(app), app.utf8.count <= maximumAppBytes else {
            return .failure(.invalidPath("app", "must match [A-Za-z0-9._-]+, not be \".\" or \"..\" and be at most \(maximumAppBytes) bytes"))
        }
        guard !campaign.isEmpty, campaign.utf8.count <= maximumCampaignBytes else {
            return .failure(.invalidPath("campaign", "must be 1 to \(maximumCampaignBytes) bytes of UTF-8"))
        }
        return .success(CampaignPath(appID: app, campaignID: campaign))
    }
}

/// What a request asks for (docs/reference/api.md): pure, table-tested.
public enum APIRoute: Sendable, Equatable {
    case healthz, readyz, metrics, openAPI
    /// `POST /v1/jobs`.
    case submitJobs
    /// `GET /v1/campaigns/{app}/{campaign}`.
    case campaignStatus(CampaignPath)
    /// `POST …/pause|resume|cancel`, `PUT …/throttle|deadline`.
    case campaignAction(CampaignPath, CampaignVerb)

    public enum CampaignVerb: String, Sendable, CaseIterable {
        case pause, resume, cancel, throttle, deadline

        /// The method it takes: `PUT` sets a value (throttle, deadline), `POST` acts.
        public var method: String { self == .throttle || self == .deadline ? "PUT" : "POST" }
    }

    /// Whether the route needs a bearer token (everything under `/v1/`).
    public var needsToken: Bool {
        switch self {
        case .healthz, .readyz, .metrics, .openAPI: false
        case .submitJobs, .campaignStatus, .campaignAction: true
        }
    }

    /// The `route` label of `pushworker_api_requests_total`: a fixed name per endpoint.
    public var label: String {
        switch self {
        case .healthz: "healthz"
        case .readyz: "readyz"
        case .metrics: "metrics"
        case .openAPI: "openapi"
        case .submitJobs: "jobs"
        case .campaignStatus: "campaign_status"
        case .campaignAction(_, let verb): "campaign_\(verb.rawValue)"
        }
    }

    /// Every label ``label`` can take, and `unknown` for requests that match no endpoint.
    public static let labels: [String] = ["healthz", "readyz", "metrics", "openapi", "jobs", "campaign_status"]
        + CampaignVerb.allCases.map { "campaign_\($0.rawValue)" } + ["unknown"]
}

/// Request line → ``APIRoute``, or the error to answer.
///
/// Order: an unknown path is 404; a known path with another method 405 (`Allow` lists the
/// methods; `HEAD` goes wherever `GET` does); then the path's segments are percent-decoded and
/// checked (400 `invalid_path`, ``CampaignPath/validated(app:campaign:)``). The path comes raw (escapes kept), so an escaped `/`
/// (`%2F`) stays inside its segment.
public enum APIRouting {
    public static func resolve(method: String, rawPath: String) -> Result<APIRoute, APIError> {
        guard rawPath.hasPrefix("/") else { return .failure(.notFound(rawPath)) }
        let segments = rawPath.dropFirst().split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        let (shape, allow) = match(segments)
        guard let shape, let allow else { return .failure(.notFound(rawPath)) }
        let allowed = allow.split(separator: ",").map { $0.trimmingCharacters() }
        guard allowed.contains(method) else { return .failure(.methodNotAllowed(method, allow: allow)) }
        switch shape {
        case .fixed(let route): return .success(route)
        case .campaign(let app, let campaign, let verb):
            let path: CampaignPath
            switch campaignPath(app: app, campaign: campaign) {
            case .success(let value): path = value
            case .failure(let error): return .failure(error)
            }
            return .success(verb.map { .campaignAction(path, $0) } ?? .campaignStatus(path))
        }
    }

    private enum Shape {
        case fixed(APIRoute)
        case campaign(app: String, campaign: String, verb: APIRoute.CampaignVerb?)
    }

    /// The endpoint the segments name and its methods, or nil.
    private static func match(_ segments: [String]) -> (Shape?, String?) {
        switch segments.count {
        case 1:
            switch segments[0] {
            case "healthz": return (.fixed(.healthz), "GET, HEAD")
            case "readyz": return (.fixed(.readyz), "GET, HEAD")
            case "metrics": return (.fixed(.metrics), "GET, HEAD")
            case "openapi.json": return (.fixed(.openAPI), "GET, HEAD")
            default: return (nil, nil)
            }
        case 2 where segments == ["v1", "jobs"]:
            return (.fixed(.submitJobs), "POST")
        case 4 where segments[0] == "v1" && segments[1] == "campaigns":
            return (.campaign(app: segments[2], campaign: segments[3], verb: nil), "GET, HEAD")
        case 5 where segments[0] == "v1" && segments[1] == "campaigns":
            guard let verb = APIRoute.CampaignVerb(rawValue: segments[4]) else { return (nil, nil) }
            return (.campaign(app: segments[2], campaign: segments[3], verb: verb), verb.method)
        default:
            return (nil, nil)
        }
    }

    /// The decoded and checked `app` and `campaign` segments.
    static func campaignPath(app rawApp: String, campaign rawCampaign: String) -> Result<CampaignPath, APIError> {
        guard let app = percentDecoded(rawApp) else { return .failure(.invalidPath("app", "not a valid percent-encoded UTF-8 segment")) }
        guard let campaign = percentDecoded(rawCampaign) else {
            return .failure(.invalidPath("campaign", "not a valid percent-encoded UTF-8 segment"))
        }
        return CampaignPath.validated(app: app, campaign: campaign)
    }

    /// `%XX` escapes decoded (`+` stays `+`: this is a path, not a form); nil for a broken
    /// escape or bytes that are not UTF-8.
    public static func percentDecoded(_ segment: String) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(segment.utf8.count)
        var iterator = segment.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else { bytes.append(byte); continue }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension Substring {
    /// Without leading and trailing spaces.
    func trimmingCharacters() -> String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
