import Foundation
import PushKafka
import PushKafkaMock
import PushTestSupport
import Testing

/// The sandbox inbox in a real browser (headless Chromium over the DevTools protocol): the page
/// draws a sent campaign per platform, updates live, filters, and a press on a button reaches
/// the real tracking endpoint (`pushworker events` with Redis and a Kafka mock cluster).
/// One browser and one set of services for the whole flow: CI has two cores.
@Suite("Inbox in a browser: live page, filters, a press counted by the tracking endpoint", .serialized)
struct InboxBrowserTests {
    static let app = "app_inbox"
    static let campaign = "cmp_inbox"

    @Test("a campaign appears live, drawn per platform (titles as text, button counts, fallback language); filters; a clicked button is counted in Redis and published")
    func browser() throws {
        let redis = try RedisServer()
        let cluster = try KafkaMockCluster()
        try cluster.createTopic("push.events.v1", partitions: 1)
        defer { cluster.close() }
        let eventsPort = freeLoopbackPort()
        let events = try TestProcess(BuiltProducts.pushworker, ["events"], environment: [
            "PUSHWORKER_KAFKA_BROKERS": cluster.bootstrapServers, "PUSHWORKER_REDIS_URL": redis.url,
            "PUSHWORKER_MSGID_KEYS": InboxSandbox.keys, "PUSHWORKER_HTTP_ADDR": "127.0.0.1:\(eventsPort)",
            "EVENT_RATE_LIMIT": "1000/s", "PUSHWORKER_LOG_LEVEL": "warning",
        ])
        defer { events.stop() }
        #expect(eventually(timeout: 20) { isListening(port: eventsPort) }, "\(events.stderr())")
        let inbox = try InboxSandbox(apps: [Self.app], arguments: ["--events-url", "http://127.0.0.1:\(eventsPort)", "--report-delivered"])
        let browser = try HeadlessChromium(width: 1200, height: 1100)

        // Empty: the hint says how to send something.
        try browser.navigate(inbox.inboxURL + "/")
        try browser.wait(for: "document.body.dataset.loaded && !document.getElementById('empty').hidden")
        #expect(try browser.evaluate("document.getElementById('empty').textContent.includes('make demo')") as? Bool == true)
        try browser.wait(for: "document.getElementById('live').textContent === 'live'")

        // A campaign arrives while the page is open: no reload (the marker survives).
        try browser.evaluate("window.__marker = 42")
        try inbox.send(try inbox.campaignJob(campaign: Self.campaign, app: Self.app))
        try browser.wait(for: "document.querySelectorAll('#list > li.message').length === 4")
        #expect(try browser.evaluate("window.__marker") as? Int == 42, "updated over Server-Sent Events, not reloaded")
        #expect(try browser.evaluate("document.getElementById('empty').hidden") as? Bool == true)

        // iOS: the title with markup is text, no element was made of it, nothing ran.
        let ios = "#list li[data-platform=ios]"
        #expect(try browser.evaluate("document.querySelector(\(q("\(ios) .banner .title"))).textContent") as? String
                == "Merhaba <img src=x onerror=window.__xss=1>")
        #expect(try browser.evaluate("document.querySelectorAll('#list img').length") as? Int == 0)
        #expect(try browser.evaluate("window.__xss === undefined") as? Bool == true)
        #expect(try browser.evaluate("document.querySelector(\(q("\(ios) .banner .subtitle"))).textContent") as? String == "Today only",
                "the Turkish campaign has no subtitle: English's is sent")
        #expect(try browser.evaluate("document.querySelector(\(q("\(ios) dd.lang"))).textContent") as? String == "tr")
        #expect(try browser.evaluate("document.querySelector(\(q("\(ios) .icon .badge"))).textContent") as? String == "+1")
        #expect(try buttons(browser, ios) == ["Satın al", "Sonra", "Hayır"])

        // Android: three buttons; the language chosen for en-GB is en.
        let android = "#list li[data-platform=android]"
        #expect(try browser.evaluate("document.querySelector(\(q("\(android) .card .title"))).textContent") as? String == "Hi there")
        #expect(try buttons(browser, android) == ["Buy", "Later", "No thanks"])
        #expect(try browser.evaluate("document.querySelector(\(q("\(android) dd.lang"))).textContent") as? String == "en")

        // Web: the Turkish one sent for Chrome shows 2 buttons there, none in the Safari tab; the one sent for Safari has none.
        let chromeCard = try #require(try browser.evaluate("""
            [...document.querySelectorAll('#list li[data-platform=web]')].find(li => li.querySelector('dd.lang').textContent === 'tr').dataset.id
            """) as? String)
        let chrome = "#list li[data-id='\(chromeCard)']"
        #expect(try browser.evaluate("document.querySelector(\(q("\(chrome) .tabs [aria-selected=true]"))).textContent") as? String == "Chrome / Edge")
        #expect(try buttons(browser, chrome) == ["Satın al", "Sonra"])
        try browser.click("\(chrome) .tabs button[data-surface=safari]")
        try browser.wait(for: "document.querySelector(\"\(chrome) .surface\").dataset.surface === 'safari'")
        #expect(try buttons(browser, chrome) == [])
        try browser.click("\(chrome) .tabs button[data-surface=chrome]")
        try browser.wait(for: "document.querySelector(\"\(chrome) .surface\").dataset.surface === 'chrome'")
        let safariSent = "#list li[data-platform=web]:not([data-id='\(chromeCard)'])"
        #expect(try buttons(browser, safariSent) == [])
        #expect(try browser.evaluate("document.querySelector(\"\(safariSent) .window .title\").textContent") as? String == "Hi there")

        // Filters: platform from the form (the URL follows), then back; the token filter.
        try setField(browser, "f-platform", "android")
        try browser.wait(for: "document.querySelectorAll('#list > li.message').length === 1 && location.search === '?platform=android'")
        try setField(browser, "f-platform", "")
        try browser.wait(for: "document.querySelectorAll('#list > li.message').length === 4")
        try setField(browser, "f-token", "APA91b")
        try browser.wait(for: "document.querySelectorAll('#list > li.message').length === 1 && document.querySelector(\(q("#list li"))).dataset.platform === 'android'")
        try browser.navigate(inbox.inboxURL + "/?campaign=cmp_other")
        try browser.wait(for: "document.body.dataset.loaded && !document.getElementById('empty-filtered').hidden")
        try browser.navigate(inbox.inboxURL + "/?app=\(Self.app)&campaign=\(Self.campaign)")
        // Both lists drawn: the first load's and the one the live stream's opening asks for.
        try browser.wait(for: "document.querySelectorAll('#list > li.message').length === 4 && Number(document.body.dataset.loaded) >= 2")

        // A real click on Android's "Buy" posts clicked; the body of the iOS banner posts opened.
        let androidID = try #require(try browser.evaluate("document.querySelector(\(q("\(android)"))).dataset.id") as? String)
        try browser.click("\(android) .actions button[data-action=buy]")
        try browser.wait(for: "document.querySelector(\(q("\(android) .press"))).dataset.status === '204'")
        let pressText = try browser.evaluate("document.querySelector(\(q("\(android) .press"))).textContent") as? String ?? ""
        #expect(pressText.hasPrefix("clicked buy → HTTP 204"), "\(pressText)")
        try browser.click("\(ios) .banner .body")
        try browser.wait(for: "document.querySelector(\(q("\(ios) .press"))).dataset.status === '204'")

        let counters = "pw:{\(Self.app)}:ev:cmp:\(Self.campaign)"
        func counter(_ type: String) -> String {
            ((try? runCommand("/usr/bin/redis-cli", ["-p", "\(redis.port)", "HGET", counters, type]))?.stdout ?? "")
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(eventually(timeout: 10) { counter("clicked") == "1" && counter("opened") == "1" && counter("delivered") == "4" },
                "clicked \(counter("clicked")), opened \(counter("opened")), delivered \(counter("delivered")): \(events.stderr().suffix(1000))")

        let pressed = try #require(try inbox.messages("?platform=android")["messages"] as? [[String: Any]]).first
        let androidMsgID = try #require(pressed?["msgId"] as? String)
        #expect(String(pressed?["id"] as? Int ?? 0) == androidID)
        let consumer = try KafkaConsumer(properties: ["bootstrap.servers": cluster.bootstrapServers, "group.id": "inbox-browser",
                                                      "auto.offset.reset": "earliest"], topics: ["push.events.v1"])
        defer { consumer.close() }
        var published: [[String: Any]] = []
        #expect(eventually(timeout: 20) {
            for result in consumer.pollBatch(max: 100, timeout: .milliseconds(200)) {
                if case .success(let record) = result, let event = try? JSONSerialization.jsonObject(with: Data(record.value)) as? [String: Any] {
                    published.append(event)
                }
            }
            return published.contains { $0["type"] as? String == "clicked" && $0["msgId"] as? String == androidMsgID }
        }, "\(published.count) events on push.events.v1")
        let clicked = published.first { $0["type"] as? String == "clicked" }
        #expect(clicked?["campaignId"] as? String == Self.campaign)
        #expect(clicked?["platform"] as? String == "android")

        // A Live Activity start (docs/providers.md "Live Activities") is drawn as the activity's card: event, state, dates.
        let activityJob = #"""
        {"schemaVersion":1,"jobId":"la:1","appId":"\#(Self.app)","campaignId":"cmp_la","priority":"normal",
         "content":{"defaultLanguage":"en","languages":{"en":{"title":"Order A-1001","body":"Being prepared"}}},
         "ios":{"liveActivity":{"event":"start","contentState":{"status":"preparing","etaMin":25},"attributesType":"DeliveryAttributes",
                                "attributes":{"orderId":"A-1001"},"staleDate":"2099-01-01T00:00:00Z"}},
         "recipients":[{"userId":"u9","subscriptionId":"la-1","platform":"ios","token":"\#(String(repeating: "cd", count: 32))"}]}
        """#
        #expect(try inbox.send(activityJob).first?["status"] as? String == "sent")
        let activity = "#list li[data-platform=ios] .activity[data-event=start]"
        try browser.navigate(inbox.inboxURL + "/?campaign=cmp_la")
        try browser.wait(for: "document.querySelector(\(q(activity))) !== null")
        #expect(try browser.evaluate("[...document.querySelectorAll(\(q("\(activity) .state dd")))].map(d => d.textContent)") as? [String]
                == ["preparing", "25"])
        #expect(try browser.evaluate("document.querySelector(\(q("\(activity) .title"))).textContent") as? String == "Order A-1001")
        try browser.navigate(inbox.inboxURL + "/")
        try browser.wait(for: "document.querySelectorAll('#list > li.message').length === 5")

        try searchPermalinkDelete(browser, inbox)

        // A picture of the page, then a phone-sized window: no sideways scrolling.
        try browser.evaluate("window.scrollTo(0, 0)")
        let picture = try browser.screenshot()
        #expect(picture.starts(with: [0x89, 0x50, 0x4E, 0x47]) && picture.count > 20_000)
        try browser.setViewport(width: 390, height: 844, mobile: true)
        try browser.wait(for: "document.documentElement.clientWidth === 390")
        #expect(try browser.evaluate("document.documentElement.scrollWidth") as? Int ?? 9999 <= 390, "readable on a phone: nothing wider than the screen")
        #expect(try browser.evaluate("getComputedStyle(document.querySelector(\(q("#list li.message")))).gridTemplateColumns.split(' ').length") as? Int == 1)
    }

    /// The search box (in the URL as ?q=, hostile text stays text), a card's permalink (/m/N: that
    /// message alone), delete-one from the permalink page and from the list. Starts and ends on
    /// the full list of 5 (the campaign and the Live Activity); ends with 3.
    func searchPermalinkDelete(_ browser: HeadlessChromium, _ inbox: InboxSandbox) throws {
        let count = "document.querySelectorAll('#list > li.message').length"
        try setField(browser, "f-q", "MERHABA")
        try browser.wait(for: "\(count) === 2 && location.search === '?q=MERHABA'")
        #expect(try browser.evaluate("[...document.querySelectorAll('#list > li')].map(li => li.dataset.platform).sort().join()") as? String == "ios,web")
        try setField(browser, "f-q", "<img src=x onerror")
        try browser.wait(for: "\(count) === 1 && document.querySelector('#list li').dataset.platform === 'ios'")
        #expect(try browser.evaluate("document.querySelectorAll('#list img').length") as? Int == 0)
        #expect(try browser.evaluate("window.__xss === undefined") as? Bool == true)
        try browser.navigate(inbox.inboxURL + "/?q=%3Cimg%20src%3Dx%20onerror%3Dwindow.__xss%3D1%3E")
        try browser.wait(for: "document.body.dataset.loaded && \(count) === 1")
        #expect(try browser.evaluate("document.getElementById('f-q').value") as? String == "<img src=x onerror=window.__xss=1>")
        #expect(try browser.evaluate("window.__xss === undefined && document.querySelectorAll('#list img').length === 0") as? Bool == true)
        try browser.navigate(inbox.inboxURL + "/?q=no%20such%20text")
        try browser.wait(for: "document.body.dataset.loaded && \(count) === 0 && !document.getElementById('empty-filtered').hidden")

        // The permalink of the iOS card opens it alone; the filters give way to a link back.
        try browser.navigate(inbox.inboxURL + "/")
        try browser.wait(for: "document.body.dataset.loaded && \(count) === 5")
        let ios = "#list li[data-platform=ios]:not(:has(.activity))"
        let iosID = try #require(try browser.evaluate("document.querySelector(\(q(ios))).dataset.id") as? String)
        #expect(try browser.evaluate("document.querySelector(\(q("\(ios) a.permalink"))).getAttribute('href')") as? String == "/m/\(iosID)")
        #expect(try browser.evaluate("document.querySelector(\(q("\(ios) .tag.msgid"))).textContent") as? String == "msgId verified")
        try browser.click("\(ios) a.permalink")
        try browser.wait(for: "location.pathname === '/m/\(iosID)' && document.body && document.body.dataset.loaded && \(count) === 1")
        #expect(try browser.evaluate("document.getElementById('filters').offsetParent === null && document.getElementById('single').offsetParent !== null") as? Bool == true)
        #expect(try browser.evaluate("document.querySelector('#list .banner .title').textContent") as? String == "Merhaba <img src=x onerror=window.__xss=1>")
        #expect(try browser.evaluate("window.__xss === undefined && document.querySelectorAll('#list img').length === 0") as? Bool == true)

        // Delete it there: the page says it is gone, the API agrees, the list has 4.
        try browser.click("#list li .delete")
        try browser.wait(for: "\(count) === 0 && !document.getElementById('gone').hidden")
        #expect(try inbox.request("GET", "/api/messages/\(iosID)").status == 404)
        try browser.navigate(inbox.inboxURL + "/m/\(iosID)")
        try browser.wait(for: "document.body.dataset.loaded && !document.getElementById('gone').hidden")
        try browser.navigate(inbox.inboxURL + "/")
        try browser.wait(for: "document.body.dataset.loaded && \(count) === 4 && document.getElementById('live').textContent === 'live'")

        // Delete from the list: that card goes, here and on the server.
        let android = try #require(try browser.evaluate("document.querySelector('#list li[data-platform=android]').dataset.id") as? String)
        try browser.click("#list li[data-id='\(android)'] .delete")
        try browser.wait(for: "\(count) === 3 && !document.querySelector(\"#list li[data-id='\(android)']\")")
        #expect(try inbox.messages()["kept"] as? Int == 3)
    }

    /// Sets a filter field as typing would (an `input` event).
    func setField(_ browser: HeadlessChromium, _ id: String, _ value: String) throws {
        try browser.evaluate("{ const f = document.getElementById(\(q(id))); f.value = \(q(value)); f.dispatchEvent(new Event('input', {bubbles: true})); }")
    }

    /// `selector` as a JavaScript string literal.
    func q(_ selector: String) -> String { (try? HeadlessChromium.jsString(selector)) ?? "''" }

    /// The titles of the buttons the card's drawn notification shows.
    func buttons(_ browser: HeadlessChromium, _ card: String) throws -> [String] {
        try browser.evaluate("[...document.querySelectorAll(\(q("\(card) .surface .actions button")))].map(b => b.textContent)") as? [String] ?? ["<none>"]
    }
}
