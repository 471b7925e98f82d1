import Foundation
@testable import PushRuntime
import PushCore
@testable import PushDelivery
import PushHTTP
import PushTestSupport
import Synchronization
import Testing
@testable import PushWorker

/// The Web Push SSRF guard (docs/security.md).
@Suite("Web Push address guard")
struct WebPushAddressGuardTests {
    @Test("localhost resolves to loopback: refused unless listed explicitly; listed IPs pass")
    func systemResolver() {
        let standard = WebPushAddressGuard(policy: WebPushPolicy(extraAllowedHosts: ["127.0.0.1"]))
        guard case .refused = standard.verdict(host: "localhost") else { Issue.record("localhost not refused"); return }
        #expect(standard.verdict(host: "127.0.0.1") == .allowed)
        #expect(standard.verdict(host: "10.1.2.3") == .refused(address: "10.1.2.3"))
        #expect(standard.verdict(host: "[::1]") == .refused(address: "[::1]"))
        #expect(WebPushAddressGuard(policy: WebPushPolicy(extraAllowedHosts: ["localhost"])).verdict(host: "localhost") == .allowed)
        #expect(standard.verdict(host: "no-such-host.invalid") == .unresolvable)
    }

    @Test("any private address among the answers refuses the host; verdicts are cached for a minute")
    func injectedResolver() {
        let calls = Mutex(0)
        let clock = TestClock(1000)
        let guardian = WebPushAddressGuard(policy: .standard, resolver: { host in
            calls.withLock { $0 += 1 }
            switch host {
            case "push.example.test": return ["93.184.215.14", "192.168.1.5"]
            case "fcm.googleapis.com": return ["142.250.1.1", "2a00:1450::1"]
            default: return nil
            }
        }, clock: { clock.now })
        #expect(guardian.verdict(host: "push.example.test") == .refused(address: "192.168.1.5"))
        #expect(guardian.verdict(host: "fcm.googleapis.com") == .allowed)
        #expect(guardian.verdict(host: "FCM.googleapis.com") == .allowed)
        #expect(calls.withLock { $0 } == 2)
        clock.set(1061)
        #expect(guardian.verdict(host: "fcm.googleapis.com") == .allowed)
        #expect(calls.withLock { $0 } == 3)
        #expect(guardian.verdict(host: "gone.example") == .unresolvable)
        #expect(guardian.verdict(host: "gone.example") == .unresolvable)
        #expect(calls.withLock { $0 } == 5)  // failures are not cached
    }

    @Test("a private address in any form refuses the host (mapped, NAT64, 6to4); an answer that is no address refuses it too")
    func embeddedForms() {
        let guardian = WebPushAddressGuard(policy: .standard, resolver: { host in
            switch host {
            case "nat64.example": return ["64:ff9b::a9fe:a9fe"]
            case "mapped.example": return ["::ffff:127.0.0.1"]
            case "sixtofour.example": return ["2606:4700::1111", "2002:c0a8:101::1"]
            case "junk.example": return ["not-an-address"]
            case "public.example": return ["2606:4700::1111", "64:ff9b::808:808", "8.8.8.8"]
            default: return nil
            }
        })
        #expect(guardian.verdict(host: "nat64.example") == .refused(address: "64:ff9b::a9fe:a9fe"))
        #expect(guardian.verdict(host: "mapped.example") == .refused(address: "::ffff:127.0.0.1"))
        #expect(guardian.verdict(host: "sixtofour.example") == .refused(address: "2002:c0a8:101::1"))
        #expect(guardian.verdict(host: "junk.example") == .refused(address: "not-an-address"))
        #expect(guardian.verdict(host: "public.example") == .allowed)
        #expect(guardian.verdict(host: "64:ff9b::7f00:1") == .refused(address: "64:ff9b::7f00:1"), "an IP-literal host needs no resolver")
    }

