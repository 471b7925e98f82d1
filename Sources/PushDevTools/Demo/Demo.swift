import Foundation
import PushRuntime
import PushProcess
import PushCore
import PushKafka
import PushKafkaMock
import PushWorker
import Synchronization
import PushEncoding

/// The sample campaign of `pushworker-dev demo` / `make demo` (README): librdkafka's mock cluster
/// in-process, a `redis-server` and `pushworker-dev sandbox` as children on free loopback ports,
/// one multilingual job (iOS, Android, Web for Chrome, Firefox and Safari, Huawei, a dead token,
/// a malformed one), the real worker
/// until every recipient has a result on `push.results.v1`, a summary; everything it started
/// is stopped. The sandbox runs with its inbox (docs/sandbox.md "Inbox") and `pushworker events`
/// beside it, so presses in the inbox are counted; `keep` leaves it all running until Ctrl-C.
public enum Demo {
    static let topics = ["push.jobs.v1", "push.jobs.transactional.v1", "push.retry.v1", "push.results.v1", "push.tokens.v1", "push.dlq.v1", "push.events.v1"]

    static func step(_ text: String) { printError("▸ \(text)") }

    public static func run(timeout: Double, keep: Bool) throws -> Int32 {
        let started = Date()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pushworker-demo-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { if !keep { try? FileManager.default.removeItem(at: folder) } else { printError("kept \(folder.path)") } }

        step("starting Kafka (librdkafka mock cluster, in-process)")
        KafkaLogging.setLogHandler { _, _, _ in }  // the demo prints its own progress
        let cluster = try KafkaMockCluster(brokers: 1)
        for topic in topics { try cluster.createTopic(topic, partitions: 4) }

        step("starting Redis (redis-server on a free loopback port)")
        let redis = try LocalRedis(folder: folder)
        defer { redis.child.stop() }

        var keyBytes = [UInt8](repeating: 0, count: 32)
        for index in keyBytes.indices { keyBytes[index] = UInt8.random(in: 0...255) }
        let msgIDKeys = "demo1:" + Data(keyBytes).base64EncodedString()

        step("starting the tracking endpoint (pushworker events)")
        let eventsPort = ChildProcess.freePort()
        var eventsEnvironment = ProcessInfo.processInfo.environment
        for (name, value) in ["PUSHWORKER_KAFKA_BROKERS": cluster.bootstrapServers, "PUSHWORKER_REDIS_URL": redis.url,
                              "PUSHWORKER_MSGID_KEYS": msgIDKeys, "PUSHWORKER_HTTP_ADDR": "127.0.0.1:\(eventsPort)",
                              "PUSHWORKER_LOG_LEVEL": "warning", "EVENT_RATE_LIMIT": "100/s"] {
            eventsEnvironment[name] = value
        }
        let events = try ChildProcess(ChildProcess.workerPath, ["events"], log: folder.appendingPathComponent("events.log"), environment: eventsEnvironment)
        defer { events.stop() }

        step("starting the provider sandbox (APNs, FCM, Web Push over TLS HTTP/2) and its inbox")
        let inboxPortFile = folder.appendingPathComponent("inbox.port").path
        let sandbox = try Sandbox(folder: folder, apps: ["app_demo"], extra: [
            "--inbox", "127.0.0.1:0", "--inbox-port-file", inboxPortFile, "--msgid-keys", msgIDKeys,
            "--events-url", "http://127.0.0.1:\(eventsPort)", "--report-delivered",
        ])
        defer { sandbox.child.stop() }
        let inboxURL = (try? String(contentsOfFile: inboxPortFile, encoding: .utf8))
            .map { "http://127.0.0.1:\($0.trimmingCharacters(in: .whitespacesAndNewlines))/" } ?? "(inbox did not start: see \(folder.path)/sandbox.log)"
        step("inbox: \(inboxURL)")

        let subscriptions = try sandbox.subscriptions(3)
        let job = sampleJob(webSubscriptions: subscriptions)
        let expected = job.recipientCount

        step("enqueueing a sample campaign: \(expected) recipients (iOS, Android, Web in Chrome, Firefox and Safari, Huawei; en, tr, pt, ko)")
        let producer = try KafkaProducer(properties: ["bootstrap.servers": cluster.bootstrapServers])
        producer.produce(topic: "push.jobs.v1", key: Array("cmp_demo:0001".utf8), value: Array(job.json.utf8)) { _ in }
        try producer.flush(timeout: .seconds(10))

        let environment = [
            "PUSHWORKER_KAFKA_BROKERS": cluster.bootstrapServers,
            "PUSHWORKER_KAFKA_GROUP": "pushworker-demo",
            "PUSHWORKER_REDIS_URL": redis.url,
            "PUSHWORKER_CREDENTIALS_DIR": sandbox.credentialsDir,
            "PUSHWORKER_MSGID_KEYS": msgIDKeys,
            "PUSHWORKER_CA_FILE": sandbox.certificate,
            "PUSHWORKER_WEBPUSH_ALLOWED_HOSTS": "127.0.0.1",
            "PUSHWORKER_HTTP_ADDR": "127.0.0.1:0",
            "PUSHWORKER_LOG_LEVEL": "warning",
            "PUSHWORKER_DRAIN_SECONDS": "5",
            "PUSHWORKER_RDKAFKA_SESSION_TIMEOUT_MS": "6000",
            "PUSHWORKER_RDKAFKA_HEARTBEAT_INTERVAL_MS": "500",
        ]
        let configuration = try Configuration.load(environment: environment, purpose: .worker)

        step("running the worker (consumer group pushworker-demo)")
        let workerBox = WorkerBox()
        let worker = Thread {
            let status = WorkerProcess.run(configuration, installSignalHandlers: false) { workerBox.set($0) }
            workerBox.finish(status)
        }
        worker.start()

        let results = try KafkaConsumer(properties: ["bootstrap.servers": cluster.bootstrapServers, "group.id": "demo-results-\(UUID().uuidString.prefix(6))",
                                                     "auto.offset.reset": "earliest"], topics: ["push.results.v1"])
        var lines: [[String: Any]] = []
        let deadline = Date().addingTimeInterval(timeout)
        while lines.count < expected && Date() < deadline && !workerBox.isFinished {
            for result in results.pollBatch(max: 100, timeout: .milliseconds(200)) {
                guard case .success(let message) = result,
                      let object = try? JSONSerialization.jsonObject(with: Data(message.value)) as? [String: Any] else { continue }
                lines.append(object)
                let reason = (object["reason"] as? String).map { " (\($0))" } ?? ""
                printError("  result \(lines.count)/\(expected): \(object["platform"] ?? "?") \(object["subscriptionId"] ?? "?") → \(object["status"] ?? "?")\(reason)")
            }
        }
        results.close()
        if !keep {
            workerBox.worker?.requestStop()
            _ = workerBox.waitFinished(timeout: 20)
        }

        printSummary(lines, expected: expected, seconds: Date().timeIntervalSince(started), sandboxStats: sandbox.stats())
        if !keep { print("\nthe sandbox inbox shows these notifications as the device would: `pushworker-dev demo --keep` (make demo DEMO_ARGS=--keep) leaves it open") }
        if keep {
            print("\ninbox: \(inboxURL)   (every notification as the device draws it; a press posts opened/clicked to http://127.0.0.1:\(eventsPort))")
            let environmentFile = folder.appendingPathComponent("demo.env")
            let exports = [
                ("PUSHWORKER_KAFKA_BROKERS", cluster.bootstrapServers), ("PUSHWORKER_REDIS_URL", redis.url),
                ("PUSHWORKER_CREDENTIALS_DIR", sandbox.credentialsDir), ("PUSHWORKER_CA_FILE", sandbox.certificate),
                ("PUSHWORKER_MSGID_KEYS", msgIDKeys), ("PUSHWORKER_WEBPUSH_ALLOWED_HOSTS", "127.0.0.1"),
            ].map { "export \($0.0)='\($0.1)'" }.joined(separator: "\n") + "\n"
            try? exports.write(to: environmentFile, atomically: true, encoding: .utf8)
            print("everything keeps running: `source \(environmentFile.path)` to send more (pushworker send / enqueue); Ctrl-C stops it all")
            fflush(nil)  // stdout may be a pipe or a file: show the lines above before blocking
            waitForInterrupt()
            workerBox.worker?.requestStop()
            _ = workerBox.waitFinished(timeout: 20)
        }
        return lines.count == expected ? ExitCode.ok : ExitCode.software
    }

