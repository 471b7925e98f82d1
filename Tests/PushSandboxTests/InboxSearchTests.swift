import Foundation
import PushCore
@testable import PushInbox
import PushHTTPServer
import PushProviders
import Testing

/// The inbox's search (`?q=`), permalinks (`/m/N`, `GET /api/messages/N`), delete-one
/// (`DELETE /api/messages/N`) and the Web subscription's browser hint, in-process: the store and
/// the routes with no socket (docs/sandbox.md "Inbox").
@Suite("Inbox search, permalinks, delete-one")
struct InboxSearchTests {
    static let hostile = "<img src=x onerror=window.__xss=1>\"'&</script>"

    /// Messages 1…4: iOS (hostile title), Android, Web for Safari (`?browser=safari`), Web with no hint.
    static func filledInbox() throws -> Inbox {
        let inbox = Inbox(settings: Inbox.Settings(capacity: 10, keyring: InboxDrawingTests.keyring))
        var ios = InboxDrawingTests.content(platform: "ios")
        ios.title = "Sale " + hostile
        var records = [
            try InboxDrawingTests.record(ios, .apns(deviceToken: InboxDrawingTests.iosToken)),
            try InboxDrawingTests.record(InboxDrawingTests.content(platform: "android", language: "en"), .fcm(registrationToken: "fcm:APA91b-Token_7")),
            try InboxDrawingTests.record(InboxDrawingTests.content(platform: "web"), webTarget(.safari, endpoint: "/wp/web-safari-1?browser=safari")),
            try InboxDrawingTests.record(InboxDrawingTests.content(platform: "web"), webTarget(.chrome, endpoint: "/wp/web-chrome-1")),
        ]
        for index in records.indices { records[index].id = index + 1 }
        inbox.store(records.map { InboxDrawing.draw($0, keyring: InboxDrawingTests.keyring) })
        return inbox
    }

    static func webTarget(_ browser: Browser, endpoint: String) -> DeliveryTarget {
        .webPush(WebPushSubscription(endpoint: "https://127.0.0.1:8443" + endpoint, p256dh: Array(repeating: 4, count: 65),
                                     auth: Array(repeating: 7, count: 16), browser: browser))
    }

    static func ids(_ inbox: Inbox, _ filter: InboxFilter) -> [Int] { inbox.messages(filter, limit: 100).map(\.id) }

    @Test("q: a case-insensitive substring of the texts, app, campaign, token, msgId; hostile text is only text")
    func search() throws {
        let inbox = try Self.filledInbox()
        #expect(Self.ids(inbox, InboxFilter(query: "merhaba")) == [4, 3, 2], "titles, any case (the iOS one has its own)")
        #expect(Self.ids(inbox, InboxFilter(query: "sale <")) == [1])
        #expect(Self.ids(inbox, InboxFilter(query: "  HER ŞEYDE ")) == [4, 3, 2, 1], "bodies; trimmed")
        #expect(Self.ids(inbox, InboxFilter(query: "<img src=x onerror=WINDOW")) == [1], "markup is searched as the characters it is")
        #expect(Self.ids(inbox, InboxFilter(query: "<img src=x")) == [4, 3, 2, 1])
        #expect(Self.ids(inbox, InboxFilter(query: Self.hostile)) == [1])
        #expect(Self.ids(inbox, InboxFilter(query: "token_7")) == [2], "the FCM token")
        #expect(Self.ids(inbox, InboxFilter(query: "web-safari")) == [3], "the Web Push subscription id")
        #expect(Self.ids(inbox, InboxFilter(query: "APP_DEMO")) == [4, 3, 2, 1])
        #expect(Self.ids(inbox, InboxFilter(query: "cmp_42")) == [4, 3, 2, 1])
        let msgID = try #require(inbox.message(id: 2)?.msgID)
        #expect(Self.ids(inbox, InboxFilter(query: String(msgID.suffix(12)))) == [2], "the msgId")
        #expect(Self.ids(inbox, InboxFilter(query: "nothing like this")) == [])
        #expect(Self.ids(inbox, InboxFilter(platform: "web", query: "merhaba")) == [4, 3], "with the other filters")
        #expect(InboxFilter(query: "   ") == InboxFilter(), "blank is no search")
    }

