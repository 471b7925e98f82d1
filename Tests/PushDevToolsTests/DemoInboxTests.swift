import Foundation
import PushTestSupport
import Testing

/// `pushworker-dev demo --keep` (README, `make demo DEMO_ARGS=--keep`): the real demo process,
/// then its inbox over HTTP — every accepted notification is there with its msgId verified
/// (the sandbox has the worker's keys), Web for Chrome, Firefox and Safari each opened on its
/// browser, Huawei; SIGTERM stops it all.
@Suite("demo --keep: the inbox shows the campaign with verified msgIds", .serialized)
struct DemoInboxTests {
    @Test("the inbox after the demo: 9 notifications (iOS 3, Android 2, Huawei 1, Web 3), every msgId verified, Web per browser")
    func demoInbox() throws {
        let demo = try TestProcess(BuiltProducts.pushworkerDev, ["demo", "--keep", "--timeout", "120"])
        defer { demo.stop() }
        var inbox = ""
        #expect(eventually(timeout: 150) {
            if let line = demo.stdout().split(separator: "\n").first(where: { $0.hasPrefix("inbox: http://127.0.0.1:") }),
               let address = line.split(separator: " ").dropFirst().first {
                inbox = String(address)
                return true
            }
            return !demo.isRunning
        }, "\(demo.stderr().suffix(2000))")
        try #require(!inbox.isEmpty, "no inbox address: \(demo.stdout().suffix(2000)) \(demo.stderr().suffix(2000))")
        #expect(demo.stdout().contains("huawei    1 "), "the summary has a Huawei row: \(demo.stdout())")

        func listing() throws -> [String: Any] {
            let result = try runCommand("/usr/bin/curl", ["-s", "--max-time", "10", inbox + "api/messages"])
            return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        }
        #expect(eventually(timeout: 10) { ((try? listing())?["kept"] as? Int) == 9 })
        let all = try listing()
        #expect(all["msgIdKeys"] as? Bool == true)
        let messages = try #require(all["messages"] as? [[String: Any]])
        #expect(messages.count == 9)
        var platforms: [String: Int] = [:]
        for message in messages { platforms[message["platform"] as? String ?? "?", default: 0] += 1 }
        #expect(platforms == ["ios": 3, "android": 2, "huawei": 1, "web": 3])
        for message in messages {
            #expect((message["msgIdFields"] as? [String: Any])?["valid"] as? Bool == true, "msgId verified: \(message["id"] ?? "?")")
        }
        let firstSurfaces = messages.filter { $0["platform"] as? String == "web" }
            .compactMap { (($0["displays"] as? [[String: Any]])?.first?["surface"] as? String) }
        #expect(firstSurfaces.sorted() == ["chrome", "firefox", "safari"], "each Web card opens on its browser")

        demo.signal(SIGTERM)
        #expect(demo.wait(timeout: 30) != nil, "SIGTERM stops the demo")
    }
}
