import Foundation
import PushRuntime
import PushCore
import PushHTTP
import Synchronization
import PushEncoding
import PushProviders

/// Huawei Push Kit access tokens (OAuth 2.0 client credentials, docs/providers.md), one per app client,
/// shared by every request of the process. The rules are ``AccessTokenState``'s (pure, tested
/// without I/O); this class holds one state per client behind a lock and performs its steps.
///
/// The grant (docs/providers.md): `POST https://oauth-login.cloud.huawei.com/oauth2/v3/token`,
/// `application/x-www-form-urlencoded` body `grant_type=client_credentials&client_id=…&client_secret=…`,
/// answer `{"access_token","expires_in":3600,"token_type":"Bearer"}`.
final class HMSTokenCache: Sendable {
    typealias Waiter = @Sendable (Result<String, HMSAuthError>) -> Void
    private let states = Mutex<[String: AccessTokenState<Waiter>]>([:])
    private let http: HTTP2Client
    private let metrics: Metrics
    private let logger: Logger
    /// Unix seconds (injectable for tests).
    private let clock: @Sendable () -> Double

    init(http: HTTP2Client, metrics: Metrics, logger: Logger, clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.http = http
        self.metrics = metrics
        self.logger = logger
        self.clock = clock
    }

    static func key(_ hms: AppCredentials.HMS) -> String { hms.tokenEndpoint + "|" + hms.clientID }

    /// Calls `completion` with a token valid at `now`: at once, or after the one fetch under way.
    func withToken(_ hms: AppCredentials.HMS, now: Double, _ completion: @escaping Waiter) {
        let key = Self.key(hms)
        let step = states.withLock { $0[key, default: AccessTokenState()].request(now: now, waiter: completion) }
        switch step {
        case .use(let token): completion(.success(token))
        case .wait: return
        case .fetch: fetch(hms, key: key)
        }
    }

    /// Forgets `token` after Huawei refused it (80200001/80200003), unless it was replaced already.
    func invalidate(_ hms: AppCredentials.HMS, token: String) {
        states.withLock { _ = $0[Self.key(hms)]?.invalidate(token) }
    }

    private func fetch(_ hms: AppCredentials.HMS, key: String) {
        let body = "grant_type=client_credentials&client_id=\(Self.formEncoded(hms.clientID))&client_secret=\(Self.formEncoded(hms.clientSecret))"
        let request = HTTPRequest(method: "POST", url: hms.tokenEndpoint,
                                  headers: [HTTPHeader(name: "content-type", value: "application/x-www-form-urlencoded")],
                                  body: Array(body.utf8), timeout: .seconds(10))
        http.submit(request) { [self] result in
            switch result {
            case .success(let response) where response.status == 200:
                let answer = try? JSONParser.parse(response.body, maxDepth: 8, maxBytes: 65_536)
                guard let token = answer?["access_token"]?.stringValue, !token.isEmpty else {
                    finish(key, .failure(HMSAuthError(reason: "token endpoint answered without access_token")), expiresIn: nil)
                    return
                }
                metrics.increment("pushworker_token_refreshes_total", [("provider", "hms")])
                finish(key, .success(token), expiresIn: answer?["expires_in"]?.numberValue)
            case .success(let response):
                // Huawei's error answer names no secret: {"error":1101,"sub_error":20001,"error_description":"invalid client"}.
                let text = String(decoding: response.body.prefix(300), as: UTF8.self)
                logger.error("Huawei token request refused", ["http.status": "\(response.status)", "hms.error": text])
                finish(key, .failure(HMSAuthError(reason: "token endpoint answered \(response.status): \(text)",
                                                  isRetryable: response.status >= 500 || response.status == 429)), expiresIn: nil)
            case .failure(let error):
                finish(key, .failure(HMSAuthError(reason: "token endpoint unreachable: \(error.detail ?? "\(error)")", isRetryable: true)),
                       expiresIn: nil)
            }
        }
    }

    /// Hands the answer to every waiter; a token is stored in the same step.
    private func finish(_ key: String, _ result: Result<String, HMSAuthError>, expiresIn: Double?) {
        let now = clock()
        let waiters = states.withLock { states -> [Waiter] in
            let token = try? result.get()
            return states[key]?.fetched(token: token, expiresIn: expiresIn, now: now) ?? []
        }
        for waiter in waiters { waiter(result) }
    }

    /// `application/x-www-form-urlencoded` value: unreserved characters as they are, the rest
    /// percent-encoded (a client secret may hold `+`, `/`, `=`).
    static func formEncoded(_ value: String) -> String {
        var output = ""
        output.reserveCapacity(value.utf8.count)
        let hex = Array("0123456789ABCDEF")
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                output.append(Character(UnicodeScalar(byte)))
            default:
                output.append("%")
                output.append(hex[Int(byte >> 4)])
                output.append(hex[Int(byte & 0x0F)])
            }
        }
        return output
    }
}

/// Why no Huawei access token could be had; `reason` names no secret.
struct HMSAuthError: Error, Sendable {
    var reason: String
    var isRetryable = false
}
