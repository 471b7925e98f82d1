import Foundation
import PushRuntime
import PushCLI
import PushCore
import PushDelivery
import PushHTTP
import Synchronization
import PushWorker
import PushPipeline
import PushProviders

/// `pushworker send [FILE|-]` (docs/reference/cli.md `send`): delivers one job directly, no Kafka,
/// and prints one result line per recipient. The way to check that credentials work.
enum SendCommand {
    static let usage = """
    usage: pushworker send [FILE|-] [--attempts N] [--strict]

    Delivers one job (a file, or standard input) with the credentials in
    PUSHWORKER_CREDENTIALS_DIR and prints one result line per recipient (docs/reference/records.md);
    a job with an audience (an FCM topic or condition, docs/reference/job.md) prints one line.
    Retryable answers are retried: at most --attempts attempts (default 3) waiting
    max(backoff, Retry-After) capped at 30 s; an auth refresh counts as an attempt.
    Uses PUSHWORKER_CA_FILE and PUSHWORKER_WEBPUSH_ALLOWED_HOSTS.
    On stderr: warnings (unknown fields, template variables; --strict makes them errors), what
    each kind of failure most likely means (TLS, credentials, clock …) and a summary line
      send: N recipients: sent=… invalid_token=… rejected=… failed=… expired=… duplicate=…
    Exit 0 when every recipient was sent (or duplicate), 1 otherwise, 65 invalid job,
    66 unreadable input, 69 libcurl unusable, 78 configuration.
    """

