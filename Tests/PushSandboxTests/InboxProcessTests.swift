import Foundation
import PushTestSupport
import Testing

/// The inbox API of a real `pushworker-dev sandbox --inbox` process, filled by the real
/// `pushworker send` (docs/sandbox.md "Inbox").
@Suite("Inbox API: a real sandbox process", .serialized)
struct InboxProcessTests {
    static func ids(_ listing: [String: Any]) -> [Int] { (listing["messages"] as? [[String: Any]])?.compactMap { $0["id"] as? Int } ?? [] }
    static func platforms(_ listing: [String: Any]) -> [String] { (listing["messages"] as? [[String: Any]])?.compactMap { $0["platform"] as? String } ?? [] }

    @Test("GET /api/messages: every accepted notification, newest first, filtered by platform/app/campaign/token, limited; DELETE empties")
    func listing() throws {
        let inbox = try InboxSandbox(apps: ["app_inbox", "app_other"])
        #expect(try inbox.messages()["count"] as? Int == 0)
        try inbox.send(try inbox.campaignJob(campaign: "cmp_a"))
        try inbox.send(try inbox.campaignJob(campaign: "cmp_b", app: "app_other"))

        let all = try inbox.messages()
        #expect(Self.ids(all) == Array((1...8).reversed()), "newest first")
        #expect(all["accepted"] as? Int == 8)
        #expect(all["apps"] as? [String] == ["app_inbox", "app_other"])
        #expect(all["campaigns"] as? [String] == ["cmp_a", "cmp_b"])
        #expect(all["msgIdKeys"] as? Bool == true)
        #expect(all["sandbox"] as? String == inbox.sandbox.origin)

        #expect(Self.platforms(try inbox.messages("?platform=web")) == ["web", "web", "web", "web"])
        #expect(Self.platforms(try inbox.messages("?platform=ios&campaign=cmp_a")) == ["ios"])
        let other = try inbox.messages("?app=app_other")
        #expect(Self.ids(other).count == 4)
        #expect((other["messages"] as? [[String: Any]])?.allSatisfy { $0["campaign"] as? String == "cmp_b" } == true)
        let byToken = try inbox.messages("?token=cmp_b-APA91b")
        #expect(Self.platforms(byToken) == ["android"])
        #expect(Self.ids(try inbox.messages("?limit=3")).count == 3)
        #expect(try inbox.messages("?limit=0")["count"] as? Int == 0)
        #expect(try inbox.request("GET", "/api/messages?limit=-1").status == 400)

        // One message in full: what the device shows, the decoded msgId, the raw request.
        let ios = try #require((try inbox.messages("?platform=ios&campaign=cmp_a")["messages"] as? [[String: Any]])?.first)
        #expect(ios["language"] as? String == "tr")
        #expect(ios["app"] as? String == "app_inbox")
        let display = try #require((ios["displays"] as? [[String: Any]])?.first)
        #expect(display["title"] as? String == "Merhaba <img src=x onerror=window.__xss=1>")
        #expect(display["subtitle"] as? String == "Today only", "a field missing in Turkish falls back to English")
        #expect((display["buttons"] as? [[String: Any]])?.compactMap { $0["title"] as? String } == ["Satın al", "Sonra", "Hayır"])
        let fields = try #require(ios["msgIdFields"] as? [String: Any])
        #expect(fields["valid"] as? Bool == true)
        #expect(fields["userId"] as? String == "u1")
        #expect(fields["variant"] as? String == "B")
        let request = try #require(ios["request"] as? [String: Any])
        let headers = try #require(request["headers"] as? [[String]])
        #expect(headers.first { $0.first == "authorization" }?.last == "bearer <redacted>")
        #expect(headers.contains(["apns-push-type", "alert"]))
        let web = try #require((try inbox.messages("?platform=web&campaign=cmp_a")["messages"] as? [[String: Any]])?.last)
        #expect((web["request"] as? [String: Any])?["encryptedBytes"] as? Int ?? 0 > 0)
        let webBody = (web["request"] as? [String: Any])?["body"] as? String ?? ""
        #expect(webBody.contains(#""msgId""#), "the decrypted plaintext")

        // Another site's page may not clear or press (browsers send Sec-Fetch-Site).
        #expect(try inbox.request("DELETE", "/api/messages", headers: ["Sec-Fetch-Site: cross-site"]).status == 403)
        #expect(try inbox.request("POST", "/api/press?id=1", headers: ["Sec-Fetch-Site: same-site"]).status == 403)
        #expect(try inbox.messages()["count"] as? Int == 8)
        #expect(try inbox.request("POST", "/api/messages").status == 405)
        #expect(try inbox.request("GET", "/nope").status == 404)
        let cleared = try inbox.request("DELETE", "/api/messages", headers: ["Sec-Fetch-Site: same-origin"])
        #expect(cleared.status == 200)
        #expect(try inbox.messages()["count"] as? Int == 0)
        // The sandbox's own record is a different thing and stays.
        #expect(try inbox.sandbox.messages().count == 8)
    }

