import Dispatch
import PushRuntime
import Foundation
import PushCore
import PushDelivery
import PushCrypto
import PushHTTP
import PushKafka
import PushRedis
import Synchronization
import PushEncoding
import PushProviders
import PushWorker

/// `pushworker config check --connect` (docs/reference/cli.md): reaches what the configuration names and
/// says, one line per check, whether the worker could run with it — Kafka (metadata, the
/// configured topics exist), Redis (PING, the scripts load), and each app's credentials (APNs:
/// a provider token the provider accepts, by a dry request; FCM: the OAuth grant and a
/// `validate_only` send; Web Push: the VAPID key pair signs and verifies).
public enum ConnectionCheck {
    public struct Line: Sendable, Equatable, CustomStringConvertible {
        public enum Verdict: String, Sendable { case ok = "ok", warning = "WARN", failure = "FAIL" }
        public var verdict: Verdict
        /// `kafka`, `topic`, `redis`, or the app id.
        public var subject: String
        public var detail: String

        public init(_ verdict: Verdict, _ subject: String, _ detail: String) {
            self.verdict = verdict; self.subject = subject; self.detail = detail
        }

        public var description: String {
            "\(verdict.rawValue.padding(toLength: 4, withPad: " ", startingAt: 0))  \(subject.padding(toLength: 10, withPad: " ", startingAt: 0))  \(detail)"
        }
    }

    /// The APNs device token of the dry request: well-formed, never issued (APNs answers
    /// `400 BadDeviceToken` once the provider token and topic passed).
    public static let dryRunDeviceToken = String(repeating: "0", count: 64)
    /// The FCM registration token of the `validate_only` request (FCM answers 400
    /// INVALID_ARGUMENT for it once the access token and project passed).
    public static let dryRunRegistrationToken = "pushworker-config-check"

    // MARK: Kafka

    /// One line for the cluster, one per configured topic (`events` only warns: only `pushworker
    /// events` uses it).
    public static func kafka(_ configuration: Configuration, timeout: Duration) -> [Line] {
        let admin: KafkaAdmin
        do { admin = try KafkaAdmin(properties: configuration.kafkaProperties(for: .producer), timeout: timeout) } catch {
            return [Line(.failure, "kafka", "cannot create a client: \(error.message)")]
        }
        defer { admin.close() }
        let metadata: KafkaClusterMetadata
        do { metadata = try admin.metadata() } catch {
            return [Line(.failure, "kafka", "\(configuration.kafkaBrokers) did not answer within \(timeout): \(error.message) [\(error.name)] — check PUSHWORKER_KAFKA_BROKERS and PUSHWORKER_RDKAFKA_* (security.protocol, sasl.*)")]
        }
        var lines = [Line(.ok, "kafka", "\(configuration.kafkaBrokers): \(metadata.brokers.count) broker\(metadata.brokers.count == 1 ? "" : "s") (\(metadata.brokers.map { "\($0.host):\($0.port)" }.joined(separator: ", ")))")]
        let topics = [("PUSHWORKER_TOPIC_JOBS", configuration.topicJobs, true), ("PUSHWORKER_TOPIC_RETRY", configuration.topicRetry, true),
                      ("PUSHWORKER_TOPIC_RESULTS", configuration.topicResults, true), ("PUSHWORKER_TOPIC_TOKENS", configuration.topicTokens, true),
                      ("PUSHWORKER_TOPIC_DLQ", configuration.topicDLQ, true), ("PUSHWORKER_TOPIC_EVENTS", configuration.topicEvents, false)]
        for (setting, name, required) in topics {
            if let topic = metadata.topic(name) {
                lines.append(Line(.ok, "topic", "\(name): \(topic.partitions) partition\(topic.partitions == 1 ? "" : "s"), replication \(topic.replicationFactor)"))
            } else {
                let why = "\(name) (\(setting)) does not exist: create it with `pushworker topics apply`"
                lines.append(Line(required ? .failure : .warning, "topic", required ? why : why + " (only `pushworker events` needs it)"))
            }
        }
        return lines
    }

    // MARK: Redis

    public static func redis(_ configuration: Configuration) -> [Line] {
        let target: RedisTarget
        do { target = try configuration.redisTarget() } catch { return [Line(.failure, "redis", "PUSHWORKER_REDIS_URL: \(error)")] }
        let client: any RedisPipelining
        do { client = try target.makeClient(timeout: .seconds(3)) } catch { return [Line(.failure, "redis", "\(target): \(error)")] }
        defer { client.close() }
        // The first command's error says why (a refused certificate names the setting to change).
        do { _ = try client.pipeline([["PING"]]) } catch {
            return [Line(.failure, "redis", "\(target) does not answer PING (\(error)): check PUSHWORKER_REDIS_URL, the password (PUSHWORKER_REDIS_PASSWORD) and the network")]
        }
        guard client.ping() else {
            return [Line(.failure, "redis", "\(target) does not answer PING: check PUSHWORKER_REDIS_URL, the password (PUSHWORKER_REDIS_PASSWORD) and the network")]
        }
        let store = DeliveryStateStore(client: client)
        do { try store.preloadScripts() } catch {
            return [Line(.failure, "redis", "\(target) answers PING but refuses the scripts: \(error) (a managed Redis without EVAL/SCRIPT?)")]
        }
        let master = (client as? RedisSentinelClient)?.master.map { " (the Sentinels' master: \($0))" } ?? ""
        return [Line(.ok, "redis", "\(target)\(master): PING answered, the claim/record/rate scripts loaded")]
    }

