import Foundation
import PushTestSupport
@testable import PushWorker
@testable import pushworker
import Testing

/// `PUSHWORKER_HTTPS_PROXY` / `PUSHWORKER_NO_PROXY` (docs/reference/configuration.md): validated by
/// `config check`, used by the real binary when set, and the usual proxy environment variables
/// never used in their place.
@Suite("Proxy configuration", .serialized)
struct ProxyConfigurationTests {
    @Test("`send` goes through PUSHWORKER_HTTPS_PROXY when set, and never through https_proxy & co. when it is not")
    func sendThroughProxy() throws {
        let sandbox = try SandboxServer(apps: ["app_cli"])
        let proxy = try ConnectProxy()
        let job = try CLITest.write(CLITest.job(recipients: [SendCommandTests.ios]))
        let sandboxTarget = "127.0.0.1:\(sandbox.port)"
        let environmentProxies = ["https_proxy": proxy.url, "HTTPS_PROXY": proxy.url, "ALL_PROXY": proxy.url, "all_proxy": proxy.url]

        // Control: libcurl's own default (the curl CLI) does take https_proxy from the environment.
        let control = try runCommand("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", sandbox.certificatePath,
                                                      sandbox.origin + "/_sandbox/health"], environment: environmentProxies)
        #expect(control.stdout == "200", "\(control.stderr)")
        #expect(proxy.connects == [sandboxTarget], "the curl CLI used the environment's proxy")

        // pushworker with the same environment and no PUSHWORKER_HTTPS_PROXY: direct.
        let direct = try runCommand(BuiltProducts.pushworker, ["send", job],
                                    environment: SendCommandTests.environment(sandbox, extra: environmentProxies))
        #expect(direct.status == 0, "\(direct.stderr)")
        #expect(CLITest.lines(direct.stdout).first?["status"] as? String == "sent", "\(direct.stdout)")
        #expect(proxy.connects == [sandboxTarget], "pushworker ignored https_proxy/HTTPS_PROXY/ALL_PROXY")

        // PUSHWORKER_HTTPS_PROXY set: through the proxy (CONNECT to the sandbox, TLS end to end).
        let proxied = try runCommand(BuiltProducts.pushworker, ["send", job],
                                     environment: SendCommandTests.environment(sandbox, extra: ["PUSHWORKER_HTTPS_PROXY": proxy.url]))
        #expect(proxied.status == 0, "\(proxied.stderr)")
        #expect(CLITest.lines(proxied.stdout).first?["status"] as? String == "sent", "\(proxied.stdout)")
        #expect(proxy.connects == [sandboxTarget, sandboxTarget])

        // ... unless the host is in PUSHWORKER_NO_PROXY.
        let excluded = try runCommand(BuiltProducts.pushworker, ["send", job], environment: SendCommandTests.environment(sandbox, extra: [
            "PUSHWORKER_HTTPS_PROXY": proxy.url, "PUSHWORKER_NO_PROXY": "127.0.0.1",
        ]))
        #expect(excluded.status == 0, "\(excluded.stderr)")
        #expect(proxy.connects.count == 2)
    }
}