    @Test("delete one: gone from the list and from its permalink, counted, ids never reused; the others stay")
    func deleteOne() throws {
        let inbox = try Self.filledInbox()
        #expect(inbox.delete(id: 2))
        #expect(!inbox.delete(id: 2), "already deleted")
        #expect(!inbox.delete(id: 99) && !inbox.delete(id: 0) && !inbox.delete(id: -1))
        #expect(Self.ids(inbox, InboxFilter()) == [4, 3, 1])
        #expect(inbox.message(id: 2) == nil && inbox.message(id: 1)?.id == 1 && inbox.message(id: 4)?.id == 4)
        #expect(inbox.counts.deleted == 1 && inbox.keptCount == 3)
        let next = InboxDrawing.draw(InboxRecord(id: 5, platform: "ios", path: "/3/device/\(InboxDrawingTests.iosToken)", headers: [],
                                                 body: Array(#"{"aps":{"alert":"five"}}"#.utf8)), keyring: nil)
        inbox.store([next])
        #expect(Self.ids(inbox, InboxFilter()) == [5, 4, 3, 1])
        #expect(inbox.message(id: 5)?.displays.first?.body == "five")
        inbox.clear()
        #expect(inbox.counts.deleted == 0 && inbox.keptCount == 0)
    }

    @Test("a Web endpoint's ?browser= puts that browser's drawing first and says so; unknown names change nothing")
    func browserHint() throws {
        let inbox = try Self.filledInbox()
        let safari = try #require(inbox.message(id: 3))
        #expect(safari.displays.map(\.surface) == ["safari", "chrome", "firefox"])
        #expect(safari.displays[0].notes.first == "the subscription is Safari's (endpoint ?browser=)")
        #expect(safari.token == "web-safari-1", "the token is the subscription id, without the query")
        #expect(try #require(inbox.message(id: 4)).displays.map(\.surface) == ["chrome", "firefox", "safari"])
        for (path, surfaces) in [("/wp/s?browser=firefox", ["firefox", "chrome", "safari"]), ("/wp/s?x=1&browser=edge", ["chrome", "firefox", "safari"]),
                                 ("/wp/s?browser=%3Cb%3E", ["chrome", "firefox", "safari"]), ("/wp/s?browser", ["chrome", "firefox", "safari"]),
                                 ("/wp/s?browser=", ["chrome", "firefox", "safari"])] {
            let record = try InboxDrawingTests.record(InboxDrawingTests.content(platform: "web"), Self.webTarget(.chrome, endpoint: path))
            #expect(InboxDrawing.draw(record, keyring: nil).displays.map(\.surface) == surfaces, "\(path)")
        }
    }

    static func server(_ inbox: Inbox) -> InboxServer {
        InboxServer(inbox: inbox, tracking: nil, reportsDelivered: false, sandboxOrigin: "https://127.0.0.1:8443")
    }

    static func get(_ server: InboxServer, _ method: String, _ path: String, query: [String: String] = [:],
                    headers: [String: String] = [:]) -> (status: Int, body: String, object: [String: Any]?) {
        let response = server.handle(HTTPListener.Request(method: method, path: path, clientAddress: "127.0.0.1", headers: headers, query: query))
        let body = String(decoding: response.body, as: UTF8.self)
        return (response.status, body, try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
    }

    @Test("routes: GET /api/messages?q=, GET and DELETE /api/messages/N, the page at /m/N; bad ids and hostile paths are 404, never a crash")
    func routes() throws {
        let inbox = try Self.filledInbox()
        let server = Self.server(inbox)
        let found = Self.get(server, "GET", "/api/messages", query: ["q": "<IMG SRC=X onerror=window"])
        #expect(found.status == 200)
        let messages = found.object?["messages"] as? [[String: Any]]
        #expect(messages?.compactMap { $0["id"] as? Int } == [1])
        #expect((messages?.first?["displays"] as? [[String: Any]])?.first?["title"] as? String == "Sale " + Self.hostile, "JSON text, as sent")
        #expect(Self.get(server, "GET", "/api/messages", query: ["q": String(repeating: "x", count: 201)]).status == 400)
        #expect(Self.get(server, "GET", "/api/messages", query: ["q": String(repeating: "é", count: 200)]).status == 200)

        let one = Self.get(server, "GET", "/api/messages/1")
        #expect(one.status == 200 && one.object?["id"] as? Int == 1 && one.object?["platform"] as? String == "ios")
        let page = Self.get(server, "GET", "/m/1")
        #expect(page.status == 200 && page.body.contains(#"<script src="/inbox.js"></script>"#))
        #expect(Self.get(server, "GET", "/m/999").status == 200, "the page says a message is gone; its API answers 404")
        #expect(Self.get(server, "GET", "/api/messages/999").status == 404)

        #expect(Self.get(server, "DELETE", "/api/messages/3", headers: ["sec-fetch-site": "cross-site"]).status == 403)
        let deleted = Self.get(server, "DELETE", "/api/messages/3", headers: ["sec-fetch-site": "same-origin"])
        #expect(deleted.status == 200 && deleted.object?["deleted"] as? Int == 3)
        #expect(Self.get(server, "DELETE", "/api/messages/3").status == 404)
        #expect(Self.get(server, "GET", "/api/messages/3").status == 404)
        let listing = Self.get(server, "GET", "/api/messages").object
        #expect(listing?["deleted"] as? Int == 1 && listing?["kept"] as? Int == 3)
        #expect(Self.get(server, "POST", "/api/messages/1").status == 405)
        #expect(Self.get(server, "DELETE", "/m/1").status == 405)

        for path in ["/m/", "/m/0", "/m/-1", "/m/1x", "/m/<script>alert(1)</script>", "/m/1/2", "/m/" + String(repeating: "9", count: 19),
                     "/m/%3Cimg%3E", "/m/١", "/api/messages/", "/api/messages/abc", "/api/messages/0", "/api/messages/99999999999999999999"] {
            let answer = Self.get(server, "GET", path)
            #expect(answer.status == 404, "\(path)")
            #expect(!answer.body.contains("<"), "\(path): \(answer.body)")
        }
        #expect(InboxServer.messageID("/m/42", prefix: "/m/") == 42)
        #expect(InboxServer.messageID("/mm/42", prefix: "/m/") == nil)
        #expect(InboxServer.messageID("/m/" + String(repeating: "9", count: 18), prefix: "/m/") == 999_999_999_999_999_999)
    }
}
