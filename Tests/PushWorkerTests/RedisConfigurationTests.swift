import Foundation
import PushRedis
@testable import PushRuntime
import PushTestSupport
import Testing

/// The Redis TLS and Sentinel settings (docs/reference/configuration.md, docs/redis.md "URLs"):
/// what reaches the client, what `config check` refuses, what `config print` hides.
@Suite("Configuration: Redis TLS, Sentinel, ACL users")
struct RedisConfigurationTests {
    static func load(_ changes: [String: String]) throws(Configuration.Problems) -> Configuration {
        try ConfigurationTests.load(changes)
    }

    @Test("rediss…:// gets the TLS files; a Sentinel URL the Sentinels' password; PUSHWORKER_REDIS_PASSWORD the data servers'")
    func target() throws {
        let files = try RedisTLSFiles.shared()
        let tls = try Self.load([
            "PUSHWORKER_REDIS_URL": "rediss+sentinel://app:url-pw@s1,s2:5000/mymaster/3", "PUSHWORKER_REDIS_PASSWORD": "env-pw",
            "PUSHWORKER_REDIS_CA_FILE": files.caFile, "PUSHWORKER_REDIS_CERT_FILE": files.clientCertificate,
            "PUSHWORKER_REDIS_KEY_FILE": files.clientKey, "PUSHWORKER_REDIS_SENTINEL_PASSWORD": "sentinel-pw",
        ]).redisTarget()
        guard case .sentinel(let endpoint) = tls else { throw TestSupportError("not a Sentinel target: \(tls)") }
        #expect(endpoint.sentinels == [.tcp(host: "s1", port: 26379), .tcp(host: "s2", port: 5000)])
        #expect(endpoint.masterName == "mymaster" && endpoint.database == 3)
        #expect(endpoint.username == "app" && endpoint.password == "env-pw" && endpoint.sentinelPassword == "sentinel-pw")
        #expect(endpoint.tls == RedisTLS(caFile: files.caFile, certificateFile: files.clientCertificate, keyFile: files.clientKey))

        let cluster = try Self.load(["PUSHWORKER_REDIS_URL": "rediss+cluster://a:7000,b:7000"]).redisTarget()
        #expect(cluster.tls == RedisTLS(), "no CA file: the system store")
        let plain = try Self.load(["PUSHWORKER_REDIS_URL": "redis://u:pw@h:1/2"]).redisTarget()
        #expect(plain.tls == nil && plain.password == "pw")
    }

    @Test("config check refuses TLS files without TLS, half a client certificate, unreadable files, a key of another certificate, a Sentinel password without Sentinels", arguments: [
        (["PUSHWORKER_REDIS_CA_FILE": "@ca"], "PUSHWORKER_REDIS_CA_FILE is set but PUSHWORKER_REDIS_URL does not use TLS: write rediss://"),
        (["PUSHWORKER_REDIS_URL": "rediss://h:6380", "PUSHWORKER_REDIS_CERT_FILE": "@client"], "PUSHWORKER_REDIS_CERT_FILE and PUSHWORKER_REDIS_KEY_FILE go together"),
        (["PUSHWORKER_REDIS_URL": "rediss://h:6380", "PUSHWORKER_REDIS_CA_FILE": "/nonexistent/ca.pem"], "PUSHWORKER_REDIS_CA_FILE: cannot read /nonexistent/ca.pem"),
        (["PUSHWORKER_REDIS_URL": "rediss://h:6380", "PUSHWORKER_REDIS_CA_FILE": "@key"], "PUSHWORKER_REDIS_CA_FILE: @key holds no PEM certificate"),
        (["PUSHWORKER_REDIS_URL": "rediss://h:6380", "PUSHWORKER_REDIS_CERT_FILE": "@client", "PUSHWORKER_REDIS_KEY_FILE": "@ca"],
         "PUSHWORKER_REDIS_KEY_FILE: @ca holds no PEM private key"),
        (["PUSHWORKER_REDIS_URL": "rediss://h:6380", "PUSHWORKER_REDIS_CERT_FILE": "@client", "PUSHWORKER_REDIS_KEY_FILE": "@serverkey"],
         "PUSHWORKER_REDIS_CA_FILE / _CERT_FILE / _KEY_FILE: redis error: TLS: the client key @serverkey does not belong to the certificate @client"),
        (["PUSHWORKER_REDIS_SENTINEL_PASSWORD": "x"], "PUSHWORKER_REDIS_SENTINEL_PASSWORD is set but PUSHWORKER_REDIS_URL names no Sentinels"),
    ])
    func refused(changes: [String: String], expected: String) throws {
        let files = try RedisTLSFiles.shared()
        let paths = ["@ca": files.caFile, "@client": files.clientCertificate, "@key": files.clientKey, "@serverkey": files.serverKey]
        func resolve(_ text: String) -> String { paths.reduce(text) { $0.replacingOccurrences(of: $1.key, with: $1.value) } }
        let problems = ConfigurationTests.problems(changes.mapValues(resolve))
        #expect(problems.contains { $0.hasPrefix(resolve(expected)) }, "\(problems)")
    }