    static func main(_ arguments: [String]) -> Int32 {
        var code: Int32 = 0
        guard let parsed = CommandSupport.parse(arguments, usage: usage, values: ["attempts"], flags: ["strict"], exitCode: &code) else { return code }
        guard parsed.positionals.count <= 1 else { return CommandSupport.usageError("one input at most", usage: usage) }
        guard let maxAttempts = CommandSupport.usageChecked(usage, { try parsed.integer("attempts", default: 3, in: 1...20) }) else {
            return ExitCode.usage
        }
        guard let configuration = CommandSupport.configuration(.send) else { return ExitCode.config }
        let job: FanOutJob
        switch CommandSupport.readJob(parsed.positionals.first, command: "pushworker send", strict: parsed.flag("strict")) {
        case .success(let decoded): job = decoded
        case .failure(let exit): return exit.code
        }
        let logger = Logger(level: configuration.logLevel, format: configuration.logFormat)
        let unansweredPolicy = UnansweredPolicy(rawValue: configuration.resendUnanswered) ?? .replace
        let webPushPolicy = WebPushPolicy(extraAllowedHosts: configuration.webPushAllowedHosts)
        guard let (http, deliverer) = delivery(configuration, logger: logger, webPushPolicy: webPushPolicy) else { return ExitCode.unavailable }
        guard let keyring = try? MsgIDKeyring(parsing: configuration.msgIDKeys) else { return ExitCode.config }
        let store = CredentialsStore(directory: configuration.credentialsDir, logger: logger)
        let credentials = store.credentials(for: job.appID)
        let planner = JobPlanner(keyring: keyring, webPushPolicy: webPushPolicy)
        let plans = planner.plan(job, profile: credentials?.profile, now: Date())
        let policy = RetryPolicy(maxAttempts: maxAttempts, baseDelaySeconds: 1, maxDelaySeconds: 30)
        let results = Mutex<[Int: Outcome]>([:])
        let group = DispatchGroup()

        if credentials.map({ $0.apns == nil && $0.apnsCertificate == nil && $0.fcm == nil && $0.webPush == nil && $0.hms == nil }) ?? true {
            logger.error("no credentials for the app: every recipient is rejected/no_credentials",
                         ["app.id": job.appID, "credentials.dir": configuration.credentialsDir ?? "<unset>"])
        }
        @Sendable func record(_ index: Int, _ status: DeliveryStatus, _ reason: String?, http: Int? = nil, id: String? = nil,
                              attempts: Int = 0, latency: Double? = nil, detail: String? = nil) {
            let plan = plans[index]
            let line = ResultRecord(jobID: job.jobID, msgID: plan.msgID, appID: job.appID, campaignID: job.campaignID,
                                    variant: job.variant, userID: plan.recipient.userID, subscriptionID: plan.recipient.subscriptionID,
                                    platform: plan.platform, status: status, reason: reason, httpStatus: http,
                                    providerMessageID: id, attempts: attempts, latencyMs: latency,
                                    atUnixMs: Int64(Date().timeIntervalSince1970 * 1000)).json()
            let outcome = Outcome(line: line, platform: plan.recipient.platform, status: status, reason: reason, httpStatus: http,
                                  detail: detail)
            results.withLock { $0[index] = outcome }
        }
        @Sendable func finish(_ index: Int, _ attempt: Deliverer.Attempt, total: Int) {
            let plan = plans[index]
            // An audience (docs/reference/job.md) has no token for FCM to declare dead.
            let outcome = job.audience == nil ? attempt.outcome : FCMAudience.outcome(attempt.outcome)
            switch outcome {
            case .sent(let id): record(index, .sent, nil, http: attempt.httpStatus, id: id, attempts: total, latency: attempt.latencyMs)
            default:
                if isCredentialsProblem(outcome, httpStatus: attempt.httpStatus) {
                    logger.error("the provider refused the credentials: check \(plan.recipient.platform.map(Deliverer.providerLabel) ?? plan.platform) credentials",
                                 ["app.id": job.appID, "platform": plan.platform, "provider.reason": outcome.reason ?? "",
                                  "http.status": attempt.httpStatus.map { "\($0)" } ?? ""])
                }
                record(index, outcome.finalStatus, outcome.reason, http: attempt.httpStatus, attempts: total, latency: attempt.latencyMs,
                       detail: attempt.detail)
            }
            group.leave()
        }
        for (index, plan) in plans.enumerated() {
            switch plan.state {
            case .expired: record(index, .expired, ExpiryReason.expiresAtPassed.rawValue)
            case .rejected(let reason): record(index, .rejected, reason)
            case .ready(let request):
                guard let credentials else { record(index, .rejected, "no_credentials"); continue }
                if request.platform == .huawei { continue } // sent in batches below
                group.enter()
                attempt(request, credentials: credentials, deliverer: deliverer, policy: policy, unanswered: unansweredPolicy,
                        attemptsSoFar: 0, audience: job.audience != nil) { attempt, total in
                    finish(index, attempt, total: total)
                }
            }
        }
        // Huawei (docs/providers.md): the recipients sharing a payload go out as one request.
        if let credentials {
            for batch in JobPlanner.hmsBatches(plans) {
                guard case .ready(let request) = plans[batch[0]].state else { continue }
                let members: [BatchMember] = batch.compactMap { index in
                    guard case .ready(let own) = plans[index].state, let token = own.hmsToken else { return nil }
                    return BatchMember(index: index, token: token, attempts: 0)
                }
                for _ in members { group.enter() }
                attemptHMSBatch(request, members: members, credentials: credentials, deliverer: deliverer, policy: policy,
                                unanswered: unansweredPolicy) { index, attempt, total in
                    finish(index, attempt, total: total)
                }
            }
        }
        group.wait()
        http.shutdown(drainTimeout: .seconds(1))
        let outcomes = results.withLock { $0 }
        let ordered = plans.indices.compactMap { outcomes[$0] }
        for outcome in ordered { CommandSupport.writeLine(outcome.line) }
        for line in report(ordered, appID: job.appID) { printError(line) }
        return ordered.allSatisfy({ $0.status == .sent || $0.status == .duplicate }) ? ExitCode.ok : ExitCode.failure
    }