    // MARK: Credentials

    /// One line per platform of each app folder under `PUSHWORKER_CREDENTIALS_DIR`.
    public static func credentials(_ configuration: Configuration, timeout: Duration) -> [Line] {
        guard let directory = configuration.credentialsDir else {
            return [Line(.warning, "credentials", "PUSHWORKER_CREDENTIALS_DIR is not set: every recipient would be rejected/no_credentials")]
        }
        let apps = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { name in
            var isDirectory: ObjCBool = false
            return !name.hasPrefix(".") && FileManager.default.fileExists(atPath: directory + "/" + name, isDirectory: &isDirectory) && isDirectory.boolValue
        }.sorted()
        guard !apps.isEmpty else { return [Line(.warning, "credentials", "\(directory) has no app folder")] }
        var httpConfiguration = HTTPClientConfiguration()
        httpConfiguration.caFile = configuration.caFile
        httpConfiguration.requestTimeout = timeout
        let http: HTTP2Client
        do { http = try HTTP2Client(configuration: httpConfiguration) } catch {
            return [Line(.failure, "credentials", "no HTTP client: \(error)")]
        }
        defer { http.shutdown(drainTimeout: .seconds(1)) }
        let metrics = Metrics()
        var lines: [Line] = []
        for app in apps {
            let credentials = AppCredentials.load(appID: app, folder: URL(fileURLWithPath: directory).appendingPathComponent(app))
            for problem in credentials.problems { lines.append(Line(.failure, app, problem)) }
            if let apns = credentials.apns { lines.append(checkAPNS(apns, app: app, http: http, metrics: metrics, timeout: timeout)) }
            if let fcm = credentials.fcm { lines.append(checkFCM(fcm, app: app, http: http, metrics: metrics, timeout: timeout)) }
            if let web = credentials.webPush { lines.append(checkWebPush(web, app: app)) }
            if credentials.apns == nil && credentials.fcm == nil && credentials.webPush == nil && credentials.problems.isEmpty {
                lines.append(Line(.warning, app, "no apns.json, fcm.json or webpush.json"))
            }
        }
        return lines
    }

    /// Waits for one HTTP exchange (the check runs on the caller's thread).
    static func exchange(_ http: HTTP2Client, _ request: HTTPRequest, timeout: Duration) -> Result<HTTPResponse, HTTPTransportError> {
        let done = DispatchSemaphore(value: 0)
        let box = Mutex<Result<HTTPResponse, HTTPTransportError>?>(nil)
        http.submit(request) { result in
            box.withLock { $0 = result }
            done.signal()
        }
        _ = done.wait(timeout: .now() + .seconds(Int(timeout.components.seconds) + 5))
        return box.withLock { $0 } ?? .failure(.timeout)
    }

