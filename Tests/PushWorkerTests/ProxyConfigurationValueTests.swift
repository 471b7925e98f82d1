import Foundation
import PushTestSupport
@testable import PushWorker
import Testing

/// `PUSHWORKER_HTTPS_PROXY` / `PUSHWORKER_NO_PROXY` (docs/configuration.md): validated by
/// `config check` (the process tests, with `send` through a proxy, are in pushworkerTests).
@Suite("Proxy configuration values")
struct ProxyConfigurationValueTests {
    @Test("a proxy that is not an http(s) or socks URL is a configuration problem; a good one is accepted and printed redacted")
    func validation() throws {
        for bad in ["proxy:3128", "ftp://proxy:21", "http://", "http://proxy:70000"] {
            let problems = ConfigurationTests.problems(["PUSHWORKER_HTTPS_PROXY": bad])
            #expect(problems.contains { $0.hasPrefix("PUSHWORKER_HTTPS_PROXY:") }, "\(bad): \(problems)")
        }
        let configuration = try ConfigurationTests.load([
            "PUSHWORKER_HTTPS_PROXY": "http://ops:S3cr3t@proxy.internal:3128", "PUSHWORKER_NO_PROXY": ".internal,10.0.0.0/8",
        ])
        #expect(configuration.httpsProxy == "http://ops:S3cr3t@proxy.internal:3128")
        #expect(configuration.noProxy == ".internal,10.0.0.0/8")
        let lines = configuration.redactedLines()
        #expect(lines.contains("PUSHWORKER_HTTPS_PROXY=http://<redacted>@proxy.internal:3128"))
        #expect(lines.contains("PUSHWORKER_NO_PROXY=.internal,10.0.0.0/8"))
        #expect(!lines.joined().contains("S3cr3t"))
        let unset = try ConfigurationTests.load([:])
        #expect(unset.httpsProxy == nil && unset.noProxy == nil)
    }

    @Test("`config check` refuses a proxy value that is not an http(s)/socks URL, without echoing its password")
    func configCheck() throws {
        var environment = ConfigurationTests.base
        environment["PUSHWORKER_HTTPS_PROXY"] = "user:S3cr3t@proxy:3128"
        let bad = try runCommand(BuiltProducts.pushworker, ["config", "check"], environment: environment)
        #expect(bad.status == 78)
        #expect(bad.stderr.contains("- PUSHWORKER_HTTPS_PROXY"), "\(bad.stderr)")
        #expect(!bad.stderr.contains("S3cr3t"))
        environment["PUSHWORKER_HTTPS_PROXY"] = "socks5h://127.0.0.1:1080"
        let good = try runCommand(BuiltProducts.pushworker, ["config", "check"], environment: environment)
        #expect(good.status == 0, "\(good.stderr)")
    }
}
