import PushCore
import PushHTTPServer
import PushEncoding

/// `pushworker-dev sandbox --inbox HOST:PORT`: the inbox page and its API over plain HTTP/1.1
/// (libmicrohttpd through ``HTTPListener``; docs/sandbox.md "Inbox", docs/sandbox.md "Inbox").
///
/// | route | answer |
/// |---|---|
/// | `GET /` | the page (`/inbox.css`, `/inbox.js` beside it) |
/// | `GET /m/N` | the page showing message N alone (its permalink) |
/// | `GET /api/messages?platform=&app=&campaign=&token=&q=&limit=` | `{"messages":[…newest first], "count", "kept", "capacity", "accepted", …}` |
/// | `GET /api/messages/N` | message N; 404 once it is gone |
/// | `DELETE /api/messages/N` | forgets message N; pages get a `deleted` event; 404 when it is not kept |
/// | `DELETE /api/messages` | forgets every message; pages get a `cleared` event |
/// | `GET /api/events` | Server-Sent Events: `message` (one drawn message), `cleared`, `press` |
/// | `POST /api/press?id=N[&action=ID]` | posts `opened` (no action) or `clicked` to `--events-url` for message N; 202 |
/// | `GET /healthz` | `ok` |
package final class InboxServer: Sendable {
    let inbox: Inbox
    let tracking: TrackingReporter?
    let reportsDelivered: Bool
    /// The HTTP/2 sandbox's origin, shown in the page's empty state.
    let sandboxOrigin: String
    /// `limit` when none is given. Default: 200.
    static let defaultLimit = 200

    package init(inbox: Inbox, tracking: TrackingReporter?, reportsDelivered: Bool, sandboxOrigin: String) {
        self.inbox = inbox
        self.tracking = tracking
        self.reportsDelivered = reportsDelivered
        self.sandboxOrigin = sandboxOrigin
    }

    /// Request headers the listener passes (``HTTPListener`` `headerNames`).
    package static let headerNames = ["Sec-Fetch-Site"]

    package func handle(_ request: HTTPListener.Request) -> HTTPListener.Response {
        // Another site's page may not empty the inbox or press for the user (CSRF): browsers say
        // where a request comes from in Sec-Fetch-Site; tools like curl send none.
        if request.method == "POST" || request.method == "DELETE", let site = request.headers["sec-fetch-site"],
           site != "same-origin" && site != "none" {
            return json(403, #"{"error":"cross-site requests are refused"}"#)
        }
        if let id = Self.messageID(request.path, prefix: "/m/") {
            guard request.method == "GET" || request.method == "HEAD" else { return json(405, #"{"error":"method not allowed"}"#, headers: [("Allow", "GET")]) }
            // The page finds the id in its own address and asks /api/messages/N (404: shown as gone).
            return id > 0 ? asset(InboxPage.html, type: "text/html; charset=utf-8") : json(404, #"{"error":"not found"}"#)
        }
        if let id = Self.messageID(request.path, prefix: "/api/messages/") {
            return one(request.method, id: id)
        }
        switch (request.method, request.path) {
        case ("GET", "/"), ("HEAD", "/"), ("GET", "/index.html"):
            return asset(InboxPage.html, type: "text/html; charset=utf-8")
        case ("GET", "/inbox.css"):
            return asset(InboxPage.css, type: "text/css; charset=utf-8")
        case ("GET", "/inbox.js"):
            return asset(InboxPage.javascript, type: "text/javascript; charset=utf-8")
        case ("GET", "/healthz"):
            return .init(status: 200, body: "ok\n")
        case ("GET", "/api/messages"):
            return list(request.query)
        case ("DELETE", "/api/messages"):
            inbox.clear()
            return json(200, #"{"cleared":true}"#)
        case ("GET", "/api/events"):
            guard let stream = inbox.subscribe() else {
                return json(503, #"{"error":"too many open event streams"}"#, headers: [("Retry-After", "5")])
            }
            return .streaming(stream, contentType: "text/event-stream; charset=utf-8",
                              headers: [("Cache-Control", "no-store"), ("X-Accel-Buffering", "no")])
        case ("POST", "/api/press"):
            return press(request.query)
        case (_, "/"), (_, "/api/messages"), (_, "/api/events"), (_, "/api/press"), (_, "/healthz"):
            let allow = request.path == "/api/messages" ? "GET, DELETE" : request.path == "/api/press" ? "POST" : "GET"
            return json(405, #"{"error":"method not allowed"}"#, headers: [("Allow", allow)])
        default:
            return json(404, #"{"error":"not found"}"#)
        }
    }

    /// N of `<prefix>N` (1 to 18 digits, nothing else), else nil; `<prefix>` followed by anything else is 0 (not found).
    static func messageID(_ path: String, prefix: String) -> Int? {
        guard path.hasPrefix(prefix) else { return nil }
        let digits = path.utf8.dropFirst(prefix.utf8.count)
        guard !digits.isEmpty, digits.count <= 18, digits.allSatisfy({ (0x30...0x39).contains($0) }) else { return 0 }
        return Int(String(decoding: digits, as: UTF8.self)) ?? 0
    }

    /// `GET` or `DELETE /api/messages/N`.
    private func one(_ method: String, id: Int) -> HTTPListener.Response {
        switch method {
        case "GET":
            guard id > 0, let stored = inbox.storedMessage(id: id) else { return json(404, #"{"error":"no such message (deleted, cleared or forgotten)"}"#) }
            return .init(status: 200, contentType: "application/json; charset=utf-8", bytes: stored.json, headers: [("Cache-Control", "no-store")])
        case "DELETE":
            guard id > 0, inbox.delete(id: id) else { return json(404, #"{"error":"no such message (deleted, cleared or forgotten)"}"#) }
            return json(200, #"{"deleted":\#(id)}"#)
        default:
            return json(405, #"{"error":"method not allowed"}"#, headers: [("Allow", "GET, DELETE")])
        }
    }

    private func asset(_ text: String, type: String) -> HTTPListener.Response {
        .init(status: 200, contentType: type, body: text, headers: [
            ("Content-Security-Policy", InboxPage.contentSecurityPolicy), ("X-Content-Type-Options", "nosniff"),
            ("Referrer-Policy", "no-referrer"), ("Cache-Control", "no-cache"),
        ])
    }

    private func json(_ status: Int, _ text: String, headers: [(String, String)] = []) -> HTTPListener.Response {
        .init(status: status, contentType: "application/json; charset=utf-8", body: text, headers: headers + [("Cache-Control", "no-store")])
    }

    private func list(_ query: [String: String]) -> HTTPListener.Response {
        var limit = Self.defaultLimit
        if let text = query["limit"], !text.isEmpty {
            guard let value = Int(text), value >= 0 else { return json(400, #"{"error":"limit must be a whole number ≥ 0"}"#) }
            limit = value
        }
        if let text = query["q"], text.count > InboxFilter.maximumQueryLength {
            return json(400, #"{"error":"q is longer than \#(InboxFilter.maximumQueryLength) characters"}"#)
        }
        let filter = InboxFilter(platform: query["platform"], app: query["app"], campaign: query["campaign"], token: query["token"], query: query["q"])
        let found = inbox.stored(filter, limit: min(limit, inbox.settings.capacity))
        let counts = inbox.counts
        let facets = inbox.facets()
        var writer = JSONWriter(capacity: 4096 + found.reduce(0) { $0 + $1.json.count })
        writer.beginObject()
        writer.key("messages")
        writer.beginArray()
        for item in found { writer.raw(item.json) }
        writer.endArray()
        writer.member("count", found.count)
        writer.member("kept", inbox.keptCount)
        writer.member("capacity", inbox.settings.capacity)
        writer.member("accepted", counts.accepted)
        writer.member("forgotten", counts.forgotten)
        writer.member("deleted", counts.deleted)
        writer.member("apps", strings: facets.apps)
        writer.member("campaigns", strings: facets.campaigns)
        writer.member("sandbox", sandboxOrigin)
        writer.member("msgIdKeys", inbox.settings.keyring != nil)
        writer.key("tracking")
        if let tracking {
            let sent = tracking.counters
            writer.beginObject()
            writer.member("url", tracking.url.description)
            writer.member("reportDelivered", reportsDelivered)
            writer.member("posted", sent.posted)
            writer.member("failed", sent.failed)
            writer.member("dropped", sent.dropped)
            writer.endObject()
        } else {
            writer.null()
        }
        writer.endObject()
        return .init(status: 200, contentType: "application/json; charset=utf-8", bytes: writer.bytes, headers: [("Cache-Control", "no-store")])
    }

    /// A press on message `id`: its body (`opened`) or the button `action` (`clicked`), posted
    /// to the tracking endpoint through the reporter; the outcome reaches the pages as a
    /// `press` event.
    private func press(_ query: [String: String]) -> HTTPListener.Response {
        guard let id = query["id"].flatMap({ Int($0) }), let message = inbox.message(id: id) else {
            return json(404, #"{"error":"no such message"}"#)
        }
        let action = query["action"].flatMap { $0.isEmpty ? nil : $0 }
        var button: InboxButton?
        if let action {
            button = message.displays.lazy.flatMap(\.buttons).first { $0.id == action }
            guard button != nil else { return json(400, #"{"error":"that button is not shown on any surface of this message"}"#) }
        }
        guard let msgID = message.msgID else { return json(409, #"{"error":"the payload carries no msgId"}"#) }
        let event: TrackingReporter.Event = action == nil ? .opened : .clicked
        var writer = JSONWriter(capacity: 1024)
        writer.beginObject()
        writer.member("id", id)
        writer.member("event", event.rawValue)
        writer.member("action", orNull: action)
        writer.key("press")
        Self.writeNormalizedPress(message, button: button, to: &writer)
        var queued = false
        if let tracking {
            let inbox = self.inbox
            queued = tracking.report(event, msgID: msgID) { status, error in
                var result = JSONWriter(capacity: 256)
                result.beginObject()
                result.member("id", id)
                result.member("event", event.rawValue)
                result.member("action", orNull: action)
                result.key("status")
                if let status { result.int(status) } else { result.null() }
                result.member("error", orNull: error)
                result.endObject()
                inbox.broadcast(Inbox.event("press", data: result.bytes))
            }
        }
        writer.member("queued", queued)
        writer.endObject()
        return .init(status: queued ? 202 : 200, contentType: "application/json; charset=utf-8", bytes: writer.bytes, headers: [("Cache-Control", "no-store")])
    }

    /// What the SDK hands the app for this press (the SDK's contract, docs/payloads.md): `{url, data, actionId, msgId, campaignId}`.
    static func writeNormalizedPress(_ message: InboxMessage, button: InboxButton?, to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member("url", orNull: button?.url ?? message.url)
        writer.key("data")
        writer.beginObject()
        for pair in message.data { writer.member(pair.key, pair.value) }
        writer.endObject()
        writer.member("actionId", orNull: button?.id)
        writer.member("msgId", orNull: message.msgID)
        writer.member("campaignId", orNull: message.campaign)
        writer.endObject()
    }
}