    @Test("search ?q=, the permalink /m/N with GET /api/messages/N, DELETE /api/messages/N (a `deleted` event); hostile text stays text")
    func searchPermalinkDelete() throws {
        let inbox = try InboxSandbox()
        let stream = try TestProcess("/usr/bin/curl", ["-sN", "--max-time", "60", inbox.inboxURL + "/api/events"])
        defer { stream.stop() }
        #expect(eventually(timeout: 10) { stream.stdout().contains(": connected") })
        try inbox.send(try inbox.campaignJob(tag: " <b>deal</b>"))

        // The search: any case, spaces as + or %20, markup as characters; JSON-escaped in the answer.
        #expect(Self.platforms(try inbox.messages("?q=merhaba")).sorted() == ["ios", "web"])
        #expect(Self.platforms(try inbox.messages("?q=HI+THERE")).sorted() == ["android", "web"])
        #expect(Self.platforms(try inbox.messages("?q=hi%20there&platform=android")) == ["android"])
        #expect(Self.platforms(try inbox.messages("?q=%3Cimg%20src%3Dx")) == ["ios"])
        let hostile = try inbox.request("GET", "/api/messages?q=%3Cb%3Edeal%3C%2Fb%3E")
        let hostileListing = try #require(try JSONSerialization.jsonObject(with: hostile.body) as? [String: Any])
        #expect(hostile.status == 200)
        #expect(Self.ids(hostileListing).count == 4)
        #expect(hostile.headers["content-type"] == "application/json; charset=utf-8", "JSON, never drawn as HTML")
        #expect(Self.ids(try inbox.messages("?q=APA91b_token")).count == 1, "the token")
        #expect(try inbox.messages("?q=no+such+text")["count"] as? Int == 0)
        #expect(try inbox.request("GET", "/api/messages?q=" + String(repeating: "x", count: 300)).status == 400)

        // The permalink: the page, and its message alone.
        let ios = try #require(Self.ids(try inbox.messages("?platform=ios")).first)
        let page = try inbox.request("GET", "/m/\(ios)")
        #expect(page.status == 200 && page.headers["content-type"] == "text/html; charset=utf-8")
        #expect(page.headers["content-security-policy"]?.contains("script-src 'self'") == true)
        let one = try inbox.request("GET", "/api/messages/\(ios)")
        let message = try #require(try JSONSerialization.jsonObject(with: one.body) as? [String: Any])
        #expect(message["id"] as? Int == ios && message["platform"] as? String == "ios")
        #expect(((message["displays"] as? [[String: Any]])?.first?["title"] as? String)?.hasSuffix("<img src=x onerror=window.__xss=1> <b>deal</b>") == true)
        for path in ["/m/%3Cscript%3E", "/m/1%22%3E", "/m/0", "/api/messages/x", "/m/1/x"] {
            let answer = try inbox.request("GET", path)
            #expect(answer.status == 404 && !String(decoding: answer.body, as: UTF8.self).contains("<"), "\(path)")
        }

        // Delete one: gone from the list and its permalink, other pages told; the rest stay.
        #expect(try inbox.request("DELETE", "/api/messages/\(ios)", headers: ["Sec-Fetch-Site: cross-site"]).status == 403)
        #expect(try inbox.request("DELETE", "/api/messages/\(ios)").status == 200)
        #expect(eventually(timeout: 10) { stream.stdout().contains("event: deleted\ndata: {\"id\":\(ios)}\n\n") }, "\(stream.stdout().suffix(300))")
        #expect(try inbox.request("GET", "/api/messages/\(ios)").status == 404)
        #expect(try inbox.request("DELETE", "/api/messages/\(ios)").status == 404)
        #expect(try inbox.request("GET", "/m/\(ios)").status == 200, "the page itself says the message is gone")
        let after = try inbox.messages()
        #expect(Self.platforms(after).sorted() == ["android", "web", "web"])
        #expect(after["deleted"] as? Int == 1 && after["kept"] as? Int == 3 && after["accepted"] as? Int == 4)
        try inbox.send(try inbox.campaignJob(campaign: "cmp_next"))
        #expect(Self.ids(try inbox.messages()) == [8, 7, 6, 5] + Self.ids(after), "numbers are not reused")
    }