    @Test("a good TLS configuration passes config check")
    func accepted() throws {
        let files = try RedisTLSFiles.shared()
        #expect(ConfigurationTests.problems([
            "PUSHWORKER_REDIS_URL": "rediss://h:6380", "PUSHWORKER_REDIS_CA_FILE": files.caFile,
            "PUSHWORKER_REDIS_CERT_FILE": files.clientCertificate, "PUSHWORKER_REDIS_KEY_FILE": files.clientKey,
        ]).isEmpty)
        #expect(ConfigurationTests.problems(["PUSHWORKER_REDIS_URL": "redis+sentinel://s1,s2/m", "PUSHWORKER_REDIS_SENTINEL_PASSWORD": "x"]).isEmpty)
    }

    @Test("config print: every Redis password redacted (URL of each form, PUSHWORKER_REDIS_PASSWORD, the Sentinels'), the file paths shown")
    func redaction() throws {
        let files = try RedisTLSFiles.shared()
        let c = try Self.load([
            "PUSHWORKER_REDIS_URL": "rediss+sentinel://app:S3cr3t-url@s1:26379,s2/mymaster/1", "PUSHWORKER_REDIS_PASSWORD": "S3cr3t-env",
            "PUSHWORKER_REDIS_SENTINEL_PASSWORD": "S3cr3t-sentinel", "PUSHWORKER_REDIS_CA_FILE": files.caFile,
        ])
        let text = c.redactedLines().joined(separator: "\n")
        #expect(!text.contains("S3cr3t"), "\(text)")
        #expect(text.contains("PUSHWORKER_REDIS_URL=rediss+sentinel://<redacted>@s1:26379,s2/mymaster/1"))
        #expect(text.contains("PUSHWORKER_REDIS_SENTINEL_PASSWORD=<redacted>") && text.contains("PUSHWORKER_REDIS_PASSWORD=<redacted>"))
        #expect(text.contains("PUSHWORKER_REDIS_CA_FILE=\(files.caFile)") && text.contains("PUSHWORKER_REDIS_KEY_FILE="))
    }

    @Test("URL redaction of the TLS and Sentinel forms", arguments: [
        ("rediss://u:pw@cache.example:6380/0", "rediss://<redacted>@cache.example:6380/0"),
        ("rediss+cluster://:pw@a:7000,b:7000", "rediss+cluster://<redacted>@a:7000,b:7000"),
        ("redis+sentinel://:p@w@s1,s2/m", "redis+sentinel://<redacted>@s1,s2/m"),
        ("redis+sentinel://s1,s2/m/2", "redis+sentinel://s1,s2/m/2"),
    ])
    func redactURL(url: String, expected: String) {
        #expect(Configuration.redactURL(url) == expected)
    }

    @Test("`pushworker config print` with a Sentinel URL and every Redis secret set prints none of them")
    func printBinary() throws {
        var environment = ConfigurationTests.base
        environment["PUSHWORKER_REDIS_URL"] = "redis+sentinel://app:S3cr3t-url@127.0.0.1:26379/mymaster"
        environment["PUSHWORKER_REDIS_SENTINEL_PASSWORD"] = "S3cr3t-sentinel"
        environment["PUSHWORKER_REDIS_PASSWORD"] = "S3cr3t-env"
        let result = try runCommand(BuiltProducts.pushworker, ["config", "print"], environment: environment)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("PUSHWORKER_REDIS_SENTINEL_PASSWORD=<redacted>"))
        #expect(!result.stdout.contains("S3cr3t") && !result.stderr.contains("S3cr3t"))
    }
}
