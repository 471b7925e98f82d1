import Foundation
import PushEncoding
import PushTestSupport
import Testing
@testable import PushSandbox

/// The sandbox's provider latency: a constant `latencyMs`, and `latencyJitterMs` drawn per answer.
@Suite("Sandbox latency and jitter")
struct SandboxLatencyTests {
    static func router(_ faults: SandboxFaults) -> SandboxRouter {
        SandboxRouter(configuration: SandboxConfiguration(origin: "https://127.0.0.1:8443", isAuthDisabled: true),
                      state: SandboxState(faults: faults), trust: SandboxTrust(), randomSeed: 7)
    }

    @Test("without jitter every answer waits latencyMs; with it, a uniform draw in latencyMs...latencyMs + jitter")
    func draws() {
        var constant = SandboxFaults()
        constant.latencyMilliseconds = 50
        let fixed = Self.router(constant)
        #expect((0..<100).map { _ in fixed.nextLatencyMilliseconds() } == Array(repeating: 50, count: 100))

        var jittered = SandboxFaults()
        jittered.latencyMilliseconds = 40
        jittered.latencyJitterMilliseconds = 20
        let router = Self.router(jittered)
        let draws = (0..<4000).map { _ in router.nextLatencyMilliseconds() }
        #expect(draws.allSatisfy { (40...60).contains($0) })
        #expect(Set(draws).count == 21, "every value of 40...60 drawn")
        let mean = Double(draws.reduce(0, +)) / Double(draws.count)
        #expect(abs(mean - 50) < 0.6, "mean \(mean)")
    }

    @Test("POST /_sandbox/faults takes latencyJitterMs (0...60000) and GET shows it")
    func faultsUpdate() throws {
        let updated = try #require(SandboxFaults().updated(with: JSONValue.parse(#"{"latencyMs":40,"latencyJitterMs":20}"#) ?? .null))
        #expect(updated.latencyMilliseconds == 40 && updated.latencyJitterMilliseconds == 20)
        #expect(updated.json.contains(#""latencyJitterMs":20"#))
        #expect(SandboxFaults().updated(with: JSONValue.parse(#"{"latencyJitterMs":-1}"#) ?? .null) == nil)
        #expect(SandboxFaults().updated(with: JSONValue.parse(#"{"latencyJitterMs":60001}"#) ?? .null) == nil)
    }

    @Test("--latency-jitter-ms spreads real answers over latency...latency + jitter")
    func process() throws {
        let server = try SandboxServer(arguments: ["--no-auth", "--latency-ms", "100", "--latency-jitter-ms", "300"])
        var durations: [Double] = []
        for index in 0..<8 {
            let started = Date()
            let reply = try server.curl("POST", "/3/device/\(SandboxProcessTests.token)", headers: ["apns-topic": "t"],
                                        body: Data(#"{"custom":{"i":"j\#(index)"}}"#.utf8))
            #expect(reply.status == 200)
            durations.append(Date().timeIntervalSince(started))
        }
        #expect(durations.allSatisfy { $0 >= 0.1 }, "\(durations)")
        // Eight uniform draws over 300 ms: their spread is under 60 ms with probability < 1e-4.
        #expect((durations.max() ?? 0) - (durations.min() ?? 0) > 0.06, "\(durations)")
    }
}