    static func checkAPNS(_ apns: AppCredentials.APNS, app: String, http: HTTP2Client, metrics: Metrics, timeout: Duration) -> Line {
        let jwt: String
        do { jwt = try APNSTokenCache(metrics: metrics).token(for: apns, now: Date().timeIntervalSince1970) } catch {
            return Line(.failure, app, "apns: cannot sign the provider token: \(error)")
        }
        let request = HTTPRequest(method: "POST", url: "\(apns.endpoint)/3/device/\(dryRunDeviceToken)", headers: [
            HTTPHeader(name: "apns-topic", value: apns.topic), HTTPHeader(name: "apns-push-type", value: "background"),
            HTTPHeader(name: "apns-priority", value: "5"), HTTPHeader(name: "apns-expiration", value: "0"),
            HTTPHeader(name: "authorization", value: "bearer " + jwt),
        ], body: Array(#"{"aps":{"content-available":1}}"#.utf8), timeout: timeout)
        let target = "\(apns.endpoint) (team \(apns.teamID), key \(apns.keyID), topic \(apns.topic))"
        switch exchange(http, request, timeout: timeout) {
        case .failure(let error):
            let outcome = ResponseClassifier.classify(transport: Deliverer.transportFailure(error))
            let hint = DeliveryDiagnosis.hint(platform: .ios, status: outcome.finalStatus, reason: outcome.reason, httpStatus: nil, detail: error.detail)
            return Line(.failure, app, "apns: \(target) unreachable: \(error.detail ?? "\(error)")\(hint.map { " — \($0)" } ?? "")")
        case .success(let response):
            let reason = (try? JSONParser.parse(response.body, maxDepth: 8, maxBytes: 65_536))?["reason"]?.stringValue
            switch (response.status, reason) {
            case (200, _), (410, _), (400, "BadDeviceToken"?):
                return Line(.ok, app, "apns: provider token and topic accepted by \(target) (dry request answered \(response.status)\(reason.map { " " + $0 } ?? ""))")
            default:
                let status: DeliveryStatus = response.status >= 500 || response.status == 429 ? .failed : .rejected
                let hint = DeliveryDiagnosis.hint(platform: .ios, status: status, reason: reason, httpStatus: response.status, detail: nil)
                return Line(.failure, app, "apns: \(target) answered \(response.status)\(reason.map { " " + $0 } ?? "")\(hint.map { " — \($0)" } ?? "")")
            }
        }
    }

    static func checkFCM(_ fcm: AppCredentials.FCM, app: String, http: HTTP2Client, metrics: Metrics, timeout: Duration) -> Line {
        let done = DispatchSemaphore(value: 0)
        let grant = Mutex<Result<String, FCMAuthError>?>(nil)
        FCMTokenCache(http: http, metrics: metrics, logger: Logger(level: .critical)).withToken(fcm, now: Date().timeIntervalSince1970) { result in
            grant.withLock { $0 = result }
            done.signal()
        }
        _ = done.wait(timeout: .now() + .seconds(Int(timeout.components.seconds) + 5))
        let account = "\(fcm.clientEmail), project \(fcm.projectID)"
        guard let result = grant.withLock({ $0 }) else { return Line(.failure, app, "fcm: no answer from \(fcm.tokenURI)") }
        let accessToken: String
        switch result {
        case .failure(let error):
            let hint = DeliveryDiagnosis.hint(platform: .android, status: .rejected, reason: error.isRetryable ? "auth_unavailable" : "auth_error",
                                              httpStatus: nil, detail: error.reason)
            return Line(.failure, app, "fcm: the OAuth grant at \(fcm.tokenURI) failed for \(account): \(error.reason)\(hint.map { " — \($0)" } ?? "")")
        case .success(let token): accessToken = token
        }
        let body = JSONWriter.object { w in
            w.member("validate_only", true)
            w.member("message") { m in m.member("token", dryRunRegistrationToken) }
        }.text
        let request = HTTPRequest(method: "POST", url: "\(fcm.endpoint)/v1/projects/\(fcm.projectID)/messages:send", headers: [
            HTTPHeader(name: "content-type", value: "application/json"), HTTPHeader(name: "authorization", value: "Bearer " + accessToken),
        ], body: Array(body.utf8), timeout: timeout)
        switch exchange(http, request, timeout: timeout) {
        case .failure(let error):
            return Line(.failure, app, "fcm: OAuth grant accepted for \(account), but \(fcm.endpoint) is unreachable: \(error.detail ?? "\(error)")")
        case .success(let response):
            let outcome = FCMResponseClassifier.classify(status: response.status, header: { response.header($0) }, body: response.body,
                                                         nowUnix: Date().timeIntervalSince1970)
            if response.status == 200 || (response.status == 400 && outcome.reason == "INVALID_ARGUMENT") || outcome.finalStatus == .invalidToken {
                return Line(.ok, app, "fcm: OAuth grant accepted for \(account); \(fcm.endpoint) accepts its sends (validate_only answered \(response.status)\(response.status == 200 ? "" : " \(outcome.reason ?? "")"))")
            }
            let hint = DeliveryDiagnosis.hint(platform: .android, status: outcome.finalStatus, reason: outcome.reason, httpStatus: response.status, detail: nil)
            return Line(.failure, app, "fcm: OAuth grant accepted for \(account), but the send was refused: \(response.status) \(outcome.reason ?? "")\(hint.map { " — \($0)" } ?? "")")
        }
    }

    static func checkWebPush(_ web: AppCredentials.WebPush, app: String) -> Line {
        // The pair was found consistent when loaded; prove it signs what push services verify.
        do {
            let header = try VAPID.authorization(audience: "https://push.example", subject: web.subject,
                                                 expiresAt: Int(Date().timeIntervalSince1970) + 3600, key: web.key)
            guard let parsed = VAPID.parseAuthorization(header), JWT.verifyES256(parsed.token, key: try P256PublicKey(uncompressed: parsed.publicKey)),
                  Base64URL.encode(parsed.publicKey) == web.publicKey.replacingOccurrences(of: "=", with: "") else {
                return Line(.failure, app, "webpush: a VAPID token signed with privateKey does not verify with publicKey")
            }
        } catch {
            return Line(.failure, app, "webpush: cannot sign a VAPID token: \(error)")
        }
        return Line(.ok, app, "webpush: VAPID key pair consistent, subject \(web.subject) (push services are reached per subscription: nothing to call)")
    }
}
