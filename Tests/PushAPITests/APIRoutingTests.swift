import PushAPI
import PushCore
import PushEncoding
import Testing

/// ``APIRouting``: every endpoint, every wrong method (405 with Allow), unknown paths (404), and
/// the path segments' decoding and checks (400 invalid_path).
@Suite("API routing")
struct APIRoutingTests {
    static func route(_ method: String, _ path: String) -> APIRoute? {
        if case .success(let route) = APIRouting.resolve(method: method, rawPath: path) { return route }
        return nil
    }

    static func error(_ method: String, _ path: String) -> APIError? {
        if case .failure(let error) = APIRouting.resolve(method: method, rawPath: path) { return error }
        return nil
    }

    static let campaign = CampaignPath(appID: "app_demo", campaignID: "spring")

    @Test("every endpoint and its method", arguments: [
        ("GET", "/healthz", APIRoute.healthz), ("HEAD", "/healthz", .healthz), ("GET", "/readyz", .readyz),
        ("GET", "/metrics", .metrics), ("GET", "/openapi.json", .openAPI), ("POST", "/v1/jobs", .submitJobs),
        ("GET", "/v1/campaigns/app_demo/spring", .campaignStatus(campaign)), ("HEAD", "/v1/campaigns/app_demo/spring", .campaignStatus(campaign)),
        ("POST", "/v1/campaigns/app_demo/spring/pause", .campaignAction(campaign, .pause)),
        ("POST", "/v1/campaigns/app_demo/spring/resume", .campaignAction(campaign, .resume)),
        ("POST", "/v1/campaigns/app_demo/spring/cancel", .campaignAction(campaign, .cancel)),
        ("PUT", "/v1/campaigns/app_demo/spring/throttle", .campaignAction(campaign, .throttle)),
        ("PUT", "/v1/campaigns/app_demo/spring/deadline", .campaignAction(campaign, .deadline)),
    ])
    func endpoints(method: String, path: String, expected: APIRoute) {
        #expect(Self.route(method, path) == expected)
    }

    @Test("a known path with another method is 405 with the methods it takes in Allow", arguments: [
        ("POST", "/healthz", "GET, HEAD"), ("DELETE", "/openapi.json", "GET, HEAD"), ("GET", "/v1/jobs", "POST"),
        ("PUT", "/v1/jobs", "POST"), ("POST", "/v1/campaigns/a/c", "GET, HEAD"), ("GET", "/v1/campaigns/a/c/pause", "POST"),
        ("PUT", "/v1/campaigns/a/c/cancel", "POST"), ("POST", "/v1/campaigns/a/c/throttle", "PUT"),
        ("PATCH", "/v1/campaigns/a/c/deadline", "PUT"), ("OPTIONS", "/v1/jobs", "POST"), ("get", "/healthz", "GET, HEAD"),
    ])
    func methodNotAllowed(method: String, path: String, allow: String) throws {
        let error = try #require(Self.error(method, path))
        #expect(error.status == 405 && error.code == "method_not_allowed")
        #expect(error.headers.first { $0.0 == "Allow" }?.1 == allow)
    }

    @Test("unknown paths are 404, whatever the method", arguments: [
        "/", "", "healthz", "/healthz/", "/v1", "/v1/", "/v1/jobs/", "/v1/jobs/x", "/v2/jobs", "/v1/campaigns", "/v1/campaigns/a",
        "/v1/campaigns/a/c/", "/v1/campaigns/a/c/stop", "/v1/campaigns/a/c/pause/x", "//v1/jobs", "/V1/jobs", "/v1/campaigns/a/c/PAUSE",
        "/openapi.yaml", "/v1/campaigns/a/c/d/pause",
    ])
    func notFound(path: String) throws {
        for method in ["GET", "POST", "PUT"] {
            let error = try #require(Self.error(method, path))
            #expect(error.status == 404 && error.code == "not_found", "\(method) \(path)")
        }
    }

    @Test("path segments are percent-decoded one by one: %2F stays inside the campaign id")
    func decoding() {
        #expect(Self.route("GET", "/v1/campaigns/app/spring%2F2026") == .campaignStatus(CampaignPath(appID: "app", campaignID: "spring/2026")))
        #expect(Self.route("GET", "/v1/campaigns/app/a%20b+c") == .campaignStatus(CampaignPath(appID: "app", campaignID: "a b+c")))
        #expect(Self.route("GET", "/v1/campaigns/app/%C3%A9t%c3%a9") == .campaignStatus(CampaignPath(appID: "app", campaignID: "été")))
        #expect(Self.route("GET", "/v1/campaigns/app%2Dx/c") == .campaignStatus(CampaignPath(appID: "app-x", campaignID: "c")))
        #expect(APIRouting.percentDecoded("%") == nil)
        #expect(APIRouting.percentDecoded("%4") == nil)
        #expect(APIRouting.percentDecoded("%zz") == nil)
        #expect(APIRouting.percentDecoded("%FF") == nil, "not UTF-8")
        #expect(APIRouting.percentDecoded("%00") == "\u{0}")
    }

    @Test("invalid app or campaign segments are 400 invalid_path naming the segment", arguments: [
        ("/v1/campaigns/a%2Fb/c", "app"), ("/v1/campaigns/./c", "app"), ("/v1/campaigns/../c", "app"), ("/v1/campaigns/a%20b/c", "app"),
        ("/v1/campaigns//c", "app"), ("/v1/campaigns/%E2%82%AC/c", "app"), ("/v1/campaigns/a%zz/c", "app"),
        ("/v1/campaigns/\(String(repeating: "a", count: 256))/c", "app"),
        ("/v1/campaigns/a/", "campaign"), ("/v1/campaigns/a//pause", "campaign"), ("/v1/campaigns/a/%FF", "campaign"),
        ("/v1/campaigns/a/%", "campaign"), ("/v1/campaigns/a/\(String(repeating: "c", count: 257))", "campaign"),
        ("/v1/campaigns/a/\(String(repeating: "%C3%A9", count: 129))", "campaign"),
    ])
    func invalidSegments(path: String, field: String) throws {
        let method = path.hasSuffix("/pause") ? "POST" : "GET"
        let error = try #require(Self.error(method, path))
        #expect(error.status == 400 && error.code == "invalid_path", "\(path): \(error.message)")
        #expect(error.field == field)
    }

    @Test("the limits themselves are accepted: a 255-byte app, a 256-byte campaign")
    func limits() {
        let app = String(repeating: "a", count: 255), campaign = String(repeating: "é", count: 128)
        #expect((try? CampaignPath.validated(app: app, campaign: campaign).get()) == CampaignPath(appID: app, campaignID: campaign))
    }

    @Test("only /v1 needs a token; every route has its own metric label")
    func labels() {
        #expect(!APIRoute.healthz.needsToken && !APIRoute.openAPI.needsToken && !APIRoute.metrics.needsToken && !APIRoute.readyz.needsToken)
        #expect(APIRoute.submitJobs.needsToken && APIRoute.campaignStatus(Self.campaign).needsToken)
        let routes: [APIRoute] = [.healthz, .readyz, .metrics, .openAPI, .submitJobs, .campaignStatus(Self.campaign)]
            + APIRoute.CampaignVerb.allCases.map { .campaignAction(Self.campaign, $0) }
        #expect(Set(routes.map(\.label)).count == routes.count)
        #expect(Set(routes.map(\.label) + ["unknown"]) == Set(APIRoute.labels))
    }
}