    @Test("the Deliverer refuses an endpoint on localhost (not listed) with endpoint_not_allowed; 127.0.0.1 listed is sent")
    func deliverer() throws {
        let sandbox = try SandboxServer(apps: ["app_cli"])
        var configuration = HTTPClientConfiguration()
        configuration.caFile = sandbox.certificatePath
        let http = try HTTP2Client(configuration: configuration)
        defer { http.shutdown(drainTimeout: .seconds(1)) }
        let policy = WebPushPolicy(extraAllowedHosts: ["127.0.0.1"])
        let deliverer = Deliverer(http: http, metrics: Metrics(), logger: Logger(level: .critical), requestTimeout: .seconds(10),
                                  webPushGuard: WebPushAddressGuard(policy: policy))
        let credentials = AppCredentials.load(appID: "app_cli", folder: URL(fileURLWithPath: sandbox.credentialsPath + "/app_cli"))
        let planner = JobPlanner(keyring: try MsgIDKeyring(parsing: CLITest.keys), webPushPolicy: policy)
        let subscription = try CLITest.subscription(sandbox)
        let job = try JobDecoder.decode(Array(CLITest.job(recipients: [#"{"subscriptionId":"w1","platform":"web","subscription":\#(subscription)}"#]).utf8))
        guard case .ready(let request) = planner.plan(job, profile: credentials.profile, now: Date())[0].state else {
            Issue.record("not ready"); return
        }
        func deliver(_ request: ProviderRequest) -> Deliverer.Attempt? {
            return deliverer.deliverWaiting(request, credentials: credentials)
        }
        guard case .sent = try #require(deliver(request)).outcome else { Issue.record("127.0.0.1 not sent"); return }
        // The same subscription behind the name localhost (say, allowed by a careless suffix): refused before connecting.
        var local = request
        local.url = request.url.replacingOccurrences(of: "127.0.0.1", with: "localhost")
        local.webPush?.endpoint = local.url
        let refused = try #require(deliver(local))
        #expect(refused.outcome == .rejected(reason: "endpoint_not_allowed"))
        #expect(refused.attempts == 0)
        #expect(((try sandbox.stats())["requests"] as? Int) == 1)
    }

    /// DNS rebinding: the guard's resolver (a double) says public, libcurl's resolver (a double
    /// too, `CURLOPT_RESOLVE`) says 127.0.0.1. Only loopback is ever contacted.
    @Test("a name the guard saw public but libcurl resolves to 127.0.0.1 is refused at connect time: endpoint_not_allowed, nothing sent")
    func rebindingRefusedAtConnect() throws {
        let sandbox = try SandboxServer(apps: ["app_cli"])
        var configuration = HTTPClientConfiguration()
        configuration.caFile = sandbox.certificatePath
        configuration.resolveOverrides = ["push.rebind.test:\(sandbox.port):127.0.0.1"]
        let http = try HTTP2Client(configuration: configuration)
        defer { http.shutdown(drainTimeout: .seconds(1)) }
        let credentials = AppCredentials.load(appID: "app_cli", folder: URL(fileURLWithPath: sandbox.credentialsPath + "/app_cli"))
        let subscription = try CLITest.subscription(sandbox)
        let job = try JobDecoder.decode(Array(CLITest.job(recipients: [#"{"subscriptionId":"w1","platform":"web","subscription":\#(subscription)}"#]).utf8))
        let lyingResolver: WebPushAddressGuard.Resolver = { $0 == "push.rebind.test" ? ["93.184.215.14"] : nil }
        func deliver(allowList: [String]) throws -> Deliverer.Attempt? {
            let policy = WebPushPolicy(extraAllowedHosts: ["127.0.0.1"] + allowList)
            let deliverer = Deliverer(http: http, metrics: Metrics(), logger: Logger(level: .critical), requestTimeout: .seconds(10),
                                      webPushGuard: WebPushAddressGuard(policy: policy, resolver: lyingResolver))
            let planner = JobPlanner(keyring: try MsgIDKeyring(parsing: CLITest.keys), webPushPolicy: policy)
            guard case .ready(var request) = planner.plan(job, profile: credentials.profile, now: Date())[0].state else { return nil }
            request.url = request.url.replacingOccurrences(of: "127.0.0.1", with: "push.rebind.test")
            request.webPush?.endpoint = request.url
            return deliverer.deliverWaiting(request, credentials: credentials)
        }
        // Allowed by a suffix (not listed explicitly): the guard's answer was public, the connection's is not.
        let refused = try #require(try deliver(allowList: [".rebind.test"]))
        #expect(refused.outcome == .rejected(reason: "endpoint_not_allowed"), "\(refused)")
        #expect(((try sandbox.stats())["requests"] as? Int) == 0, "nothing reached the server")
        // Listed explicitly: private addresses are accepted for it, so libcurl connects (and TLS
        // then fails: the sandbox's certificate does not name push.rebind.test).
        let listed = try #require(try deliver(allowList: ["push.rebind.test"]))
        guard case .retry(let reason, _, _) = listed.outcome else { Issue.record("expected a TLS retry, got \(listed)"); return }
        #expect(reason == "tls_error", "\(listed)")
    }
}