    @Test("GET /api/events streams each accepted message as it arrives, then `cleared`; SIGTERM with a stream open exits 0")
    func events() throws {
        let inbox = try InboxSandbox()
        let stream = try TestProcess("/usr/bin/curl", ["-sN", "--max-time", "60", inbox.inboxURL + "/api/events"])
        defer { stream.stop() }
        #expect(eventually(timeout: 10) { stream.stdout().contains(": connected") })
        try inbox.send(try inbox.campaignJob())
        #expect(eventually(timeout: 10) { stream.stdout().components(separatedBy: "event: message\n").count - 1 == 4 }, "\(stream.stdout())")
        let first = try #require(stream.stdout().split(separator: "\n").first { $0.hasPrefix("data: {\"id\":") })
        let message = try #require(try JSONSerialization.jsonObject(with: Data(first.dropFirst(6).utf8)) as? [String: Any])
        #expect(message["campaign"] as? String == "cmp_inbox")
        #expect(stream.stdout().contains("id: 1\nevent: message\n"))
        _ = try inbox.request("DELETE", "/api/messages")
        #expect(eventually(timeout: 10) { stream.stdout().contains("event: cleared\ndata: {}\n\n") })
        inbox.sandbox.process.signal(SIGTERM)
        #expect(inbox.sandbox.process.wait(timeout: 15) == 0, "\(inbox.sandbox.process.stderr())")
        #expect(stream.wait(timeout: 10) != nil, "the stream ends when the sandbox stops")
    }

    @Test("the page: one HTML document with its own CSS and JS, a Content-Security-Policy, nothing external")
    func page() throws {
        let inbox = try InboxSandbox()
        let html = try inbox.request("GET", "/")
        #expect(html.status == 200)
        #expect(html.headers["content-type"] == "text/html; charset=utf-8")
        let policy = try #require(html.headers["content-security-policy"])
        #expect(policy.contains("script-src 'self'"))
        #expect(policy.contains("default-src 'none'"))
        let text = String(decoding: html.body, as: UTF8.self)
        #expect(text.contains(#"<script src="/inbox.js"></script>"#))
        #expect(text.contains(#"href="/inbox.css""#))
        #expect(text.contains("make demo"), "the empty state says how to send something")
        #expect(!text.contains("http://") && !text.contains("https://"), "no external asset")
        let css = String(decoding: try inbox.request("GET", "/inbox.css").body, as: UTF8.self)
        #expect(!css.contains("url(") && !css.contains("@import"))
        let script = try inbox.request("GET", "/inbox.js")
        #expect(script.headers["content-type"] == "text/javascript; charset=utf-8")
        let js = String(decoding: script.body, as: UTF8.self)
        #expect(!js.contains("innerHTML") && !js.contains("insertAdjacentHTML") && !js.contains("document.write"), "payload text never parsed as HTML")
    }

    @Test("presses without --events-url: 200, nothing posted; unknown message 404, a button not shown 400")
    func pressWithoutTracking() throws {
        let inbox = try InboxSandbox()
        try inbox.send(try inbox.campaignJob())
        let listing = try inbox.messages("?platform=android")
        let id = try #require(Self.ids(listing).first)
        let press = try inbox.request("POST", "/api/press?id=\(id)&action=buy")
        #expect(press.status == 200)
        let answer = try #require(try JSONSerialization.jsonObject(with: press.body) as? [String: Any])
        #expect(answer["queued"] as? Bool == false)
        #expect(answer["event"] as? String == "clicked")
        let normalized = try #require(answer["press"] as? [String: Any])
        #expect(normalized["url"] as? String == "https://shop.example/cart")
        #expect(normalized["actionId"] as? String == "buy")
        #expect((normalized["data"] as? [String: String]) == ["screen": "sale", "promo": "SPRING20"])
        #expect(try inbox.request("POST", "/api/press?id=\(id)").status == 200)
        #expect(try inbox.request("POST", "/api/press?id=999").status == 404)
        #expect(try inbox.request("POST", "/api/press?id=\(id)&action=nope").status == 400)
        #expect(try inbox.request("GET", "/api/press?id=\(id)").status == 405)
    }

    @Test("--inbox-max bounds what is kept: the newest N")
    func bounded() throws {
        let inbox = try InboxSandbox(arguments: ["--inbox-max", "3"])
        try inbox.send(try inbox.campaignJob())
        #expect(eventually(timeout: 10) { (try? inbox.messages())?["accepted"] as? Int == 4 })
        #expect(eventually(timeout: 10) { (try? inbox.messages())?["kept"] as? Int == 3 })
        let listing = try inbox.messages()
        let ids = Self.ids(listing)
        // Which three depends on when the inbox's thread took them (a full queue takes no more).
        #expect(ids.count == 3 && ids == ids.sorted(by: >) && Set(ids).isSubset(of: [1, 2, 3, 4]))
        #expect(listing["forgotten"] as? Int == 1)
    }

    @Test("usage errors exit 64", arguments: [
        ["--report-delivered"], ["--events-url", "https://127.0.0.1:1"], ["--inbox", "localhost"], ["--inbox-port-file", "/tmp/x"],
        ["--inbox-max", "0"], ["--inbox", "127.0.0.1:0", "--msgid-keys", "k1:c2hvcnQ="],
    ])
    func usage(arguments: [String]) throws {
        let result = try runCommand(BuiltProducts.pushworkerDev, ["sandbox"] + arguments, timeout: 20)
        #expect(result.status == 64, "\(result.stderr)")
    }
}
