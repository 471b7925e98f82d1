// libFuzzer target `tracking-route` (scripts/fuzz-libfuzzer.sh; corpus Tests/Fuzz/corpus/tracking-route/).
//
// Input: up to four lines, what `pushworker events` takes from a request before it answers:
// the method, the path, the `X-Forwarded-For` value (absent when there is no third line) and the
// peer's address (127.0.0.1 when there is no fourth line). The pure steps of EventsService.handle
// run on them: EventRoute → TrustedProxies.clientAddress → MsgID.verify → TrackingEvent.json.
// Invariants (a violation traps):
// - only `POST /v1/e/<d|o|c|x>/<msgId>` is a tracking route, and its msgId holds no `/`;
// - `/healthz`, `/readyz`, `/metrics` answer GET and HEAD only; a 405 names what the path allows;
// - the client address is the peer or an address parsed from the header;
// - an accepted event is a JSON object carrying the msgId and the type it was posted with.
// The third line is also read as an `EVENT_TRUSTED_PROXIES` value.
import PushCore
import PushEncoding
import PushEvents

private let keyring = try! MsgIDKeyring(parsing: "k1:" + Base64URL.encode((0..<32).map { UInt8($0) }))
private let proxies = try! TrustedProxies(parsing: "10.0.0.0/8, 127.0.0.1, fd00::/8, ::ffff:192.168.0.0/112")
private let hasher = ClientAddressHasher(secret: Array("k1:fuzz".utf8))

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTrackingRoute(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: count), as: UTF8.self)
    let lines = text.split(separator: "\n", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
    let method = lines[0]
    let path = lines.count > 1 ? lines[1] : ""
    let forwardedFor = lines.count > 2 ? lines[2] : nil
    let peer = lines.count > 3 ? lines[3] : "127.0.0.1"

    switch EventRoute(method: method, path: path) {
    case .track(let type, let msgID):
        let bytes = Array(path.utf8)
        guard method == "POST", bytes.count == 8 + msgID.utf8.count, bytes.starts(with: "/v1/e/".utf8), bytes[7] == UInt8(ascii: "/"),
              bytes[8...].elementsEqual(msgID.utf8), !msgID.utf8.contains(UInt8(ascii: "/")) else {
            fatalError("tracking route for \(method) \(path)")
        }
        if TrackingEventType(pathByte: bytes[6]) != type { fatalError("event type \(type) from \(path)") }
        let client = proxies.clientAddress(peer: peer, forwardedFor: forwardedFor)
        if client != peer && IPAddress(client) == nil { fatalError("client address \(client) is neither the peer nor an address") }
        guard let fields = MsgID.verify(msgID, keyring: keyring) else { return 0 }
        let event = TrackingEvent(type: type, msgID: msgID, fields: fields, atMilliseconds: 1_790_000_000_000,
                                  ipHash: client.isEmpty ? nil : hasher.hash(client))
        guard let object = try? JSONParser.parse(event.json()), object["msgId"]?.stringValue == msgID,
              object["type"]?.stringValue == type.rawValue, object["appId"]?.stringValue == fields.appID else {
            fatalError("the event is not JSON carrying its msgId and type")
        }
    case .health, .ready, .metrics:
        guard method == "GET" || method == "HEAD", ["/healthz", "/readyz", "/metrics"].contains(path) else {
            fatalError("operations route for \(method) \(path)")
        }
    case .methodNotAllowed(let allow):
        let allowed = allow.split(separator: ",").map { $0.trimmingCharacters(in: " ") }
        if allowed.contains(Substring(method)) { fatalError("405 for \(method), which \(allow) allows") }
    case .notFound:
        break
    }
    if let forwardedFor, let parsed = try? TrustedProxies(parsing: forwardedFor), let address = IPAddress(peer) {
        _ = parsed.contains(address)
        _ = parsed.clientAddress(peer: peer, forwardedFor: forwardedFor)
    }
    return 0
}

private extension Substring {
    func trimmingCharacters(in set: Character) -> Substring {
        var view = self
        while view.first == set { view = view.dropFirst() }
        while view.last == set { view = view.dropLast() }
        return view
    }
}