    /// The HTTP client (after the libcurl check) and the deliverer over it; nil after printing
    /// why on stderr (the command then exits 69).
    static func delivery(_ configuration: Configuration, logger: Logger, webPushPolicy: WebPushPolicy) -> (HTTP2Client, Deliverer)? {
        var httpConfiguration = HTTPClientConfiguration()
        httpConfiguration.caFile = configuration.caFile
        httpConfiguration.proxy = configuration.httpsProxy
        httpConfiguration.noProxy = configuration.noProxy
        httpConfiguration.requestTimeout = .milliseconds(configuration.requestTimeoutMs)
        let http: HTTP2Client
        do {
            _ = try LibcurlCheck.validate(allowCleartextHTTP2: false)
            http = try HTTP2Client(configuration: httpConfiguration)
        } catch {
            printError("error: \(error)")
            return nil
        }
        let deliverer = Deliverer(http: http, metrics: Metrics(), logger: logger, requestTimeout: .milliseconds(configuration.requestTimeoutMs),
                                  webPushGuard: WebPushAddressGuard(policy: webPushPolicy))
        return (http, deliverer)
    }

    /// One recipient's result: its result line (docs/reference/records.md) and what stderr explains.
    struct Outcome: Sendable {
        var line: String
        var platform: Platform?
        var status: DeliveryStatus
        var reason: String?
        var httpStatus: Int?
        var detail: String?
    }

    /// The stderr report: one explanation per kind of failure (platform, status, reason), then
    /// the summary line `send: N recipients: sent=… …`.
    static func report(_ outcomes: [Outcome], appID: String) -> [String] {
        var lines: [String] = []
        var seen: [String: Int] = [:]
        var order: [(key: String, outcome: Outcome)] = []
        for outcome in outcomes {
            guard let platform = outcome.platform,
                  DeliveryDiagnosis.hint(platform: platform, status: outcome.status, reason: outcome.reason,
                                         httpStatus: outcome.httpStatus, detail: outcome.detail) != nil else { continue }
            let key = "\(platform.rawValue) \(outcome.status.rawValue) \(outcome.reason ?? "-") \(outcome.httpStatus.map(String.init) ?? "-")"
            if seen[key] == nil { order.append((key, outcome)) }
            seen[key, default: 0] += 1
        }
        for (key, outcome) in order {
            guard let platform = outcome.platform,
                  let hint = DeliveryDiagnosis.hint(platform: platform, status: outcome.status, reason: outcome.reason,
                                                    httpStatus: outcome.httpStatus, detail: outcome.detail) else { continue }
            let count = seen[key] ?? 1
            let what = [outcome.status.rawValue, outcome.reason, outcome.httpStatus.map { "HTTP \($0)" }].compactMap { $0 }.joined(separator: " ")
            lines.append("send: \(count) \(platform.rawValue) recipient\(count == 1 ? "" : "s") of \(appID) \(what): \(hint)")
        }
        var counts: [DeliveryStatus: Int] = [:]
        for outcome in outcomes { counts[outcome.status, default: 0] += 1 }
        let parts = DeliveryStatus.allCases.map { "\($0.rawValue)=\(counts[$0] ?? 0)" }.joined(separator: " ")
        lines.append("send: \(outcomes.count) recipient\(outcomes.count == 1 ? "" : "s"): \(parts)")
        return lines
    }

    /// Provider answers that mean our credentials are wrong (not the message or the device).
    static let credentialReasons: Set<String> = [
        "InvalidProviderToken", "MissingProviderToken", "ExpiredProviderToken", "TooManyProviderTokenUpdates", "auth_error",
        "UNAUTHENTICATED", "PERMISSION_DENIED", "SENDER_ID_MISMATCH", "THIRD_PARTY_AUTH_ERROR",
        "BadCertificate", "BadCertificateEnvironment", "certificate_refused",
        "80200001", "80200003", "80300002", "80600003",
    ]

    static func isCredentialsProblem(_ outcome: ProviderOutcome, httpStatus: Int?) -> Bool {
        if case .sent = outcome { return false }
        if case .invalidToken = outcome { return false }
        return httpStatus == 401 || httpStatus == 403 || outcome.reason.map(credentialReasons.contains) == true
    }

    /// A Huawei batch member: its plan position, token and attempts made so far.
    struct BatchMember: Sendable {
        var index: Int
        var token: String
        var attempts: Int
        /// Sent again after an attempt that was written and never answered.
        var resent = false
    }