    /// Blocks until SIGINT or SIGTERM (the children, in the same process group, get Ctrl-C too).
    static func waitForInterrupt() {
        let interrupted = DispatchSemaphore(value: 0)
        var sources: [any DispatchSourceSignal] = []
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { interrupted.signal() }
            source.resume()
            sources.append(source)
        }
        interrupted.wait()
        for source in sources { source.cancel() }
    }

    static func printSummary(_ lines: [[String: Any]], expected: Int, seconds: Double, sandboxStats: String?) {
        let statuses = DeliveryStatus.allCases.map(\.rawValue)
        var table: [String: [String: Int]] = [:]
        for line in lines {
            let platform = line["platform"] as? String ?? "?"
            let status = line["status"] as? String ?? "?"
            table[platform, default: [:]][status, default: 0] += 1
        }
        func pad(_ text: String, _ width: Int) -> String { text + String(repeating: " ", count: max(0, width - text.count)) }
        print("")
        print("pushworker-dev demo — \(lines.count)/\(expected) results on push.results.v1 in \(String(format: "%.1f", seconds)) s")
        print("")
        print(pad("platform", 10) + statuses.map { pad($0, 15) }.joined())
        for platform in ["ios", "android", "web", "huawei"] {
            print(pad(platform, 10) + statuses.map { pad(String(table[platform]?[$0] ?? 0), 15) }.joined())
        }
        print("")
        print("reasons:")
        for line in lines.sorted(by: { ($0["subscriptionId"] as? String ?? "") < ($1["subscriptionId"] as? String ?? "") }) {
            let sub = line["subscriptionId"] as? String ?? "?"
            let status = line["status"] as? String ?? "?"
            let reason = line["reason"] as? String ?? "-"
            let http = (line["httpStatus"] as? NSNumber).map { "HTTP \($0)" } ?? ""
            print("  \(pad(sub, 12)) \(pad(line["platform"] as? String ?? "?", 8)) \(pad(status, 14)) \(pad(reason, 22)) \(http)")
        }
        if let sandboxStats { print("\nsandbox: \(sandboxStats)") }
    }

    /// The sample campaign.
    struct SampleJob {
        var json: String
        var recipientCount: Int
    }

    /// The browsers of the sample's Web recipients, in order.
    static let browsers = ["chrome", "firefox", "safari"]

    static func sampleJob(webSubscriptions: [String]) -> SampleJob {
        func hexToken(_ seed: Int, dead: Bool = false) -> String {
            var text = dead ? "deadbeef" : ""
            var value = UInt64(seed) &* 0x9E37_79B9_7F4A_7C15
            while text.count < 64 {
                value = value &* 6364136223846793005 &+ 1442695040888963407
                text += String(format: "%016llx", value)
            }
            return String(text.prefix(64))
        }
        func fcmToken(_ seed: Int) -> String {
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
            var value = UInt64(seed) &+ 0x1234_5678
            var text = "f\(seed)Xq:APA91b"
            while text.count < 152 {
                value = value &* 6364136223846793005 &+ 1442695040888963407
                text.append(alphabet[Int(value >> 58)])
            }
            return text
        }
        var recipients = [
            #"{"userId":"u1","subscriptionId":"ios-1","platform":"ios","token":"\#(hexToken(1))","language":"tr","properties":{"first_name":"Ayşe"}}"#,
            #"{"userId":"u2","subscriptionId":"ios-2","platform":"ios","token":"\#(hexToken(2))","language":"en-GB","properties":{"first_name":"Sam"}}"#,
            #"{"userId":"u3","subscriptionId":"ios-3","platform":"ios","token":"\#(hexToken(3))","language":"ko"}"#,
            #"{"userId":"u4","subscriptionId":"ios-dead","platform":"ios","token":"\#(hexToken(4, dead: true))","language":"en"}"#,
            #"{"userId":"u5","subscriptionId":"and-1","platform":"android","token":"\#(fcmToken(5))","language":"pt-BR","properties":{"first_name":"João"}}"#,
            #"{"userId":"u6","subscriptionId":"and-2","platform":"android","token":"\#(fcmToken(6))","language":"en"}"#,
            #"{"userId":"u7","subscriptionId":"and-bad","platform":"android","token":"not a token!","language":"en"}"#,
        ]
        recipients.append(#"{"userId":"u8","subscriptionId":"hms-1","platform":"huawei","token":"IQAAAACy0kYzAACcTw9fkQ3sXo3T_demo-8","language":"en","properties":{"first_name":"Li"}}"#)
        for (index, subscription) in webSubscriptions.enumerated() {
            // The endpoint names the browser (`?browser=`): the inbox opens the card on that browser's drawing.
            let browser = browsers[index % browsers.count]
            let named = subscription.replacingOccurrences(of: #"/wp/sub\#(index + 1)""#, with: #"/wp/sub\#(index + 1)?browser=\#(browser)""#)
            recipients.append(#"{"userId":"w\#(index)","subscriptionId":"web-\#(index + 1)","platform":"web","language":"\#(["ko", "en", "tr"][index % 3])","browser":"\#(browser)","subscription":\#(named)}"#)
        }
        let json = """
        {"schemaVersion":1,"jobId":"cmp_demo:0001","appId":"app_demo","campaignId":"cmp_demo","variant":"A",
         "createdAt":"\(RFC3339Timestamp.format(Date()))","expiresAt":"\(RFC3339Timestamp.format(Date().addingTimeInterval(4 * 3600)))",
         "priority":"high","ttlSeconds":86400,"collapseId":"sale","throttlePerMinute":60000,
         "content":{"defaultLanguage":"en","languages":{
           "en":{"title":"Hi {{ first_name | default: \\"there\\" }}","subtitle":"Today only","body":"20% off everything",
                 "url":"https://shop.example/sale","imageURL":"https://cdn.example/sale.jpg",
                 "actions":[{"id":"buy","title":"Buy","url":"https://shop.example/cart"},{"id":"later","title":"Later"}]},
           "tr":{"title":"Merhaba {{ first_name }}","body":"Her şeyde %20 indirim","actions":[{"id":"buy","title":"Satın al"},{"id":"later","title":"Sonra"}]},
           "pt":{"title":"Olá {{ first_name | default: \\"você\\" }}","body":"20% de desconto em tudo"},
           "ko":{"title":"안녕하세요","body":"오늘만 모든 상품 20% 할인 🎉"}}},
         "data":{"screen":"sale","promo":"SPRING20"},
         "ios":{"sound":"default","badge":{"mode":"increase","value":1},"threadId":"sale","interruptionLevel":"time-sensitive","relevanceScore":0.8,"mutableContent":true},
         "android":{"channelId":"promo","smallIcon":"ic_stat","accentColor":"FF2196F3","groupKey":"sale"},
         "web":{"iconURL":"https://cdn.example/icon.png","urgency":"normal","topic":"sale"},
         "recipients":[\(recipients.joined(separator: ","))]}
        """
        return SampleJob(json: json.replacingOccurrences(of: "\n", with: ""), recipientCount: recipients.count)
    }
}

/// Hands the in-process worker from its thread to the demo's thread.
final class WorkerBox: Sendable {
    private let state = Mutex<(worker: Worker?, status: Int32?)>((nil, nil))
    func set(_ worker: Worker) { state.withLock { $0.worker = worker } }
    func finish(_ status: Int32) { state.withLock { $0.status = status } }
    var worker: Worker? { state.withLock { $0.worker } }
    var isFinished: Bool { state.withLock { $0.status != nil } }
    func waitFinished(timeout: Double) -> Bool { ChildProcess.waitFor(timeout: timeout) { isFinished } }
}

/// `pushworker-dev sandbox` as a child process with generated credentials.
package final class Sandbox: Sendable {
    package let child: ChildProcess
    package let port: UInt16
    package let certificate: String
    package let credentialsDir: String
    package let seed: String

    package init(folder: URL, apps: [String], seed: String = "pushworker-demo", extra: [String] = []) throws {
        let portFile = folder.appendingPathComponent("sandbox.port").path
        certificate = folder.appendingPathComponent("sandbox-cert.pem").path
        credentialsDir = folder.appendingPathComponent("credentials").path
        self.seed = seed
        var arguments = ["sandbox", "--listen", "127.0.0.1:0", "--port-file", portFile, "--cert-out", certificate,
                         "--credentials-out", credentialsDir, "--seed", seed]
        for app in apps { arguments += ["--app", app] }
        child = try ChildProcess(ChildProcess.selfPath, arguments + extra, log: folder.appendingPathComponent("sandbox.log"))
        var port: UInt16 = 0
        let child = self.child
        guard ChildProcess.waitFor(timeout: 20, {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8),
               let value = UInt16(text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ":").last ?? "") {
                port = value
                return true
            }
            return !child.isRunning
        }), port != 0 else {
            throw DemoError("the sandbox did not start: \(child.log().suffix(800))")
        }
        self.port = port
    }

    package var origin: String { "https://127.0.0.1:\(port)" }

    /// `count` Web Push subscriptions (JSON objects) whose keys the running sandbox can decrypt
    /// for; `prefix: "dead"` gives subscriptions it answers 410.
    package func subscriptions(_ count: Int, prefix: String? = nil) throws -> [String] {
        try Self.subscriptions(executable: ChildProcess.selfPath, origin: origin, seed: seed, count: count, prefix: prefix)
    }

    /// `pushworker-dev sandbox subscriptions COUNT --origin O --seed S [--prefix P]`, one JSON line each.
    package static func subscriptions(executable: String, origin: String, seed: String, count: Int, prefix: String?) throws -> [String] {
        let arguments = ["sandbox", "subscriptions", "\(count)", "--origin", origin, "--seed", seed] + (prefix.map { ["--prefix", $0] } ?? [])
        let output: String
        do { output = try Subprocess.capture(executable, arguments).stdout } catch { throw DemoError(error.description) }
        let lines = output.split(separator: "\n").map(String.init).filter { $0.hasPrefix("{") }
        guard lines.count == count else { throw DemoError("sandbox subscriptions printed \(lines.count) lines, expected \(count)") }
        return lines
    }

    /// `GET /_sandbox/stats` through the curl CLI (a summary line for the demo, nothing more).
    package func stats() -> String? {
        guard let (status, output) = try? Subprocess.capture("/usr/bin/curl", ["-s", "--max-time", "5", "--cacert", certificate, "\(origin)/_sandbox/stats"], timeout: 10),
              status == 0 else { return nil }
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
