import Foundation
import PushCore
import PushKafkaMock
import PushTestSupport
import Testing
@testable import PushWorker

/// The tracking endpoint under abuse (docs/security.md), against the real
/// `pushworker events` binary: one process, every defence.
@Suite("Events: a real `pushworker events` holds under abuse", .serialized)
struct EventsAbuseProcessTests {
    static let keys = "k1:" + Data([UInt8](repeating: 9, count: 32)).base64EncodedString()

    /// One request on its own connection (`Connection: close`): the status code, 0 if none came.
    static func post(_ port: UInt16, _ path: String, headers: [String] = []) -> Int {
        guard let socket = LoopbackSocket(port: port) else { return 0 }
        socket.send((["POST \(path) HTTP/1.1", "Host: events", "Connection: close"] + headers).joined(separator: "\r\n") + "\r\n\r\n")
        let answer = socket.readUntilClosed(timeout: 10).text
        guard answer.hasPrefix("HTTP/1.1 "), let code = Int(answer.dropFirst(9).prefix(3)) else { return 0 }
        return code
    }

    @Test("IPv6 per /64, IPv4 per address, every X-Forwarded-For line, 413, 431, idle close, per-address connection cap")
    func abuse() throws {
        let redis = try RedisServer()
        let cluster = try KafkaMockCluster()
        try cluster.createTopic("push.events.v1", partitions: 1)
        defer { cluster.close() }
        let port = freeLoopbackPort()
        let server = try TestProcess(BuiltProducts.pushworker, ["events"], environment: [
            "PUSHWORKER_KAFKA_BROKERS": cluster.bootstrapServers,
            "PUSHWORKER_REDIS_URL": redis.url,
            "PUSHWORKER_MSGID_KEYS": Self.keys,
            "PUSHWORKER_HTTP_ADDR": "127.0.0.1:\(port)",
            "EVENT_RATE_LIMIT": "5/m",
            "EVENT_TRUSTED_PROXIES": "127.0.0.1, 10.0.0.0/8",
            "EVENT_IDLE_TIMEOUT_SECONDS": "2",
            "EVENT_CONNECTIONS_PER_IP": "6",
            "EVENT_HTTP_THREADS": "2",
        ])
        defer { server.stop() }
        #expect(eventually(timeout: 20) { isListening(port: port) }, "\(server.stderr())")
        let keyring = try MsgIDKeyring(parsing: Self.keys)
        let msgID = MsgID.sign(MsgIDFields(appID: "app_abuse", campaignID: "cmp_a", userID: nil, subscriptionID: "s1",
                                           platform: "ios", variant: nil), keyring: keyring)
        let path = "/v1/e/o/\(msgID)"

        // Forty IPv6 clients of one /64 behind the proxy: one bucket of 5.
        let ipv6 = (1...40).map { Self.post(port, path, headers: ["X-Forwarded-For: 2001:db8:5:6:\(String($0, radix: 16)):0:0:1"]) }
        #expect(ipv6.filter { $0 == 204 }.count == 5, "\(ipv6)")
        #expect(ipv6.filter { $0 == 429 }.count == 35)
        #expect(Self.post(port, path, headers: ["X-Forwarded-For: 2001:db8:5:7::1"]) == 204, "another /64")

        // IPv4: one bucket per address.
        for client in ["198.51.100.1", "198.51.100.2"] {
            let answers = (0..<6).map { _ in Self.post(port, path, headers: ["X-Forwarded-For: \(client)"]) }
            #expect(answers == [204, 204, 204, 204, 204, 429], "\(client): \(answers)")
        }

        // A client rotating a forged first X-Forwarded-For line while the proxy appends the real
        // address on a line of its own: every line counts, walked from the right.
        let forged = (1...10).map {
            Self.post(port, path, headers: ["X-Forwarded-For: 203.0.113.\($0)", "X-Forwarded-For: 198.51.100.50, 10.1.2.3"])
        }
        #expect(forged.filter { $0 == 204 }.count == 5, "\(forged)")

        // A declared 8 MiB body: 413 before it is sent.
        let big = try #require(LoopbackSocket(port: port))
        big.send("POST \(path) HTTP/1.1\r\nHost: events\r\nX-Forwarded-For: 198.51.100.60\r\nContent-Length: 8388608\r\n\r\n")
        let bigAnswer = big.readUntilClosed(timeout: 10)
        #expect(bigAnswer.text.hasPrefix("HTTP/1.1 413") && bigAnswer.closed, "\(bigAnswer)")

        // 20 KiB of headers: 431.
        #expect(Self.post(port, path, headers: (0..<40).map { "X-Filler-\($0): " + String(repeating: "h", count: 500) }) == 431)

        // Half a request, then silence: closed after the idle timeout (2 s here).
        let slow = try #require(LoopbackSocket(port: port))
        slow.send("POST \(path) HTTP/1.1\r\nHost: ev")
        let idle = slow.readUntilClosed(timeout: 20)
        #expect(idle.closed && idle.seconds < 7, "\(idle)")

        // Six connections held from 127.0.0.1: the seventh is closed unanswered.
        var held = try (0..<6).map { _ in try #require(LoopbackSocket(port: port)) }
        let seventh = try #require(LoopbackSocket(port: port))
        seventh.send("POST \(path) HTTP/1.1\r\nHost: events\r\nConnection: close\r\n\r\n")
        let refused = seventh.readUntilClosed(timeout: 5)
        #expect(refused.closed && refused.text.isEmpty, "\(refused)")
        #expect(held.count == 6)
        held.removeAll()

        var metrics = ""
        #expect(eventually(timeout: 10) {
            metrics = (try? runCommand("/usr/bin/curl", ["-s", "http://127.0.0.1:\(port)/metrics"]).stdout) ?? ""
            return !metrics.isEmpty
        })
        #expect(metrics.contains("pushworker_events_rate_limited_total 42"), "\(metrics)")
        #expect(metrics.contains(#"pushworker_events_total{type="opened",outcome="accepted"} 21"#))
        server.signal(SIGTERM)
        #expect(server.wait(timeout: 20) == 0, "\(server.stderr().suffix(1000))")
    }
}