    /// One Huawei batch with in-process retries: the members whose answers are retryable go out
    /// again together after max(backoff, Retry-After); `completion` runs once per member.
    static func attemptHMSBatch(_ request: ProviderRequest, members: [BatchMember], credentials: AppCredentials, deliverer: Deliverer,
                                policy: RetryPolicy, unanswered: UnansweredPolicy = .replace,
                                completion: @escaping @Sendable (Int, Deliverer.Attempt, Int) -> Void) {
        deliverer.deliverHMSBatch(request, tokens: members.map(\.token), credentials: credentials) { attempts in
            var again: [BatchMember] = []
            var retryAfter: Double?
            // One attempt per token, in order (`deliverHMSBatch`'s promise).
            for (member, result) in zip(members, attempts) {
                let total = member.attempts + result.attempts
                if result.certainty == .unknown {
                    // Written, never answered: one resend under replace, with the same payload.
                    if unanswered == .replace && !member.resent && policy.allowsRetry(afterAttempts: total) {
                        again.append(BatchMember(index: member.index, token: member.token, attempts: total, resent: true))
                    } else {
                        var final = result
                        final.outcome = .retry(reason: "unanswered", retryAfterSeconds: nil, scope: .recipient)
                        completion(member.index, final, total)
                    }
                    continue
                }
                var isRetryable = false
                switch result.outcome {
                case .retry(_, let after, _):
                    isRetryable = true
                    if let after { retryAfter = max(retryAfter ?? 0, after) }
                case .authExpired: isRetryable = true
                default: break
                }
                if isRetryable && policy.allowsRetry(afterAttempts: total) {
                    again.append(BatchMember(index: member.index, token: member.token, attempts: total, resent: member.resent))
                } else {
                    completion(member.index, result, total)
                }
            }
            guard let made = again.map(\.attempts).max() else { return }
            let delay = policy.delay(afterAttempts: made, retryAfterSeconds: retryAfter, jitter: Double.random(in: 0..<1))
            let retried = again
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) {
                attemptHMSBatch(request, members: retried, credentials: credentials, deliverer: deliverer, policy: policy, unanswered: unanswered,
                                completion: completion)
            }
        }
    }

    /// One delivery with in-process retries (the worker uses the retry topic instead), under the
    /// worker's rule for requests that were written and never answered (``AttemptRule``): resent
    /// once with the same replace key under `replace`, final `failed`/`unanswered` under `never`
    /// (and always for an FCM topic or condition send, which FCM may have fanned out).
    /// `resent`: the send in flight is that one resend.
    static func attempt(_ request: ProviderRequest, credentials: AppCredentials, deliverer: Deliverer, policy: RetryPolicy,
                        unanswered: UnansweredPolicy = .replace, attemptsSoFar: Int, resent: Bool = false, audience: Bool = false,
                        completion: @escaping @Sendable (Deliverer.Attempt, Int) -> Void) {
        deliverer.deliver(request, credentials: credentials) { result in
            let total = attemptsSoFar + result.attempts
            let outcome = audience ? FCMAudience.outcome(result.outcome) : result.outcome
            let facts = AttemptFacts(outcome: outcome, certainty: result.certainty, transport: result.transport, httpStatus: result.httpStatus,
                                     attemptsMade: total, isResend: resent, isAudience: audience)
            let rule = AttemptRule(policy: unanswered, retryPolicy: policy)
            let delay: Double
            var again = resent
            switch rule.decide(facts, breakerOpen: false, draining: false, jitter: Double.random(in: 0..<1)) {
            case .retry(_, let seconds): delay = seconds
            case .resend:
                delay = 0
                again = true
            case .unanswered, .failed(reason: "unanswered"):
                var final = result
                final.outcome = .retry(reason: "unanswered", retryAfterSeconds: nil, scope: .recipient)
                return completion(final, total)
            case .sent, .invalidToken, .rejected, .failed, .leaveUnanswered, .requeue, .release:
                return completion(result, total)
            }
            let resend = again
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) {
                attempt(request, credentials: credentials, deliverer: deliverer, policy: policy, unanswered: unanswered, attemptsSoFar: total,
                        resent: resend, audience: audience, completion: completion)
            }
        }
    }
}
